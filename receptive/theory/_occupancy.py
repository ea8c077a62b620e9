"""Occupancy probabilities shared by the sharp coverage models (:mod:`receptive.theory.bidirectional`,
:mod:`receptive.theory.causal` and :mod:`receptive.theory.interval`): ``C(n - size, occupied) / C(n, occupied)``,
the probability that ``size`` given slots are all empty when ``occupied`` of ``n`` slots are filled uniformly at
random (hypergeometric), alone and mixed over the band sizes of a window; the band sizes themselves; the models'
argument check.
"""

from __future__ import annotations

import numpy as np

from ..validation import check_bool, check_int


def _empty_prob(size, occupied, n):
    """``C(n - size, occupied) / C(n, occupied)``: ``size`` given slots all empty when ``occupied`` of ``n`` slots
    are filled uniformly at random (hypergeometric; real-valued ``occupied`` through the Gamma function)."""
    size = np.asarray(size, dtype=float)
    occupied = np.asarray(occupied, dtype=float)
    room = n - occupied - size
    from scipy.special import gammaln  # imported on use (import time of the CLIs)

    log_p = gammaln(n - occupied + 1) - gammaln(np.maximum(room, 0) + 1) - gammaln(n + 1) + gammaln(n - size + 1)
    return np.where(room >= 0, np.exp(np.minimum(log_p, 0.0)), 0.0)


def _band_sizes(n: int, left: int, right: int, circular: bool) -> tuple[np.ndarray, np.ndarray]:
    """Distinct sizes of the two-sided band ``[s-left, s+right]`` over slots ``s`` and their frequencies (edges
    truncate it; circular bands all have ``min(n, left+right+1)``)."""
    if circular:
        return np.array([min(n, left + right + 1)]), np.array([1.0])
    s = np.arange(n)
    sizes = np.minimum(n - 1, s + right) - np.maximum(0, s - left) + 1
    values, counts = np.unique(sizes, return_counts=True)
    return values, counts / n


def _check_model_args(n, w, layers, circular=False):
    check_bool("circular", circular)
    return check_int("n", n, 2), check_int("w", w, 1), check_int("layers", layers, 1)


def _mixed_empty_prob(sizes: np.ndarray, freq: np.ndarray, occupied: np.ndarray, n: int) -> np.ndarray:
    """``sum_k freq[k] C(n - sizes[k], occupied) / C(n, occupied)`` for a vector of ``occupied``, by the recurrence
    ``P(a + 1) = P(a) (n - occupied - a) / (n - a)`` over the (consecutive) sizes instead of one Gamma call each.
    Long vectors (the causal profile at large ``n``) are evaluated on 4097 values of ``occupied`` spanning their
    range and interpolated in ``log P`` (smooth and monotone in ``occupied``; relative error about 1e-4 or less)."""
    occupied = np.asarray(occupied, dtype=float)
    if occupied.size > 16384:
        lo, hi = float(occupied.min()), float(occupied.max())
        grid = np.unique(np.concatenate([np.linspace(lo, hi, 2049), lo + np.geomspace(1e-3, max(hi - lo, 1e-3), 2048)]))
        values = _mixed_empty_prob(sizes, freq, grid, n)
        log_values = np.log(np.maximum(values, 1e-300))
        out = np.exp(np.interp(occupied, grid, log_values))
        return np.where(out <= 1e-299, 0.0, out)
    order = np.argsort(sizes)
    sizes, freq = sizes[order].astype(int), freq[order]
    current = _empty_prob(sizes[0], occupied, n)
    total = freq[0] * current
    a = sizes[0]
    for size, p in zip(sizes[1:], freq[1:], strict=True):
        while a < size:
            current = current * np.maximum(n - occupied - a, 0.0) / (n - a)
            a += 1
        total = total + p * current
    return total
