"""The interval model of causal SA+SWA: the expected number of failure events after each layer, counted by the
Monte Carlo of the interval process (:mod:`receptive.theory.interval_process`) over the near offsets and by the
profile model of :func:`receptive.theory.causal_failure_clumps` beyond them (:func:`causal_interval_clumps`), one
point of a result file at the evaluation's settings (:func:`interval_point_model`) and such a file read back
(:func:`load_interval_model`). Derivations: ``docs/theory.md`` Sec. 5.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

from ..validation import check_int
from ._occupancy import _check_model_args
from .causal import CausalProfile, causal_failure_clumps, sa_key_probability
from .interval_process import _MAX_STRIP_BYTES, _cut, interval_cost, interval_event_rates


class IntervalCostError(RuntimeError):
    """The interval Monte Carlo would cost more than its ``max_cost`` word operations.

    Raised by :func:`causal_interval_clumps` before it simulates anything; :func:`interval_point_model` catches it
    and keeps the analytic model.

    Parameters
    ----------
    *args
        The message, as for :class:`RuntimeError`.

    Examples
    --------
    >>> from receptive.theory import IntervalCostError, causal_interval_clumps
    >>> try:
    ...     causal_interval_clumps(256, 8, 6, max_cost=1)
    ... except IntervalCostError as exc:
    ...     print(str(exc).split(" at ")[0])
    interval Monte Carlo: about ... word operations
    """


#: the evaluation's settings of the Monte Carlo (:func:`interval_point_model`, and
#: ``receptive.theory.full_probability(..., model="interval")``): events sampled where N_L = 1, the seed, and the
#: word operations one point may cost before it keeps the analytic model
EVALUATION_EVENTS = 300
EVALUATION_SEED = 0
EVALUATION_MAX_COST = 2e11
#: layers simulated past the first at which the profile model's expected clump count is below 1e-4
SIMULATION_MARGIN = 3
#: failing keys per event along the keys (an empirical constant of the engine's events, ``docs/theory.md`` Sec. 5),
#: for the number of strips of sampled targets
KEYS_PER_EVENT = 16
#: an estimate of a layer's event count rests on at least this many sampled event starts; beyond the last layer that
#: has them, the count is extrapolated geometrically from the last two layers that do
MIN_STARTS = 20
#: events the profile model may count beyond the cut at a deciding layer; the cut grows (by CUT_GROWTH) until it does,
#: as far as ``max_cost`` allows: the profile counts clumps of missed keys along the offsets, where the engine's far
#: failures group by target, so beyond a short cut it overcounts them (``docs/theory.md`` Sec. 5)
FAR_TOLERANCE = 0.02
#: layers whose analytic count is at most this decide L* (P(full) >= e^-20); the far tolerance applies to them
DECIDING_CLUMPS = 20.0
#: ratio of successive candidate cuts
CUT_GROWTH = 1.25


def _extrapolate_tail(counts: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Once the sampled event starts fall below ``MIN_STARTS`` after their peak, continue ``N_L`` geometrically
    from the last two layers that had enough of them, with their ratio (at most 0.9): a heavier tail than the
    faster-than-geometric decay of the counts, and not the zeros of a finite sample. Left as sampled where fewer than
    two such layers precede the drop (failure goes from certain to rare in one layer)."""
    counts = counts.copy()
    peak = int(np.argmax(starts))
    low = np.flatnonzero(starts[peak:] < MIN_STARTS)
    if low.size == 0:
        return counts
    drop = peak + int(low[0])
    if drop - 2 < peak or counts[drop - 2] <= 0:
        return counts
    ratio = min(counts[drop - 1] / counts[drop - 2], 0.9)
    tail = counts[drop - 1] * ratio ** np.arange(1, counts.size - drop + 1)
    counts[drop:] = np.where(tail < 1e-12, 0.0, tail)
    return counts


def _far_clumps(n: int, w: int, layers: int, cuts: np.ndarray) -> np.ndarray:
    """The profile model's clumps beyond each of ``cuts``, ``far[L-1, c] = sum_{x > cuts[c]} (n - x) (u_L(x) -
    u2_L(x))`` (as in :func:`receptive.theory.causal_failure_clumps`; SA window and causal window ``w``)."""
    x = np.arange(n)
    profile = CausalProfile(n, w, w)
    out = np.zeros((layers, cuts.size))
    for layer in range(layers):
        u, u2 = profile.step()
        beyond = np.concatenate([np.cumsum(((n - x) * np.maximum(u - u2, 0.0))[::-1])[::-1], [0.0]])
        out[layer] = beyond[cuts + 1]
        if out[layer, 0] < 1e-12:
            break
    return out


def _choose_cut(far: np.ndarray, deciding: np.ndarray, affordable: np.ndarray) -> tuple[int, int]:
    """``(wanted, chosen)`` indices into increasing candidate cuts: ``wanted`` the first beyond which the profile
    leaves at most ``FAR_TOLERANCE`` clumps (``far[L-1, c]``) at every deciding layer, ``chosen`` the same or the last
    affordable one before it (the first where none is)."""
    ok = np.all(far[deciding] <= FAR_TOLERANCE, axis=0)
    wanted = int(np.argmax(ok)) if ok.any() else far.shape[1] - 1
    last = np.flatnonzero(affordable)
    return wanted, min(wanted, int(last[-1])) if last.size else 0


def causal_interval_clumps(
    n: int,
    w: int,
    layers: int,
    targets: int | None = None,
    events: int = 200,
    gap: int = 32,
    seed: int = 0,
    keys: int = 256,
    max_cost: float = 2e11,
) -> dict:
    """Expected number of failure events of causal SA+SWA after ``L = 1..layers``, by interval Monte Carlo.

    The window is ``a = w``; the interval Monte Carlo covers the near part (offsets up to ``cut``) and the profile
    model the rest. The cut is at least ``min(6 L_s (w - 1) + w, n - 1)`` (``L_s`` the last simulated layer), and
    grows by factors of ``CUT_GROWTH`` until the profile model leaves at most ``FAR_TOLERANCE`` events beyond it at
    every layer whose analytic count is at most ``DECIDING_CLUMPS``, as far as ``max_cost`` allows (``cut_wanted`` in
    the result says where it would have stopped):

    * all pairs (``targets=None``): events are runs of failing keys,
      ``N_L = q_L(cut) + sum_{h=0}^{n-2} s_L(min(h, cut))`` (key ``j`` has ``h = n - 1 - j`` queries after it; key 0,
      with nothing before it, starts an event whenever it fails) plus the profile's clumps beyond the cut;
    * ``K`` sampled targets: every failing target is one event, ``N_L = (K/n) sum_{h=0}^{n-1} q_L(min(h, cut))``
      (a target with ``h`` keys before it fails with the probability that a key with ``h`` queries after it does,
      by time reversal) plus ``K/n`` of the profile's clumps beyond the cut.

    ``P(full after L) = min(exp(-N_L), B_L)`` with ``B_L = min_b (1 - q_L(b - 1))^floor(n/b)`` (all pairs: keys
    ``b`` apart fail independently within ``b - 1``) or ``1 - q_L(cut)`` (sampled), with ``N_L`` replaced by its
    non-increasing envelope, and past the layers where the sample holds ``MIN_STARTS`` event starts, ``N_L``
    continued geometrically. The number of strips is chosen so that about ``events`` independent events are sampled
    where ``N_L = 1``: ``events * n / keys`` strips for all pairs, ``events * K * KEYS_PER_EVENT / keys`` for sampled
    targets. Layers are simulated up to ``SIMULATION_MARGIN`` past the first at which the analytic model's count
    (:func:`receptive.theory.causal_failure_clumps`) falls below 1e-4; the rest is the extrapolated tail. Refused
    with :class:`IntervalCostError` (before simulating) where that would take more than ``max_cost`` word operations
    (:func:`interval_cost`, with the share of strips still failing at each layer from the analytic model) at the
    shortest cut.

    Parameters
    ----------
    n : int
        Sequence length, ``>= 2``.
    w : int
        Window size of both SA and the causal window, ``>= 1``.
    layers : int
        Number of layers, ``>= 1``.
    targets : int or None, optional
        ``K`` sampled targets, in ``1..n``; ``None``: every pair.
    events : int, optional
        Independent events to sample where ``N_L = 1``, ``>= 1``.
    gap : int, optional
        Declumping gap, in ``0..keys-1``.
    seed : int, optional
        Seed of the Monte Carlo.
    keys : int, optional
        Keys per strip, a multiple of 64 in ``64..4096``.
    max_cost : float, optional
        Word operations allowed, ``> 0``.

    Returns
    -------
    dict
        ``full_probability`` and ``clumps`` (``layers`` values each), ``near`` and ``far`` (the two parts over the
        simulated layers), ``simulated_layers``, ``samples``, ``p``, ``cut``, ``cut_wanted`` and ``cost``.

    Raises
    ------
    TypeError
        If an integer argument is not an integer.
    ValueError
        If an argument is out of range.
    IntervalCostError
        If the simulation would cost more than ``max_cost``.

    Examples
    --------
    >>> import numpy as np
    >>> from receptive.theory import causal_interval_clumps
    >>> res = causal_interval_clumps(256, 8, 6, events=20)
    >>> res["full_probability"].shape, bool(np.all(np.diff(res["full_probability"]) >= 0))
    ((6,), True)
    >>> float(res["full_probability"][-1])
    1.0

    References
    ----------
    * Aldous 1989, Probability Approximations via the Poisson Clumping Heuristic, Springer.
    * Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    n, w, layers = _check_model_args(n, w, layers)
    if targets is not None:
        targets = check_int("targets", targets, 1, n)
    events = check_int("events", events, 1)
    keys = check_int("keys", keys, 64, 4096)
    gap = check_int("gap", gap, 0, keys - 1)
    if not max_cost > 0:
        raise ValueError(f"max_cost: expected a positive number of word operations, got {max_cost!r}")
    p = sa_key_probability(n, w)
    # an event fails about KEYS_PER_EVENT neighbouring keys: sampled targets count failing keys, so they need
    # KEYS_PER_EVENT times the strips for the same number of independent events
    scale = n if targets is None else targets * KEYS_PER_EVENT
    samples = max(1, math.ceil(events * scale / keys))
    # the simulation's cost grows with the square of the cut: stop SIMULATION_MARGIN layers after the analytic
    # model's clump count falls below 1e-4
    model = causal_failure_clumps(n, w, layers, targets=targets)
    settled = np.flatnonzero(model < 1e-4)
    simulated = layers if settled.size == 0 else min(layers, int(settled[0]) + 1 + SIMULATION_MARGIN)
    model = model[:simulated]
    share = 1.0 if targets is None else targets / n
    # candidate cuts from the run-branching reach up to n - 1, and the profile's clumps beyond each
    base = min(_cut(w, simulated), n - 1)
    steps = math.ceil(math.log((n - 1) / base) / math.log(CUT_GROWTH)) if base < n - 1 else 0
    cuts = np.unique(np.minimum(np.round(base * CUT_GROWTH ** np.arange(steps + 1)), n - 1).astype(np.int64))
    # strips still simulating when a layer starts: a key fails with about N_L / K (sampled) or N_L KEYS_PER_EVENT / n
    per_key = model / targets if targets is not None else model * KEYS_PER_EVENT / n
    alive = np.concatenate([[1.0], np.minimum(1.0, keys * per_key[:-1])])
    costs = np.array([interval_cost(p, samples, keys, int(c), alive) for c in cuts])
    if costs[0] > max_cost:
        raise IntervalCostError(
            f"interval Monte Carlo: about {costs[0]:.2g} word operations at n = {n}, w = {w} (max_cost {max_cost:.2g})"
        )
    far = _far_clumps(n, w, simulated, cuts)
    affordable = (costs <= max_cost) & ((keys + cuts + 1) * (keys // 64) * 32 <= _MAX_STRIP_BYTES)
    wanted, chosen = _choose_cut(share * far, model <= DECIDING_CLUMPS, affordable)
    cut = int(cuts[chosen])  # horizons beyond it count as the cut (the far part counts the rest)
    rates = interval_event_rates(p, w, simulated, samples, keys, (gap,), seed, cut=cut)
    fail, start = rates["fail"], rates["start"][gap]
    if targets is not None:  # sum_{h=0}^{n-1} q(min(h, cut))
        near = fail.sum(axis=1) + (n - 1 - cut) * fail[:, cut]
    else:  # key 0 starts an event whenever it fails (nothing before it); keys 1 .. n-1 by the gap rule
        last = min(cut, n - 2)
        near = fail[:, cut] + start[:, : last + 1].sum(axis=1) + (n - 2 - last) * start[:, cut]
    far = far[:, chosen]
    total = np.concatenate([share * (near + far), np.zeros(layers - simulated)])
    seen = np.concatenate([rates["starts_seen"][:, 0], np.zeros(layers - simulated)])
    total = _extrapolate_tail(total, seen)
    # where failures are so common that the clumping count (a few huge events) says little: keys 0, b, 2b, ... fail
    # within horizon b - 1 independently (disjoint intervals), so P(full) <= (1 - q_L(b - 1))^floor(n/b) for every
    # b <= cut + 1 (all pairs); a sampled run is bounded by one target with cut keys before it, 1 - q_L(cut)
    if targets is None:
        blocks = np.arange(1, cut + 2)
        with np.errstate(divide="ignore"):
            log_bound = np.min((n // blocks) * np.log1p(-np.minimum(fail[:, blocks - 1], 1.0)), axis=1)
        bound = np.exp(log_bound)
    else:
        bound = 1.0 - fail[:, cut]
    bound = np.concatenate([bound, np.ones(layers - simulated)])
    # failures are nested (a pair missed after L + 1 layers is missed after L), but the number of runs is not: where
    # nearly every key fails, the runs merge into a few long ones and N_L drops below N_{L+1}; the count used is the
    # non-increasing envelope, N_L = max over L' >= L of N_L'
    envelope = np.maximum.accumulate(total[::-1])[::-1]
    full = np.minimum(np.exp(-envelope), bound)
    return {
        "full_probability": np.maximum.accumulate(full),
        "clumps": total,
        "near": share * near,
        "far": share * far,
        "simulated_layers": simulated,
        "samples": samples,
        "p": p,
        "cut": cut,
        "cut_wanted": int(cuts[wanted]),
        "cost": float(costs[chosen]),
    }


def interval_point_model(
    n: int,
    w: int,
    layers: int,
    targets: int | None = None,
    events: int = EVALUATION_EVENTS,
    seed: int = EVALUATION_SEED,
    max_cost: float = EVALUATION_MAX_COST,
) -> dict:
    """The interval model's ``P(full after L)``, ``L = 1..layers``, at one point of causal SA+SWA, as one record of
    an interval-model result file (:func:`load_interval_model` reads them back).

    Parameters
    ----------
    n, w, layers : int
        Sequence length, window (keys per query, self included) and layers.
    targets : int or None
        ``K`` sampled targets (what a sampled run measures); ``None``: every pair.
    events, seed, max_cost
        The Monte Carlo's settings (:func:`causal_interval_clumps`).

    Returns
    -------
    dict
        ``method`` (``"interval"``, or ``"analytic"`` where the simulation would cost more than ``max_cost``: the
        point then keeps :func:`receptive.theory.causal_failure_clumps`, with the refusal in ``why``),
        ``clumps``, ``full_probability`` (lists of ``layers`` floats), the simulation's ``samples``,
        ``simulated_layers``, ``cut`` and ``cut_wanted`` (interval only), and ``n``, ``w``, ``targets``,
        ``max_layers``, ``seconds``.

    Raises
    ------
    ValueError
        For arguments out of range, naming the argument (:func:`causal_interval_clumps`).

    Examples
    --------
    >>> row = interval_point_model(256, 8, 6, events=20)
    >>> row["method"], len(row["full_probability"])
    ('interval', 6)
    >>> all(0 <= p <= 1 for p in row["full_probability"])
    True
    """
    start = time.perf_counter()
    try:
        res = causal_interval_clumps(n, w, layers, targets, events=events, seed=seed, max_cost=max_cost)
        row = {
            "method": "interval",
            "clumps": res["clumps"].tolist(),
            "full_probability": res["full_probability"].tolist(),
            "samples": res["samples"],
            "simulated_layers": res["simulated_layers"],
            "cut": res["cut"],
            "cut_wanted": res["cut_wanted"],
        }
    except IntervalCostError as exc:
        clumps = causal_failure_clumps(n, w, layers, targets=targets)
        row = {
            "method": "analytic",
            "why": str(exc),
            "clumps": clumps.tolist(),
            "full_probability": np.maximum.accumulate(np.exp(-clumps)).tolist(),
        }
    row.update(n=n, w=w, targets=targets, max_layers=layers, seconds=round(time.perf_counter() - start, 2))
    return row


def load_interval_model(path) -> tuple[dict[tuple, list[float]], dict]:
    """The points of an interval-model result file (a JSON document with ``events``, ``seed``, ``max_cost`` and
    ``points``, each point a record of :func:`interval_point_model`).

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    table : dict
        ``{(n, w, targets, max_layers): P(full after L)}``.
    settings : dict
        ``events``, ``seed`` and ``max_cost``: with these a point the file lacks is computed
        (:func:`interval_point_model`).

    Raises
    ------
    TypeError
        If ``path`` is not a str or Path.
    ValueError
        If the file is missing, not JSON, or lacks a field, naming ``path``.

    Examples
    --------
    >>> import json, tempfile
    >>> doc = {"events": 300, "seed": 0, "max_cost": 2e11,
    ...        "points": [{"n": 256, "w": 8, "targets": None, "max_layers": 2, "full_probability": [0.0, 1.0]}]}
    >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
    ...     _ = fh.write(json.dumps(doc))
    >>> table, settings = load_interval_model(fh.name)
    >>> table[256, 8, None, 2], settings["events"]
    ([0.0, 1.0], 300)
    """
    if not isinstance(path, str | Path):
        raise TypeError(f"path: expected a str or Path, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path: no such file: {path}")
    try:
        doc = json.loads(path.read_text())
        table = {(r["n"], r["w"], r["targets"], r["max_layers"]): r["full_probability"] for r in doc["points"]}
        settings = {k: doc[k] for k in ("events", "seed", "max_cost")}
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"path: {path} is not an interval-model result file ({exc!r})") from None
    return table, settings
