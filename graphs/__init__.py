"""Graph-analysis core of ``receptive``: bit-parallel reachability through layered and static graphs, path
lengths, clustering, small-world measures (:mod:`graphs.smallworld`) and the connectome model."""

from .memory import DEFAULT_MAX_MEMORY, parse_bytes
from .ops import NeighbourOp, WindowOp, apply_layer
from .reachability import (
    ReachCounts,
    SlabCounts,
    admissible_sizes,
    backward_counts,
    backward_full_layer,
    combine_slabs,
    forward_counts,
    plan_slabs,
    slab_counts,
    slab_ranges,
)

#: names imported on first use (PEP 562): the coverage engine starts without scipy.sparse.csgraph and the static
#: graph kernels (``python -X importtime -m receptive.coverage``)
_LAZY = {
    "ClusteringResult": "clustering",
    "average_clustering": "clustering",
    "clustering": "clustering",
    "local_clustering": "clustering",
    "transitivity": "clustering",
    "triangles": "clustering",
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
    "DEFAULT_MAX_MEMORY",
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
    "combine_slabs",
    "forward_counts",
    "giant_component",
    "local_clustering",
    "parse_bytes",
    "path_lengths",
    "plan_slabs",
    "slab_counts",
    "slab_ranges",
    "transitivity",
    "triangles",
]
