"""Attended (query, key) pairs of a window operator: the FLOP proxy of one layer (cost ~ pairs x head dim).

Unordered windows count the real (non-hole) keys in each real query's window from prefix sums. A window with the
causal filter in original positions (Stochastic Attention's mask) counts, for every query, the keys of its window
whose original index is not after its own: a 2-d dominance count, done offline with a Fenwick tree over window
positions while inserting positions in increasing original order, ``O(n log n)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def window_pairs(length: int, perm: np.ndarray | None, left: int, right: int, circular: bool, order: int) -> int:
    """Pairs of a window of ``left + 1 + right`` slots over ``length`` (virtual) positions; ``perm`` with ``-1``
    holes or ``None`` (identity); ``order`` as in :class:`graphs.ops.WindowOp`.

    Parameters
    ----------
    length : int
        Positions of the (virtual) sequence: ``n``, or ``len(perm)`` when ``-1`` holes make it longer than the
        sequence (:meth:`graphs.ops.WindowOp.length`; hence not named ``n``).
    perm : numpy.ndarray or None
        Original index at each position (``-1`` holes), or ``None`` for the identity.
    left, right : int
        Keys before and after the query.
    circular : bool
        Windows wrap around.
    order : {0, 1, -1}
        Causal filter in original positions.

    Returns
    -------
    int

    References
    ----------
    - I. Beltagy, M. E. Peters and A. Cohan, "Longformer: the long-document transformer", arXiv:2004.05150
      (2020) (sliding windows).

    Examples
    --------
    >>> window_pairs(5, None, 1, 1, False, 0), window_pairs(5, None, 2, 0, False, 1)
    (13, 12)
    """
    origin = np.arange(length, dtype=np.int64) if perm is None else np.asarray(perm, dtype=np.int64)
    if order != 0:
        return int(_ordered_pairs(origin, left, right, circular, order))
    real = (origin >= 0).astype(np.int64)
    if circular and left + right + 1 >= length:
        return int(real.sum()) ** 2
    csum = np.concatenate([[0], np.cumsum(real)])
    p = np.arange(length, dtype=np.int64)
    lo, hi = p - left, p + right + 1
    if circular:
        total = csum[-1]
        counts = (
            (csum[np.clip(hi, 0, length)] - csum[np.clip(lo, 0, length)])
            + np.where(lo < 0, total - csum[np.clip(lo + length, 0, length)], 0)
            + np.where(hi > length, csum[np.clip(hi - length, 0, length)], 0)
        )
    else:
        counts = csum[np.clip(hi, 0, length)] - csum[np.clip(lo, 0, length)]
    return int(np.sum(counts * real))


@njit(cache=True)
def _ordered_pairs(origin, left, right, circular, order):
    length = origin.shape[0]
    key = origin if order > 0 else -origin
    by_origin = np.argsort(key)
    tree = np.zeros(length + 1, dtype=np.int64)
    total = 0
    for idx in range(length):
        p = by_origin[idx]
        if origin[p] < 0:
            continue
        # insert first: a key equal to the query (itself) counts
        i = p + 1
        while i <= length:
            tree[i] += 1
            i += i & -i
        lo, hi = p - left, p + right
        if circular and left + right + 1 >= length:
            lo, hi = 0, length - 1
        if not circular:
            lo, hi = max(lo, 0), min(hi, length - 1)
            total += _range_sum(tree, lo, hi)
        elif lo < 0:
            total += _range_sum(tree, 0, hi) + _range_sum(tree, lo + length, length - 1)
        elif hi >= length:
            total += _range_sum(tree, lo, length - 1) + _range_sum(tree, 0, hi - length)
        else:
            total += _range_sum(tree, lo, hi)
    return total


@njit(cache=True)
def _prefix(tree, i):
    s = 0
    i += 1
    while i > 0:
        s += tree[i]
        i -= i & -i
    return s


@njit(cache=True)
def _range_sum(tree, lo, hi):
    if hi < lo:
        return 0
    return _prefix(tree, hi) - (_prefix(tree, lo - 1) if lo > 0 else 0)
