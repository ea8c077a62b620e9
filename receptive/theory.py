"""Predictions of coverage through depth, from the simple scaling laws to a sharp model of L*.

Notation: ``n`` positions, windows of ``w`` keys (self included, :mod:`receptive.windows`), ``L`` layers,
``RF_L(i)`` the receptive field of query ``i`` and ``F_L(j) = {i : j in RF_L(i)}`` the forward set of key ``j``;
coverage is full at ``L`` iff every ``F_L(j)`` is everything admissible. Derivations: ``docs/theory.md``.

* SWA: exact (receptive fields are intervals), :func:`swa_coverage`, :func:`swa_full_layer`.
* SA, mean field (Jin & Sui 2026, arXiv 2604.00754, Sec. 3): :func:`sa_mean_coverage`, :func:`sa_half_layer`,
  :func:`sa_full_layer_estimate` (coupon collector), :func:`sa_union_bound_layer` (explicit O(log_w n) bound).
* Sharp models, one per regime, each giving ``P(coverage full after L layers)``:
  :func:`sa_full_probability` (bidirectional SA), :func:`sa_swa_full_probability` (bidirectional SA+SWA),
  :func:`causal_full_probability` (causal SA and SA+SWA, from :func:`causal_failure_clumps`);
  :func:`predict_full_layer` picks one and returns the first layer at which full coverage is more likely than not.
"""

from __future__ import annotations

import math

import numpy as np

from .validation import check_int
from .windows import window_offsets

# ---------------------------------------------------------------------------------------------- scaling laws


def log_w_n(n: int, w: int) -> float:
    """``log n / log w``: the depth at which ``w^L`` paths could first reach ``n`` tokens (SA's O(log_w n) scale,
    Jin & Sui 2026, arXiv 2604.00754). Infinite for ``w = 1``."""
    n, w = check_int("n", n, 1), check_int("w", w, 1)
    return math.inf if w == 1 else math.log(n) / math.log(w)


def swa_layers_estimate(n: int, w: int) -> float:
    """``n / w``: the O(n/w) depth sliding windows need (exact value: :func:`swa_full_layer`)."""
    return check_int("n", n, 1) / check_int("w", w, 1)


def swa_coverage(n: int, w: int, layers: int, causal: bool = False, circular: bool = False) -> dict:
    """Exact SWA coverage after ``layers`` layers: ``{"mean", "min", "full_fraction"}``.

    ``RF_L(i) = [i - L*left, i + L*right]`` clipped to ``0..n-1`` (causal: ``[i - L(w-1), i]``, ``A(i) = 0..i``);
    circular two-sided windows: ``min(n, L(w-1) + 1)`` positions. Offsets from :func:`receptive.windows`.
    """
    from .patterns import SlidingWindow

    pattern = SlidingWindow(n, w, causal, circular)
    sizes = pattern.closed_form_counts(check_int("layers", layers, 0))
    admissible = np.arange(1, n + 1) if causal else np.full(n, n)
    cov = sizes / admissible
    return {"mean": float(cov.mean()), "min": float(cov.min()), "full_fraction": float(np.mean(cov == 1.0))}


def swa_full_layer(n: int, w: int, causal: bool = False, circular: bool = False) -> int | None:
    """Exact SWA L*: ``ceil((n-1)/(w-1))`` causal or circular, ``ceil((n-1)/((w-1)//2))`` two-sided truncated
    (the shorter side limits the first and last positions); ``None`` when that side is empty."""
    from .patterns import SlidingWindow

    return SlidingWindow(n, w, causal, circular).closed_form_full_layer()


# -------------------------------------------------------------------------------------------- SA mean field


def sa_mean_coverage(n: int, w: int, layers: int) -> np.ndarray:
    """Mean-field coverage of bidirectional SA after ``1..layers`` layers.

    A query's window holds itself and ``w - 1`` uniformly random other tokens whose receptive fields are treated
    as independent random sets of the current mean size, so the uncovered fraction ``u_L = 1 - c_L`` obeys::

        u_0 = 1 - 1/n,    u_L = u_{L-1}^w        =>   c_L = 1 - (1 - 1/n)^(w^L)  ~  1 - exp(-w^L / n)

    (the random-out-neighbour recursion behind the SA paper's coverage argument). It ignores the overlap between
    window members' fields, so it is optimistic once ``c_L`` is large.
    """
    n, w, layers = check_int("n", n, 1), check_int("w", w, 1), check_int("layers", layers, 1)
    exponents = np.arange(1, layers + 1, dtype=float) * math.log(w)
    return -np.expm1(np.exp(exponents) * math.log1p(-1.0 / n)) if n > 1 else np.ones(layers)


def sa_half_layer(n: int, w: int) -> int | None:
    """First layer with mean-field coverage ``>= 1/2``: ``(1 - 1/n)^(w^L) <= 1/2``, i.e. ``w^L >= n ln 2``."""
    n, w = check_int("n", n, 2), check_int("w", w, 1)
    if w == 1:
        return None
    return max(1, math.ceil(math.log(math.log(2) / -math.log1p(-1.0 / n)) / math.log(w) - 1e-12))


def sa_full_layer_estimate(n: int, w: int) -> int | None:
    """Coupon-collector depth for full SA coverage: the first ``L`` with fewer than one expected uncovered
    (query, key) pair under the mean field, ``n^2 (1 - 1/n)^(w^L) < 1``, i.e. ``w^L > 2 n ln n`` for large n::

        L_cc = ceil( log(2 n ln n) / log w )

    ``None`` for ``w = 1`` (no mixing). Bidirectional only; causal SA is another regime
    (:func:`causal_sa_full_layer_estimate`).
    """
    n, w = check_int("n", n, 1), check_int("w", w, 1)
    if n == 1:
        return 1
    if w == 1:
        return None
    return max(1, math.ceil(math.log(-2 * math.log(n) / math.log1p(-1.0 / n)) / math.log(w)))


SA_FORMULA = "L_cc = ceil(log(2 n ln n) / log w): fewer than one expected uncovered pair (mean-field coupon collector)"


def sa_union_bound_layer(n: int, w: int, delta: float = 0.05) -> int | None:
    """Depth after which, by the union bound over the ``n^2`` (query, key) pairs of the mean-field model,
    coverage is full with probability ``>= 1 - delta``::

        P(not full after L) <= n^2 (1 - 1/n)^(w^L) <= n^2 exp(-w^L / n) <= delta
        <=>  L >= log_w n + log_w(2 ln n + ln(1/delta))

    so ``L* <= log_w n + log_w(2 ln n + ln(1/delta)) + 1 = (1 + o(1)) log_w n``: the O(log_w n) statement with its
    constants. (A bound on the model; the sweep of ``python -m receptive.bound`` checks it against the engine.)
    """
    n, w = check_int("n", n, 2), check_int("w", w, 1)
    if not 0 < delta < 1:
        raise ValueError(f"delta: expected a probability in (0, 1), got {delta!r}")
    if w == 1:
        return None
    return max(1, math.ceil(math.log(n * (2 * math.log(n) + math.log(1 / delta))) / math.log(w)))


def sa_swa_growth_rate(w_sa: int, w_swa: int) -> float:
    """Per-layer growth of SA+SWA forward sets while they are small: the Perron root of the run model
    ``(f, k) -> (w_sa f + (w_swa - 1) k, (w_sa - 1) f + k)`` (``f`` tokens in ``k`` runs: SWA lengthens every
    run by ``w_swa - 1``, SA sends every token to ``w_sa - 1`` random new singletons)::

        lambda = ((w_sa + 1) + sqrt((w_sa - 1)^2 + 4 (w_sa - 1)(w_swa - 1))) / 2

    For ``w_sa = w_swa = w`` this tends to ``phi * w`` (``phi`` the golden ratio), faster than SA's ``w``; the
    geometric mean ``sqrt(w_sa w_swa)`` would be the rate of paths alternating the two.
    """
    a, b = check_int("w_sa", w_sa, 1), check_int("w_swa", w_swa, 1)
    return ((a + 1) + math.sqrt((a - 1) ** 2 + 4 * (a - 1) * (b - 1))) / 2


# ------------------------------------------------------------------------------------------- sharp models


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


def _check_model_args(n, w, layers):
    return check_int("n", n, 2), check_int("w", w, 1), check_int("layers", layers, 1)


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
    """
    n, w, layers = _check_model_args(n, w, layers)
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
    """
    n, w, layers = _check_model_args(n, w, layers)
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


def causal_full_probability(
    n: int,
    w: int,
    layers: int,
    swa: bool = True,
    w_swa: int | None = None,
    circular: bool = False,
    targets: int | None = None,
) -> np.ndarray:
    """``P(full coverage after L layers)`` of causal SA (``swa=False``) or causal SA+SWA for ``L = 1..layers``:
    ``exp(-N_L)`` with ``N_L`` the expected number of failure clumps, :func:`causal_failure_clumps` (the model and
    its derivation are there)."""
    return np.exp(-causal_failure_clumps(n, w, layers, swa, w_swa, circular, targets))


def causal_failure_clumps(
    n: int,
    w: int,
    layers: int,
    swa: bool = True,
    w_swa: int | None = None,
    circular: bool = False,
    targets: int | None = None,
) -> np.ndarray:
    """Expected number ``N_L`` of failure clumps (groups of neighbouring missed (key, query) pairs) of causal SA
    (``swa=False``) or causal SA+SWA after ``L = 1..layers`` layers; ``P(full after L) = exp(-N_L)``
    (:func:`causal_full_probability`).

    Causal paths never move backwards, so the forward set of key ``j`` lives on offsets ``x = i - j >= 0`` and,
    away from the end of the sequence, its law does not depend on ``j``. The *profile model* tracks
    ``u(x) = P(x missed)`` and ``u2(x) = P(x-1 and x missed)`` (a Markov chain along offsets). Offset ``x`` is missed
    by the next layer iff its causal SWA window (``w_swa`` offsets ending at ``x``) is missed and its SA band's other
    ``w_s - 1`` members miss the ``C(x) = sum_{y<x} (1 - u(y))`` tokens before it (later ones are masked)::

        u'(x) = P(window missed) * C(n-1-(w_s-1), C(x)) / C(n-1, C(x)),
        P(window of a ending at x missed) = u(x) prod_{y=x-a+2..x} u2(y)/u(y)

    It averages ``C(x)``, and the miss probability is convex in it, so it is optimistic where the last pairs are
    decided by rare slow keys: the intermediate distances just beyond the window's reach ``L (w_swa - 1)``. With the
    window (``swa=True``) those offsets ``x <= D`` are taken from the run-branching model
    (:func:`causal_run_miss_table`), which keeps that randomness exactly in the Poisson limit; the profile model
    covers ``x > D`` (``D = 6 L (w_swa - 1)``, where the branching model's misses have died out). Failures are counted
    as clumps (Aldous' Poisson clumping heuristic): a missed pair ``(j, j + x)`` starts a clump along ``x`` with
    probability ``r(x) = 1 - psi_2(x)/psi_1(x)`` (the next offset is not missed too) and, by the time-reversal
    symmetry of the causal pattern, along the keys with the same probability::

        N_L = sum_{x <= D} (n - x) psi_1(x) r(x)^2 + sum_{x > D} (n - x) (u_L(x) - u2_L(x)),  P(full) = exp(-N_L)

    No fitted constant: against the engine (every pair, n = 2048 .. 16384, w = 4 .. 32) this clump count is within
    about 20% of the number of 8-connected clumps of missed (key, query) pairs at L* - 1 and L*
    (``docs/theory.md`` Sec. 5, ``tests/test_theory.py``).

    ``K`` sampled targets (queries): ``K/n`` of the pairs, declumped along the keys only (``r`` instead of ``r^2``).

    Pure causal SA needs the direct edge ``i-1 -> i`` for every ``i`` (a path between them cannot leave
    ``[i-1, i]``), so its L* is about ``(n/w) ln n`` (:func:`causal_sa_full_layer_estimate`), not O(log_w n).
    """
    n, w, layers = _check_model_args(n, w, layers)
    a = (w if w_swa is None else check_int("w_swa", w_swa, 1)) if swa else 1
    band, band_freq = _band_sizes(n, *window_offsets(w, False), circular)
    x = np.arange(n)
    u = np.ones(n)
    u[0] = 0.0
    u2 = np.ones(n)
    u2[:2] = 0.0
    share = 1.0 if targets is None else targets / n  # K random targets hold a share K/n of the (key, query) pairs
    branching = None
    if swa and a > 1:
        p = float(np.sum(band_freq * (band - 1))) / (n - 1)
        depth = min(n - 1, 6 * layers * (a - 1) + a)
        branching = (_RunMisses(p, a, depth, 1), _RunMisses(p, a, depth, 2))
    out = []
    for layer in range(1, layers + 1):
        before = np.concatenate([[0.0], np.cumsum(1 - u)[:-1]])
        miss = _mixed_empty_prob(band - 1, band_freq, before, n - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(u > 0, u2 / u, 0.0)
        ratio[0] = 1.0  # offsets before the key are never reached
        log_cum = np.concatenate([[0.0], np.cumsum(np.log(np.maximum(ratio, 1e-300)))])
        u_new = _window_missed(u, log_cum, a) * miss
        u2_new = _window_missed(u, log_cum, a + 1) * miss * np.concatenate([[1.0], miss[:-1]])
        u_new[0] = 0.0
        u2_new = np.minimum(u2_new, u_new)
        u2_new[1:] = np.minimum(u2_new[1:], u_new[:-1])
        u2_new[0] = 0.0
        u, u2 = u_new, u2_new
        profile = (n - x) * np.maximum(u - u2, 0.0)
        if branching is not None:
            cut = min(n - 1, 6 * layer * (a - 1) + a)
            p1, p2 = (b.next()[: cut + 1] for b in branching)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(p1 > 0, 1 - p2 / p1, 0.0)
            near = (n - x[: cut + 1]) * p1 * (r if targets is not None else r * r)
            clumps = float(np.sum(near)) + float(np.sum(profile[cut + 1 :]))
        else:
            clumps = float(np.sum(profile))
        out.append(share * clumps)
        if out[-1] < 1e-12:  # full from here on
            out.extend([0.0] * (layers - len(out)))
            break
    return np.array(out)


def causal_run_miss_table(p: float, a: int, layers: int, depth: int, m: int = 1) -> np.ndarray:
    """``psi[t, d]``: probability that ``m`` consecutive targets, the last ``d`` positions after a newly reached
    token with ``t`` layers to go, are all missed, in the run-branching model of causal SA+SWA (Poisson limit).

    A reached token starts a *run* that the causal window (``a`` keys) lengthens by ``a - 1`` per layer; ``k``
    layers later it holds ``c_k = k (a - 1) + 1`` tokens, each of which is an SA key of every later query with
    probability ``p`` (``E[w_s - 1]/(n - 1)``). In the next layer the window extends the run to ``c_{k+1} - 1``
    anyway, so only a shortcut that lands at ``e >= c_{k+1}`` reaches something new: it does so with rate ``p c_k``
    per position and starts a child run there. Ignoring the later overlap of runs (a run that grows into a child's
    start shares that child's tokens; the branching is the sparse early phase that decides intermediate distances),
    the targets are missed iff no run of the family covers one::

        psi_m(d, t) = [d > t (a-1) + m - 1] exp( -p sum_{k=0}^{t-1} c_k sum_{e=c_{k+1}}^{d} (1 - psi_m(d - e, t-k-1)) )

    computed for ``t = 0..layers``, ``d = 0..depth`` with prefix sums in ``O(depth layers^2)``. A pair ``(j, j + x)``
    is missed after ``L`` layers with probability ``psi_1(x, L)`` (the key itself is the root run). The ignored
    overlap makes it a little optimistic about single pairs: the engine has 1.0 .. 1.3 times its missed pairs at
    the last layers (n = 2048 .. 4096, w = 4, 8; ``tests/test_causal_model.py``)."""
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p: expected a probability in [0, 1], got {p!r}")
    table = _RunMisses(p, check_int("a", a, 1), check_int("depth", depth, 0), check_int("m", m, 1))
    rows = [table.psi[0]] + [table.next() for _ in range(check_int("layers", layers, 0))]
    return np.array(rows)


class _RunMisses:
    """Row ``t`` of :func:`causal_run_miss_table` one at a time (``next()``), so a model that stops early pays
    only for the layers it used."""

    def __init__(self, p: float, a: int, depth: int, m: int):
        self.p, self.step, self.depth, self.m = p, a - 1, depth, m
        first = np.zeros(depth + 1)
        first[m:] = 1.0
        self.psi = [first]
        self.prefix = [np.concatenate([[0.0], np.cumsum(1 - first)])]
        self.d = np.arange(depth + 1)

    def next(self) -> np.ndarray:
        t = len(self.psi)
        total = np.zeros(self.depth + 1)
        for k in range(t):
            c = k * self.step + 1  # the run's tokens; the window covers up to c + step - 1 in this layer anyway
            total += c * self.prefix[t - k - 1][np.clip(self.d - c - self.step, -1, self.depth) + 1]
        row = np.where(self.d > t * self.step + self.m - 1, np.exp(-self.p * total), 0.0)
        self.psi.append(row)
        self.prefix.append(np.concatenate([[0.0], np.cumsum(1 - row)]))
        return row


def _window_missed(u: np.ndarray, log_cum: np.ndarray, length: int) -> np.ndarray:
    """``P(offsets x-length+1 .. x all missed) = u(x) prod_{y=x-length+2..x} u2(y)/u(y)`` for every ``x``
    (``log_cum``: prefix sums of ``log(u2/u)``)."""
    x = np.arange(u.size)
    lo = np.maximum(x - length + 2, 0)
    return u * np.exp(log_cum[x + 1] - log_cum[lo])


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


def causal_sa_full_layer_estimate(n: int, w: int, circular: bool = False) -> float | None:
    """Median L* of pure causal SA from its bottleneck, the direct edges ``i-1 -> i``: each layer puts ``i-1`` in
    ``i``'s band with probability ``pi`` (``(w-1)/(n-1)`` circular; exact truncated-band sum otherwise), so
    ``P(full after L) ~ exp(-(n-1)(1-pi)^L)`` and the median is ``L = ln((n-1)/ln 2) / -ln(1-pi)``."""
    n, w = check_int("n", n, 2), check_int("w", w, 1)
    left, right = window_offsets(w, False)
    if circular:
        pi = min(w, n) - 1
        pi /= n - 1
    else:
        d = np.concatenate([np.arange(-left, 0), np.arange(1, right + 1)])
        d = d[np.abs(d) < n]
        pi = float(np.sum(n - np.abs(d))) / (n * (n - 1))
    if pi <= 0:
        return None
    if pi >= 1:
        return 1.0
    return math.log((n - 1) / math.log(2)) / -math.log1p(-pi)


def causal_swa_scaling_law(n: int, w: int, w_swa: int | None = None) -> float:
    """Scaling law of causal SA+SWA's L* while ``w^3 < n`` (``docs/theory.md`` Sec. 5): the solution of

        L^3 (w_swa - 1)^2 (w - 1) = 6 n ln(n L (w_swa - 1))

    Why: a pair ``(j, j + x)`` with ``x`` just beyond the window's reach ``L (w_swa - 1)`` has no path without an SA
    shortcut inside ``[j, j + x]`` (causal paths cannot leave it); a shortcut ``a -> b`` in layer ``l`` completes a
    path when ``a`` is within the window's reach of ``j`` after ``l - 1`` layers and ``x - b`` within its reach in the
    last ``L - l``: ``sum_l (l - 1)(L - l) (w_swa - 1)^2 ~ L^3 (w_swa - 1)^2 / 6`` (key, query) pairs, each an SA
    edge with probability ``(w - 1)/(n - 1)``. The ``~ n L (w_swa - 1)`` hardest pairs are all covered when the
    expected number of such paths reaches ``ln`` of their number. Hence ``L* = Theta(n^(1/3) / w)`` up to a
    logarithm: not O(log_w n) until ``w ~ n^(1/3)``. Paths with several shortcuts make the measured L* grow a
    little slower (``ln ln`` rather than ``ln`` in the limit): the law is within 25% of the committed
    measurements with ``w^3 < n`` (0.77 at n = 2^20, w = 8)."""
    n, w = check_int("n", n, 2), check_int("w", w, 2)
    a = (w if w_swa is None else check_int("w_swa", w_swa, 2)) - 1
    layers = 1.0
    for _ in range(100):
        layers = (6 * n * math.log(n * layers * a) / (a * a * (w - 1))) ** (1 / 3)
    return layers


MODELS = {
    ("sa", False): "sa_full_probability",
    ("sa+swa", False): "sa_swa_full_probability",
    ("sa", True): "causal_full_probability(swa=False)",
    ("sa+swa", True): "causal_full_probability",
}


def full_probability(
    name: str,
    n: int,
    w: int,
    layers: int,
    causal: bool = False,
    circular: bool = False,
    targets: int | None = None,
) -> np.ndarray:
    """``P(full after L)`` for ``L = 1..layers`` from the sharp model of ``name`` (``sa`` or ``sa+swa``); with
    ``targets = K``, the probability that ``K`` random targets are all fully covered (what a sampled run measures).

    Receptive fields only grow, so the probability is made non-decreasing (running maximum): the clumping
    heuristics are built for rare failures and can dip where failure is all but certain anyway."""
    if targets is not None:
        targets = check_int("targets", targets, 1, n)
    if name == "sa" and not causal:
        probs = sa_full_probability(n, w, layers, circular, targets)
    elif name == "sa+swa" and not causal:
        probs = sa_swa_full_probability(n, w, layers, circular=circular, targets=targets)
    elif name in ("sa", "sa+swa"):
        probs = causal_full_probability(n, w, layers, swa=name == "sa+swa", circular=circular, targets=targets)
    else:
        raise ValueError(f"name: the sharp models cover 'sa' and 'sa+swa', got {name!r}")
    return np.maximum.accumulate(probs)


def predict_full_layer(
    name: str,
    n: int,
    w: int,
    causal: bool = False,
    circular: bool = False,
    max_layers: int = 64,
    targets: int | None = None,
) -> tuple[int | None, np.ndarray]:
    """The sharp prediction of L*: the first layer at which full coverage (of all positions, or of ``targets``
    random ones) is more likely than not, the L* most seeds reach, and the per-layer probabilities. ``None`` if not
    reached within ``max_layers``."""
    probs = full_probability(name, n, w, max_layers, causal, circular, targets)
    hits = np.flatnonzero(probs >= 0.5)
    return (int(hits[0]) + 1 if hits.size else None), probs
