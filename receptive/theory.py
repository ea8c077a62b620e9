"""Closed-form predictions for coverage through depth.

Notation: ``n`` positions, windows of ``w`` keys (self included), ``L`` layers.
"""

from __future__ import annotations

import math

import numpy as np

from .validation import check_int


def log_w_n(n: int, w: int) -> float:
    """``log n / log w``: the depth at which ``w^L`` paths could first reach ``n`` tokens (SA's O(log_w n) scale,
    Jin & Sui 2026, arXiv 2604.00754). Infinite for ``w = 1``."""
    n, w = check_int("n", n, 1), check_int("w", w, 1)
    return math.inf if w == 1 else math.log(n) / math.log(w)


def swa_layers_estimate(n: int, w: int) -> float:
    """``n / w``: the O(n/w) depth sliding windows need (the exact value is the closed form of
    :meth:`receptive.patterns.SlidingWindow.closed_form_full_layer`)."""
    return check_int("n", n, 1) / check_int("w", w, 1)


def sa_mean_coverage(n: int, w: int, layers: int) -> np.ndarray:
    """Mean-field coverage of bidirectional SA after ``1..layers`` layers.

    A query's window holds itself and ``w - 1`` uniformly random other tokens whose receptive fields are treated
    as independent random sets of the current mean size, so the uncovered fraction ``u_L = 1 - c_L`` obeys::

        u_0 = 1 - 1/n,    u_L = u_{L-1}^w        =>   c_L = 1 - (1 - 1/n)^(w^L)  ~  1 - exp(-w^L / n)

    (the random-out-neighbour recursion, cf. the coupon-collector argument of the SA paper). It ignores the
    overlap between window members' fields, so it is an optimistic estimate once ``c_L`` is large.
    """
    n, w, layers = check_int("n", n, 1), check_int("w", w, 1), check_int("layers", layers, 1)
    exponents = np.arange(1, layers + 1, dtype=float) * math.log(w)
    return -np.expm1(np.exp(exponents) * math.log1p(-1.0 / n)) if n > 1 else np.ones(layers)


def sa_full_layer_estimate(n: int, w: int) -> int | None:
    """Coupon-collector depth for full SA coverage: the first ``L`` with fewer than one expected uncovered
    (query, key) pair under the mean-field model, ``n^2 (1 - 1/n)^(w^L) < 1``, i.e. ``w^L > 2 n ln n`` for large n::

        L_cc = ceil( log(2 n ln n) / log w )

    ``None`` for ``w = 1`` (no mixing). Causal SA is slower: early positions have few admissible keys.
    """
    n, w = check_int("n", n, 1), check_int("w", w, 1)
    if n == 1:
        return 1
    if w == 1:
        return None
    # n^2 (1 - 1/n)^(w^L) < 1  <=>  w^L > -2 ln n / ln(1 - 1/n)
    return max(1, math.ceil(math.log(-2 * math.log(n) / math.log1p(-1.0 / n)) / math.log(w)))


SA_FORMULA = "L_cc = ceil(log(2 n ln n) / log w): fewer than one expected uncovered pair (mean-field coupon collector)"
