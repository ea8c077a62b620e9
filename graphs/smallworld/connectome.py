"""A generative small-world model of the fly connectome: local clustered wiring plus random long-range shortcuts.

Neurons sit uniformly at random in the unit cube. Each neuron sends ``Poisson(mu)`` connections; each is local with
probability ``1 - random_fraction`` (to one of its ``neighbourhood`` nearest neurons, distinct) and otherwise to a
uniformly random neuron. Reverses of one-way connections are then added (or one edge of mutual pairs dropped, as
local wiring is often mutual by itself) until the reciprocity, the share of connections whose reverse exists,
is the target, and ``mu`` is corrected once so that the mean out-degree is the target. Local links make triangles
(clustering), shortcuts make paths short: the Watts-Strogatz mechanism [1]_ in 3-D.

:func:`calibrate_connectome` fits ``random_fraction`` and ``neighbourhood`` so that the model's clustering and
directed path length match FlyWire's [2]_ [3]_ (snapshot v630, connections of >= 5 synapses [4]_), and reports the
fitted model's statistics next to the published ones.

References
----------
.. [1] D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442 (1998).
.. [2] S. Dorkenwald et al., "Neuronal wiring diagram of an adult brain", Nature 634, 124-138 (2024).
.. [3] A. Lin et al., "Network statistics of the whole-brain connectome of Drosophila", Nature 634, 153-165 (2024).
.. [4] P. Schlegel et al., "Whole-brain annotation and multi-connectome cell typing of Drosophila", Nature 634,
   139-152 (2024).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy.spatial import cKDTree
from tqdm.auto import tqdm

from ..clustering_measures import average_clustering
from ..graph import Graph
from ..paths import path_lengths
from ..validation import check_instance, check_int, check_real

#: published statistics of the FlyWire v630 connectome, connections of >= 5 synapses (Lin et al. 2024, Table 2
#: and text; Dorkenwald et al. 2024)
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


#: the mixing parameters ``calibrate_connectome()`` fits at FlyWire's size with seed 0 (the defaults of
#: :func:`connectome_model`)
FITTED = {"random_fraction": 0.31640625, "neighbourhood": 122}


def connectome_model(
    n: int = FLYWIRE["n"],
    mean_degree: float = FLYWIRE["mean_degree"],
    random_fraction: float = FITTED["random_fraction"],
    neighbourhood: int = FITTED["neighbourhood"],
    reciprocity: float = FLYWIRE["reciprocity"],
    seed: int = 0,
) -> Graph:
    """Draw the directed connectome model graph: local clustered wiring plus random shortcuts in 3-D.

    See the module docstring for the construction. The defaults give a graph of FlyWire's size and mean degree,
    with the mixing parameters :data:`FITTED`.

    Parameters
    ----------
    n : int, optional
        Number of neurons, at least 10.
    mean_degree : float, optional
        Target mean out-degree, in ``(0, n - 1)``.
    random_fraction : float, optional
        Share of connections that go to a uniformly random neuron, in ``[0, 1]``.
    neighbourhood : int, optional
        Number of nearest neurons a local connection chooses from, in ``[1, n - 1]``.
    reciprocity : float, optional
        Target share of connections whose reverse exists, in ``[0, 1)``.
    seed : int, optional
        Seed of ``numpy.random.default_rng``, ``>= 0``.

    Returns
    -------
    Graph
        Directed.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If an argument lies outside its range.

    References
    ----------
    - D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442
      (1998).
    - A. Lin et al., "Network statistics of the whole-brain connectome of Drosophila",
      Nature 634, 153-165 (2024).

    Examples
    --------
    >>> g = connectome_model(2000, 10.0, random_fraction=0.3, neighbourhood=40, reciprocity=0.1)
    >>> g.directed, bool(9 < g.mean_degree < 11), bool(0.08 < reciprocity(g) < 0.12)
    (True, True, True)
    """
    n = check_int("n", n, 10)
    mean_degree = check_real("mean_degree", mean_degree, 0, n - 1, low_open=True, high_open=True)
    random_fraction = check_real("random_fraction", random_fraction, 0, 1)
    neighbourhood = check_int("neighbourhood", neighbourhood, 1, n - 1)
    reciprocity = check_real("reciprocity", reciprocity, 0, 1, high_open=True)
    seed = check_int("seed", seed, 0)
    graph = _wire(n, mean_degree, random_fraction, neighbourhood, reciprocity, seed)
    # duplicates and the reciprocity adjustment move the mean degree a little: one proportional correction
    return _wire(n, mean_degree**2 / graph.mean_degree, random_fraction, neighbourhood, reciprocity, seed)


def _wire(n, mean_degree, random_fraction, neighbourhood, target_reciprocity, seed) -> Graph:
    """One draw of the model before the mean-degree correction."""
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
    """Return the share of directed edges ``u -> v`` whose reverse ``v -> u`` exists.

    As networkx's ``overall_reciprocity``; an undirected graph with edges has reciprocity 1, an empty graph 0.

    Parameters
    ----------
    graph : Graph

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``graph`` is not a :class:`graphs.Graph`.

    References
    ----------
    - D. Garlaschelli and M. I. Loffredo, "Patterns of link reciprocity in directed networks", Phys. Rev. Lett.
      93, 268701 (2004).

    Examples
    --------
    >>> reciprocity(Graph.from_edges(3, [0, 1, 1], [1, 0, 2]))
    0.6666666666666666
    """
    check_instance("graph", graph, Graph, "graphs.Graph")
    if not graph.directed or graph.indices.size == 0:
        return 1.0 if graph.indices.size else 0.0
    rows = np.repeat(np.arange(graph.n, dtype=np.int64), graph.out_degree)
    forward = rows * graph.n + graph.indices
    backward = graph.indices * graph.n + rows
    return float(np.isin(backward, forward, assume_unique=True).mean())


@dataclass(frozen=True)
class ConnectomeFit:
    """Fitted mixing parameters and the fitted model's statistics next to the targets (:func:`calibrate_connectome`).

    Attributes
    ----------
    random_fraction : float
        Fitted share of random connections.
    neighbourhood : int
        Fitted local neighbourhood size.
    n : int
        Number of neurons of the fitted model.
    seed : int
        Seed of every evaluation.
    measured : dict
        ``C``, ``L_directed``, ``mean_degree`` and ``reciprocity`` of the fitted model.
    targets : dict
        The same statistics as targeted.
    evaluations : int
        Number of model graphs drawn.

    Examples
    --------
    >>> fit = ConnectomeFit(0.2, 30, 1000, 0, {"C": 0.1}, {"C": 0.1}, 12)
    >>> fit.to_dict()["neighbourhood"], fit.evaluations
    (30, 12)
    """

    random_fraction: float
    neighbourhood: int
    n: int
    seed: int
    measured: dict
    targets: dict
    evaluations: int

    def to_dict(self) -> dict:
        """Return the fit as a JSON-ready ``dict``."""
        return asdict(self)


def _measure(graph: Graph, sources: int, seed: int) -> dict:
    """The statistics the fit compares with its targets."""
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

    Parameters
    ----------
    n : int, optional
        Number of neurons of the model graphs.
    target_C : float, optional
        Target average local clustering of the undirected graph, in ``(0, 1)``.
    target_L : float, optional
        Target directed path length, ``> 1``.
    mean_degree, reciprocity_target : float, optional
        Passed to :func:`connectome_model`.
    neighbourhood_range : tuple of int, optional
        ``(low, high)`` bounds of the neighbourhood search, ``2 <= low < high < n``.
    sources : int, optional
        Sampled sources of each path-length estimate.
    seed : int, optional
        Seed of every model graph and path-length sample.
    steps : int, optional
        Bisection steps of each search, ``>= 1``.
    progress : bool or None, optional
        Show a progress bar (``None``: only on a terminal).

    Returns
    -------
    ConnectomeFit

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If a target or ``neighbourhood_range`` lies outside its range.

    References
    ----------
    - A. Lin et al., "Network statistics of the whole-brain connectome of Drosophila",
      Nature 634, 153-165 (2024).

    Examples
    --------
    >>> fit = calibrate_connectome(600, target_C=0.3, target_L=4.0, mean_degree=8.0, reciprocity_target=0.1,
    ...                            neighbourhood_range=(8, 40), sources=16, steps=2, progress=False)
    >>> fit.evaluations, 8 <= fit.neighbourhood <= 40
    (6, True)
    """
    n = check_int("n", n, 10)
    target_C = check_real("target_C", target_C, 0, 1, low_open=True, high_open=True)
    target_L = check_real("target_L", target_L, 1, low_open=True)
    steps = check_int("steps", steps, 1)
    sources = check_int("sources", sources, 1)
    if not isinstance(neighbourhood_range, tuple | list) or len(neighbourhood_range) != 2:
        raise TypeError(f"neighbourhood_range: expected a pair (low, high), got {neighbourhood_range!r}")
    lo_k = check_int("neighbourhood_range", neighbourhood_range[0])
    hi_k = check_int("neighbourhood_range", neighbourhood_range[1])
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
