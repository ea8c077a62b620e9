"""What every attention module shares: the q / kv / out projections (GQA), RoPE at original positions and the
window clipped to the sequence (:class:`AttentionProjections`), and :func:`rotary` itself.

:mod:`gpu.attention.modules` and :mod:`gpu.attention.neighbour` build their layers on it.
"""

from __future__ import annotations

import torch
from torch import nn

from gpu.validation import check_bool, check_causal, check_int, check_tensor
from receptive.windows import max_window

__all__ = ["AttentionProjections", "rotary"]


def rotary(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embeddings at positions ``0 .. seq - 1``.

    The pairs ``(x_{2i}, x_{2i+1})`` of every position ``p`` are rotated by the angle ``p base^(-2i/d)``
    (RoFormer, Eq. 34), the angles computed in float64 and cast to ``x``'s dtype.

    Parameters
    ----------
    x : torch.Tensor
        ``(batch, heads, seq, head_dim)`` with an even ``head_dim``.
    base : float, default 10000.0
        The base of the rotation frequencies.

    Returns
    -------
    torch.Tensor
        The rotated tensor, of ``x``'s shape and dtype.

    Raises
    ------
    TypeError
        If ``x`` is not a tensor.
    ValueError
        If ``x`` is not 4-d or ``head_dim`` is odd.

    References
    ----------
    - Su, J., Lu, Y., Pan, S., Murtadha, A., Wen, B., Liu, Y. (2021). RoFormer: Enhanced Transformer with Rotary
      Position Embedding. arXiv:2104.09864.

    Examples
    --------
    >>> import torch
    >>> from gpu import rotary
    >>> x = torch.ones(1, 1, 3, 2)
    >>> rotary(x)[0, 0, 0].tolist()  # position 0 is not rotated
    [1.0, 1.0]
    >>> bool(torch.allclose(rotary(x).norm(dim=-1), x.norm(dim=-1)))  # a rotation keeps the norm
    True
    """
    check_tensor("x", x, ndim=4)
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"x: rotary embeddings need an even head_dim (last axis), got {d}")
    inv = base ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float64) / d)
    angles = torch.arange(x.shape[-2], device=x.device, dtype=torch.float64)[:, None] * inv[None, :]
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2)


class AttentionProjections(nn.Module):
    """The shared part of every attention layer: ``W_q``, ``W_kv`` and ``W_o`` without biases, GQA, RoPE.

    Subclasses implement ``forward`` with :meth:`qkv` (project and rotate) and :meth:`merge` (heads back to
    ``d_model``). RoPE is applied at the original positions, before any permutation, so positions mean what they
    mean in the text.

    Parameters
    ----------
    d_model : int
        Model width, a multiple of ``heads``.
    heads : int
        Query heads.
    kv_heads : int or None
        Key/value heads (GQA), a divisor of ``heads``; ``None`` means ``heads``.
    w : int
        Window: keys per query, itself included (:mod:`receptive.windows`).
    causal : bool
        Whether a query attends only to keys at or before its own position.
    rope : bool
        Whether to apply :func:`rotary` to q and k.

    Raises
    ------
    TypeError
        If an integer argument is not an integer or ``causal`` is not a bool.
    ValueError
        If an integer argument is below 1 or the head counts do not divide as above.

    References
    ----------
    - Ainslie, J. et al. (2023). GQA: Training Generalized Multi-Query Transformer Models from Multi-Head
      Checkpoints. arXiv:2305.13245.
    - Su, J. et al. (2021). RoFormer: Enhanced Transformer with Rotary Position Embedding. arXiv:2104.09864.

    Examples
    --------
    >>> import torch
    >>> from gpu.attention.projections import AttentionProjections
    >>> _ = torch.manual_seed(0)
    >>> layer = AttentionProjections(8, 2, 1, 4, False, True)
    >>> q, k, v = layer.qkv(torch.randn(1, 5, 8))
    >>> tuple(q.shape), tuple(k.shape)
    ((1, 2, 5, 4), (1, 1, 5, 4))
    >>> tuple(layer.merge(q).shape)
    (1, 5, 8)
    """

    def __init__(self, d_model: int, heads: int, kv_heads: int | None, w: int, causal: bool, rope: bool):
        super().__init__()
        kv_heads = heads if kv_heads is None else kv_heads
        for name, value in (("d_model", d_model), ("heads", heads), ("kv_heads", kv_heads), ("w", w)):
            check_int(name, value, 1)
        if d_model % heads:
            raise ValueError(f"heads: must divide d_model ({d_model}), got {heads}")
        if heads % kv_heads:
            raise ValueError(f"kv_heads: must divide heads ({heads}), got {kv_heads}")
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, d_model // heads
        self.w, self.causal, self.rope = w, check_causal(causal), check_bool("rope", rope)
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.kv = nn.Linear(d_model, 2 * kv_heads * self.head_dim, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)

    def qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q ``(batch, heads, seq, head_dim)`` and k, v ``(batch, kv_heads, seq, head_dim)`` of ``x``
        ``(batch, seq, d_model)``, q and k rotated when ``rope``. A wrong input is refused in one line naming ``x``
        before any work (shape and dtype only: no read from the device)."""
        self._check_input(x)
        b, n, _ = x.shape
        q = self.q(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).view(b, n, 2, self.kv_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        if self.rope:
            q, k = rotary(q), rotary(k)
        return q, k, v

    def _check_input(self, x) -> None:
        """``x``: a ``(batch, seq, d_model)`` tensor, at least one position, of the weights' dtype (any floating dtype
        under autocast, which casts it) and device."""
        check_tensor("x", x)
        weight = self.q.weight
        d_model = weight.shape[1]
        if x.dim() != 3 or x.shape[-1] != d_model or x.shape[1] < 1:
            raise ValueError(
                f"x: expected a (batch, seq, d_model={d_model}) tensor with at least one position, "
                f"got shape {tuple(x.shape)}"
            )
        if not x.dtype.is_floating_point:
            raise TypeError(f"x: expected a floating dtype ({weight.dtype}, the layer's), got {x.dtype}")
        if x.dtype != weight.dtype and not torch.is_autocast_enabled(x.device.type):
            raise TypeError(
                f"x: expected dtype {weight.dtype} (the layer's parameters; convert with layer.to(dtype) or "
                f"x.to({weight.dtype})), got {x.dtype}"
            )
        if x.device != weight.device:
            raise ValueError(f"x: expected a tensor on {weight.device} (the layer's parameters), got {x.device}")

    def merge(self, y: torch.Tensor) -> torch.Tensor:
        """The heads of ``y`` ``(batch, heads, seq, head_dim)`` concatenated and projected by ``W_o``."""
        b, h, n, d = y.shape
        return self.out(y.transpose(1, 2).reshape(b, n, h * d))

    def window_for(self, n: int) -> int:
        """SA's window at length ``n``: ``w`` clipped to the two-sided band in permuted order."""
        return min(self.w, max_window(n, False, False))
