"""Predictions of coverage through depth, from the simple scaling laws to a sharp model of L*.

Notation: ``n`` positions, windows of ``w`` keys (self included, :mod:`receptive.windows`), ``L`` layers,
``RF_L(i)`` the receptive field of query ``i`` and ``F_L(j) = {i : j in RF_L(i)}`` the forward set of key ``j``;
coverage is full at ``L`` iff every ``F_L(j)`` is everything admissible. Derivations: ``docs/theory.md``.

* SWA: exact (receptive fields are intervals), :func:`swa_coverage`, :func:`swa_full_layer`.
* SA, mean field (Jin & Sui 2026, arXiv 2604.00754, Sec. 3): :func:`sa_mean_coverage`, :func:`sa_half_layer`,
  :func:`sa_full_layer_estimate` (coupon collector), :func:`sa_union_bound_layer` (explicit O(log_w n) bound).
* Sharp models, one per regime, each giving ``P(coverage full after L layers)``:
  :func:`sa_full_probability` (bidirectional SA), :func:`sa_swa_full_probability` (bidirectional SA+SWA),
  :func:`causal_full_probability` (causal SA and SA+SWA, from :func:`causal_failure_clumps`; the causal model lives
  in :mod:`receptive.theory_causal` and every public name of it is re-exported here);
  :func:`predict_full_layer` picks one and returns the first layer at which full coverage is more likely than not.
* Causal SA+SWA by Monte Carlo of the interval process, counting failing targets and runs of failing keys
  (:mod:`receptive.theory_causal_interval`, :func:`~receptive.theory_causal_interval.causal_interval_clumps`; seconds
  to two minutes per point, so :func:`predict_full_layer` uses it only when asked, ``model="interval"``).
"""

from __future__ import annotations

import math

import numpy as np

from ._occupancy import _band_sizes, _check_model_args, _empty_prob
from .theory_causal import causal_failure_clumps as causal_failure_clumps
from .theory_causal import causal_full_probability
from .theory_causal import causal_run_miss_table as causal_run_miss_table
from .theory_causal import causal_sa_full_layer_estimate as causal_sa_full_layer_estimate
from .theory_causal import causal_swa_scaling_law as causal_swa_scaling_law
from .validation import check_bool, check_choice, check_int
from .windows import window_offsets

# ---------------------------------------------------------------------------------------------- scaling laws


def log_w_n(n: int, w: int) -> float:
    """``log n / log w``: the depth at which ``w^L`` paths could first reach ``n`` tokens.

    SA's O(log_w n) scale (Jin & Sui 2026, arXiv 2604.00754). Infinite for ``w = 1``.

    Parameters
    ----------
    n : int
        Sequence length, ``>= 1``.
    w : int
        Window size, ``>= 1``.

    Returns
    -------
    float
        ``log n / log w``, ``math.inf`` for ``w = 1``.

    Raises
    ------
    TypeError
        If an integer argument is not an integer.
    ValueError
        If an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import log_w_n
    >>> log_w_n(1024, 32), log_w_n(1024, 1)
    (2.0, inf)

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    n, w = check_int("n", n, 1), check_int("w", w, 1)
    return math.inf if w == 1 else math.log(n) / math.log(w)


def swa_layers_estimate(n: int, w: int) -> float:
    """``n / w``: the O(n/w) depth sliding windows need (exact value: :func:`swa_full_layer`).

    Parameters
    ----------
    n : int
        Sequence length, ``>= 1``.
    w : int
        Window size, ``>= 1``.

    Returns
    -------
    float
        ``n / w``.

    Raises
    ------
    TypeError
        If an integer argument is not an integer.
    ValueError
        If an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import swa_layers_estimate
    >>> swa_layers_estimate(1024, 32)
    32.0

    References
    ----------
    Beltagy, Peters & Cohan 2020, Longformer: The Long-Document Transformer, arXiv 2004.05150 (sliding windows).
    """
    return check_int("n", n, 1) / check_int("w", w, 1)


def swa_coverage(n: int, w: int, layers: int, causal: bool = False, circular: bool = False) -> dict:
    """Exact SWA coverage after ``layers`` layers: ``{"mean", "min", "full_fraction"}``.

    ``RF_L(i) = [i - L*left, i + L*right]`` clipped to ``0..n-1`` (causal: ``[i - L(w-1), i]``, ``A(i) = 0..i``);
    circular two-sided windows: ``min(n, L(w-1) + 1)`` positions. Offsets from :func:`receptive.windows`.

    Parameters
    ----------
    n : int
        Sequence length.
    w : int
        Window size (self included).
    layers : int
        Depth ``L``, ``>= 0``.
    causal : bool, optional
        Causal windows (query ``i`` sees ``i - w + 1 .. i``).
    circular : bool, optional
        Wrap two-sided windows around the ends.

    Returns
    -------
    dict
        ``"mean"`` and ``"min"``: mean and minimum over queries of ``|RF_L(i)| / |A(i)|``; ``"full_fraction"``:
        the fraction of queries whose field is everything admissible.

    Raises
    ------
    TypeError
        If an integer argument is not an integer or a flag is not a bool.
    ValueError
        If an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import swa_coverage
    >>> cov = swa_coverage(16, 3, 4, causal=True)
    >>> round(cov["mean"], 3), cov["min"], cov["full_fraction"]
    (0.873, 0.5625, 0.5625)

    References
    ----------
    Beltagy, Peters & Cohan 2020, Longformer: The Long-Document Transformer, arXiv 2004.05150 (sliding windows).
    """
    from .patterns import SlidingWindow

    pattern = SlidingWindow(n, w, causal, circular)
    sizes = pattern.closed_form_counts(check_int("layers", layers, 0))
    admissible = np.arange(1, n + 1) if causal else np.full(n, n)
    cov = sizes / admissible
    return {"mean": float(cov.mean()), "min": float(cov.min()), "full_fraction": float(np.mean(cov == 1.0))}


def swa_full_layer(n: int, w: int, causal: bool = False, circular: bool = False) -> int | None:
    """Exact SWA L*: the first depth at which every receptive field is full.

    ``ceil((n-1)/(w-1))`` causal or circular, ``ceil((n-1)/((w-1)//2))`` two-sided truncated (the shorter side
    limits the first and last positions); ``None`` when that side is empty.

    Parameters
    ----------
    n : int
        Sequence length.
    w : int
        Window size (self included).
    causal : bool, optional
        Causal windows.
    circular : bool, optional
        Wrap two-sided windows around the ends.

    Returns
    -------
    int or None
        L*, or ``None`` if coverage never becomes full.

    Raises
    ------
    TypeError
        If an integer argument is not an integer or a flag is not a bool.
    ValueError
        If an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import swa_full_layer
    >>> swa_full_layer(1024, 33, causal=True), swa_full_layer(1024, 33), swa_full_layer(16, 2)
    (32, 64, None)

    References
    ----------
    Beltagy, Peters & Cohan 2020, Longformer: The Long-Document Transformer, arXiv 2004.05150 (sliding windows).
    """
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

    Parameters
    ----------
    n : int
        Sequence length, ``>= 1``.
    w : int
        Window size, ``>= 1``.
    layers : int
        Number of layers, ``>= 1``.

    Returns
    -------
    numpy.ndarray
        ``c_1 .. c_layers``, shape ``(layers,)``.

    Raises
    ------
    TypeError
        If an integer argument is not an integer.
    ValueError
        If an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import sa_mean_coverage
    >>> sa_mean_coverage(1024, 8, 4).round(3)
    array([0.008, 0.061, 0.394, 0.982])

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    n, w, layers = check_int("n", n, 1), check_int("w", w, 1), check_int("layers", layers, 1)
    exponents = np.arange(1, layers + 1, dtype=float) * math.log(w)
    return -np.expm1(np.exp(exponents) * math.log1p(-1.0 / n)) if n > 1 else np.ones(layers)


def sa_half_layer(n: int, w: int) -> int | None:
    """First layer with mean-field coverage ``>= 1/2``: ``(1 - 1/n)^(w^L) <= 1/2``, i.e. ``w^L >= n ln 2``.

    Parameters
    ----------
    n : int
        Sequence length, ``>= 2``.
    w : int
        Window size, ``>= 1``.

    Returns
    -------
    int or None
        The layer (``>= 1``), ``None`` for ``w = 1``.

    Raises
    ------
    TypeError
        If an integer argument is not an integer.
    ValueError
        If an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import sa_half_layer
    >>> sa_half_layer(1024, 8), sa_half_layer(1024, 1)
    (4, None)

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    n, w = check_int("n", n, 2), check_int("w", w, 1)
    if w == 1:
        return None
    return max(1, math.ceil(math.log(math.log(2) / -math.log1p(-1.0 / n)) / math.log(w) - 1e-12))


def sa_full_layer_estimate(n: int, w: int) -> int | None:
    """Coupon-collector depth for full SA coverage under the mean field.

    The first ``L`` with fewer than one expected uncovered (query, key) pair, ``n^2 (1 - 1/n)^(w^L) < 1``, i.e.
    ``w^L > 2 n ln n`` for large n::

        L_cc = ceil( log(2 n ln n) / log w )

    ``None`` for ``w = 1`` (no mixing). Bidirectional only; causal SA is another regime
    (:func:`causal_sa_full_layer_estimate`).

    Parameters
    ----------
    n : int
        Sequence length, ``>= 1``.
    w : int
        Window size, ``>= 1``.

    Returns
    -------
    int or None
        ``L_cc`` (``1`` for ``n = 1``), ``None`` for ``w = 1``.

    Raises
    ------
    TypeError
        If an integer argument is not an integer.
    ValueError
        If an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import sa_full_layer_estimate
    >>> sa_full_layer_estimate(1024, 8), sa_full_layer_estimate(1024, 1)
    (5, None)

    References
    ----------
    * Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    * Feller 1968, An Introduction to Probability Theory and Its Applications, Vol. 1, 3rd ed., Wiley (coupon
      collector).
    """
    n, w = check_int("n", n, 1), check_int("w", w, 1)
    if n == 1:
        return 1
    if w == 1:
        return None
    return max(1, math.ceil(math.log(-2 * math.log(n) / math.log1p(-1.0 / n)) / math.log(w)))


SA_FORMULA = "L_cc = ceil(log(2 n ln n) / log w): fewer than one expected uncovered pair (mean-field coupon collector)"


def sa_union_bound_layer(n: int, w: int, delta: float = 0.05) -> int | None:
    """Depth of full mean-field SA coverage with probability ``>= 1 - delta``, by the union bound.

    The union runs over the ``n^2`` (query, key) pairs of the mean-field model::

        P(not full after L) <= n^2 (1 - 1/n)^(w^L) <= n^2 exp(-w^L / n) <= delta
        <=>  L >= log_w n + log_w(2 ln n + ln(1/delta))

    so ``L* <= log_w n + log_w(2 ln n + ln(1/delta)) + 1 = (1 + o(1)) log_w n``: the O(log_w n) statement with its
    constants. (A bound on the model; the sweep of ``python -m receptive.bound`` checks it against the engine.)

    Parameters
    ----------
    n : int
        Sequence length, ``>= 2``.
    w : int
        Window size, ``>= 1``.
    delta : float, optional
        Allowed failure probability, in ``(0, 1)``.

    Returns
    -------
    int or None
        The bound on L*, ``None`` for ``w = 1``.

    Raises
    ------
    TypeError
        If ``n`` or ``w`` is not an integer.
    ValueError
        If ``n`` or ``w`` is out of range or ``delta`` is not in ``(0, 1)``.

    Examples
    --------
    >>> from receptive.theory import sa_union_bound_layer
    >>> sa_union_bound_layer(1024, 8), sa_union_bound_layer(1024, 8, delta=1e-6)
    (5, 5)

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    n, w = check_int("n", n, 2), check_int("w", w, 1)
    if not 0 < delta < 1:
        raise ValueError(f"delta: expected a probability in (0, 1), got {delta!r}")
    if w == 1:
        return None
    return max(1, math.ceil(math.log(n * (2 * math.log(n) + math.log(1 / delta))) / math.log(w)))


def sa_swa_growth_rate(w_sa: int, w_swa: int) -> float:
    """Per-layer growth of SA+SWA forward sets while they are small.

    The Perron root of the run model ``(f, k) -> (w_sa f + (w_swa - 1) k, (w_sa - 1) f + k)`` (``f`` tokens in
    ``k`` runs: SWA lengthens every run by ``w_swa - 1``, SA sends every token to ``w_sa - 1`` random new
    singletons)::

        lambda = ((w_sa + 1) + sqrt((w_sa - 1)^2 + 4 (w_sa - 1)(w_swa - 1))) / 2

    For ``w_sa = w_swa = w`` this tends to ``phi * w`` (``phi`` the golden ratio), faster than SA's ``w``; the
    geometric mean ``sqrt(w_sa w_swa)`` would be the rate of paths alternating the two.

    Parameters
    ----------
    w_sa : int
        SA window size, ``>= 1``.
    w_swa : int
        SWA window size, ``>= 1``.

    Returns
    -------
    float
        ``lambda``.

    Raises
    ------
    TypeError
        If an integer argument is not an integer.
    ValueError
        If an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import sa_swa_growth_rate
    >>> round(sa_swa_growth_rate(8, 8), 3), sa_swa_growth_rate(1, 8)
    (12.326, 1.0)

    References
    ----------
    * Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    * Horn & Johnson 2013, Matrix Analysis, 2nd ed., Cambridge University Press, Ch. 8 (Perron root).
    """
    a, b = check_int("w_sa", w_sa, 1), check_int("w_swa", w_swa, 1)
    return ((a + 1) + math.sqrt((a - 1) ** 2 + 4 * (a - 1) * (b - 1))) / 2


# ------------------------------------------------------------------------------------------- sharp models


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


MODELS = {
    ("sa", False): "sa_full_probability",
    ("sa+swa", False): "sa_swa_full_probability",
    ("sa", True): "causal_full_probability(swa=False)",
    ("sa+swa", True): "causal_full_probability",
}


#: the models of causal SA+SWA that :func:`full_probability` offers (``receptive.bound.models`` dispatches between
#: them)
CAUSAL_SA_SWA_MODELS = ("analytic", "interval")


def full_probability(
    name: str,
    n: int,
    w: int,
    layers: int,
    causal: bool = False,
    circular: bool = False,
    targets: int | None = None,
    model: str = "analytic",
) -> np.ndarray:
    """``P(full after L)`` for ``L = 1..layers`` from the sharp model of ``name`` (``sa`` or ``sa+swa``).

    With ``targets = K``, the probability that ``K`` random targets are all fully covered (what a sampled run
    measures).

    ``model="interval"`` (causal, non-circular SA+SWA only): the interval Monte Carlo model
    (:func:`receptive.theory_causal_interval.causal_interval_clumps` with the evaluation's settings,
    ``EVALUATION_EVENTS`` events and ``EVALUATION_SEED``; seconds to two minutes per call,
    :class:`~receptive.theory_causal_interval.IntervalCostError` where it would cost more than ``EVALUATION_MAX_COST``
    word operations; ``docs/theory.md`` Sec. 5); the default ``"analytic"`` is the closed-form model, milliseconds
    per call.

    Receptive fields only grow, so the probability is made non-decreasing (running maximum): the clumping
    heuristics are built for rare failures and can dip where failure is all but certain anyway.

    Parameters
    ----------
    name : str
        ``"sa"`` or ``"sa+swa"``.
    n : int
        Sequence length, ``>= 2``.
    w : int
        Window size, ``>= 1``.
    layers : int
        Number of layers, ``>= 1``.
    causal : bool, optional
        Causal attention.
    circular : bool, optional
        Circular windows and bands.
    targets : int or None, optional
        ``K`` random targets, in ``1..n``; ``None``: all positions.
    model : str, optional
        One of :data:`CAUSAL_SA_SWA_MODELS`.

    Returns
    -------
    numpy.ndarray
        Non-decreasing ``P(full after L)`` for ``L = 1..layers``.

    Raises
    ------
    TypeError
        If an integer argument is not an integer, ``name`` or ``model`` is not a string, or a flag is not a bool.
    ValueError
        If an integer argument is out of range, ``name`` or ``model`` is unknown, or ``model="interval"`` is asked
        for another regime.
    receptive.theory_causal_interval.IntervalCostError
        If ``model="interval"`` would cost more than ``EVALUATION_MAX_COST``.

    Examples
    --------
    >>> from receptive.theory import full_probability
    >>> full_probability("sa", 256, 8, 5).round(3)
    array([0.   , 0.   , 0.   , 0.881, 1.   ])
    >>> bool((full_probability("sa+swa", 256, 8, 6, causal=True) <= 1).all())
    True

    References
    ----------
    * Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    * Aldous 1989, Probability Approximations via the Poisson Clumping Heuristic, Springer.
    """
    if not isinstance(name, str):
        raise TypeError(f"name: expected 'sa' or 'sa+swa' (a string), got {type(name).__name__}")
    causal, circular = check_bool("causal", causal), check_bool("circular", circular)
    if targets is not None:
        targets = check_int("targets", targets, 1, n)
    check_choice("model", model, CAUSAL_SA_SWA_MODELS)
    if model == "interval":
        if name != "sa+swa" or not causal or circular:
            raise ValueError(
                f"model: 'interval' covers causal, non-circular 'sa+swa' only, got {name!r} causal={causal} "
                f"circular={circular}"
            )
        from .theory_causal_interval import (
            EVALUATION_EVENTS,
            EVALUATION_MAX_COST,
            EVALUATION_SEED,
            causal_interval_clumps,
        )

        res = causal_interval_clumps(
            n, w, layers, targets, events=EVALUATION_EVENTS, seed=EVALUATION_SEED, max_cost=EVALUATION_MAX_COST
        )
        return res["full_probability"]
    if name == "sa" and not causal:
        probs = sa_full_probability(n, w, layers, circular, targets)
    elif name == "sa+swa" and not causal:
        probs = sa_swa_full_probability(n, w, layers, circular=circular, targets=targets)
    elif name in ("sa", "sa+swa"):
        probs = causal_full_probability(n, w, layers, swa=name == "sa+swa", circular=circular, targets=targets)
    else:
        raise ValueError(f"name: the sharp models cover 'sa' and 'sa+swa', got {name!r}")
    return np.maximum.accumulate(probs)


def median_layer(probabilities) -> int | None:
    """The first layer ``L`` (1-based) with ``P(full after L) = probabilities[L-1] >= 1/2``.

    The median L* of a model whose probabilities are non-decreasing, the L* most seeds reach; ``None`` if it is
    never reached.

    Parameters
    ----------
    probabilities : array_like of float
        ``P(full after L)`` for ``L = 1, 2, ...``, 1-d.

    Returns
    -------
    int or None
        The layer, or ``None``.

    Raises
    ------
    TypeError
        If ``probabilities`` are not numbers.
    ValueError
        If ``probabilities`` is not 1-d.

    Examples
    --------
    >>> from receptive.theory import median_layer
    >>> median_layer([0.1, 0.4, 0.6, 0.9]), median_layer([0.1])
    (3, None)
    """
    probs = np.asarray(probabilities)
    if isinstance(probabilities, str | bytes) or (probs.size and probs.dtype.kind not in "iuf"):
        raise TypeError(f"probabilities: expected numbers (one per layer), got {type(probabilities).__name__}")
    probs = probs.astype(float)
    if probs.ndim != 1:
        raise ValueError(f"probabilities: expected a 1-d array (one per layer), got shape {probs.shape}")
    hits = np.flatnonzero(probs >= 0.5)
    return int(hits[0]) + 1 if hits.size else None


def predict_full_layer(
    name: str,
    n: int,
    w: int,
    causal: bool = False,
    circular: bool = False,
    max_layers: int = 64,
    targets: int | None = None,
    model: str = "analytic",
) -> tuple[int | None, np.ndarray]:
    """The sharp prediction of L* and the per-layer probabilities.

    L* is the first layer at which full coverage (of all positions, or of ``targets`` random ones) is more likely
    than not, the L* most seeds reach; ``None`` if not reached within ``max_layers``.

    Parameters
    ----------
    name : str
        ``"sa"`` or ``"sa+swa"``.
    n : int
        Sequence length, ``>= 2``.
    w : int
        Window size, ``>= 1``.
    causal : bool, optional
        Causal attention.
    circular : bool, optional
        Circular windows and bands.
    max_layers : int, optional
        Number of layers modelled.
    targets : int or None, optional
        ``K`` random targets; ``None``: all positions.
    model : str, optional
        As in :func:`full_probability`.

    Returns
    -------
    layer : int or None
        The predicted L* (:func:`median_layer`).
    probabilities : numpy.ndarray
        ``P(full after L)`` for ``L = 1..max_layers``.

    Raises
    ------
    TypeError, ValueError
        As :func:`full_probability`.

    Examples
    --------
    >>> from receptive.theory import predict_full_layer
    >>> layer, probs = predict_full_layer("sa", 256, 8, max_layers=8)
    >>> layer, probs.shape
    (4, (8,))

    References
    ----------
    * Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    * Aldous 1989, Probability Approximations via the Poisson Clumping Heuristic, Springer.
    """
    probs = full_probability(name, n, w, max_layers, causal, circular, targets, model)
    return median_layer(probs), probs
