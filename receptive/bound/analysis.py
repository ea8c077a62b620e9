"""From per-task results to the verification of the coverage bound: L* per grid point next to the predictions,
the fit L* ~ a log_w n + b, the largest deviations, and whether the sharp model's probabilities hold."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.stats import binom, binomtest

from .. import theory
from .models import point_probabilities


@dataclass
class PointResult:
    """One grid point (pattern, n, w, causal, circular) over its seeds.

    ``mean_coverage``: the seeds' mean coverage per layer (exact points; empty for sampled ones); ``full_layers[s]``:
    L* of seed ``s`` (``None``: not full within ``max_layers``); ``typical``: the smallest layer at which at least
    half the seeds are fully covered (the L* most seeds reach, :func:`typical_layer`); ``predicted``: the sharp
    model's first layer with ``P(full) >= 1/2``; ``bound``: :func:`receptive.theory.sa_union_bound_layer` (delta =
    0.05, bidirectional only) and ``bound_holds`` whether every seed met it; ``probability_checks``: per layer where
    the outcome is uncertain, the measured fraction of full seeds, the predicted probability and the two-sided
    binomial p-value of the difference (:func:`binomial_checks`).

    Parameters
    ----------
    pattern : str
        ``"sa"`` or ``"sa+swa"``.
    n, w : int
        Sequence length and window.
    causal, circular : bool
        The mode.
    method : str
        ``"exact"`` or ``"sampled"``.
    seeds : list of int
        The seeds, in order.
    full_layers : list of int or None
        L* per seed.
    mean_coverage : list of float
        Mean coverage per layer.
    typical, predicted, coupon_collector, bound : int or None, optional
        Measured and predicted L* (see above).
    log_w_n : float, optional
        ``log n / log w``.
    ceil_log_w_n : int, optional
        Its ceiling.
    n_over_w : float, optional
        ``n / w``.
    bound_holds : bool or None, optional
        Whether every seed met ``bound``.
    probability_checks : list of dict, optional
        The calibration checks.
    note : str, optional
        A remark for the report.

    Examples
    --------
    >>> from receptive.bound.analysis import PointResult
    >>> res = PointResult("sa", 256, 8, False, False, "exact", [0, 1], [4, None], [])
    >>> res.reached, res.to_dict()["L_min"], res.to_dict()["L_max"]
    ([4], 4, None)
    """

    pattern: str
    n: int
    w: int
    causal: bool
    circular: bool
    method: str
    seeds: list[int]
    full_layers: list[int | None]
    mean_coverage: list[float] = field(repr=False)
    typical: int | None = None
    log_w_n: float = 0.0
    ceil_log_w_n: int = 0
    coupon_collector: int | None = None
    predicted: int | None = None
    n_over_w: float = 0.0
    bound: int | None = None
    bound_holds: bool | None = None
    probability_checks: list[dict] = field(default_factory=list)
    note: str = ""

    @property
    def reached(self) -> list[int]:
        """The L* of the seeds that reached full coverage, in seed order."""
        return [x for x in self.full_layers if x is not None]

    def to_dict(self) -> dict:
        """The fields as a dict, plus ``L_mean``, ``L_min`` and ``L_max`` over the seeds (``None`` where undefined)."""
        d = asdict(self)
        reached = self.reached
        d["L_mean"] = float(np.mean(reached)) if len(reached) == len(self.full_layers) else None
        d["L_min"] = min(reached) if reached else None
        d["L_max"] = max(reached) if len(reached) == len(self.full_layers) else None
        return d


def group_results(results: list[dict]) -> dict[tuple, dict[int, dict]]:
    """``{(pattern, n, w, causal, circular): {seed: {"method", "full_layer", "coverage"}}}`` from task results.

    A seed's L* is the latest of its slabs' (exact) or its sample's; its mean coverage per layer adds the slabs'
    coverage sums, a slab that stopped full carrying its last value forward. Seeds whose slabs do not yet cover all
    ``n`` sources are left out.

    Parameters
    ----------
    results : list of dict
        Task results, each with ``task`` (``pattern``, ``n``, ``w``, ``causal``, ``circular``, ``seed``,
        ``method``), ``positions``, ``coverage_sum`` (list of float or ``None``) and ``full_layer``.

    Returns
    -------
    dict
        Per grid point, per seed: ``method``, ``full_layer`` (``None`` if a slab is not full), ``coverage`` (mean
        coverage per layer, or ``None`` for sampled tasks) and ``positions``.

    Examples
    --------
    >>> from receptive.bound.analysis import group_results
    >>> task = {"pattern": "sa", "n": 16, "w": 4, "causal": False, "circular": False, "seed": 0, "method": "exact"}
    >>> rows = [
    ...     {"task": task, "positions": 8, "coverage_sum": cov, "full_layer": full}
    ...     for cov, full in (([2.0, 8.0], 2), ([8.0], 1))
    ... ]
    >>> point = group_results(rows)["sa", 16, 4, False, False][0]
    >>> point["full_layer"], [round(float(c), 3) for c in point["coverage"]]
    (2, [0.625, 1.0])
    """
    by_seed: dict[tuple, list[dict]] = defaultdict(list)
    for row in results:
        t = row["task"]
        by_seed[(t["pattern"], t["n"], t["w"], t["causal"], t["circular"], t["seed"])].append(row)
    points: dict[tuple, dict[int, dict]] = defaultdict(dict)
    for (pattern, n, w, causal, circular, seed), rows in by_seed.items():
        method = rows[0]["task"]["method"]
        positions = sum(r["positions"] for r in rows)
        if method == "exact" and positions != n:
            continue
        curves = [r["coverage_sum"] for r in rows if r["coverage_sum"] is not None]
        coverage = None  # sampled tasks measure L* only
        if curves and len(curves) == len(rows):
            layers = max(len(c) for c in curves)
            coverage = list(sum(np.pad(np.asarray(c), (0, layers - len(c)), mode="edge") for c in curves) / positions)
        full = [r["full_layer"] for r in rows]
        points[(pattern, n, w, causal, circular)][seed] = {
            "method": method,
            "full_layer": None if any(f is None for f in full) else max(full),
            "coverage": coverage,
            "positions": positions,
        }
    return points


def _check_full_layers(full_layers) -> list[int | None]:
    """``full_layers`` as a list, validated: non-empty, each ``None`` or an integer >= 1."""
    if isinstance(full_layers, (str, bytes)) or not hasattr(full_layers, "__len__") or len(full_layers) == 0:
        raise ValueError(f"full_layers: expected a non-empty list of layers (int >= 1 or None), got {full_layers!r}")
    layers = list(full_layers)
    if any(f is not None and (isinstance(f, bool) or not isinstance(f, (int, np.integer)) or f < 1) for f in layers):
        raise ValueError(f"full_layers: expected each layer an integer >= 1 or None, got {layers!r}")
    return layers


def typical_layer(full_layers, max_layers: int | None = None) -> int | None:
    """The typical L* of a grid point over its ``k`` seeds: the lower median of their L*.

    The smallest layer ``L`` that at least half the seeds reach, ``min {L : #{s : L*_s <= L} >= k/2}``, i.e. the
    ``ceil(k/2)``-th smallest L* (the lower median; a seed not full, ``None``, ranks last). ``None`` if fewer than
    ``ceil(k/2)`` seeds are full within ``max_layers`` (``None``: no cap). It is the measured counterpart of the sharp
    model's prediction, the first ``L`` with ``P(full after L) >= 1/2`` (:func:`receptive.theory.predict_full_layer`;
    ``docs/theory.md`` Sec. 3 and 5).

    Parameters
    ----------
    full_layers : sequence of int or None
        L* per seed (``>= 1``, or ``None`` for a seed not full); non-empty.
    max_layers : int or None, optional
        Cap, ``>= 1``; ``None``: no cap.

    Returns
    -------
    int or None
        The typical L*.

    Raises
    ------
    ValueError
        If ``full_layers`` is empty or holds something other than ``None`` or integers ``>= 1``, or ``max_layers``
        is not ``None`` or an integer ``>= 1``.

    Examples
    --------
    >>> from receptive.bound.analysis import typical_layer
    >>> typical_layer([3, 4, None]), typical_layer([3, None, None]), typical_layer([2, 3, 3, 4], max_layers=2)
    (4, None, None)
    """
    layers = _check_full_layers(full_layers)
    if max_layers is not None and (
        isinstance(max_layers, bool) or not isinstance(max_layers, (int, np.integer)) or max_layers < 1
    ):
        raise ValueError(f"max_layers: expected an integer >= 1 or None, got {max_layers!r}")
    need = math.ceil(len(layers) / 2)
    reached = sorted(f for f in layers if f is not None and (max_layers is None or f <= max_layers))
    return int(reached[need - 1]) if len(reached) >= need else None


def binomial_checks(full_layers, probabilities) -> list[dict]:
    """The per-layer calibration checks of a model against ``k`` seeds (exact binomial tests).

    For each layer ``L = 1 .. len(probabilities)`` where the outcome is uncertain (``0 < K_L < k`` or
    ``0.01 < F(L) < 0.99``), with ``K_L = #{s : L*_s <= L}`` the seeds full after ``L`` and
    ``F(L) = probabilities[L-1]`` the model's ``P(full after L)``, the two-sided exact binomial test of
    ``K_L ~ Bin(k, F(L))`` (``scipy.stats.binomtest``; ``F`` clipped to ``[1e-12, 1 - 1e-12]``).

    The test is discrete, so under a calibrated model ``P(p <= a) <= a`` at each layer: at most about 1% of the
    checks fall below 0.01 (the layers of one point are not independent: ``K_L`` is non-decreasing in ``L``).

    Parameters
    ----------
    full_layers : sequence of int or None
        L* per seed; non-empty.
    probabilities : array_like of float
        ``P(full after L)``, 1-d, in ``[0, 1]``.

    Returns
    -------
    list of dict
        ``[{"layer": L, "full": K_L, "seeds": k, "predicted": F(L), "p_value": p}, ...]`` in layer order.

    Raises
    ------
    ValueError
        If ``full_layers`` is invalid (:func:`typical_layer`) or ``probabilities`` is not a 1-d array of
        probabilities.

    Examples
    --------
    >>> from receptive.bound.analysis import binomial_checks
    >>> [(c["layer"], c["full"], round(c["p_value"], 3)) for c in binomial_checks([2, 3, 3, None], [0.1, 0.5, 0.9])]
    [(1, 0, 1.0), (2, 1, 0.625), (3, 3, 0.344)]

    References
    ----------
    SciPy, ``scipy.stats.binomtest`` (exact two-sided binomial test),
    https://docs.scipy.org/doc/scipy/reference/generated/scipy.stats.binomtest.html
    """
    layers = _check_full_layers(full_layers)
    probs = np.asarray(probabilities, dtype=float)
    if probs.ndim != 1 or np.any(~((probs >= 0) & (probs <= 1))):
        raise ValueError("probabilities: expected a 1-d array of probabilities in [0, 1]")
    k = len(layers)
    reached = np.array([np.inf if f is None else f for f in layers], dtype=float)
    counts = np.count_nonzero(reached[None, :] <= np.arange(1, probs.size + 1)[:, None], axis=1)
    checks = []
    for layer, (count, p) in enumerate(zip(counts.tolist(), probs.tolist(), strict=True), 1):
        if 0 < count < k or 0.01 < p < 0.99:
            pvalue = binomtest(count, k, min(max(p, 1e-12), 1 - 1e-12)).pvalue
            checks.append({"layer": layer, "full": count, "seeds": k, "predicted": p, "p_value": float(pvalue)})
    return checks


def calibrated_exact_probability(probabilities, seeds: int) -> float:
    """The probability that the typical L* of ``seeds`` draws equals the model's median, if the draws follow the
    model's own law ``P(L* <= L) = probabilities[L-1]``.

    It is ``G(m) - G(m - 1)`` with ``G(L) = P(Bin(seeds, F(L)) >= ceil(seeds/2))`` and ``m`` the first layer with
    ``F >= 1/2`` (:func:`receptive.theory.median_layer`); 0 if the model never reaches 1/2. Summed over points, the
    exact count of a calibrated model is Poisson-binomial with mean ``sum q`` and variance ``sum q (1 - q)``
    (``docs/theory.md`` Sec. 5).

    Parameters
    ----------
    probabilities : array_like
        Non-decreasing ``P(full after L)``, ``L = 1..m``.
    seeds : int
        Seeds per point, ``>= 1``.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``probabilities`` is not a non-empty non-decreasing 1-d array in [0, 1] or ``seeds < 1``.

    Examples
    --------
    >>> calibrated_exact_probability([0.0, 1.0], 5)
    1.0
    >>> round(calibrated_exact_probability([0.5, 1.0], 1), 3)
    0.5
    """
    probs = np.asarray(probabilities, dtype=float)
    if probs.ndim != 1 or probs.size == 0 or np.any((probs < 0) | (probs > 1)) or np.any(np.diff(probs) < -1e-12):
        raise ValueError("probabilities: expected a non-empty non-decreasing 1-d array in [0, 1]")
    if isinstance(seeds, bool) or not isinstance(seeds, (int, np.integer)) or seeds < 1:
        raise ValueError(f"seeds: expected an integer >= 1, got {seeds!r}")
    m, need = theory.median_layer(probs), math.ceil(seeds / 2)
    if m is None:
        return 0.0

    def at_most(layer: int) -> float:
        return 0.0 if layer < 1 else float(binom.sf(need - 1, seeds, probs[layer - 1]))

    return at_most(m) - at_most(m - 1)


LOG_FLOOR = 1e-6


def log_likelihood_check(full_layers, probabilities, floor: float = LOG_FLOOR) -> dict:
    """The log-likelihood of ``k`` seeds' L* under a model's law ``F(L) = P(L* <= L)``, with its null moments.

    ``L = 1 .. m`` (``m = len(probabilities)``); the mean and variance are those if the seeds followed that law: a
    calibration test of the whole distribution (location and spread), not only of its median.

    Outcomes ``L = 1 .. m`` have ``p_L = F(L) - F(L - 1)`` (``F(0) = 0``); a seed not full within ``m`` (``None`` or
    ``> m``) has ``p_0 = 1 - F(m)``. Scores are ``log max(p, floor)`` (a seed the model gives no chance would
    otherwise score minus infinity). Summed over points (seeds independent), ``z = (observed - expected) /
    sqrt(variance)`` is about standard normal for a calibrated model and negative when the seeds fall where the model
    puts little mass (the logarithmic score [1]_). A seed scored at the floor means the model gave its outcome almost
    no chance: z is then set by the floor, not normal, and says only that the model is overconfident there.

    Parameters
    ----------
    full_layers : sequence of int or None
        L* per seed; non-empty.
    probabilities : array_like of float
        Non-decreasing ``F(L)``, 1-d, non-empty, in ``[0, 1]``.
    floor : float, optional
        Smallest probability scored, in ``(0, 1)``.

    Returns
    -------
    dict
        ``log_likelihood`` (``sum_s log max(p_{L*_s}, floor)``), ``expected`` (``k sum_L p_L log max(p_L, floor)``),
        ``variance`` (``k Var_p(log max(p, floor))``), ``seeds`` (``k``) and ``at_floor`` (seeds whose outcome has
        ``p < floor``).

    Raises
    ------
    ValueError
        If ``full_layers`` or ``probabilities`` is invalid, or ``floor`` is not in ``(0, 1)``.

    Examples
    --------
    >>> from receptive.bound.analysis import log_likelihood_check
    >>> res = log_likelihood_check([2, 3, 3, None], [0.1, 0.5, 0.9])
    >>> round(res["log_likelihood"], 3), round(res["expected"], 3), res["at_floor"]
    (-5.051, -4.774, 0)

    References
    ----------
    .. [1] Gneiting & Raftery 2007, Strictly Proper Scoring Rules, Prediction, and Estimation, J. Am. Stat. Assoc.
       102, 359-378, Sec. 7.
    """
    layers = _check_full_layers(full_layers)
    probs = np.asarray(probabilities, dtype=float)
    if probs.ndim != 1 or probs.size == 0 or np.any(~((probs >= 0) & (probs <= 1))) or np.any(np.diff(probs) < -1e-12):
        raise ValueError("probabilities: expected a non-empty non-decreasing 1-d array of probabilities in [0, 1]")
    if not (isinstance(floor, (int, float)) and 0 < floor < 1):
        raise ValueError(f"floor: expected a number in (0, 1), got {floor!r}")
    pmf = np.diff(np.concatenate([[0.0], probs, [1.0]])).clip(min=0.0)  # L = 1..m, then "not full within m"
    score = np.log(np.maximum(pmf, floor))
    mean = float(pmf @ score)
    variance = float(pmf @ score**2 - mean**2)
    m = probs.size
    index = [m if f is None or f > m else f - 1 for f in layers]
    k = len(layers)
    return {
        "log_likelihood": float(score[index].sum()),
        "expected": k * mean,
        "variance": k * max(variance, 0.0),
        "seeds": k,
        "at_floor": int(np.sum(pmf[index] < floor)),
    }


def analyse_point(
    key: tuple, seeds: dict[int, dict], max_layers: int, model: str = "analytic", interval_file=None
) -> PointResult:
    """Statistics and predictions of one grid point (sampled points are predicted for their K targets).

    ``model``: causal SA+SWA's sharp model (:data:`receptive.theory.CAUSAL_SA_SWA_MODELS`; ``"interval"`` computes
    the interval Monte Carlo live, or reads the points ``interval_file`` holds,
    :func:`receptive.bound.models.point_probabilities`); every other pattern and mode has the analytic model only.

    Parameters
    ----------
    key : tuple
        ``(pattern, n, w, causal, circular)``.
    seeds : dict
        ``{seed: {"method", "full_layer", "coverage", "positions"}}``, as :func:`group_results` gives.
    max_layers : int
        Layers run (and predicted).
    model : str, optional
        One of :data:`receptive.theory.CAUSAL_SA_SWA_MODELS`.
    interval_file : str, Path or None, optional
        An interval-model result file (``model="interval"`` only).

    Returns
    -------
    PointResult
        The point's statistics, predictions and calibration checks.

    Raises
    ------
    ValueError
        If ``model`` is unknown, or from :func:`receptive.bound.models.point_probabilities`.

    Examples
    --------
    >>> from receptive.bound.analysis import analyse_point
    >>> seeds = {s: {"method": "exact", "full_layer": L, "coverage": None, "positions": 256}
    ...          for s, L in enumerate([4, 4, 5])}
    >>> res = analyse_point(("sa", 256, 8, False, False), seeds, 8)
    >>> res.typical, res.predicted, res.bound, res.bound_holds
    (4, 4, 4, False)

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    if model not in theory.CAUSAL_SA_SWA_MODELS:
        raise ValueError(f"model: expected one of {', '.join(theory.CAUSAL_SA_SWA_MODELS)}, got {model!r}")
    pattern, n, w, causal, circular = key
    order = sorted(seeds)
    full_layers = [seeds[s]["full_layer"] for s in order]
    method = seeds[order[0]]["method"]
    targets = seeds[order[0]]["positions"] if method == "sampled" else None
    curves = [seeds[s]["coverage"] for s in order if seeds[s]["coverage"] is not None]
    coverage = []
    if len(curves) == len(order):
        layers = max(len(c) for c in curves)
        coverage = np.mean([np.pad(c, (0, layers - len(c)), mode="edge") for c in curves], axis=0).tolist()
    res = PointResult(pattern, n, w, causal, circular, method, order, full_layers, coverage)
    res.log_w_n = theory.log_w_n(n, w)
    res.ceil_log_w_n = math.ceil(res.log_w_n - 1e-9)
    res.coupon_collector = theory.sa_full_layer_estimate(n, w)
    res.n_over_w = n / w
    res.typical = typical_layer(full_layers, max_layers)
    probs = point_probabilities(pattern, n, w, causal, circular, max_layers, targets, model, interval_file)
    res.predicted = theory.median_layer(probs)
    if not causal:
        res.bound = theory.sa_union_bound_layer(n, w, 0.05)
        res.bound_holds = all(f is not None and f <= res.bound for f in full_layers)
    res.probability_checks = [
        {"layer": c["layer"], "measured": c["full"] / c["seeds"], "predicted": c["predicted"]}
        | {"seeds": c["seeds"], "p_value": c["p_value"]}
        for c in binomial_checks(full_layers, probs)
    ]
    if method == "sampled":
        res.note = "sampled targets: L* = first layer with no sampled target uncovered"
    return res


def fit_log_law(points: list[PointResult]) -> dict | None:
    """Least squares ``L*_mean ~ a * log_w n + b`` over points where every seed reached full coverage.

    Parameters
    ----------
    points : list of PointResult
        The grid points.

    Returns
    -------
    dict or None
        ``a``, ``b``, ``r2`` (``R^2``), ``max_abs_residual`` and ``residuals`` (one record per point used);
        ``None`` with fewer than two usable points.

    Examples
    --------
    >>> from receptive.bound.analysis import PointResult, fit_log_law
    >>> import math
    >>> points = [PointResult("sa", n, 8, False, False, "exact", [0], [L], [], log_w_n=math.log(n, 8))
    ...           for n, L in ((64, 3), (256, 4), (1024, 5))]
    >>> fit = fit_log_law(points)
    >>> round(fit["a"], 3), round(fit["b"], 3), round(fit["r2"], 3)
    (1.5, 0.0, 1.0)

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    usable = [p for p in points if p.reached and len(p.reached) == len(p.full_layers)]
    if len(usable) < 2:
        return None
    x = np.array([p.log_w_n for p in usable])
    y = np.array([np.mean(p.reached) for p in usable])
    design = np.column_stack([x, np.ones_like(x)])
    (a, b), *_ = np.linalg.lstsq(design, y, rcond=None)
    residuals = y - design @ np.array([a, b])
    total = float(np.sum((y - y.mean()) ** 2))
    return {
        "a": float(a),
        "b": float(b),
        "r2": 1 - float(np.sum(residuals**2)) / total if total > 0 else 1.0,
        "max_abs_residual": float(np.max(np.abs(residuals))),
        "residuals": [
            {"n": p.n, "w": p.w, "L_mean": float(v), "residual": float(r)}
            for p, v, r in zip(usable, y, residuals, strict=True)
        ],
    }


def deviations(points: list[PointResult]) -> dict:
    """Largest deviations of each predictor from the typical L*, and the sharp model's hit shares.

    Largest absolute ``prediction - typical L*`` per predictor, the share of points (n >= 1024) that the sharp model
    gets exactly right and within one layer, overall and per regime (pattern x causal), and the binomial checks.

    Parameters
    ----------
    points : list of PointResult
        The grid points.

    Returns
    -------
    dict
        ``{predictor: {"max_abs_deviation", "points"}}`` for ``ceil_log_w_n``, ``coupon_collector`` and
        ``predicted``; ``sharp_exact_share_n_ge_1024``, ``sharp_within_one_share``, ``points_n_ge_1024``; the same
        shares ``by_regime``; ``probability_checks`` and ``probability_checks_rejected_at_1pct``.

    Examples
    --------
    >>> from receptive.bound.analysis import PointResult, deviations
    >>> points = [PointResult("sa", 1024, 8, False, False, "exact", [0], [5], [], typical=5, ceil_log_w_n=4,
    ...                       coupon_collector=5, predicted=5)]
    >>> out = deviations(points)
    >>> out["ceil_log_w_n"], out["sharp_exact_share_n_ge_1024"]
    ({'max_abs_deviation': 1, 'points': 1}, 1.0)
    """
    out = {}
    scored = [p for p in points if p.typical is not None]
    for name in ("ceil_log_w_n", "coupon_collector", "predicted"):
        diffs = [abs(getattr(p, name) - p.typical) for p in scored if getattr(p, name) is not None]
        out[name] = {"max_abs_deviation": max(diffs) if diffs else None, "points": len(diffs)}
    out.update(_sharp_shares(scored))
    out["by_regime"] = {
        f"{pattern} {'causal' if causal else 'bidirectional'}": _sharp_shares(
            [p for p in scored if p.pattern == pattern and p.causal == causal]
        )
        for pattern, causal in sorted({(p.pattern, p.causal) for p in scored})
    }
    checks = [c for p in points for c in p.probability_checks]
    out["probability_checks"] = len(checks)
    out["probability_checks_rejected_at_1pct"] = sum(c["p_value"] < 0.01 for c in checks)
    return out


def _sharp_shares(points: list[PointResult]) -> dict:
    big = [p for p in points if p.n >= 1024 and p.predicted is not None]
    near = [p for p in points if p.predicted is not None]
    return {
        "sharp_exact_share_n_ge_1024": float(np.mean([p.predicted == p.typical for p in big])) if big else None,
        "sharp_within_one_share": float(np.mean([abs(p.predicted - p.typical) <= 1 for p in near])) if near else None,
        "points_n_ge_1024": len(big),
    }
