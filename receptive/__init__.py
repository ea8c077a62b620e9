"""receptive: how information spreads through efficient attention.

Attention patterns (:mod:`receptive.patterns`), their receptive-field coverage through depth
(:mod:`receptive.coverage`) and the theory that predicts it (:mod:`receptive.theory`). Imports without torch.
"""

__version__ = "0.1.0"

from .coverage import CoverageResult, LayerCoverage, coverage
from .patterns import (
    PATTERNS,
    FullAttention,
    GatedSAPlusSWA,
    NeighbourListPattern,
    Pattern,
    SlidingWindow,
    StochasticAttention,
    make_pattern,
)
from .permutations import inverse_permutation, layer_permutation, sample_permutations
from .windows import flash_attention_window_size, max_window, window_offsets

__all__ = [
    "PATTERNS",
    "CoverageResult",
    "FullAttention",
    "GatedSAPlusSWA",
    "LayerCoverage",
    "NeighbourListPattern",
    "Pattern",
    "SlidingWindow",
    "StochasticAttention",
    "__version__",
    "coverage",
    "flash_attention_window_size",
    "inverse_permutation",
    "layer_permutation",
    "make_pattern",
    "max_window",
    "sample_permutations",
    "window_offsets",
]
