"""Attention backend for SWA, SA and gated SA+SWA on torch tensors (``receptive`` and ``graphs`` never import it).

:func:`swa_attention`, :func:`sa_attention` and :func:`full_attention` work on ``(batch, heads, seq, head_dim)``
tensors with the window convention of :mod:`receptive.windows`; the pure-torch banded path runs anywhere with
memory ``O(n w)``. :class:`StochasticAttentionLayer` and :class:`GatedSAPlusSWALayer` are drop-in ``nn.Module``
layers whose receptive fields are those of the patterns :class:`receptive.StochasticAttention` and
:class:`receptive.GatedSAPlusSWA`. :func:`gpu.attention.triton_sa.triton_sa_attention` is the fused Triton kernel
(forward and backward, permutation gathered in-kernel; needs triton). ``backend=`` selects ``torch``, ``flex``
(FlexAttention with a band mask; compiled on CUDA, forward only on the CPU) or ``triton``; ``auto`` takes Triton on
CUDA and torch elsewhere (SDPA for full attention). :func:`variant_attention` (``variant=`` of both layers) runs
the causal variants ``sa-ms``, ``kleinberg`` and ``dilated`` (:mod:`gpu.attention.variants`).

``python -m gpu.bench`` times every path per backend; :func:`gpu.attention.oracle.check_backends` runs every backend
against a float64 oracle built from ``receptive``'s patterns; ``benchmarks/gpu_check.py`` runs that check, then the
timings, on a GPU machine.

References
----------
- Jin & Sui (2026). Stochastic Attention. arXiv:2604.00754.
- Beltagy, I., Peters, M. E., Cohan, A. (2020). Longformer: The Long-Document Transformer. arXiv:2004.05150.
- Dao, T. (2023). FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning. arXiv:2307.08691.
- Dong, J., Feng, B., Guessous, D., Liang, Y., He, H. (2024). Flex Attention: A Programming Model for Generating
  Optimized Attention Kernels. arXiv:2412.05496.
- Tillet, P., Kung, H. T., Cox, D. (2019). Triton: An Intermediate Language and Compiler for Tiled Neural Network
  Computations. MAPL 2019.
"""

from gpu.attention import (
    BACKENDS,
    VARIANTS,
    AttentionProjections,
    GatedSAPlusSWALayer,
    StochasticAttentionLayer,
    full_attention,
    permute_sequence,
    rotary,
    sa_attention,
    swa_attention,
    variant_attention,
)

__all__ = [
    "BACKENDS",
    "VARIANTS",
    "AttentionProjections",
    "GatedSAPlusSWALayer",
    "StochasticAttentionLayer",
    "full_attention",
    "permute_sequence",
    "rotary",
    "sa_attention",
    "swa_attention",
    "variant_attention",
]
