"""The sharp model of causal coverage (causal SA and causal SA+SWA): :func:`causal_full_probability` from the
expected number of failure clumps (:func:`causal_failure_clumps`: a profile model along offsets,
:class:`CausalProfile`, with the run-branching table :func:`causal_run_miss_table` near the window's reach, row by
row :class:`RunMissTable`; both with the SA edge probability :func:`sa_key_probability`). Notation as in
:mod:`receptive.theory`; derivations: ``docs/theory.md`` Sec. 5.
"""

from __future__ import annotations

import numpy as np

from ..validation import check_bool, check_int
from ..windows import window_offsets
from ._occupancy import _band_sizes, _check_model_args, _mixed_empty_prob


def causal_full_probability(
    n: int,
    w: int,
    layers: int,
    swa: bool = True,
    w_swa: int | None = None,
    circular: bool = False,
    targets: int | None = None,
) -> np.ndarray:
    """``P(full coverage after L layers)`` of causal SA or causal SA+SWA for ``L = 1..layers``.

    ``exp(-N_L)`` with ``N_L`` the expected number of failure clumps, :func:`causal_failure_clumps` (the model and
    its derivation are there); ``swa=False`` gives pure causal SA.

    Parameters
    ----------
    n : int
        Sequence length, ``>= 2``.
    w : int
        SA window size, ``>= 1``.
    layers : int
        Number of layers, ``>= 1``.
    swa : bool, optional
        Add the causal sliding window (SA+SWA); ``False``: pure causal SA.
    w_swa : int or None, optional
        Causal window size; ``None``: ``w``.
    circular : bool, optional
        Circular SA bands.
    targets : int or None, optional
        ``K`` sampled target queries; ``None``: all ``n``.

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
    >>> from receptive.theory import causal_full_probability
    >>> causal_full_probability(256, 8, 6).round(2)
    array([0.  , 0.  , 0.  , 0.57, 1.  , 1.  ])

    References
    ----------
    * Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    * Aldous 1989, Probability Approximations via the Poisson Clumping Heuristic, Springer.
    """
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
    """Expected number ``N_L`` of failure clumps of causal SA or SA+SWA after ``L = 1..layers`` layers.

    A failure clump is a group of neighbouring missed (key, query) pairs; ``swa=False`` gives pure causal SA, and
    ``P(full after L) = exp(-N_L)`` (:func:`causal_full_probability`).

    Causal paths never move backwards, so the forward set of key ``j`` lives on offsets ``x = i - j >= 0`` and,
    away from the end of the sequence, its law does not depend on ``j``. The *profile model* tracks
    ``u(x) = P(x missed)`` and ``u2(x) = P(x-1 and x missed)`` (a Markov chain along offsets, :class:`CausalProfile`).
    Offset ``x`` is missed
    by the next layer iff its causal SWA window (``w_swa`` offsets ending at ``x``) is missed and its SA band's other
    ``w_s - 1`` members miss the ``C(x) = sum_{y<x} (1 - u(y))`` tokens before it (later ones are masked)::

        u'(x) = P(window missed) * C(n-1-(w_s-1), C(x)) / C(n-1, C(x)),
        P(window of a ending at x missed) = u(x) prod_{y=x-a+2..x} u2(y)/u(y)

    It averages ``C(x)``, and the miss probability is convex in it, so it is optimistic where the last pairs are
    decided by rare slow keys: the intermediate distances just beyond the window's reach ``L (w_swa - 1)``. With the
    window (``swa=True``) those offsets ``x <= D`` are taken from the run-branching model
    (:func:`causal_run_miss_table`), which keeps that randomness exactly in the Poisson limit; the profile model
    covers ``x > D`` (``D = 6 L (w_swa - 1)``, where the branching model's misses have died out). Failures are counted
    as clumps (Aldous' Poisson clumping heuristic [1]_): a missed pair ``(j, j + x)`` starts a clump along ``x`` with
    probability ``r(x) = 1 - psi_2(x)/psi_1(x)`` (the next offset is not missed too) and, by the time-reversal
    symmetry of the causal pattern, along the keys with the same probability::

        N_L = sum_{x <= D} (n - x) psi_1(x) r(x)^2 + sum_{x > D} (n - x) (u_L(x) - u2_L(x)),  P(full) = exp(-N_L)

    No fitted constant. The clump count is set against the engine's 8-connected clumps of missed (key, query) pairs
    in ``docs/theory.md`` Sec. 5. One failure event can be split into several clumps by pairs that their own query's
    last-layer band rescues, so ``exp(-clumps)`` can underestimate ``P(full)``; sampled runs see only the per-pair
    misses of the run-branching table. The interval Monte Carlo model
    (:func:`receptive.theory.causal_interval_clumps`) counts failing targets and runs of failing keys
    instead.

    ``K`` sampled targets (queries): ``K/n`` of the pairs, declumped along the keys only (``r`` instead of ``r^2``).

    Pure causal SA needs the direct edge ``i-1 -> i`` for every ``i`` (a path between them cannot leave
    ``[i-1, i]``), so its L* is about ``(n/w) ln n`` (:func:`causal_sa_full_layer_estimate`), not O(log_w n) [2]_.

    Parameters
    ----------
    n : int
        Sequence length, ``>= 2``.
    w : int
        SA window size, ``>= 1``.
    layers : int
        Number of layers, ``>= 1``.
    swa : bool, optional
        Add the causal sliding window (SA+SWA); ``False``: pure causal SA.
    w_swa : int or None, optional
        Causal window size; ``None``: ``w``.
    circular : bool, optional
        Circular SA bands.
    targets : int or None, optional
        ``K`` sampled target queries; ``None``: all ``n``.

    Returns
    -------
    numpy.ndarray
        ``N_L`` for ``L = 1..layers``, shape ``(layers,)`` (zeros once below ``1e-12``).

    Raises
    ------
    TypeError
        If an integer argument is not an integer or a flag is not a bool.
    ValueError
        If an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import causal_failure_clumps
    >>> clumps = causal_failure_clumps(256, 8, 6)
    >>> bool(clumps[2] > 1 > clumps[3]), bool(clumps[-1] < 1e-9)
    (True, True)

    References
    ----------
    .. [1] Aldous 1989, Probability Approximations via the Poisson Clumping Heuristic, Springer.
    .. [2] Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    n, w, layers = _check_model_args(n, w, layers, circular)
    swa = check_bool("swa", swa)
    a = (w if w_swa is None else check_int("w_swa", w_swa, 1)) if swa else 1
    x = np.arange(n)
    profile_model = CausalProfile(n, w, a, circular)
    share = 1.0 if targets is None else targets / n  # K random targets hold a share K/n of the (key, query) pairs
    branching = None
    if swa and a > 1:
        p = sa_key_probability(n, w, circular)
        depth = min(n - 1, 6 * layers * (a - 1) + a)
        branching = (RunMissTable(p, a, depth, 1), RunMissTable(p, a, depth, 2))
    out = []
    for layer in range(1, layers + 1):
        u, u2 = profile_model.step()
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
    """``psi[t, d]``: probability that ``m`` consecutive targets are all missed, in the run-branching model.

    The targets are the last ``d`` positions after a newly reached token with ``t`` layers to go, in the
    run-branching model of causal SA+SWA (Poisson limit).

    A reached token starts a *run* that the causal window (``a`` keys) lengthens by ``a - 1`` per layer; ``k``
    layers later it holds ``c_k = k (a - 1) + 1`` tokens, each of which is an SA key of every later query with
    probability ``p`` (``E[w_s - 1]/(n - 1)``, :func:`sa_key_probability`). In the next layer the window extends the
    run to ``c_{k+1} - 1`` anyway, so only a shortcut that lands at ``e >= c_{k+1}`` reaches something new: it does so
    with rate ``p c_k`` per position and starts a child run there. Ignoring the later overlap of runs (a run that
    grows into a child's start shares that child's tokens; the branching is the sparse early phase that decides
    intermediate distances), the targets are missed iff no run of the family covers one::

        psi_m(d, t) = [d > t (a-1) + m - 1] exp( -p sum_{k=0}^{t-1} c_k sum_{e=c_{k+1}}^{d} (1 - psi_m(d - e, t-k-1)) )

    computed for ``t = 0..layers``, ``d = 0..depth`` with prefix sums in ``O(depth layers^2)`` (row by row:
    :class:`RunMissTable`). A pair ``(j, j + x)`` is missed after ``L`` layers with probability ``psi_1(x, L)`` (the
    key itself is the root run). The ignored overlap makes it a little optimistic about single pairs near L*
    (``tests/receptive/test_causal_model.py`` checks it against the engine).

    Parameters
    ----------
    p : float
        Probability that a token is an SA key of a given later query, in ``[0, 1]``.
    a : int
        Causal window size, ``>= 1``.
    layers : int
        Layers to go, ``>= 0``.
    depth : int
        Largest distance ``d``, ``>= 0``.
    m : int, optional
        Consecutive targets, ``>= 1``.

    Returns
    -------
    numpy.ndarray
        ``psi``, shape ``(layers + 1, depth + 1)``.

    Raises
    ------
    TypeError
        If ``p`` is not a number or ``a``, ``layers``, ``depth`` or ``m`` is not an integer.
    ValueError
        If ``p`` is not in ``[0, 1]`` or an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import causal_run_miss_table
    >>> psi = causal_run_miss_table(0.05, 4, 3, 8)
    >>> psi.shape, psi[1].round(3).tolist()
    ((4, 9), [0.0, 0.0, 0.0, 0.0, 0.951, 0.951, 0.951, 0.951, 0.951])

    References
    ----------
    * Harris 1963, The Theory of Branching Processes, Springer.
    * Aldous 1989, Probability Approximations via the Poisson Clumping Heuristic, Springer.
    """
    table = RunMissTable(p, a, depth, m)
    rows = [table.psi[0]] + [table.next() for _ in range(check_int("layers", layers, 0))]
    return np.array(rows)


class RunMissTable:
    """The rows of :func:`causal_run_miss_table` one at a time, so that a model that stops early pays only for the
    layers it uses: row ``t`` (``t`` layers to go) is computed from the rows before it by :meth:`next`.

    Parameters
    ----------
    p : float
        Probability that a token is an SA key of a given later query, in ``[0, 1]`` (:func:`sa_key_probability`).
    a : int
        Causal window size, ``>= 1``.
    depth : int
        Largest distance ``d``, ``>= 0``.
    m : int, optional
        Consecutive targets, ``>= 1``.

    Attributes
    ----------
    psi : list of numpy.ndarray
        The rows so far, ``psi[t][d]``; row 0 (no layer to go): the targets are missed iff the token is not one of
        them, ``d >= m``.
    prefix : list of numpy.ndarray
        For each row, the prefix sums ``prefix[t][d] = sum_{e < d} (1 - psi[t][e])`` the next rows are made of.
    d : numpy.ndarray
        The distances ``0 .. depth``.
    step : int
        ``a - 1``, what the window adds to a run per layer.
    p, depth, m
        As given.

    Raises
    ------
    TypeError
        If ``p`` is not a number or ``a``, ``depth`` or ``m`` is not an integer.
    ValueError
        If ``p`` is not in ``[0, 1]`` or an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import RunMissTable
    >>> table = RunMissTable(0.05, 4, 8)
    >>> table.next().round(3).tolist()  # row 1 of causal_run_miss_table(0.05, 4, 1, 8)
    [0.0, 0.0, 0.0, 0.0, 0.951, 0.951, 0.951, 0.951, 0.951]
    >>> len(table.psi)
    2
    """

    def __init__(self, p: float, a: int, depth: int, m: int = 1):
        if isinstance(p, bool) or not isinstance(p, int | float | np.integer | np.floating):
            raise TypeError(f"p: expected a probability in [0, 1], got {type(p).__name__}")
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p: expected a probability in [0, 1], got {p!r}")
        a, depth, m = check_int("a", a, 1), check_int("depth", depth, 0), check_int("m", m, 1)
        self.p, self.step, self.depth, self.m = p, a - 1, depth, m
        first = np.zeros(depth + 1)
        first[m:] = 1.0
        self.psi = [first]
        self.prefix = [np.concatenate([[0.0], np.cumsum(1 - first)])]
        self.d = np.arange(depth + 1)

    def next(self) -> np.ndarray:
        """Compute the next row, ``psi[t]`` for ``t = len(psi)``, and append it (with its prefix sums).

        Returns
        -------
        numpy.ndarray
            ``psi_m(d, t)`` for ``d = 0 .. depth``.

        Examples
        --------
        >>> table = RunMissTable(0.05, 4, 8)
        >>> [float(table.next()[-1].round(3)) for _ in range(2)]
        [0.951, 0.669]
        """
        t = len(self.psi)
        total = np.zeros(self.depth + 1)
        for k in range(t):
            c = k * self.step + 1  # the run's tokens; the window covers up to c + step - 1 in this layer anyway
            total += c * self.prefix[t - k - 1][np.clip(self.d - c - self.step, -1, self.depth) + 1]
        row = np.where(self.d > t * self.step + self.m - 1, np.exp(-self.p * total), 0.0)
        self.psi.append(row)
        self.prefix.append(np.concatenate([[0.0], np.cumsum(1 - row)]))
        return row


class CausalProfile:
    """The profile model of :func:`causal_failure_clumps`, one layer at a time: ``u(x) = P(x missed)`` and
    ``u2(x) = P(x-1 and x missed)`` along the offsets ``x = i - j = 0 .. n-1`` of a key ``j``'s forward set.

    Offset ``x`` is missed by the next layer iff its causal window (``a`` offsets ending at ``x``) is missed and its SA
    band's other ``w_s - 1`` members miss the ``C(x) = sum_{y<x} (1 - u(y))`` tokens before it (later ones are
    masked)::

        u'(x) = P(window missed) * C(n-1-(w_s-1), C(x)) / C(n-1, C(x)),
        P(window of a ending at x missed) = u(x) prod_{y=x-a+2..x} u2(y)/u(y)

    (``u2'`` the same for two neighbouring offsets). Before the first layer only offset 0, the key itself, is
    reached: ``u(0) = 0``, and no pair of offsets ending at 0 or 1 is missed together.

    Parameters
    ----------
    n : int
        Sequence length, ``>= 2``.
    w : int
        SA window size, ``>= 1``.
    a : int
        Causal window size (keys, self included), ``>= 1``; ``1``: pure causal SA.
    circular : bool, optional
        Circular SA bands.

    Attributes
    ----------
    u, u2 : numpy.ndarray
        The profile after ``layers`` layers, shape ``(n,)``.
    layers : int
        Layers applied so far.

    Raises
    ------
    TypeError
        If an integer argument is not an integer or ``circular`` is not a bool.
    ValueError
        If an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import CausalProfile
    >>> profile = CausalProfile(256, 8, 8)
    >>> u, u2 = profile.step()
    >>> profile.layers, float(u[:8].max()), bool(0 < u[8] < 1)  # the window reaches offsets 0..7 for sure
    (1, 0.0, True)
    """

    def __init__(self, n: int, w: int, a: int, circular: bool = False):
        n, w, a = check_int("n", n, 2), check_int("w", w, 1), check_int("a", a, 1)
        self._band, self._band_freq = _band_sizes(n, *window_offsets(w, False), check_bool("circular", circular))
        self._a = a
        self.u, self.u2 = np.ones(n), np.ones(n)
        self.u[0] = 0.0
        self.u2[:2] = 0.0
        self.layers = 0

    def step(self) -> tuple[np.ndarray, np.ndarray]:
        """Apply one layer: ``(u, u2) -> (u', u2')``.

        Returns
        -------
        u, u2 : numpy.ndarray
            The new profile (also kept in ``u`` and ``u2``).

        Examples
        --------
        >>> profile = CausalProfile(64, 4, 4)
        >>> [float(profile.step()[0].sum().round(2)) for _ in range(3)]
        [57.2, 35.98, 5.59]
        """
        u, u2 = self.u, self.u2
        n = u.size  # in place where it can be: at n = 2^22 each temporary is 32 MB
        before = np.zeros(n)
        np.cumsum(1 - u[:-1], out=before[1:])
        miss = _mixed_empty_prob(self._band - 1, self._band_freq, before, n - 1)
        ratio = np.divide(u2, u, out=np.zeros(n), where=u > 0)
        ratio[0] = 1.0  # offsets before the key are never reached
        log_cum = np.zeros(n + 1)
        np.cumsum(np.log(np.maximum(ratio, 1e-300, out=ratio), out=ratio), out=log_cum[1:])
        u_new = _window_missed(u, log_cum, self._a)
        u_new *= miss
        u2_new = _window_missed(u, log_cum, self._a + 1)
        u2_new *= miss
        u2_new[1:] *= miss[:-1]
        u_new[0] = 0.0
        u2_new = np.minimum(u2_new, u_new)
        u2_new[1:] = np.minimum(u2_new[1:], u_new[:-1])
        u2_new[0] = 0.0
        self.u, self.u2 = u_new, u2_new
        self.layers += 1
        return u_new, u2_new


def sa_key_probability(n: int, w: int, circular: bool = False) -> float:
    """``p = E[w_s - 1] / (n - 1)``: the probability that a given other token is in a query's SA band in one layer.

    ``w_s`` is the size of the band of the query's slot (truncated at the ends of the order unless circular), and
    the other ``w_s - 1`` members are uniform over the other ``n - 1`` tokens. The per-pair, per-layer edge
    probability of the causal models: the run-branching table (:func:`causal_run_miss_table`) and the interval
    process (:func:`receptive.theory.interval_event_rates`).

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
    float
        ``p``, in ``[0, 1]``.

    Raises
    ------
    TypeError
        If an integer argument is not an integer or ``circular`` is not a bool.
    ValueError
        If an integer argument is out of range.

    Examples
    --------
    >>> from receptive.theory import sa_key_probability
    >>> sa_key_probability(9, 3, circular=True), round(sa_key_probability(9, 3), 4)  # (16 / 9) / 8 truncated
    (0.25, 0.2222)
    """
    n, w = check_int("n", n, 2), check_int("w", w, 1)
    band, band_freq = _band_sizes(n, *window_offsets(w, False), check_bool("circular", circular))
    return float(np.sum(band_freq * (band - 1))) / (n - 1)


def _window_missed(u: np.ndarray, log_cum: np.ndarray, length: int) -> np.ndarray:
    """``P(offsets x-length+1 .. x all missed) = u(x) prod_{y=x-length+2..x} u2(y)/u(y)`` for every ``x``
    (``log_cum``: prefix sums of ``log(u2/u)``)."""
    n, k = u.size, length - 2  # the product runs over y = max(x - k, 0) .. x: empty for a window of one offset
    if k < 0:
        return u.copy()
    out = log_cum[1:].copy()
    if k < n:
        out[k:] -= log_cum[: n - k]
    np.exp(out, out=out)
    out *= u
    return out
