"""Memory estimates for the reachability engine, made before anything large is allocated."""

from __future__ import annotations

import re

DEFAULT_MAX_MEMORY = 3 * 2**30  # bytes; "a few GiB" on a 24 GiB machine

_UNITS = {
    "": 1,
    "b": 1,
    "k": 2**10,
    "kb": 2**10,
    "kib": 2**10,
    "m": 2**20,
    "mb": 2**20,
    "mib": 2**20,
    "g": 2**30,
    "gb": 2**30,
    "gib": 2**30,
    "t": 2**40,
    "tb": 2**40,
    "tib": 2**40,
}


def parse_bytes(text: str | int) -> int:
    """``"2GiB"``, ``"512M"``, ``"1.5g"`` or a plain number of bytes -> bytes (binary units)."""
    if isinstance(text, int):
        value = text
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(text))
        if not match or match.group(2).lower() not in _UNITS:
            raise ValueError(f"max_memory: expected a size such as 2GiB, 512MiB or 1e9 bytes, got {text!r}")
        value = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if value <= 0:
        raise ValueError(f"max_memory: must be positive, got {text!r}")
    return value


def slab_bytes(n: int, n_words: int, op_buffer_bytes: int = 0) -> int:
    """Bytes one slab needs: two ``(n, n_words)`` uint64 bitset matrices (this layer, next layer), a row of counts,
    and the operators' scratch."""
    return 2 * n * n_words * 8 + n * 8 + op_buffer_bytes


def words_per_slab(n: int, n_seeds: int, max_memory: int, op_buffer_bytes: int = 0) -> int:
    """The widest slab (in 64-bit words) that fits ``max_memory``; raises ``MemoryError`` if not even one word fits.

    Never wider than ``n_seeds`` needs.
    """
    needed = -(-n_seeds // 64)
    fit = (max_memory - n * 8 - op_buffer_bytes) // (2 * n * 8)
    if fit < 1:
        raise MemoryError(
            f"max_memory: {max_memory / 2**20:.1f} MiB cannot hold one 64-seed slab for n = {n}; "
            f"at least {slab_bytes(n, 1, op_buffer_bytes) / 2**20:.1f} MiB is needed"
        )
    return int(min(needed, fit))
