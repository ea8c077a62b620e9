"""Graph-analysis core of ``receptive``: bit-parallel reachability through layered and static graphs."""

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

__all__ = [
    "DEFAULT_MAX_MEMORY",
    "NeighbourOp",
    "ReachCounts",
    "SlabCounts",
    "WindowOp",
    "admissible_sizes",
    "apply_layer",
    "backward_counts",
    "backward_full_layer",
    "combine_slabs",
    "forward_counts",
    "parse_bytes",
    "plan_slabs",
    "slab_counts",
    "slab_ranges",
]
