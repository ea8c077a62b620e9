"""Argument checks of receptive's public API and CLIs: each names the argument and the allowed range.

A wrong type raises ``TypeError``, a bad value ``ValueError``, with a one-line message starting with the argument's
name. ``check_int``, ``check_real``, ``check_bool`` (strict: ``1`` or ``"yes"`` is no flag), ``check_choice`` and
``check_instance`` are :mod:`graphs.validation`'s (receptive builds on graphs).
"""

from __future__ import annotations

import numpy as np

from graphs.validation import check_bool, check_choice, check_instance, check_int, check_real

__all__ = ["check_bool", "check_choice", "check_instance", "check_int", "check_permutation", "check_real"]


def check_permutation(name: str, perm, n: int | None = None) -> np.ndarray:
    """``perm`` as an int64 array holding each of ``0..n-1`` exactly once.

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    perm : array_like of int
        The candidate permutation.
    n : int or None, optional
        Its expected length (``None``: its own length).

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    TypeError
        If ``perm`` is not an array of integers (a string, a scalar, floats, ...).
    ValueError
        If ``perm`` is not of shape ``(n,)`` or does not hold every position once.

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
    if isinstance(perm, str | bytes) or arr.ndim == 0 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        what = type(perm).__name__ if arr.ndim == 0 or isinstance(perm, str | bytes) else f"a {arr.dtype} array"
        raise TypeError(f"{name}: expected a 1-d array of integers (a permutation), got {what}")
    n = arr.shape[0] if n is None else n
    if arr.shape != (n,):
        raise ValueError(f"{name}: expected an integer array of shape ({n},), got shape {arr.shape} {arr.dtype}")
    if n == 0:
        raise ValueError(f"{name}: expected a permutation of at least one position, got an empty array")
    arr = arr.astype(np.int64)
    if arr.min() < 0 or arr.max() >= n or np.bincount(arr, minlength=n).max() != 1:
        raise ValueError(f"{name}: expected a permutation of 0..{n - 1} (every position exactly once)")
    return arr
