"""Graph-analysis core of ``receptive``: bit-parallel reachability through layered and static graphs."""

from .memory import DEFAULT_MAX_MEMORY, parse_bytes
from .ops import NeighbourOp, WindowOp, apply_layer
from .reachability import ReachCounts, admissible_sizes, backward_counts, forward_counts

__all__ = [
    "DEFAULT_MAX_MEMORY",
    "NeighbourOp",
    "ReachCounts",
    "WindowOp",
    "admissible_sizes",
    "apply_layer",
    "backward_counts",
    "forward_counts",
    "parse_bytes",
]
