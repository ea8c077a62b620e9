"""Small-world measures: clustering and path length against random and lattice references.

* ``sigma = (C / C_r) / (L / L_r)`` (Humphries & Gurney 2008, PLoS ONE 3:e0002051): > 1 for small worlds.
* ``omega = L_r / L - C / C_latt`` (Telesford et al. 2011, Brain Connectivity 1:367): near 0 for small worlds,
  towards -1 lattice-like, towards +1 random-like.

References, as FlyWire's analysis (Lin et al. 2024, Nature 634:153) uses them, on the undirected graph:
``analytic``: Erdos-Renyi with the same ``n`` and mean degree ``<k>``, ``C_r = <k>/(n-1)`` and
``L_r = (ln n - gamma)/ln<k> + 1/2`` (Fronczak, Fronczak & Holyst 2004, PRE 70:056110, gamma = 0.5772);
``rewired``: the same graph after degree-preserving edge switching (:mod:`graphs.rewire`), measured.
The lattice reference of omega is the ring lattice with the same mean degree, ``C_latt = 3(k-2)/(4(k-1))``
(Watts & Strogatz 1998) with ``k`` the mean degree rounded to an even number (``analytic`` in both cases).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..clustering import average_clustering, transitivity
from ..graph import Graph
from ..paths import path_lengths
from ..rewire import degree_preserving_random

EULER_GAMMA = 0.5772156649015329
REFERENCES = ("analytic", "rewired")


def er_clustering(n: int, mean_degree: float) -> float:
    """``C_r = <k> / (n - 1)``: clustering of an Erdos-Renyi graph (every pair linked with ``p = <k>/(n-1)``)."""
    return mean_degree / (n - 1)


def er_path_length(n: int, mean_degree: float) -> float:
    """``L_r = (ln n - gamma) / ln<k> + 1/2`` (Fronczak, Fronczak & Holyst 2004, PRE 70:056110, Eq. 21)."""
    if mean_degree <= 1:
        return math.inf  # <k> <= 1: no giant component in the ER reference
    return (math.log(n) - EULER_GAMMA) / math.log(mean_degree) + 0.5


def lattice_clustering(mean_degree: float) -> float:
    """``C_latt = 3(k-2) / (4(k-1))`` of a ring lattice with ``k`` neighbours (``k`` = mean degree rounded to even,
    at least 2; Watts & Strogatz 1998)."""
    k = max(2, 2 * round(mean_degree / 2))
    return 3 * (k - 2) / (4 * (k - 1))


@dataclass(frozen=True)
class SmallWorld:
    """Small-world statistics of one graph. ``C``, ``L``, ``transitivity`` are those of the undirected graph (``L``
    in its giant connected component); for directed graphs ``C_directed`` (Fagiolo's directed clustering) and
    ``L_directed`` (giant strongly connected component) are reported too.

    ``sigma`` and ``omega`` are ``None`` where they are undefined: ``C_r = 0`` or ``L = 0`` (no edges), ``C_latt =
    0`` (omega; mean degree below 3), and ``L_r`` infinite: the analytic reference at ``<k> <= 1`` (an ER graph
    with ``<k> <= 1`` has no giant component, Erdos & Renyi 1960, so its path length diverges; ``L_r`` is then
    ``inf``, shown as ``null`` in JSON)."""

    n: int
    edges: int
    mean_degree: float
    C: float
    transitivity: float
    L: float
    L_method: str
    C_r: float
    L_r: float
    C_latt: float
    sigma: float | None
    omega: float | None
    reference: str
    unreachable_fraction: float
    L_ci: tuple[float, float] | None = None
    C_directed: float | None = None
    L_directed: float | None = None
    L_directed_ci: tuple[float, float] | None = None
    giant_scc_fraction: float | None = None
    giant_wcc_fraction: float | None = None

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}


def small_world(
    graph: Graph,
    *,
    sources: int | None = None,
    reference: str = "analytic",
    seed: int = 0,
    progress: bool | None = None,
) -> SmallWorld:
    """C, L and the small-world coefficients of ``graph`` (``sources=None``: exact L; ``K``: from K sampled sources
    with a 95% interval)."""
    if not isinstance(graph, Graph):
        raise ValueError(f"graph: expected a graphs.Graph, got {type(graph).__name__}")
    if reference not in REFERENCES:
        raise ValueError(f"reference: expected one of {', '.join(REFERENCES)}, got {reference!r}")
    und = graph.undirected()
    k = und.mean_degree
    c = average_clustering(und)
    paths = path_lengths(und, sources=sources, seed=seed, progress=progress)
    if reference == "analytic":
        c_r, l_r = er_clustering(graph.n, k), er_path_length(graph.n, k)
    else:
        rand = degree_preserving_random(und, seed=seed)
        c_r = average_clustering(rand)
        l_r = path_lengths(rand, sources=sources, seed=seed, progress=progress).mean
    c_latt = lattice_clustering(k)
    # undefined (None, never NaN or a division by zero) without a random clustering, without paths, or when the
    # ER reference has no giant component (<k> <= 1: L_r infinite)
    finite = math.isfinite(l_r) and l_r > 0
    sigma = (c / c_r) / (paths.mean / l_r) if c_r > 0 and paths.mean > 0 and finite else None
    omega = l_r / paths.mean - c / c_latt if paths.mean > 0 and c_latt > 0 and finite else None
    extra = {}
    if graph.directed:
        directed_paths = path_lengths(graph, sources=sources, seed=seed, progress=progress)
        extra = dict(
            C_directed=average_clustering(graph),
            L_directed=directed_paths.mean,
            L_directed_ci=directed_paths.ci,
            giant_scc_fraction=directed_paths.component_size / graph.n,
        )
    return SmallWorld(
        n=graph.n,
        edges=graph.edges,
        mean_degree=graph.mean_degree,
        C=c,
        transitivity=transitivity(und),
        L=paths.mean,
        L_method=paths.method if sources is None else f"sampled ({paths.sources} sources)",
        C_r=c_r,
        L_r=l_r,
        C_latt=c_latt,
        sigma=sigma,
        omega=omega,
        reference=reference,
        unreachable_fraction=paths.unreachable_fraction,
        L_ci=paths.ci,
        giant_wcc_fraction=paths.component_size / graph.n,
        **extra,
    )
