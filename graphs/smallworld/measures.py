"""Small-world measures: clustering and path length against random and lattice references.

* ``sigma = (C / C_r) / (L / L_r)`` (Humphries & Gurney 2008): > 1 for small worlds.
* ``omega = L_r / L - C / C_latt`` (Telesford et al. 2011): near 0 for small worlds, towards -1 lattice-like,
  towards +1 random-like.

References, as FlyWire's analysis (Lin et al. 2024) uses them, on the undirected graph:
``analytic``: Erdos-Renyi with the same ``n`` and mean degree ``<k>``, ``C_r = <k>/(n-1)`` and
``L_r = (ln n - gamma)/ln<k> + 1/2`` (Fronczak, Fronczak & Holyst 2004, gamma = 0.5772);
``rewired``: the same graph after degree-preserving edge switching (:mod:`graphs.rewire`), measured.
The lattice reference of omega is the ring lattice with the same mean degree, ``C_latt = 3(k-2)/(4(k-1))``
(Watts & Strogatz 1998) with ``k`` the mean degree rounded to an even number (``analytic`` in both cases).

References
----------
- D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442 (1998).
- M. D. Humphries and K. Gurney, "Network 'small-world-ness': a quantitative method for determining
  canonical network equivalence", PLoS ONE 3, e0002051 (2008).
- Q. K. Telesford, K. E. Joyce, S. Hayasaka, J. H. Burdette and P. J. Laurienti, "The ubiquity of small-world
  networks", Brain Connectivity 1, 367-375 (2011).
- A. Fronczak, P. Fronczak and J. A. Holyst, "Average path length in random networks", Phys. Rev. E 70, 056110
  (2004).
- A. Lin et al., "Network statistics of the whole-brain connectome of Drosophila", Nature 634, 153-165 (2024).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..clustering_measures import average_clustering, transitivity
from ..graph import Graph
from ..paths import path_lengths
from ..rewire import degree_preserving_random
from ..validation import check_choice, check_instance, check_int, check_real

EULER_GAMMA = 0.5772156649015329
REFERENCES = ("analytic", "rewired")


def er_clustering(n: int, mean_degree: float) -> float:
    """Return ``C_r = <k> / (n - 1)``, the expected clustering of an Erdos-Renyi graph.

    Parameters
    ----------
    n : int
        Number of nodes, at least 2.
    mean_degree : float
        Mean degree ``<k>``, ``>= 0``.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``n < 2`` or ``mean_degree < 0``.

    References
    ----------
    - D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442
      (1998).

    Examples
    --------
    >>> er_clustering(101, 10)
    0.1
    """
    n = check_int("n", n, 2)
    mean_degree = check_real("mean_degree", mean_degree, 0)
    return mean_degree / (n - 1)


def er_path_length(n: int, mean_degree: float) -> float:
    """Return ``L_r = (ln n - gamma) / ln<k> + 1/2``, the mean path length of an Erdos-Renyi graph.

    ``gamma`` is Euler's constant. Without a giant component (``<k> <= 1``) the path length diverges and
    ``inf`` is returned.

    Parameters
    ----------
    n : int
        Number of nodes, at least 2.
    mean_degree : float
        Mean degree ``<k>``, ``>= 0``.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``n < 2`` or ``mean_degree < 0``.

    References
    ----------
    - A. Fronczak, P. Fronczak and J. A. Holyst, "Average path length in random networks", Phys. Rev. E 70,
      056110 (2004), Eq. 21.

    Examples
    --------
    >>> round(er_path_length(10_000, 20), 3)
    3.382
    >>> er_path_length(100, 1)
    inf
    """
    n = check_int("n", n, 2)
    mean_degree = check_real("mean_degree", mean_degree, 0)
    if mean_degree <= 1:
        return math.inf  # <k> <= 1: no giant component in the ER reference
    return (math.log(n) - EULER_GAMMA) / math.log(mean_degree) + 0.5


def lattice_clustering(mean_degree: float) -> float:
    """Return ``C_latt = 3(k-2) / (4(k-1))``, the clustering of a ring lattice with ``k`` neighbours.

    ``k`` is the mean degree rounded to an even number, at least 2.

    Parameters
    ----------
    mean_degree : float
        Mean degree, ``>= 0``.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``mean_degree`` is not a real number.
    ValueError
        If ``mean_degree < 0``.

    References
    ----------
    - D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442
      (1998).

    Examples
    --------
    >>> lattice_clustering(4)
    0.5
    """
    mean_degree = check_real("mean_degree", mean_degree, 0)
    k = max(2, 2 * round(mean_degree / 2))
    return 3 * (k - 2) / (4 * (k - 1))


@dataclass(frozen=True)
class SmallWorld:
    """Small-world statistics of one graph, as returned by :func:`small_world`.

    ``C``, ``L``, ``transitivity`` are those of the undirected graph (``L`` in its giant connected component); for
    directed graphs ``C_directed`` (Fagiolo's directed clustering) and ``L_directed`` (giant strongly connected
    component) are reported too.

    ``sigma`` and ``omega`` are ``None`` where they are undefined: ``C_r = 0`` or ``L = 0`` (no edges), ``C_latt =
    0`` (omega; mean degree below 3), and ``L_r`` infinite: the analytic reference at ``<k> <= 1`` (an ER graph
    with ``<k> <= 1`` has no giant component, so its path length diverges; ``L_r`` is then ``inf``, shown as
    ``null`` in JSON).

    Attributes
    ----------
    n, edges : int
        Nodes and edges of the graph.
    mean_degree : float
        Its mean (out-)degree.
    C, transitivity : float
        Average local clustering and transitivity of the undirected graph.
    L : float
        Characteristic path length of the undirected graph's giant component.
    L_method : str
        ``"exact"`` or ``"sampled (K sources)"``.
    C_r, L_r : float
        The random reference's clustering and path length.
    C_latt : float
        The ring lattice's clustering (the reference of ``omega``).
    sigma, omega : float or None
        The small-world coefficients.
    reference : str
        ``"analytic"`` or ``"rewired"``.
    unreachable_fraction : float
        Share of ordered pairs of the undirected graph with no path.
    L_ci, L_directed_ci : tuple of float or None
        95% intervals of sampled path lengths.
    C_directed, L_directed : float or None
        Directed clustering and path length (directed graphs).
    giant_scc_fraction, giant_wcc_fraction : float or None
        Shares of nodes in the giant strongly and weakly connected components.

    References
    ----------
    - M. D. Humphries and K. Gurney, "Network 'small-world-ness': a quantitative method for determining
      canonical network equivalence", PLoS ONE 3, e0002051 (2008).
    - Q. K. Telesford et al., "The ubiquity of small-world networks", Brain Connectivity 1, 367-375 (2011).

    Examples
    --------
    >>> from graphs.generators import watts_strogatz
    >>> sw = small_world(watts_strogatz(200, 6, 0.1, seed=1))
    >>> sw.n, sw.edges, sw.reference, sw.L_method, sw.C_directed
    (200, 600, 'analytic', 'exact', None)
    >>> bool(sw.sigma > 1), sw.to_dict()["n"]
    (True, 200)
    """

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
        """Return the statistics as a JSON-ready ``dict`` (tuples as lists)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}


def small_world(
    graph: Graph,
    *,
    sources: int | None = None,
    reference: str = "analytic",
    seed: int = 0,
    progress: bool | None = None,
) -> SmallWorld:
    """Compute C, L and the small-world coefficients sigma and omega of ``graph``.

    Parameters
    ----------
    graph : Graph
        Directed or undirected; C and L are measured on the undirected graph, the directed ones as well when
        ``graph`` is directed.
    sources : int or None, optional
        ``None``: exact path lengths; ``K``: from ``K`` sampled sources with a 95% interval.
    reference : {"analytic", "rewired"}, optional
        The random reference: Erdos-Renyi formulas, or the measured degree-preserving randomisation.
    seed : int, optional
        Seed of the sampled sources and of the rewiring.
    progress : bool or None, optional
        Show progress bars (``None``: only on a terminal).

    Returns
    -------
    SmallWorld

    Raises
    ------
    TypeError
        If ``graph`` is not a :class:`graphs.Graph` or an argument has the wrong type.
    ValueError
        If ``reference`` is unknown or ``sources`` out of range.

    References
    ----------
    - D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442
      (1998).
    - M. D. Humphries and K. Gurney, "Network 'small-world-ness': a quantitative method for determining
      canonical network equivalence", PLoS ONE 3, e0002051 (2008).
    - Q. K. Telesford et al., "The ubiquity of small-world networks", Brain Connectivity 1, 367-375 (2011).

    Examples
    --------
    >>> from graphs.generators import watts_strogatz
    >>> sw = small_world(watts_strogatz(1000, 10, 0.1, seed=1))
    >>> bool(sw.sigma > 5), round(sw.C_latt, 3)
    (True, 0.667)
    """
    check_instance("graph", graph, Graph, "graphs.Graph")
    reference = check_choice("reference", reference, REFERENCES)
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
