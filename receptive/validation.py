"""Argument checks shared by the public API and the CLI: each names the argument and the allowed range."""

from __future__ import annotations

import numpy as np

from graphs.validation import check_int, check_real

__all__ = ["check_int", "check_permutation", "check_real"]


def check_permutation(name: str, perm, n: int) -> np.ndarray:
    """``perm`` as an int64 array holding each of ``0..n-1`` exactly once."""
    arr = np.asarray(perm)
    if arr.shape != (n,) or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name}: expected an integer array of shape ({n},), got shape {arr.shape} {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.min() < 0 or arr.max() >= n or np.bincount(arr, minlength=n).max() != 1:
        raise ValueError(f"{name}: expected a permutation of 0..{n - 1} (every position exactly once)")
    return arr
