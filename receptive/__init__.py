"""receptive: how information spreads through efficient attention.

Attention patterns (:mod:`receptive.patterns`), their receptive-field coverage through depth
(:mod:`receptive.coverage`, measured by :func:`coverage_by_layer`) and the theory that predicts it
(:mod:`receptive.theory`). Imports without torch.

No subpackage or module shares a name with a function exported here: ``receptive.coverage`` is always the
subpackage (whose ``__main__`` is ``python -m receptive.coverage``).

Examples
--------
>>> import receptive
>>> receptive.coverage_by_layer(receptive.make_pattern("swa", 64, 8), 3).layers[0].mean > 0
True
"""

__version__ = "0.1.0"

from .coverage import CoverageResult, LayerCoverage, coverage_by_layer
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
    "coverage_by_layer",
    "flash_attention_window_size",
    "inverse_permutation",
    "layer_permutation",
    "make_pattern",
    "max_window",
    "sample_permutations",
    "window_offsets",
]
