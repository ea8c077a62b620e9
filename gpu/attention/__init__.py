"""The attention backend: SWA, SA, gated SA+SWA and the causal variants on torch tensors, attention over explicit
key lists, the generation forms of the causal patterns and a float64 oracle.

Nothing here imports the Hugging Face integration (:mod:`gpu.hf`), the approximation lab (:mod:`gpu.approx`) or the
benchmark CLI (:mod:`gpu.bench`); they all build on it.
"""

from gpu.attention.functional import (
    BACKENDS,
    full_attention,
    inverse_permutation,
    permute_sequence,
    sa_attention,
    swa_attention,
)
from gpu.attention.generation_patterns import GENERATION_METHODS, generation_attention
from gpu.attention.modules import AttentionProjections, GatedSAPlusSWALayer, StochasticAttentionLayer, rotary
from gpu.attention.neighbour import neighbour_attention, pattern_keys
from gpu.attention.variants import VARIANTS, variant_attention

__all__ = [
    "BACKENDS",
    "GENERATION_METHODS",
    "VARIANTS",
    "AttentionProjections",
    "GatedSAPlusSWALayer",
    "StochasticAttentionLayer",
    "full_attention",
    "generation_attention",
    "inverse_permutation",
    "neighbour_attention",
    "pattern_keys",
    "permute_sequence",
    "rotary",
    "sa_attention",
    "swa_attention",
    "variant_attention",
]
