"""Attention patterns as layered graphs: which keys each query attends to in each layer.

A pattern turns layer ``l`` into the engine's operators (:mod:`graphs.ops`); a layer with several operators is
their union. Modules: :mod:`.base` (the interface, explicit neighbour lists), :mod:`.local` (sliding window, full),
:mod:`.stochastic` (SA, SA+SWA), :mod:`.registry` (names, :func:`make_pattern`).
"""

from .base import NeighbourListPattern, Pattern, WindowPattern
from .local import FullAttention, SlidingWindow
from .registry import PATTERNS, make_pattern
from .stochastic import GatedSAPlusSWA, StochasticAttention

__all__ = [
    "PATTERNS",
    "FullAttention",
    "GatedSAPlusSWA",
    "NeighbourListPattern",
    "Pattern",
    "SlidingWindow",
    "StochasticAttention",
    "WindowPattern",
    "make_pattern",
]
