"""Argument checks of receptive's public API and CLIs: each names the argument and the allowed range.

A wrong type raises ``TypeError``, a bad value ``ValueError``, with a one-line message starting with the argument's
name. ``check_int`` and ``check_real`` are :mod:`graphs.validation`'s (receptive builds on graphs).
"""

from __future__ import annotations

import numpy as np

from graphs.validation import check_int, check_real

__all__ = ["check_int", "check_permutation", "check_real"]


def check_permutation(name: str, perm, n: int) -> np.ndarray:
    """``perm`` as an int64 array holding each of ``0..n-1`` exactly once.

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    perm : array_like of int
        The candidate permutation.
    n : int
        Its expected length.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    ValueError
        If ``perm`` is not an integer array of shape ``(n,)`` holding every position once.

    Examples
    --------
    >>> from receptive.validation import check_permutation
    >>> check_permutation("perm", [1, 0, 2], 3).tolist()
    [1, 0, 2]
    >>> check_permutation("perm", [1, 1, 2], 3)
    Traceback (most recent call last):
    ...
    ValueError: perm: expected a permutation of 0..2 (every position exactly once)
    """
    arr = np.asarray(perm)
    if arr.shape != (n,) or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name}: expected an integer array of shape ({n},), got shape {arr.shape} {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.min() < 0 or arr.max() >= n or np.bincount(arr, minlength=n).max() != 1:
        raise ValueError(f"{name}: expected a permutation of 0..{n - 1} (every position exactly once)")
    return arr
