"""Argument checks shared by the public API and the CLI: each names the argument and the allowed range."""

from __future__ import annotations

import numbers

import numpy as np


def check_int(name: str, value, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an ``int`` in ``[low, high]``; ``ValueError`` naming ``name`` otherwise (bools rejected)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}: expected an integer, got {value!r}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        lo = "-inf" if low is None else low
        hi = "inf" if high is None else high
        raise ValueError(f"{name}: expected an integer in [{lo}, {hi}], got {value}")
    return value


def check_permutation(name: str, perm, n: int) -> np.ndarray:
    """``perm`` as an int64 array holding each of ``0..n-1`` exactly once."""
    arr = np.asarray(perm)
    if arr.shape != (n,) or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name}: expected an integer array of shape ({n},), got shape {arr.shape} {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.min() < 0 or arr.max() >= n or np.bincount(arr, minlength=n).max() != 1:
        raise ValueError(f"{name}: expected a permutation of 0..{n - 1} (every position exactly once)")
    return arr
