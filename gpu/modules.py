"""Drop-in multi-head attention modules: Stochastic Attention and gated SA+SWA (Jin & Sui 2026, arXiv 2604.00754).

Both project ``x`` (``(batch, seq, d_model)``) to q, k, v (GQA: ``n_kv_heads`` may divide ``n_heads``), apply
rotary position embeddings with the *original* positions (before any permutation, so positions mean what they
mean in the text), attend, and project back. In training every forward draws a fresh permutation; in eval the
permutation of layer ``layer`` and seed ``seed`` is :func:`receptive.permutations.layer_permutation`'s, so a
fixed model analyses with ``receptive.coverage``.

``variant=`` replaces SA by one of the causal variants of issue 13 (:mod:`gpu.variants`): ``sa-ms`` (per-head
block permutations on SA's band), ``kleinberg`` (distance-stratified random keys, gathered) or ``dilated``
(dilated heads, banded per residue class). In eval mode the module attends exactly the keys of
:func:`receptive.patterns.causal_variants.make_variant` ``(variant, n, w, causal, seed=seed)``'s layer ``layer``
(the union over heads, with at least as many heads as the pattern has scales); in training ``sa-ms`` and
``kleinberg`` draw fresh permutations / keys on q's device at every forward, ``dilated`` is deterministic.
"""

from __future__ import annotations

import torch
from torch import nn

from receptive.validation import check_int
from receptive.windows import max_window

from .attention import swa_attention
from .projections import AttentionProjections, rotary
from .variants import (
    PERMUTED,
    VARIANTS,
    check_blocks_option,
    check_variant,
    head_blocks,
    head_dilations,
    multiscale_permutations,
    variant_attention,
)

__all__ = [
    "VARIANTS",
    "AttentionProjections",
    "GatedSASWA",
    "StochasticAttention",
    "head_blocks",
    "head_dilations",
    "multiscale_permutations",
    "rotary",
]


class _VariantPath:
    """The SA path of both modules: ``variant`` with window ``window`` (clipped to the sequence), eval-mode keys of
    (``seed``, ``layer``), fresh ones per training forward on q's device."""

    def _init_variant(self, seed, layer, variant, blocks):
        self.seed, self.layer = check_int("seed", seed, 0), check_int("layer", layer, 1)
        self.variant = check_variant(variant)
        self.blocks = check_blocks_option(blocks, self.variant)
        self.last_perm: torch.Tensor | None = None  # sa, sa-ms: the permutation(s) of the last forward
        self.last_keys: torch.Tensor | None = None  # kleinberg: the key table of the last forward

    def variant_window(self, n: int) -> int:
        """The window at length ``n``: SA's band up to ``2n - 1`` (``sa``, ``sa-ms``), the patterns' ``min(w, n)``
        (``kleinberg``, ``dilated``)."""
        return self.window_for(n) if self.variant in PERMUTED else min(self.window, n)

    def sa_path(self, q, k, v, n):
        """``(y, state)`` of :func:`gpu.variants.variant_attention`; records ``last_perm`` / ``last_keys``."""
        fixed = None if self.training else self.seed
        y, state = variant_attention(q, k, v, self.variant_window(n), self.variant, causal=self.causal, seed=fixed,
                                     layer=self.layer, blocks=self.blocks, return_state=True)  # fmt: skip
        self.last_perm = state if self.variant in PERMUTED else None
        self.last_keys = state if self.variant == "kleinberg" else None
        return y, state


class StochasticAttention(_VariantPath, AttentionProjections):
    """Multi-head Stochastic Attention with window ``window`` (keys per query, itself included).

    ``variant`` (:data:`gpu.variants.VARIANTS`): ``"sa"`` (default); ``"sa-ms"``: multi-scale SA, every head
    permutes within blocks of its own size (:func:`multiscale_permutations`, ``blocks`` overrides the sizes), the
    same band and cost per head as SA; ``"kleinberg"``: ``i`` and ``window - 1`` keys at harmonic distances, one
    table per forward shared by the heads (gathered); ``"dilated"``: head ``h`` is a window of ``window`` over
    every ``r_h``-th position (:func:`head_dilations`; banded, deterministic). See :mod:`gpu.variants`."""

    def __init__(
        self, d_model, n_heads, window, *, n_kv_heads=None, causal=True, rope=True, seed=0, layer=1, variant="sa",
        blocks=None,
    ):  # fmt: skip
        super().__init__(d_model, n_heads, n_kv_heads, window, causal, rope)
        self._init_variant(seed, layer, variant, blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x)
        y, _ = self.sa_path(q, k, v, x.shape[1])
        return self.merge(y)


class GatedSASWA(_VariantPath, AttentionProjections):
    """Both paths on the same q, k, v: ``Y = sigmoid(x W_sa) * Y_sa + sigmoid(x W_swa) * Y_swa`` with per-token,
    per-head gates (two independent sigmoids, reported better than a softmax gate). ``variant`` replaces the SA
    path as in :class:`StochasticAttention`; the keys a head reaches are then the variant's and the sliding
    window's (``window_swa``, default ``window``): the pattern ``variant + "+swa"`` of
    :func:`receptive.patterns.causal_variants.make_variant`, here with two gated softmaxes instead of one."""

    def __init__(
        self,
        d_model,
        n_heads,
        window,
        *,
        n_kv_heads=None,
        causal=True,
        rope=True,
        seed=0,
        layer=1,
        window_swa: int | None = None,
        variant: str = "sa",
        blocks=None,
    ):
        super().__init__(d_model, n_heads, n_kv_heads, window, causal, rope)
        self._init_variant(seed, layer, variant, blocks)
        self.window_swa = window if window_swa is None else check_int("window_swa", window_swa, 1)
        self.gate_sa = nn.Linear(d_model, n_heads)
        self.gate_swa = nn.Linear(d_model, n_heads)

    @property
    def extra_parameters(self) -> int:
        """Parameters the gates add to a plain attention layer: ``2 (d_model n_heads + n_heads)``."""
        return sum(p.numel() for p in (*self.gate_sa.parameters(), *self.gate_swa.parameters()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x)
        n = x.shape[1]
        y_sa, _ = self.sa_path(q, k, v, n)
        swa_window = min(self.window_swa, max_window(n, self.causal, False))
        y_swa = swa_attention(q, k, v, swa_window, causal=self.causal)
        g_sa = torch.sigmoid(self.gate_sa(x)).transpose(1, 2)[..., None]
        g_swa = torch.sigmoid(self.gate_swa(x)).transpose(1, 2)[..., None]
        return self.merge(g_sa * y_sa + g_swa * y_swa)
