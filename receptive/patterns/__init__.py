"""Attention patterns as layered graphs: which keys each query attends to in each layer.

A pattern turns layer ``l`` into the engine's operators (:mod:`graphs.ops`); a layer with several operators is
their union. Modules, one family each: :mod:`.base` (the interface, explicit neighbour lists), :mod:`.local`
(sliding window, full), :mod:`.stochastic` (SA, SA+SWA), :mod:`.global_tokens` (Longformer global tokens,
StreamingLLM sinks), :mod:`.random_keys`, :mod:`.blocks` (chunked, BigBird), :mod:`.dilated` (dilated window,
LongNet), :mod:`.sparse_transformer` (strided, fixed), :mod:`.causal_variants` (the causal variants by name:
:mod:`.multiscale` multi-scale SA, :mod:`.kleinberg` Kleinberg keys, :mod:`.dilated_heads` dilated heads),
:mod:`.stack` (layer stacks), ``registry`` (the one registry of pattern names, :data:`PATTERNS`, and the layer
and stack specs), :mod:`.hf_config` (Hugging Face configs), :mod:`.flex` (FlexAttention mask_mod in and out),
:mod:`.content` (top-k, MoBA, LSH routing from q, k) and :mod:`.synthetic_content` (that routing on synthetic q, k,
for the specs).
"""

from .base import NeighbourListPattern, Pattern, WindowPattern
from .blocks import BigBird, Chunked
from .dilated import DilatedWindow, LongNet
from .global_tokens import SinkWindow, WindowGlobal
from .hf_config import pattern_from_config
from .local import FullAttention, SlidingWindow
from .random_keys import RandomKeys
from .registry import PATTERNS, make_pattern, pattern_from_spec, stack_from_spec
from .sparse_transformer import Fixed, Strided
from .stack import LayerStack
from .stochastic import GatedSAPlusSWA, StochasticAttention

__all__ = [
    "PATTERNS",
    "BigBird",
    "CSRPattern",
    "Chunked",
    "DilatedWindow",
    "Fixed",
    "FullAttention",
    "GatedSAPlusSWA",
    "LayerStack",
    "LongNet",
    "NeighbourListPattern",
    "Pattern",
    "RandomKeys",
    "SinkWindow",
    "SlidingWindow",
    "StochasticAttention",
    "Strided",
    "WindowGlobal",
    "WindowPattern",
    "from_mask_mod",
    "lsh_pattern",
    "make_pattern",
    "moba_pattern",
    "pattern_from_config",
    "pattern_from_spec",
    "random_content_pattern",
    "random_qk",
    "stack_from_spec",
    "to_mask_mod",
    "topk_pattern",
]

#: names of :mod:`.flex` and :mod:`.content`, loaded on first use (they need scipy.sparse; PEP 562)
_LAZY = {
    "CSRPattern": "flex",
    "from_mask_mod": "flex",
    "to_mask_mod": "flex",
    "lsh_pattern": "content",
    "moba_pattern": "content",
    "random_content_pattern": "content",
    "random_qk": "content",
    "topk_pattern": "content",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
