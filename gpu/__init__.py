"""Attention backend for SWA, SA and gated SA+SWA (torch; ``receptive`` and ``graphs`` never import it).

:func:`swa_attention`, :func:`sa_attention`, :func:`full_attention` on ``(batch, heads, seq, head_dim)`` tensors,
with the window convention of :mod:`receptive.windows`; the pure-torch banded path runs anywhere with memory
``O(n w)``; :class:`StochasticAttention` and :class:`GatedSASWA` are drop-in ``nn.Module``s;
:func:`gpu.triton_sa.triton_sa_attention` is the fused Triton kernel (forward and backward, permutation gathered
in-kernel; IEEE fp32 products; tiles autotuned on CUDA; needs triton). ``backend=`` selects ``torch``, ``flex``
(FlexAttention with a band mask; compiled on CUDA, forward only on the CPU) or ``triton``; ``auto`` takes Triton on
CUDA and torch elsewhere (SDPA for full attention). Arguments are checked in :mod:`gpu.validation` without reading
device tensors back, except a user's GPU-resident ``perm`` (``validate=False`` skips that).
:func:`variant_attention` (``variant=`` of both modules) runs the causal variants of issue 13 (``sa-ms``,
``kleinberg``, ``dilated``; :mod:`gpu.variants`). ``python -m gpu.bench`` times every path per backend;
:func:`gpu.oracle.check_backends` runs every backend against a float64 oracle built from ``receptive``'s patterns,
and ``benchmarks/gpu_check.py`` (that check, then the timings) is the one command for a GPU machine.
"""

from .attention import BACKENDS, full_attention, permute_sequence, sa_attention, swa_attention
from .modules import AttentionProjections, GatedSASWA, StochasticAttention, rotary
from .variants import VARIANTS, variant_attention

__all__ = [
    "BACKENDS",
    "VARIANTS",
    "AttentionProjections",
    "GatedSASWA",
    "StochasticAttention",
    "full_attention",
    "permute_sequence",
    "rotary",
    "sa_attention",
    "swa_attention",
    "variant_attention",
]
