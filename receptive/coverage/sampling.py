"""Sampled coverage: which targets to draw, and a 95% interval of the mean coverage that holds for bounded,
skewed data.

Design (:func:`stratified_targets`). Coverage ``c_i = |RF_L(i)| / |A(i)|`` depends on the position ``i``: causal
fields are complete for the first positions and shrink like ``1 / (i + 1)``, and windows are truncated at the ends.
The two ends ``0`` and ``n - 1`` are always measured (certainty units, weight ``1 / n`` each); the ``n - 2`` inner
positions are cut into strata of equal width and each stratum gets the same number of targets (two, where ``K``
allows), drawn without replacement: proportional allocation, so every target stands for the same number of
positions and the estimate of the mean is the Horvitz-Thompson estimator ``(c_0 + c_{n-1} + (n - 2) xbar) / n``
(Cochran 1977, *Sampling Techniques*, 3rd ed., ch. 5, eq. 5.1 and 5.3; Horvitz & Thompson 1952, JASA 47:663).

Interval (:func:`betting_intervals`). A normal interval fails here: with a few fully covered positions the sample
is skewed, late layers are a rare-event share (a few uncovered positions), and layer 1 of bidirectional SA has a
handful of truncated windows that a sample usually misses (zero sample variance, an interval of width zero).
Instead the interval of the inner mean is the hedged-capital betting confidence set for sampling without
replacement (Waudby-Smith & Ramdas 2024, "Estimating means of bounded random variables by betting", JRSS-B 86:1,
eq. 26-27 and the predictable plug-in bets of eq. 25 in the fixed-sample form of their Remark 3; the
without-replacement martingale of Waudby-Smith & Ramdas 2020, NeurIPS, "Confidence sequences for sampling without
replacement", Theorem 3, ``m_t = (N m - sum_{i<t} x_i) / (N - t + 1)``): for a candidate mean ``m``::

    K_t^+(m) = prod_{i <= t} (1 + min(l_i, c / m_i) (x_i - m_i))
    K_t^-(m) = prod_{i <= t} (1 - min(l_i, c / (1 - m_i)) (x_i - m_i))
    m is rejected if  max(K^+ / 2, K^- / 2) >= 1 / alpha

(``c = 3/4``, :data:`BET_CAP`). It needs nothing but ``0 <= x_i <= 1``; it holds at any sample size (Ville's
inequality), tightens to a relative width near 0 and near 1 (where the bets may grow to ``c / m`` and
``c / (1 - m)``), so a sample of all-full targets gives a lower bound ``~ 1 - 3.7 / (c K)``, the same order as the exact
binomial rule-of-three bound on the uncovered share. The set is an interval and is found by bisection. Stratified
draws are analysed in random order as if they were a simple random sample: stratification with proportional
allocation only removes the between-strata part of the variance (Cochran 1977, eq. 5.29), so the interval is
conservative, and the test (``tests/receptive/test_sampled_ci.py``) checks the coverage of the interval against
exact means over many draws.

The share of fully covered positions gets an exact Clopper-Pearson interval (Clopper & Pearson 1934, Biometrika
26:404), binomial and hence conservative for draws without replacement.
"""

from __future__ import annotations

import math

import numpy as np

from ..validation import check_int

__all__ = ["ALPHA", "BET_CAP", "betting_intervals", "clopper_pearson", "stratified_targets"]

ALPHA = 0.05
BET_CAP = 0.75  # c of Waudby-Smith & Ramdas: bets stay within [-c / (1 - m), c / m]
_BISECTIONS = 40


def stratified_targets(k: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` distinct positions of ``0..n-1``, sorted: both ends, and ``k - 2`` inner positions drawn two per stratum
    (one for the last stratum if ``k`` is odd) from strata of equal width. ``k >= n`` returns every position.

    Parameters
    ----------
    k : int
        Targets, ``1 .. n`` (named ``targets`` in errors).
    n : int
        Positions.
    rng : numpy.random.Generator
        The draws' generator.

    Returns
    -------
    numpy.ndarray
        int64, sorted, ``k`` distinct positions.

    Raises
    ------
    TypeError
        If ``k`` is not an integer.
    ValueError
        If ``k`` is outside ``1 .. n``.

    References
    ----------
    Cochran, W. G. (1977). Sampling Techniques, 3rd ed., Wiley, ch. 5 (proportional allocation, eq. 5.1, 5.3).

    Examples
    --------
    >>> import numpy as np
    >>> stratified_targets(6, 100, np.random.default_rng(0)).tolist()  # both ends, two per inner stratum
    [0, 32, 41, 62, 65, 99]
    >>> stratified_targets(5, 5, np.random.default_rng(0)).tolist()
    [0, 1, 2, 3, 4]
    """
    k = check_int("targets", k, 1, n)
    if k >= n:
        return np.arange(n, dtype=np.int64)
    if k <= 2:
        return np.sort(rng.choice(n, size=k, replace=False)).astype(np.int64)
    inner = k - 2
    n_strata = -(-inner // 2)
    edges = np.linspace(1, n - 1, n_strata + 1).round().astype(np.int64)
    per = np.full(n_strata, 2, dtype=np.int64)
    per[-1] = inner - 2 * (n_strata - 1)
    sizes = np.diff(edges)
    if np.any(sizes < per):  # strata narrower than their share (k close to n): a simple random inner sample
        chosen = rng.choice(np.arange(1, n - 1), size=inner, replace=False)
    else:
        # per[h] distinct offsets within each stratum: rank uniform keys within the stratum, keep the smallest
        chosen = np.concatenate([edges[h] + rng.choice(sizes[h], size=per[h], replace=False) for h in range(n_strata)])
    return np.sort(np.concatenate([[0, n - 1], chosen])).astype(np.int64)


def _bets(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The predictable plug-in bets ``l_i = sqrt(2 log(2 / alpha) / (t s2_{i-1}))`` (fixed-sample form, with
    ``s2_{i-1} = (1/4 + sum_{j<i} (x_j - mu_j)^2) / i`` and ``mu_j = (1/2 + sum_{k<=j} x_k) / (j + 1)``), and the
    sums of the draws before each ``i``; ``x`` has shape ``(r, t)``."""
    t = x.shape[1]
    idx = np.arange(1, t + 1)
    csum = np.cumsum(x, axis=1)
    before = np.concatenate([np.zeros((x.shape[0], 1)), csum[:, :-1]], axis=1)
    run_mu = (0.5 + csum) / (idx + 1)
    sq = np.concatenate([np.zeros((x.shape[0], 1)), np.cumsum((x - run_mu) ** 2, axis=1)[:, :-1]], axis=1)
    return np.sqrt(2 * math.log(2 / ALPHA) / (t * (0.25 + sq) / idx)), before


def _log_capital(x: np.ndarray, bets: tuple[np.ndarray, np.ndarray], m: np.ndarray, population: int) -> np.ndarray:
    """``log max(K^+ / 2, K^- / 2)`` of the hedged capital process after all draws, row by row: ``x`` has shape
    ``(r, t)`` (the draws of ``r`` layers), ``m`` shape ``(r,)`` (one candidate mean per row); ``+inf`` where a
    candidate is impossible given the draws (the rest would need a mean outside ``[0, 1]``)."""
    bet, before = bets
    idx = np.arange(1, x.shape[1] + 1)
    m_t = (population * m[:, None] - before) / (population - idx + 1)  # the mean of the positions not yet drawn
    impossible = np.any((m_t < 0) | (m_t > 1), axis=1)
    m_t = np.clip(m_t, 1e-300, 1 - 1e-16)
    diff = x - m_t
    log_up = np.log1p(np.minimum(bet, BET_CAP / m_t) * diff).sum(axis=1)
    log_down = np.log1p(-np.minimum(bet, BET_CAP / (1 - m_t)) * diff).sum(axis=1)
    out = np.maximum(log_up, log_down) + math.log(0.5)
    out[impossible] = np.inf
    return out


def betting_intervals(x: np.ndarray, population: int, rng: np.random.Generator) -> np.ndarray:
    """95% confidence intervals ``(r, 2)`` of the means of ``r`` populations of ``population`` values in ``[0, 1]``
    from the draws ``x`` (shape ``(r, t)``, without replacement), by the hedged betting capital (module docstring).
    The draws are taken in one order drawn from ``rng`` (the bets are predictable; the guarantee holds for any
    order). Bisection from the sample mean towards 0 and towards 1: the confidence set is an interval.

    Parameters
    ----------
    x : array_like of float
        The draws, ``(r, t)`` (or ``(t,)`` for one population), each in ``[0, 1]``.
    population : int
        Values per population (``N``); ``t >= N`` gives the exact mean.
    rng : numpy.random.Generator
        Draws the order in which the bets see the sample.

    Returns
    -------
    numpy.ndarray
        ``(r, 2)``: the lower and upper ends.

    References
    ----------
    Waudby-Smith, I., Ramdas, A. (2024). Estimating means of bounded random variables by betting. JRSS-B 86(1),
    eq. 25-27 and Remark 3.
    Waudby-Smith, I., Ramdas, A. (2020). Confidence sequences for sampling without replacement. NeurIPS, Theorem 3.

    Examples
    --------
    >>> import numpy as np
    >>> betting_intervals(np.ones((1, 50)), 10_000, np.random.default_rng(0)).round(3).tolist()  # 1 - 3.7 / (c K)
    [[0.907, 1.0]]
    >>> low, high = betting_intervals(np.random.default_rng(1).uniform(size=200), 10_000, np.random.default_rng(0))[0]
    >>> bool(low < 0.5 < high)
    True
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    r, t = x.shape
    centre = np.clip(x.mean(axis=1), 0.0, 1.0)
    if t == 0:
        return np.tile([0.0, 1.0], (r, 1))
    if t >= population:
        return np.stack([centre, centre], axis=1)
    x = x[:, rng.permutation(t)]
    bets = _bets(x)
    threshold = math.log(1 / ALPHA)
    ends = []
    for far in (0.0, 1.0):
        outside = np.full(r, far)
        inside = centre.copy()
        accept_far = _log_capital(x, bets, outside, population) < threshold
        for _ in range(_BISECTIONS):
            mid = 0.5 * (inside + outside)
            ok = _log_capital(x, bets, mid, population) < threshold
            inside = np.where(ok, mid, inside)
            outside = np.where(ok, outside, mid)
        ends.append(np.where(accept_far, far, inside))
    return np.stack(ends, axis=1)


def clopper_pearson(hits: int, k: int) -> tuple[float, float]:
    """Exact 95% interval of a binomial share from ``hits`` of ``k`` (Clopper & Pearson 1934), by bisection on the
    binomial tails (no scipy).

    Parameters
    ----------
    hits : int
        Successes, ``0 .. k``.
    k : int
        Trials; ``0`` gives ``(0, 1)``.

    Returns
    -------
    tuple of float
        ``(low, high)``, ``P(X >= hits) = 2.5%`` at ``low`` and ``P(X <= hits) = 2.5%`` at ``high``.

    References
    ----------
    Clopper, C. J., Pearson, E. S. (1934). The use of confidence or fiducial limits illustrated in the case of the
    binomial. Biometrika 26(4), 404-413.

    Examples
    --------
    >>> [round(v, 4) for v in clopper_pearson(0, 10)]  # scipy: beta.ppf(0.975, 1, 10)
    [0.0, 0.3085]
    >>> [round(v, 4) for v in clopper_pearson(5, 10)]
    [0.1871, 0.8129]
    """
    if k == 0:
        return 0.0, 1.0
    lo = 0.0 if hits == 0 else _binomial_root(hits, k, upper=False)
    hi = 1.0 if hits == k else _binomial_root(hits, k, upper=True)
    return lo, hi


def _binomial_tail(hits: int, k: int, p: float, upper: bool) -> float:
    """``P(X <= hits)`` (upper end) or ``P(X >= hits)`` (lower end) for ``X ~ Bin(k, p)``."""
    j = np.arange(k + 1)
    log_choose = np.concatenate([[0.0], np.cumsum(np.log(k - j[1:] + 1) - np.log(j[1:]))])
    pmf = np.exp(log_choose + j * math.log(max(p, 1e-300)) + (k - j) * math.log(max(1 - p, 1e-300)))
    return float(pmf[: hits + 1].sum() if upper else pmf[hits:].sum())


def _binomial_root(hits: int, k: int, upper: bool) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(_BISECTIONS):
        p = 0.5 * (lo + hi)
        tail = _binomial_tail(hits, k, p, upper)
        # upper end: P(X <= hits) falls with p; lower end: P(X >= hits) rises with p
        if (tail > ALPHA / 2) == upper:
            lo = p
        else:
            hi = p
    return 0.5 * (lo + hi)
