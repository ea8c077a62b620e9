"""Memory estimates for the reachability engine, made before anything large is allocated."""

from __future__ import annotations

import math
import os
import re

import numpy as np

#: the default bound, in bytes, on what one reachability or path-length call allocates (3 GiB)
DEFAULT_MAX_MEMORY = 3 * 2**30

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
    """Return a size in bytes, with the semantics of ``dask.utils.parse_bytes``.

    ``"5GB"`` = 5 * 10^9 (decimal: kB, MB, GB, TB, PB), ``"2GiB"`` = 2 * 2^30 (binary: KiB, MiB, GiB, TiB, PiB),
    units case-insensitive with or without ``B`` (``"512M"`` = 512 * 10^6, ``"512Mi"`` = 512 * 2^20), scientific
    notation (``"1e9"``), spaces allowed (``"1.5 GiB"``), a plain int or float = bytes. Fractions of a byte are
    rounded down (as dask does).

    Parameters
    ----------
    text : str or int or float
        The size.
    name : str, optional
        The argument or option that gave it (the first word of an error message).

    Returns
    -------
    int
        At least 1.

    Raises
    ------
    TypeError
        If ``text`` is neither a string nor a number (``bool`` and ``None`` included).
    ValueError
        If ``text`` is not a size, not finite or under 1 byte.

    References
    ----------
    - Dask Development Team, ``dask.utils.parse_bytes``, https://docs.dask.org/en/stable/api.html (2016-).

    Examples
    --------
    >>> parse_bytes("2GiB"), parse_bytes("512 MB"), parse_bytes(1e3)
    (2147483648, 512000000, 1000)
    >>> parse_bytes("lots", "--max-memory")
    Traceback (most recent call last):
    ...
    ValueError: --max-memory: expected a size such as 2GiB, 512MB or 1e9 (bytes), got 'lots'
    """
    if isinstance(text, bool):
        raise TypeError(f"{name}: expected a size in bytes such as 2GiB, 512MB or 1e9, got {text!r}")
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
        raise TypeError(f"{name}: expected a size in bytes such as 2GiB, 512MB or 1e9, got {type(text).__name__}")
    if value < 1:
        raise ValueError(f"{name}: expected at least 1 byte, got {text!r} ({value} bytes)")
    return value


def slab_bytes(n: int, n_words: int, op_buffer_bytes: int = 0) -> int:
    """Return the bytes one slab needs.

    Two ``(n, n_words)`` uint64 bitset matrices (this layer, next layer), a row of counts, and the operators'
    scratch.

    Parameters
    ----------
    n : int
        Nodes (rows of the bitsets).
    n_words : int
        64-bit words per row (64 seeds each).
    op_buffer_bytes : int, optional
        Scratch the layer's operators need.

    Returns
    -------
    int

    Examples
    --------
    >>> slab_bytes(1000, 2)
    40000
    """
    return 2 * n * n_words * 8 + n * 8 + op_buffer_bytes


def words_per_slab(n: int, n_seeds: int, max_memory: int, op_buffer_bytes: int = 0) -> int:
    """Return the widest slab, in 64-bit words, that fits ``max_memory``, never wider than ``n_seeds`` needs.

    Parameters
    ----------
    n : int
        Nodes (rows of the bitsets).
    n_seeds : int
        Seeds to propagate.
    max_memory : int
        Bytes available.
    op_buffer_bytes : int, optional
        Scratch the layer's operators need.

    Returns
    -------
    int
        At least 1.

    Raises
    ------
    MemoryError
        If not even one word (64 seeds) fits.

    Examples
    --------
    >>> words_per_slab(1000, 640, 2**20), words_per_slab(1000, 64_000, 2**20)
    (10, 65)
    """
    needed = -(-n_seeds // 64)
    fit = (max_memory - n * 8 - op_buffer_bytes) // (2 * n * 8)
    if fit < 1:
        raise MemoryError(
            f"max_memory: {max_memory / 2**20:.1f} MiB cannot hold one 64-seed slab for n = {n}; "
            f"at least {slab_bytes(n, 1, op_buffer_bytes) / 2**20:.1f} MiB is needed"
        )
    return int(min(needed, fit))


def format_bytes(size: int | float) -> str:
    """Return ``size`` in the largest binary unit that keeps it at least 1 (``"1.50 GiB"``).

    Parameters
    ----------
    size : int or float
        Bytes.

    Returns
    -------
    str

    Examples
    --------
    >>> format_bytes(3 * 2**30), format_bytes(1536), format_bytes(12)
    ('3.00 GiB', '1.50 KiB', '12 B')
    """
    for power, unit in ((5, "PiB"), (4, "TiB"), (3, "GiB"), (2, "MiB"), (1, "KiB")):
        if size >= 2 ** (10 * power):
            return f"{size / 2 ** (10 * power):.2f} {unit}"
    return f"{int(size)} B"


def check_memory(
    name: str, needed: int | float, what: str, limit: int = DEFAULT_MAX_MEMORY, limit_name: str | None = None
) -> None:
    """Refuse, before anything is allocated, work whose memory estimate exceeds ``limit``.

    Parameters
    ----------
    name : str
        The argument or option whose size is at fault (the first word of the message).
    needed : int or float
        The estimate, in bytes.
    what : str
        What needs it, e.g. ``"10^8 positions x 4 heads x 64 dims (q, k, v, out in float32)"``.
    limit : int, optional
        The bound, in bytes (default :data:`DEFAULT_MAX_MEMORY`).
    limit_name : str or None, optional
        The option that sets the bound (``"--max-memory"``), named in the message; ``None``: the bound is fixed.

    Raises
    ------
    MemoryError
        If ``needed > limit``, in one line naming ``name``, the estimate and the limit.

    Examples
    --------
    >>> check_memory("--n", 2**20, "one row")
    >>> check_memory("--n", 2**40, "q, k and v")
    Traceback (most recent call last):
    ...
    MemoryError: --n: q, k and v need about 1.00 TiB, more than the limit of 3.00 GiB
    >>> check_memory("--n", 2**40, "q, k and v", 2**30, "--max-memory")
    Traceback (most recent call last):
    ...
    MemoryError: --n: q, k and v need about 1.00 TiB, more than the limit of 1.00 GiB (--max-memory)
    """
    if needed > limit:
        by = f" ({limit_name})" if limit_name else ""
        raise MemoryError(
            f"{name}: {what} need about {format_bytes(needed)}, more than the limit of {format_bytes(limit)}{by}"
        )


def physical_memory() -> int:
    """Return the bytes of physical memory of this machine (:data:`DEFAULT_MAX_MEMORY` where the OS does not say).

    Returns
    -------
    int

    Examples
    --------
    >>> physical_memory() >= 2**20
    True
    """
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return DEFAULT_MAX_MEMORY
