"""Closed forms of coverage through depth: SWA exactly, SA by its mean field, and the scaling laws of L*.

Notation as in :mod:`receptive.theory`; derivations: ``docs/theory.md``.

* SWA: exact (receptive fields are intervals), :func:`swa_coverage`, :func:`swa_full_layer`, and its O(n/w) scale
  :func:`swa_layers_estimate` (Sec. 1).
* SA, mean field (Jin & Sui 2026, arXiv 2604.00754, Sec. 3): :func:`sa_mean_coverage`, :func:`sa_half_layer`,
  :func:`sa_full_layer_estimate` (coupon collector), :func:`sa_union_bound_layer` (explicit O(log_w n) bound), its
  O(log_w n) scale :func:`log_w_n`, and the growth rate of SA+SWA's forward sets :func:`sa_swa_growth_rate`
  (Sec. 2 and 4).
* Causal (Sec. 5): the median L* of pure causal SA from its bottleneck, the direct edges ``i-1 -> i``
  (:func:`causal_sa_full_layer_estimate`), and the scaling law of causal SA+SWA (:func:`causal_swa_scaling_law`).
"""

from __future__ import annotations

import math

import numpy as np

from ..validation import check_bool, check_int
from ..windows import window_offsets

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
    from ..patterns import SlidingWindow

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
    from ..patterns import SlidingWindow

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


# ------------------------------------------------------------------------------------------------ causal


def causal_sa_full_layer_estimate(n: int, w: int, circular: bool = False) -> float | None:
    """Median L* of pure causal SA from its bottleneck, the direct edges ``i-1 -> i``.

    Each layer puts ``i-1`` in ``i``'s band with probability ``pi`` (``(w-1)/(n-1)`` circular; exact truncated-band
    sum otherwise), so ``P(full after L) ~ exp(-(n-1)(1-pi)^L)`` and the median is
    ``L = ln((n-1)/ln 2) / -ln(1-pi)``.

    Parameters
    ----------
    n : int
        Sequence length, ``>= 2``.
    w : int
        SA window size, ``>= 1``.
    circular : bool, optional
        Circular SA bands.

    Returns
    -------
    float or None
        The median L* (not rounded), ``1.0`` if ``pi = 1``, ``None`` if ``pi = 0``.

    Raises
    ------
    TypeError
        If an integer argument is not an integer or a flag is not a bool.
    ValueError
        If an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import causal_sa_full_layer_estimate
    >>> round(causal_sa_full_layer_estimate(256, 8), 2), causal_sa_full_layer_estimate(2, 1)
    (214.18, None)

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    n, w = check_int("n", n, 2), check_int("w", w, 1)
    left, right = window_offsets(w, False)
    if check_bool("circular", circular):
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
    """Scaling law of causal SA+SWA's L* while ``w^3 < n`` (``docs/theory.md`` Sec. 5).

    The solution of::

        L^3 (w_swa - 1)^2 (w - 1) = 6 n ln(n L (w_swa - 1))

    Why: a pair ``(j, j + x)`` with ``x`` just beyond the window's reach ``L (w_swa - 1)`` has no path without an SA
    shortcut inside ``[j, j + x]`` (causal paths cannot leave it); a shortcut ``a -> b`` in layer ``l`` completes a
    path when ``a`` is within the window's reach of ``j`` after ``l - 1`` layers and ``x - b`` within its reach in the
    last ``L - l``: ``sum_l (l - 1)(L - l) (w_swa - 1)^2 ~ L^3 (w_swa - 1)^2 / 6`` (key, query) pairs, each an SA
    edge with probability ``(w - 1)/(n - 1)``. The ``~ n L (w_swa - 1)`` hardest pairs are all covered when the
    expected number of such paths reaches ``ln`` of their number. Hence ``L* = Theta(n^(1/3) / w)`` up to a
    logarithm: not O(log_w n) until ``w ~ n^(1/3)``. Paths with several shortcuts make L* grow a little slower
    (``ln ln`` rather than ``ln`` in the limit), so the law is an approximation, not a bound.

    Parameters
    ----------
    n : int
        Sequence length, ``>= 2``.
    w : int
        SA window size, ``>= 2``.
    w_swa : int or None, optional
        Causal window size, ``>= 2``; ``None``: ``w``.

    Returns
    -------
    float
        ``L`` (fixed-point iteration, not rounded).

    Raises
    ------
    TypeError
        If an integer argument is not an integer.
    ValueError
        If an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import causal_swa_scaling_law
    >>> round(causal_swa_scaling_law(1024, 8), 3)
    5.752

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    n, w = check_int("n", n, 2), check_int("w", w, 2)
    a = (w if w_swa is None else check_int("w_swa", w_swa, 2)) - 1
    layers = 1.0
    for _ in range(100):
        layers = (6 * n * math.log(n * layers * a) / (a * a * (w - 1))) ** (1 / 3)
    return layers
