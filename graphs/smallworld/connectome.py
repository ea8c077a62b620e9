"""A generative small-world model of the fly connectome: local clustered wiring plus random long-range shortcuts.

Neurons sit uniformly at random in the unit cube. Each neuron sends ``Poisson(mu)`` connections; each is local with
probability ``1 - random_fraction`` (to one of its ``neighbourhood`` nearest neurons, distinct) and otherwise to a
uniformly random neuron. Reverses of one-way connections are then added (or one edge of mutual pairs dropped, as
local wiring is often mutual by itself) until the reciprocity, the share of connections whose reverse exists,
is the target, and ``mu`` is corrected once so that the mean out-degree is the target. Local links make triangles
(clustering), shortcuts make paths short: the Watts-Strogatz mechanism in 3-D.

:func:`calibrate_connectome` fits ``random_fraction`` and ``neighbourhood`` so that the model's clustering and
directed path length match FlyWire's (Lin et al. 2024, Nature 634:153, snapshot v630, connections of >= 5
synapses), and reports the fitted model's statistics next to the published ones.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy.spatial import cKDTree
from tqdm.auto import tqdm

from ..clustering import average_clustering
from ..graph import Graph
from ..paths import path_lengths

#: FlyWire v630 statistics (Lin et al. 2024, Nature 634:153, Table 2 and text; see the project's REFERENCE notes).
FLYWIRE = {
    "n": 127_978,
    "edges": 2_613_129,
    "mean_degree": 20.5,
    "reciprocity": 0.138,
    "C": 0.0463,
    "L_directed": 4.42,
    "L": 3.91,
    "C_r": 0.0003,
    "L_r": 3.57,
    "sigma": 141.0,
    "giant_scc_fraction": 0.933,
    "giant_wcc_fraction": 0.988,
}


#: ``calibrate_connectome()`` at FlyWire's size, seed 0 (56 model evaluations, 8.4 min on 2 cores): C = 0.0460,
#: directed L = 4.408 (64 sampled sources), <k> = 20.53, reciprocity 0.138 against 0.0463, 4.42, 20.5, 0.138
FITTED = {"random_fraction": 0.31640625, "neighbourhood": 122}


def connectome_model(
    n: int = FLYWIRE["n"],
    mean_degree: float = FLYWIRE["mean_degree"],
    random_fraction: float = FITTED["random_fraction"],
    neighbourhood: int = FITTED["neighbourhood"],
    reciprocity: float = FLYWIRE["reciprocity"],
    seed: int = 0,
) -> Graph:
    """The directed model graph (see the module docstring)."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 10:
        raise ValueError(f"n: expected an integer >= 10, got {n!r}")
    if not 0 < mean_degree < n - 1:
        raise ValueError(f"mean_degree: expected a number in (0, n - 1), got {mean_degree!r}")
    if not 0 <= random_fraction <= 1:
        raise ValueError(f"random_fraction: expected a number in [0, 1], got {random_fraction!r}")
    if isinstance(neighbourhood, bool) or not isinstance(neighbourhood, int | np.integer) or not 1 <= neighbourhood < n:
        raise ValueError(f"neighbourhood: expected an integer in [1, {n - 1}], got {neighbourhood!r}")
    if not 0 <= reciprocity < 1:
        raise ValueError(f"reciprocity: expected a number in [0, 1), got {reciprocity!r}")
    graph = _wire(n, mean_degree, random_fraction, neighbourhood, reciprocity, seed)
    # duplicates and the reciprocity adjustment move the mean degree a little: one proportional correction
    return _wire(n, mean_degree**2 / graph.mean_degree, random_fraction, neighbourhood, reciprocity, seed)


def _wire(n, mean_degree, random_fraction, neighbourhood, target_reciprocity, seed) -> Graph:
    rng = np.random.default_rng(seed)
    positions = rng.random((n, 3))
    _, near = cKDTree(positions).query(positions, k=neighbourhood + 1)
    near = near[:, 1:]  # drop the neuron itself
    degree = rng.poisson(mean_degree, size=n)
    local = np.minimum(rng.binomial(degree, 1 - random_fraction), neighbourhood)
    # distinct local targets: the first `local[i]` of a random ordering of i's neighbourhood
    order = np.argsort(rng.random((n, neighbourhood)), axis=1)
    chosen = np.take_along_axis(near, order, axis=1)
    take = np.arange(neighbourhood)[None, :] < local[:, None]
    src = np.concatenate(
        [np.repeat(np.arange(n), neighbourhood)[take.ravel()], np.repeat(np.arange(n), degree - local)]
    )
    dst = np.concatenate([chosen[take], rng.integers(0, n, size=int((degree - local).sum()))])
    graph = Graph.from_edges(n, src, dst, directed=True)
    return _set_reciprocity(graph, target_reciprocity, rng)


def _set_reciprocity(graph: Graph, target: float, rng) -> Graph:
    """Add reverses of one-way edges, or drop one edge of mutual pairs, until a share ``target`` of the edges is
    reciprocated. With ``m`` edges of which ``r`` reciprocated: adding ``x`` reverses gives ``(r + 2x)/(m + x)``,
    dropping ``x`` edges of mutual pairs gives ``(r - 2x)/(m - x)``."""
    rows = np.repeat(np.arange(graph.n, dtype=np.int64), graph.out_degree)
    keys = rows * graph.n + graph.indices
    mutual = np.isin(graph.indices * graph.n + rows, keys, assume_unique=True)
    m, r = keys.size, int(mutual.sum())
    if r < target * m:
        x = round((target * m - r) / (2 - target))
        one_way = np.flatnonzero(~mutual)
        pick = rng.choice(one_way, size=min(x, one_way.size), replace=False)
        src, dst = np.concatenate([rows, graph.indices[pick]]), np.concatenate([graph.indices, rows[pick]])
    else:
        x = round((r - target * m) / (2 - target))
        pairs = np.flatnonzero(mutual & (rows < graph.indices))  # one representative per mutual pair
        drop = rng.choice(pairs, size=min(x, pairs.size), replace=False)
        keep = np.ones(m, dtype=bool)
        keep[drop] = False
        src, dst = rows[keep], graph.indices[keep]
    return Graph.from_edges(graph.n, src, dst, directed=True)


def reciprocity(graph: Graph) -> float:
    """Share of directed edges ``u -> v`` whose reverse ``v -> u`` exists (networkx ``overall_reciprocity``)."""
    if not graph.directed or graph.indices.size == 0:
        return 1.0 if graph.indices.size else 0.0
    rows = np.repeat(np.arange(graph.n, dtype=np.int64), graph.out_degree)
    forward = rows * graph.n + graph.indices
    backward = graph.indices * graph.n + rows
    return float(np.isin(backward, forward, assume_unique=True).mean())


@dataclass(frozen=True)
class ConnectomeFit:
    """Fitted mixing parameters and the fitted model's statistics next to the targets."""

    random_fraction: float
    neighbourhood: int
    n: int
    seed: int
    measured: dict
    targets: dict
    evaluations: int

    def to_dict(self) -> dict:
        return asdict(self)


def _measure(graph: Graph, sources: int, seed: int) -> dict:
    return {
        "C": average_clustering(graph.undirected()),
        "L_directed": path_lengths(graph, sources=sources, seed=seed).mean,
        "mean_degree": graph.mean_degree,
        "reciprocity": reciprocity(graph),
    }


def calibrate_connectome(
    n: int = FLYWIRE["n"],
    *,
    target_C: float = FLYWIRE["C"],
    target_L: float = FLYWIRE["L_directed"],
    mean_degree: float = FLYWIRE["mean_degree"],
    reciprocity_target: float = FLYWIRE["reciprocity"],
    neighbourhood_range: tuple[int, int] = (24, 400),
    sources: int = 64,
    seed: int = 0,
    steps: int = 7,
    progress: bool | None = None,
) -> ConnectomeFit:
    """Fit ``random_fraction`` and ``neighbourhood`` to a target clustering ``C`` (undirected average local
    clustering) and directed path length ``L`` (giant SCC, from ``sources`` sampled sources).

    For a given neighbourhood, clustering falls monotonically as the random fraction grows: bisection on it hits
    ``target_C``. Along that curve a larger neighbourhood needs fewer shortcuts, so ``L`` grows with it: an outer
    bisection on ``log(neighbourhood)`` hits ``target_L``. ``steps`` bisection steps each (the same ``seed`` for
    every evaluation, so the search is deterministic).
    """
    if not 0 < target_C < 1:
        raise ValueError(f"target_C: expected a number in (0, 1), got {target_C!r}")
    if not target_L > 1:
        raise ValueError(f"target_L: expected a number > 1, got {target_L!r}")
    lo_k, hi_k = neighbourhood_range
    if not 2 <= lo_k < hi_k < n:
        raise ValueError(f"neighbourhood_range: expected 2 <= low < high < n, got {neighbourhood_range}")
    evaluations = 0

    def model(fraction, k):
        return connectome_model(n, mean_degree, fraction, k, reciprocity_target, seed)

    def fit_fraction(k):
        nonlocal evaluations
        low, high = 0.0, 1.0
        for _ in range(steps):
            mid = (low + high) / 2
            evaluations += 1
            if average_clustering(model(mid, k).undirected()) > target_C:
                low = mid
            else:
                high = mid
        return (low + high) / 2

    log_lo, log_hi = math.log(lo_k), math.log(hi_k)
    best = None
    for _ in tqdm(range(steps), unit="step", desc="calibrating", disable=None if progress is None else not progress):
        k = round(math.exp((log_lo + log_hi) / 2))
        fraction = fit_fraction(k)
        measured = _measure(model(fraction, k), sources, seed)
        evaluations += 1
        error = abs(measured["L_directed"] - target_L) + abs(measured["C"] - target_C) / target_C
        if best is None or error < best[0]:
            best = (error, fraction, k, measured)
        if measured["L_directed"] < target_L:
            log_lo = math.log(k)
        else:
            log_hi = math.log(k)
    _, fraction, k, measured = best
    targets = {"C": target_C, "L_directed": target_L, "mean_degree": mean_degree, "reciprocity": reciprocity_target}
    return ConnectomeFit(float(fraction), int(k), n, seed, measured, targets, evaluations)
