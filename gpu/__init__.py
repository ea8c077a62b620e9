"""Attention backend for SWA, SA and gated SA+SWA (torch; ``receptive`` and ``graphs`` never import it).

:func:`swa_attention`, :func:`sa_attention`, :func:`full_attention` on ``(batch, heads, seq, head_dim)`` tensors,
with the window convention of :mod:`receptive.windows`; the pure-torch banded path runs anywhere with memory
``O(n w)``; :class:`StochasticAttention` and :class:`GatedSASWA` are drop-in ``nn.Module``s;
:func:`gpu.triton_sa.triton_sa_attention` is the fused Triton kernel (forward and backward, permutation gathered
in-kernel; needs triton). ``backend=`` selects ``torch``, ``flex`` (FlexAttention with a band mask; compiled on CUDA,
forward only on the CPU) or ``triton``; ``auto`` takes Triton on CUDA and torch elsewhere.
"""

from .attention import BACKENDS, full_attention, permute_sequence, sa_attention, swa_attention
from .modules import AttentionProjections, GatedSASWA, StochasticAttention, rotary

__all__ = [
    "BACKENDS",
    "AttentionProjections",
    "GatedSASWA",
    "StochasticAttention",
    "full_attention",
    "permute_sequence",
    "rotary",
    "sa_attention",
    "swa_attention",
]
