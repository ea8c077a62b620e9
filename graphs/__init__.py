"""Graph-analysis core of ``receptive``: bit-parallel reachability through layered and static graphs, path
lengths, clustering, small-world measures (:mod:`graphs.smallworld`) and the connectome model."""

from .clustering import ClusteringResult, average_clustering, clustering, local_clustering, transitivity, triangles
from .graph import Graph
from .memory import DEFAULT_MAX_MEMORY, parse_bytes
from .ops import NeighbourOp, WindowOp, apply_layer
from .paths import PathLengths, giant_component, path_lengths
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
