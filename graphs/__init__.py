"""Graph-analysis core of ``receptive``.

Bit-parallel reachability through layered graphs (:mod:`graphs.reachability`; sampled targets through the
transposed layers, :mod:`graphs.backward`), static graphs in CSR form (:class:`Graph`), path lengths
(:mod:`graphs.paths`), clustering coefficients (:mod:`graphs.clustering_measures`), reference random graphs
(:mod:`graphs.generators`), edge-list loaders (:mod:`graphs.io`), small-world measures and the connectome model
(:mod:`graphs.smallworld`).

No submodule shares a name with a function exported here: ``graphs.clustering`` is always the function
:func:`graphs.clustering_measures.clustering`. The engine's own plumbing is not exported here and stays in its
modules: sizes in bytes (:func:`graphs.memory.parse_bytes`, :data:`graphs.memory.DEFAULT_MAX_MEMORY`) and the plan
and sum of slabs for runs split into tasks (:func:`graphs.reachability.plan_slabs`,
:func:`graphs.reachability.combine_slabs`).

Examples
--------
>>> import graphs
>>> g = graphs.Graph.from_edges(3, [0, 1, 2], [1, 2, 0], directed=False)
>>> graphs.clustering(g).average
1.0
"""

from .backward import backward_counts, backward_full_layer
from .ops import NeighbourOp, WindowOp, apply_layer
from .reachability import ReachCounts, SlabCounts, admissible_sizes, forward_counts, slab_counts

#: names imported on first use (PEP 562), so that ``import graphs`` (and the coverage engine) does not load
#: scipy.sparse.csgraph or compile the static-graph kernels
_LAZY = {
    "ClusteringResult": "clustering_measures",
    "average_clustering": "clustering_measures",
    "clustering": "clustering_measures",
    "local_clustering": "clustering_measures",
    "transitivity": "clustering_measures",
    "triangles": "clustering_measures",
    "Graph": "graph",
    "PathLengths": "paths",
    "giant_component": "paths",
    "path_lengths": "paths",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "ClusteringResult",
    "Graph",
    "NeighbourOp",
    "PathLengths",
    "ReachCounts",
    "SlabCounts",
    "WindowOp",
    "admissible_sizes",
    "apply_layer",
    "average_clustering",
    "backward_counts",
    "backward_full_layer",
    "clustering",
    "forward_counts",
    "giant_component",
    "local_clustering",
    "path_lengths",
    "slab_counts",
    "transitivity",
    "triangles",
]
