"""Drop-in multi-head attention layers: Stochastic Attention and gated SA+SWA (Jin & Sui 2026, arXiv 2604.00754).

Both project ``x`` (``(batch, seq, d_model)``) to q, k, v (GQA: ``kv_heads`` may divide ``heads``), apply rotary
position embeddings at the *original* positions (before any permutation, so positions mean what they mean in the
text), attend, and project back. In training every forward draws a fresh permutation; in eval the permutation of
layer ``layer`` and seed ``seed`` is :func:`receptive.permutations.layer_permutation`'s, so a fixed model is
analysed by ``receptive.coverage`` with the pattern of the same name (:class:`receptive.StochasticAttention`,
:class:`receptive.GatedSAPlusSWA`).

``variant=`` replaces SA by one of the causal variants of :mod:`gpu.attention.variants`: ``sa-ms`` (per-head block
permutations on SA's band), ``kleinberg`` (distance-stratified random keys, gathered) or ``dilated`` (dilated heads,
banded per residue class). In eval mode the layer attends exactly the keys of
:func:`receptive.patterns.causal_variants.make_variant` ``(variant, n, w, causal, seed=seed)``'s layer ``layer``
(the union over heads, with at least as many heads as the pattern has scales); in training ``sa-ms`` and
``kleinberg`` draw fresh permutations / keys on q's device at every forward, ``dilated`` is deterministic.
"""

from __future__ import annotations

import torch
from torch import nn

from gpu.attention.functional import swa_attention
from gpu.attention.neighbour import variant_window
from gpu.attention.projections import AttentionProjections, rotary
from gpu.attention.variants import (
    PERMUTED,
    VARIANTS,
    check_blocks_option,
    check_variant,
    head_blocks,
    head_dilations,
    multiscale_permutations,
    variant_attention,
)
from gpu.validation import check_int
from receptive.windows import max_window

__all__ = [
    "VARIANTS",
    "AttentionProjections",
    "GatedSAPlusSWALayer",
    "StochasticAttentionLayer",
    "head_blocks",
    "head_dilations",
    "multiscale_permutations",
    "rotary",
]


class _VariantPath:
    """The SA path of both layers: ``variant`` with window ``w``, eval keys of (``seed``, ``layer``)."""

    def _init_variant(self, seed, layer, variant, blocks):
        self.seed, self.layer = check_int("seed", seed, 0), check_int("layer", layer, 1)
        self.variant = check_variant(variant)
        self.blocks = check_blocks_option(blocks, self.variant)
        self.last_perm: torch.Tensor | None = None  # sa, sa-ms: the permutation(s) of the last forward
        self.last_keys: torch.Tensor | None = None  # kleinberg: the key table of the last forward

    def variant_window(self, n: int) -> int:
        """The window at length ``n``: SA's band up to ``2n - 1`` (``sa``, ``sa-ms``), ``min(w, n)`` otherwise."""
        return self.window_for(n) if self.variant in PERMUTED else variant_window(n, self.w)

    def sa_path(self, q, k, v, n):
        """``(y, state)`` of :func:`gpu.attention.variants.variant_attention`; records ``last_perm`` / ``last_keys``."""
        fixed = None if self.training else self.seed
        y, state = variant_attention(
            q,
            k,
            v,
            self.variant_window(n),
            self.variant,
            causal=self.causal,
            seed=fixed,
            layer=self.layer,
            blocks=self.blocks,
            return_state=True,
        )
        self.last_perm = state if self.variant in PERMUTED else None
        self.last_keys = state if self.variant == "kleinberg" else None
        return y, state


class StochasticAttentionLayer(_VariantPath, AttentionProjections):
    """Multi-head Stochastic Attention, an ``nn.Module`` mapping ``(batch, seq, d_model)`` to the same shape.

    Each layer permutes the sequence, runs a sliding window of ``w`` slots in permuted order and puts the outputs
    back, so a query attends ``w`` keys scattered over the whole sequence. The pattern that ``receptive`` analyses
    for the same ``(n, w, causal, seed)`` is :class:`receptive.StochasticAttention`.

    Parameters
    ----------
    d_model : int
        Model width, a multiple of ``heads``.
    heads : int
        Query heads.
    w : int
        Window: keys per query, itself included; clipped to the sequence at every forward.
    kv_heads : int or None, default None
        Key/value heads (GQA), a divisor of ``heads``; ``None`` means ``heads``.
    causal : bool, default False
        Attend only to keys whose original position is at or before the query's.
    rope : bool, default True
        Apply rotary position embeddings at the original positions.
    seed : int, default 0
        Seed of the eval-mode permutation (:func:`receptive.permutations.layer_permutation`).
    layer : int, default 1
        Layer index (1-based) of the eval-mode permutation.
    variant : str, default "sa"
        One of :data:`gpu.attention.variants.VARIANTS`: ``"sa"``; ``"sa-ms"`` (multi-scale SA: every head permutes
        within blocks of its own size, ``multiscale_permutations``); ``"kleinberg"`` (``i`` and ``w - 1`` keys at
        harmonic distances, one table per forward shared by the heads); ``"dilated"`` (head ``h`` is a window of
        ``w`` over every ``r_h``-th position, ``head_dilations``).
    blocks : sequence of int or None, default None
        ``sa-ms`` only: the block sizes (divisors of ``n``) instead of ``w, w^2, ..., n``.

    Attributes
    ----------
    last_perm : torch.Tensor or None
        ``sa``, ``sa-ms``: the permutation(s) of the last forward.
    last_keys : torch.Tensor or None
        ``kleinberg``: the key table of the last forward.

    Raises
    ------
    TypeError
        If an integer argument is not an integer or ``causal`` is not a bool; at a forward, if ``x`` is not a tensor
        or not of the parameters' dtype (outside autocast).
    ValueError
        If an argument is out of range, ``variant`` is unknown or ``blocks`` is given for another variant; at a
        forward, if ``x`` is not ``(batch, seq, d_model)`` or not on the parameters' device.

    References
    ----------
    - Jin & Sui (2026). Stochastic Attention. arXiv:2604.00754.
    - Beltagy, I., Peters, M. E., Cohan, A. (2020). Longformer: The Long-Document Transformer. arXiv:2004.05150.
    - Su, J. et al. (2021). RoFormer: Enhanced Transformer with Rotary Position Embedding. arXiv:2104.09864.

    Examples
    --------
    >>> import torch
    >>> from gpu import StochasticAttentionLayer
    >>> _ = torch.manual_seed(0)
    >>> layer = StochasticAttentionLayer(16, 2, 4, causal=True).eval()
    >>> x = torch.randn(1, 8, 16)
    >>> tuple(layer(x).shape)
    (1, 8, 16)
    >>> bool(torch.equal(layer(x), layer(x)))  # eval: the seeded permutation at every forward
    True
    """

    def __init__(
        self,
        d_model,
        heads,
        w,
        *,
        kv_heads=None,
        causal=False,
        rope=True,
        seed=0,
        layer=1,
        variant="sa",
        blocks=None,
    ):
        super().__init__(d_model, heads, kv_heads, w, causal, rope)
        self._init_variant(seed, layer, variant, blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The layer's output for ``x`` ``(batch, seq, d_model)``."""
        q, k, v = self.qkv(x)
        y, _ = self.sa_path(q, k, v, x.shape[1])
        return self.merge(y)


class GatedSAPlusSWALayer(_VariantPath, AttentionProjections):
    """Gated SA+SWA: both paths on the same q, k, v, mixed by per-token, per-head sigmoid gates.

    ``Y = sigmoid(x W_sa) * Y_sa + sigmoid(x W_swa) * Y_swa``, two independent sigmoids rather than a softmax gate.
    ``Y_sa`` is :class:`StochasticAttentionLayer`'s path (``variant`` replaces it as there), ``Y_swa`` a sliding
    window of ``w_swa`` keys. The keys a head reaches are those of :class:`receptive.GatedSAPlusSWA` (for
    ``variant="sa"``) or of the pattern ``variant + "+swa"`` of
    :func:`receptive.patterns.causal_variants.make_variant`, here with two gated softmaxes instead of one.

    Parameters
    ----------
    d_model : int
        Model width, a multiple of ``heads``.
    heads : int
        Query heads.
    w : int
        Window of the SA path: keys per query, itself included.
    kv_heads : int or None, default None
        Key/value heads (GQA), a divisor of ``heads``; ``None`` means ``heads``.
    causal : bool, default False
        Attend only to keys at or before the query's original position.
    rope : bool, default True
        Apply rotary position embeddings at the original positions.
    seed : int, default 0
        Seed of the eval-mode permutation.
    layer : int, default 1
        Layer index (1-based) of the eval-mode permutation.
    w_swa : int or None, default None
        Window of the SWA path; ``None`` means ``w``.
    variant : str, default "sa"
        The SA path's variant, as in :class:`StochasticAttentionLayer`.
    blocks : sequence of int or None, default None
        ``sa-ms`` only: the block sizes.

    Raises
    ------
    TypeError
        If an integer argument is not an integer or ``causal`` is not a bool.
    ValueError
        If an argument is out of range or ``variant`` is unknown.

    References
    ----------
    - Jin & Sui (2026). Stochastic Attention. arXiv:2604.00754.
    - Beltagy, I., Peters, M. E., Cohan, A. (2020). Longformer: The Long-Document Transformer. arXiv:2004.05150.
    - Su, J. et al. (2021). RoFormer: Enhanced Transformer with Rotary Position Embedding. arXiv:2104.09864.

    Examples
    --------
    >>> import torch
    >>> from gpu import GatedSAPlusSWALayer
    >>> _ = torch.manual_seed(0)
    >>> layer = GatedSAPlusSWALayer(16, 2, 4, w_swa=3).eval()
    >>> tuple(layer(torch.randn(2, 8, 16)).shape)
    (2, 8, 16)
    >>> layer.extra_parameters  # the two gates: 2 (d_model heads + heads)
    68
    """

    def __init__(
        self,
        d_model,
        heads,
        w,
        *,
        kv_heads=None,
        causal=False,
        rope=True,
        seed=0,
        layer=1,
        w_swa: int | None = None,
        variant: str = "sa",
        blocks=None,
    ):
        super().__init__(d_model, heads, kv_heads, w, causal, rope)
        self._init_variant(seed, layer, variant, blocks)
        self.w_swa = w if w_swa is None else check_int("w_swa", w_swa, 1)
        self.gate_sa = nn.Linear(d_model, heads)
        self.gate_swa = nn.Linear(d_model, heads)

    @property
    def extra_parameters(self) -> int:
        """Parameters the gates add to a plain attention layer: ``2 (d_model heads + heads)``."""
        return sum(p.numel() for p in (*self.gate_sa.parameters(), *self.gate_swa.parameters()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The layer's output for ``x`` ``(batch, seq, d_model)``."""
        q, k, v = self.qkv(x)
        n = x.shape[1]
        y_sa, _ = self.sa_path(q, k, v, n)
        swa_window = min(self.w_swa, max_window(n, self.causal, False))
        y_swa = swa_attention(q, k, v, swa_window, causal=self.causal, check_finite=False)
        g_sa = torch.sigmoid(self.gate_sa(x)).transpose(1, 2)[..., None]
        g_swa = torch.sigmoid(self.gate_swa(x)).transpose(1, 2)[..., None]
        return self.merge(g_sa * y_sa + g_swa * y_swa)
