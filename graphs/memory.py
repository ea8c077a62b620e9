"""Memory estimates for the reachability engine, made before anything large is allocated."""

from __future__ import annotations

import math
import re

import numpy as np

DEFAULT_MAX_MEMORY = 3 * 2**30  # bytes; "a few GiB" on a 24 GiB machine

#: dask.utils.parse_bytes units (case-insensitive): decimal k/M/G/T/P (10^3 ..), binary Ki/Mi/Gi/Ti/Pi (2^10 ..),
#: each with or without a trailing "B"; no unit means bytes.
_UNITS = {"": 1, "b": 1}
for _k, _p in enumerate("kmgtp", start=1):
    for _suffix in (_p, _p + "b"):
        _UNITS[_suffix] = 10 ** (3 * _k)
    for _suffix in (_p + "i", _p + "ib"):
        _UNITS[_suffix] = 2 ** (10 * _k)
del _k, _p, _suffix

_NUMBER = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?", re.IGNORECASE)


def parse_bytes(text: str | int | float, name: str = "max_memory") -> int:
    """A size in bytes, with the semantics of ``dask.utils.parse_bytes``.

    ``"5GB"`` = 5 * 10^9 (decimal: kB, MB, GB, TB, PB), ``"2GiB"`` = 2 * 2^30 (binary: KiB, MiB, GiB, TiB, PiB),
    units case-insensitive with or without ``B`` (``"512M"`` = 512 * 10^6, ``"512Mi"`` = 512 * 2^20), scientific
    notation (``"1e9"``), spaces allowed (``"1.5 GiB"``), a plain int or float = bytes. Fractions of a byte are
    rounded down (as dask does). Raises ``ValueError`` naming ``name`` if the text is not a size or is under 1 byte.
    """
    if isinstance(text, bool):
        raise ValueError(f"{name}: expected a size in bytes such as 2GiB, 512MB or 1e9, got {text!r}")
    if isinstance(text, int | np.integer):
        value = int(text)
    elif isinstance(text, float | np.floating):
        if not math.isfinite(text):
            raise ValueError(f"{name}: expected a finite size in bytes, got {text!r}")
        value = int(text)
    elif isinstance(text, str):
        s = text.replace(" ", "")
        match = _NUMBER.match(s)
        unit = s[match.end() :].lower() if match else None
        if match is None or unit not in _UNITS:
            raise ValueError(f"{name}: expected a size such as 2GiB, 512MB or 1e9 (bytes), got {text!r}")
        value = float(match.group(0)) * _UNITS[unit]
        if not math.isfinite(value):
            raise ValueError(f"{name}: expected a finite size in bytes, got {text!r}")
        value = int(value)
    else:
        raise ValueError(f"{name}: expected a size in bytes such as 2GiB, 512MB or 1e9, got {type(text).__name__}")
    if value < 1:
        raise ValueError(f"{name}: expected at least 1 byte, got {text!r} ({value} bytes)")
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
