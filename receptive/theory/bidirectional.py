"""Sharp models of bidirectional coverage, each giving ``P(full coverage after L layers)``: SA
(:func:`sa_full_probability`) and SA+SWA (:func:`sa_swa_full_probability`), from the occupancy of random bands and
Aldous' Poisson clumping heuristic. Notation as in :mod:`receptive.theory`; derivations: ``docs/theory.md`` Sec. 3
and 4.
"""

from __future__ import annotations

import math

import numpy as np

from ..validation import check_int
from ..windows import window_offsets
from ._occupancy import _band_sizes, _check_model_args, _empty_prob


def sa_full_probability(n: int, w: int, layers: int, circular: bool = False, targets: int | None = None) -> np.ndarray:
    """``P(full coverage after L layers)`` of bidirectional SA for ``L = 1..layers`` (sharp model).

    The forward set ``F_l`` of one key is a set of ``f`` tokens; a fresh permutation scatters them uniformly, and
    slot ``s`` is reached iff its band ``B_s`` (``w_s`` slots) holds one of them::

        P(s missed | f) = C(n - w_s, f) / C(n, f),     E[f_l | f] = n - sum_s P(s missed | f)

    ``f`` is followed through its mean and variance (law of total variance; the conditional variance from the
    pairwise miss probabilities). Missed slots come in runs (neighbouring bands overlap): the expected number of
    missed runs is ``R(f) = sum_s [P(s missed) - P(s and s-1 missed)]`` and one key's forward set is complete with
    probability ``exp(-R)``, averaged over ``f_{L-1} ~ Normal`` by Gauss-Hermite quadrature. Keys that are
    neighbours in layer 1's order share all but one token of ``F_1``, so their failures clump: a clump continues
    to the next key with probability ``rho = C(n - w, f_{L-2}) / C(n, f_{L-2})``. Failures of distinct clumps
    are rare and nearly independent (Poisson clumping heuristic, Aldous 1989)::

        q = E[1 - exp(-R(f_{L-1}))],    P(full after L) = min( exp(-n (1 - rho) q), 1 - q )

    (the second term: whatever the clumping, one key at least must be complete; it matters only where failure is
    all but certain and the clump count stops making sense).

    Parameters
    ----------
    n : int
        Sequence length, ``>= 2``.
    w : int
        Window size, ``>= 1``.
    layers : int
        Number of layers, ``>= 1``.
    circular : bool, optional
        Circular bands (no truncated windows at the ends of the order).
    targets : int or None, optional
        ``K``: the probability that ``K`` random targets are complete (no clumping among them); ``None``: all ``n``.

    Returns
    -------
    numpy.ndarray
        ``P(full after L)`` for ``L = 1..layers``, shape ``(layers,)``.

    Raises
    ------
    TypeError
        If an integer argument is not an integer or a flag is not a bool.
    ValueError
        If an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import sa_full_probability
    >>> sa_full_probability(256, 8, 5).round(3)
    array([0.   , 0.   , 0.   , 0.881, 1.   ])

    References
    ----------
    * Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    * Aldous 1989, Probability Approximations via the Poisson Clumping Heuristic, Springer.
    """
    n, w, layers = _check_model_args(n, w, layers, circular)
    left, right = window_offsets(w, False)
    sizes, freq = _band_sizes(n, left, right, circular)
    pair_sizes, pair_freq = _band_sizes(n, left + 1, right, circular)  # B_s U B_{s-1}: one slot longer

    def missed(f):
        return n * float(np.sum(freq * _empty_prob(sizes, f, n)))

    def runs(f):  # slot 0 of a truncated order starts a run whenever it is missed
        first = 0.0 if circular else float(_empty_prob(min(n, right + 1), f, n))
        return max(0.0, missed(f) - n * float(np.sum(pair_freq * _empty_prob(pair_sizes, f, n))) + first)

    def conditional_variance(f):
        d = np.arange(1, w)
        p = float(_empty_prob(w, f, n))
        near = 2 * np.sum(_empty_prob(w + d, f, n) - p * p)
        far = (n - 2 * w + 1) * (_empty_prob(2 * w, f, n) - p * p)
        return max(0.0, n * (p * (1 - p) + near + far))

    nodes, weights = np.polynomial.hermite_e.hermegauss(24)
    weights = weights / weights.sum()
    means, variances, out = [1.0], [0.0], []
    for layer in range(1, layers + 1):
        mu, var = means[-1], variances[-1]
        fs = np.clip(mu + math.sqrt(var) * nodes, 1, n) if var > 0 else np.array([mu])
        ws = weights if var > 0 else np.array([1.0])
        # a key whose f tokens cannot cover n slots (f w < n) fails for sure, whatever the Poisson count says
        fail = float(np.sum(ws * np.where(fs * w < n, 1.0, -np.expm1(-np.array([runs(f) for f in fs])))))
        rho = float(_empty_prob(w, means[-2], n)) if layer >= 2 else 0.0
        # clumps or not, one key must succeed; K random targets are not neighbours: no clumping among them
        clumps = n * (1 - rho) * fail if targets is None else targets * fail
        out.append(min(math.exp(-clumps), 1 - fail))
        step = max(1.0, 1e-4 * mu)
        lo, hi = max(1.0, mu - step), min(float(n), mu + step)
        slope = (missed(hi) - missed(lo)) / (hi - lo) if hi > lo else 0.0
        variances.append(conditional_variance(mu) + slope * slope * var)
        means.append(n - missed(mu))
    return np.array(out)


def sa_swa_full_probability(
    n: int, w: int, layers: int, w_swa: int | None = None, circular: bool = False, targets: int | None = None
) -> np.ndarray:
    """``P(full coverage after L layers)`` of bidirectional SA+SWA (the union of both edge sets), sharp model.

    A forward set is ``f`` tokens in ``k`` runs (in original order); the missed tokens form ``k`` gaps of total
    length ``n - f``, taken geometric with mean ``(n - f)/k``. Token ``i`` is missed by the next layer iff its SWA
    window (``a_i`` positions) lies inside a gap and its SA band's other ``w_s - 1`` members (random slots of a
    fresh permutation) miss the ``f`` tokens::

        P(window inside a gap) = ((n - f)/n) (1 - k/(n - f))^(a_i - 1)
        u = mean_i P(window_i inside a gap) * mean_s C(n-1-(w_s-1), f) / C(n-1, f)
        u2 = P(i-1 and i both missed)   (window a_i + 1 long, two independent bands)
        f' = n (1 - u),   k' = n (u - u2)

    Missed tokens after the last layer form ``n (u - u2)`` runs; one key is complete with probability
    ``exp(-n (u - u2))`` and keys fail nearly independently: ``P(full) = exp(-n (1 - exp(-n (u - u2))))``
    (``K`` sampled targets: ``K`` in place of the outer ``n``).

    Parameters
    ----------
    n : int
        Sequence length, ``>= 2``.
    w : int
        SA window size, ``>= 1``.
    layers : int
        Number of layers, ``>= 1``.
    w_swa : int or None, optional
        SWA window size; ``None``: ``w``.
    circular : bool, optional
        Circular windows and bands.
    targets : int or None, optional
        ``K`` sampled targets; ``None``: all ``n``.

    Returns
    -------
    numpy.ndarray
        ``P(full after L)`` for ``L = 1..layers``, shape ``(layers,)``.

    Raises
    ------
    TypeError
        If an integer argument is not an integer or a flag is not a bool.
    ValueError
        If an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import sa_swa_full_probability
    >>> sa_swa_full_probability(256, 8, 5).round(3)
    array([0., 0., 0., 1., 1.])

    References
    ----------
    * Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    * Aldous 1989, Probability Approximations via the Poisson Clumping Heuristic, Springer.
    """
    n, w, layers = _check_model_args(n, w, layers, circular)
    w_swa = w if w_swa is None else check_int("w_swa", w_swa, 1)
    left, right = window_offsets(w, False)
    band, band_freq = _band_sizes(n, left, right, circular)
    swa, swa_freq = _band_sizes(n, *window_offsets(w_swa, False), circular)
    swa2, swa2_freq = _band_sizes(n, window_offsets(w_swa, False)[0] + 1, window_offsets(w_swa, False)[1], circular)
    f, k, out = 1.0, 1.0, []
    for _ in range(layers):
        gap = max(n - f, 0.0)
        q = max(0.0, 1 - k / gap) if gap > 0 else 0.0
        inside = float(np.sum(swa_freq * (gap / n) * q ** (swa - 1.0)))
        inside2 = float(np.sum(swa2_freq * (gap / n) * q ** (swa2 - 1.0)))
        band_miss = float(np.sum(band_freq * _empty_prob(band - 1, f, n - 1)))
        u = inside * band_miss
        u2 = min(u, inside2 * band_miss * band_miss)
        missed_runs = n * (u - u2)
        out.append(math.exp(-(n if targets is None else targets) * -math.expm1(-missed_runs)))
        f, k = n * (1 - u), max(1.0, n * (u - u2))
    return np.array(out)
