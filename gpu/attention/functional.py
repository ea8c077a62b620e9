"""Sliding-window, Stochastic and full attention on ``(batch, heads, seq, head_dim)`` tensors.

The window convention is :mod:`receptive.windows`: ``w`` keys per query, itself included; causal windows are
``i-w+1 .. i`` (FlashAttention ``window_size=(w-1, 0)``), bidirectional ones ``i-w//2 .. i+(w-1)//2``.
Stochastic Attention (Jin & Sui 2026, arXiv 2604.00754) permutes q, k, v with ``perm`` (``perm[p]`` = original
position at permuted position ``p``), runs the two-sided band in permuted order (causal: only keys whose original
position is ``<=`` the query's) and puts the outputs back; :func:`receptive.permutations.layer_permutation` draws
the same permutations as the coverage engine, so ``receptive.coverage_by_layer(StochasticAttention(n, w,
permutations=[perm]))`` is the coverage of exactly this call (:func:`permute_sequence` and
:func:`inverse_permutation` are the permutations' torch forms, :mod:`receptive.permutations` their numpy ones).
GQA: ``k, v`` may have fewer heads (a divisor of the query heads). Backends (``backend=``): ``torch`` (this module;
memory ``O(n w)``), ``flex`` (FlexAttention with a band ``mask_mod``), ``triton``
(:func:`gpu.attention.triton_sa.triton_sa_attention`, fused), ``auto`` (Triton on CUDA, torch elsewhere; for
:func:`full_attention` always ``scaled_dot_product_attention``). The torch path computes scores and softmax in
float32 for float16 and bfloat16 inputs (as SDPA), so a finite input never gives NaN. No call synchronises with the
GPU or copies from the host, except validating a user-given ``perm`` (``validate=``) and refusing non-finite inputs
(``check_finite=``, on by default: pass ``False`` in a training loop).
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from gpu.attention.banded import banded_attention
from gpu.validation import (
    BACKENDS,
    check_backend,
    check_bool,
    check_causal,
    check_generator,
    check_int,
    check_perm,
    check_qkv,
    check_tensor,
)
from gpu.validation import check_finite as _check_finite
from receptive.permutations import layer_permutation
from receptive.windows import check_window, max_window, window_offsets

__all__ = ["BACKENDS", "full_attention", "inverse_permutation", "permute_sequence", "sa_attention", "swa_attention"]


class _Permute(torch.autograd.Function):
    """``x[..., perm, :]`` along the sequence; its backward applies the inverse permutation (a gather, not a
    scatter-add)."""

    @staticmethod
    def forward(ctx, x, perm, inverse):
        ctx.save_for_backward(inverse)
        return _gather(x, perm)

    @staticmethod
    def backward(ctx, grad):
        (inverse,) = ctx.saved_tensors
        return _gather(grad, inverse), None, None


def _gather(x: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
    """``x[:, head, perm[head]]`` for every head (a shared ``(n,)`` perm broadcast over the heads) by one index_select
    over the flattened (head, position) axis, which copies whole rows of d values (torch.gather indexes element by
    element). Shared and per-head permutations (multi-scale SA) run the same code."""
    b, h, n, d = x.shape
    rows = perm.expand(h, n) if perm.dim() == 1 else perm
    flat = (rows + torch.arange(h, device=perm.device)[:, None] * n).reshape(-1)
    return x.reshape(b, h * n, d).index_select(1, flat).view(b, h, n, d)


def inverse_permutation(perm: torch.Tensor) -> torch.Tensor:
    """The inverse ``inv`` with ``inv[..., perm[..., p]] = p`` along the last axis: where original position ``i``
    sits in permuted order, for one permutation ``(n,)`` or a stack of them (per head ``(heads, n)``, or any leading
    axes), by one scatter (``O(n)`` per row, no sort), on ``perm``'s device and in its dtype.

    The torch form of :func:`receptive.permutations.inverse_permutation` (the same map on numpy arrays). The values
    are not checked (that would read the device back to the host): a row that is not a permutation of ``0 .. n - 1``
    gives a wrong row, with the positions it never hits left at 0. ``gpu.validation.check_perm`` checks them.

    Parameters
    ----------
    perm : torch.Tensor
        Integer, at least one axis; each row along the last axis a permutation of ``0 .. n - 1``.

    Returns
    -------
    torch.Tensor
        The inverse, same shape, dtype and device.

    Raises
    ------
    TypeError
        If ``perm`` is not a tensor of integers.
    ValueError
        If ``perm`` has no axis.

    Examples
    --------
    >>> import torch
    >>> inverse_permutation(torch.tensor([2, 0, 1])).tolist()
    [1, 2, 0]
    >>> inverse_permutation(torch.tensor([[2, 0, 1], [0, 2, 1]])).tolist()  # one row per head
    [[1, 2, 0], [0, 2, 1]]

    References
    ----------
    Jin & Sui (2026). Stochastic Attention. arXiv:2604.00754.
    """
    check_tensor("perm", perm)
    if perm.dtype.is_floating_point or perm.dtype.is_complex or perm.dtype == torch.bool:
        raise TypeError(f"perm: expected integer positions, got dtype {perm.dtype}")
    if perm.dim() == 0:
        raise ValueError("perm: expected at least one axis, got a 0-d tensor")
    positions = torch.arange(perm.shape[-1], dtype=perm.dtype, device=perm.device).expand_as(perm)
    return torch.zeros_like(perm).scatter_(-1, perm.long(), positions)


def permute_sequence(x: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
    """``x[:, :, perm]`` (shared ``perm`` of shape ``(n,)`` or per-head ``(heads, n)``) with an exact inverse
    backward.

    Parameters
    ----------
    x : torch.Tensor
        ``(batch, heads, n, d)``.
    perm : torch.Tensor
        int64 permutation of ``0..n-1``, ``(n,)`` shared by the heads or ``(heads, n)``, on x's device; not checked
        (the caller's promise).

    Returns
    -------
    torch.Tensor
        ``y[:, h, i] = x[:, h, perm[h, i]]``; its gradient flows back through the inverse permutation.

    Raises
    ------
    TypeError
        If ``x`` or ``perm`` is not a tensor.

    References
    ----------
    - Jin & Sui (2026). Stochastic Attention. arXiv:2604.00754.

    Examples
    --------
    >>> import torch
    >>> x = torch.arange(4.0).view(1, 1, 4, 1)
    >>> permute_sequence(x, torch.tensor([2, 0, 3, 1])).flatten().tolist()
    [2.0, 0.0, 3.0, 1.0]
    """
    check_tensor("x", x)
    check_tensor("perm", perm)
    return _Permute.apply(x, perm, inverse_permutation(perm))


def _check(q, k, v, backend, finite):
    """The checks every attention call makes: backend, q/k/v shapes (no empty batch, head or head_dim), finiteness."""
    check_backend(backend)
    check_qkv(q, k, v)
    for axis, what in ((0, "batch"), (1, "heads"), (3, "head_dim")):
        if q.shape[axis] < 1:
            raise ValueError(f"q: expected (batch, heads, seq, head_dim) with {what} >= 1, got shape {tuple(q.shape)}")
    if check_bool("check_finite", finite):
        _check_finite(q=q, k=k, v=v)


@functools.lru_cache(maxsize=64)
def _seeded_permutation(n: int, seed: int, layer: int, device: torch.device) -> torch.Tensor:
    """:func:`receptive.permutations.layer_permutation` on ``device``, copied there once per (n, seed, layer): an
    eval-mode module asks for the same permutation at every forward (no host-to-device copy per call)."""
    return torch.as_tensor(layer_permutation(n, seed, layer), device=device)


def _draw_permutation(n: int, heads: int | None, generator: torch.Generator | None, device) -> torch.Tensor:
    """``torch.randperm`` drawn on the generator's device (``device`` without a generator): no copy when they agree."""
    where = device if generator is None else generator.device
    if heads is None:
        return torch.randperm(n, generator=generator, device=where).to(device)
    return torch.stack([torch.randperm(n, generator=generator, device=where) for _ in range(heads)]).to(device)


def _resolve_backend(backend: str, q: torch.Tensor) -> str:
    """``auto``: the fused Triton kernel on CUDA when triton is installed (fp16/bf16/fp32), else pure torch."""
    if backend != "auto":
        return backend
    if q.is_cuda and q.dtype in (torch.float16, torch.bfloat16, torch.float32):
        try:
            import triton  # noqa: F401
        except ImportError:
            return "torch"
        return "triton"
    return "torch"


def _flex(q, k, v, block_mask):
    """FlexAttention with ``block_mask`` (``torch.compile``d once on CUDA; eager elsewhere, which materialises the
    scores: tests and small shapes only). Forward only on the CPU (PyTorch's FlexAttention has no CPU backward)."""
    from torch.nn.attention.flex_attention import flex_attention

    attend = _compiled_flex() if q.is_cuda else flex_attention
    return attend(q, k, v, block_mask=block_mask, enable_gqa=q.shape[1] != k.shape[1])


@functools.cache
def _compiled_flex():
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention)


def _block_mask(mask_mod, n: int, heads: int | None, device):
    from torch.nn.attention.flex_attention import create_block_mask

    return create_block_mask(mask_mod, None, heads, n, n, device=device)


@functools.lru_cache(maxsize=32)
def _static_block_mask(kind: str, n: int, left: int, right: int, device: torch.device):
    """The block masks that depend on the shape only (``band``: ``-left <= key - query <= right``; ``causal``),
    built once: ``create_block_mask`` evaluates the mask on every (query, key) pair."""
    if kind == "band":
        return _block_mask(lambda b, h, qi, ki: (qi - ki <= left) & (ki - qi <= right), n, None, device)
    return _block_mask(lambda b, h, qi, ki: ki <= qi, n, None, device)


def _expand_kv(q, k, v):
    groups = q.shape[1] // k.shape[1]
    if groups == 1:
        return k, v
    return k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)


def full_attention(q, k, v, causal: bool = False, backend: str = "auto", check_finite: bool = True) -> torch.Tensor:
    """Every key (causal: every key ``j <= i``): ``softmax(q k^T / sqrt(d)) v``.

    ``auto`` and ``torch``: ``torch.nn.functional.scaled_dot_product_attention`` (FlashAttention-2 / memory-efficient
    kernels on CUDA: the best full-attention path); ``flex``: FlexAttention with an all-true (or causal) mask;
    ``triton``: the fused kernel with a window spanning the sequence (``receptive.windows.max_window``), ``O(n^2)``
    like the others: a consistency check, not a fast path.

    Parameters
    ----------
    q : torch.Tensor
        ``(batch, heads, n, d)``, floating point.
    k, v : torch.Tensor
        ``(batch, kv_heads, n, d)``, same dtype and device; ``kv_heads`` divides ``heads`` (GQA).
    causal : bool, default False
        Attend only to keys ``j <= i``.
    backend : str, default "auto"
        One of :data:`BACKENDS`.
    check_finite : bool, default True
        Refuse a q, k or v holding NaN or inf (``gpu.validation.check_finite``); on a GPU the check reads one
        boolean back per tensor (a synchronisation): pass ``False`` in a training loop.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d)``.

    Raises
    ------
    TypeError
        If ``q``, ``k``, ``v`` are not tensors, ``causal`` is not a bool or ``backend`` not a string.
    ValueError
        If the shapes, dtypes or devices disagree, ``backend`` is unknown, or (``check_finite``) an input holds NaN
        or inf.

    References
    ----------
    - Vaswani, A. et al. (2017). Attention Is All You Need. NeurIPS 2017 (scaled dot-product attention).
    - Dao, T. (2023). FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning.
      arXiv:2307.08691.

    Examples
    --------
    >>> import torch
    >>> q = k = v = torch.ones(1, 2, 4, 8)
    >>> tuple(full_attention(q, k, v, causal=True).shape)
    (1, 2, 4, 8)
    """
    _check(q, k, v, backend, check_finite)
    causal = check_causal(causal)
    n = q.shape[2]
    if backend == "triton":
        from gpu.attention.triton_sa import triton_sa_attention

        return triton_sa_attention(q, k, v, max_window(n, causal, False), causal=causal)
    if backend == "flex":
        return _flex(q, k, v, _static_block_mask("causal", n, n - 1, 0, q.device) if causal else None)
    k, v = _expand_kv(q, k, v)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def swa_attention(
    q, k, v, w: int, causal: bool = False, backend: str = "auto", check_finite: bool = True
) -> torch.Tensor:
    """Sliding-window attention: query ``i`` attends to the ``w`` keys of its window (truncated at the edges).

    The window is :func:`receptive.windows.window_offsets`'s: ``i - left .. i + right`` (causal: ``i - (w - 1) .. i``),
    the keys of :class:`receptive.SlidingWindow`; memory ``O(n w)`` on the torch path (``gpu.attention.banded``).

    Parameters
    ----------
    q : torch.Tensor
        ``(batch, heads, n, d)``, floating point.
    k, v : torch.Tensor
        ``(batch, kv_heads, n, d)``, same dtype and device; ``kv_heads`` divides ``heads`` (GQA).
    w : int
        Keys per query, itself included: ``1 .. 2n - 1`` (causal ``1 .. n``).
    causal : bool, default False
        Only the ``w - 1`` keys before the query and itself.
    backend : str, default "auto"
        One of :data:`BACKENDS`.
    check_finite : bool, default True
        Refuse a q, k or v holding NaN or inf (``gpu.validation.check_finite``); on a GPU the check reads one
        boolean back per tensor (a synchronisation): pass ``False`` in a training loop.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d)``.

    Raises
    ------
    TypeError
        If an argument has the wrong type (``w`` not an integer, ``causal`` not a bool, ...).
    ValueError
        If ``w`` is out of range, the tensors disagree, or (``check_finite``) an input holds NaN or inf.

    References
    ----------
    - Beltagy, I., Peters, M. E., Cohan, A. (2020). Longformer: The Long-Document Transformer. arXiv:2004.05150.

    Examples
    --------
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 2, 8, 4, generator=g) for _ in range(3))
    >>> bool(torch.allclose(swa_attention(q, k, v, 8, causal=True), full_attention(q, k, v, causal=True), atol=1e-6))
    True
    >>> bool(torch.equal(swa_attention(q, k, v, 1), v))  # a window of one key: each query reads its own value
    True
    """
    _check(q, k, v, backend, check_finite)
    causal = check_causal(causal)
    w = check_window(w, q.shape[2], causal, False)
    left, right = window_offsets(w, causal)
    backend = _resolve_backend(backend, q)
    if backend == "triton":
        from gpu.attention.triton_sa import triton_sa_attention

        return triton_sa_attention(q, k, v, w, causal=causal)
    if backend == "flex":
        return _flex(q, k, v, _static_block_mask("band", q.shape[2], left, right, q.device))
    k, v = _expand_kv(q, k, v)
    return banded_attention(q, k, v, left, right)


def sa_attention(
    q,
    k,
    v,
    w: int,
    perm: torch.Tensor | None = None,
    causal: bool = False,
    generator: torch.Generator | None = None,
    per_head: bool = False,
    seed: int | None = None,
    layer: int = 1,
    return_perm: bool = False,
    backend: str = "auto",
    validate: bool = True,
    check_finite: bool = True,
):
    """Stochastic Attention with permutation ``perm`` (``(n,)`` shared by the heads, or ``(heads, n)``).

    Without ``perm`` one is drawn: ``seed`` (and ``layer``) give :func:`receptive.permutations.layer_permutation`'s
    permutation, the one the coverage engine analyses (copied to q's device once, then cached); otherwise
    ``torch.randperm`` on q's device (on ``generator``'s device when one is given) with ``generator`` (one per
    head with ``per_head``). ``return_perm=True`` returns ``(output, perm)``.

    No call reads a device tensor back to the host, except ``validate=True`` (default) with a ``perm`` that already
    lives on the GPU: checking it is a permutation synchronises once (see ``gpu.validation.check_perm``); pass
    ``validate=False`` in a training loop. Drawn and seeded permutations are never re-checked.

    Query ``i`` attends the ``w`` keys of the two-sided band around its place ``p`` in the permuted order,
    ``perm[p - left .. p + right]`` (``left, right = receptive.windows.window_offsets(w)``); causal masks the keys
    after the query's original position. The keys are those of :class:`receptive.StochasticAttention`.

    Parameters
    ----------
    q : torch.Tensor
        ``(batch, heads, n, d)``, floating point.
    k, v : torch.Tensor
        ``(batch, kv_heads, n, d)``, same dtype and device; ``kv_heads`` divides ``heads`` (GQA).
    w : int
        Slots of the band, the query's own included: ``1 .. 2n - 1``.
    perm : torch.Tensor, numpy.ndarray, list or None, default None
        The permutation, ``(n,)`` or ``(heads, n)``; ``None`` draws one.
    causal : bool, default False
        Mask keys after the query's original position.
    generator : torch.Generator or None, default None
        Generator of the drawn permutation (without ``seed``).
    per_head : bool, default False
        Draw one permutation per head (without ``seed``).
    seed : int or None, default None
        Use :func:`receptive.permutations.layer_permutation` ``(n, seed, layer)``.
    layer : int, default 1
        The layer of the seeded permutation (1-based).
    return_perm : bool, default False
        Also return the permutation used (a copy).
    backend : str, default "auto"
        One of :data:`BACKENDS`.
    validate : bool, default True
        Check that a given ``perm`` is a permutation.
    check_finite : bool, default True
        Refuse a q, k or v holding NaN or inf (``gpu.validation.check_finite``); on a GPU the check reads one
        boolean back per tensor (a synchronisation): pass ``False`` in a training loop.

    Returns
    -------
    torch.Tensor or tuple of torch.Tensor
        ``(batch, heads, n, d)``; with ``return_perm`` also the permutation.

    Raises
    ------
    TypeError
        If an argument has the wrong type (``w`` or ``seed`` not an integer, a flag not a bool, ``perm`` not of
        integers, ``generator`` not a ``torch.Generator``, ...).
    ValueError
        If ``w`` is out of range, ``perm`` is not a permutation of the right shape, ``per_head`` is combined with
        ``seed``, the tensors disagree, or (``check_finite``) an input holds NaN or inf.

    References
    ----------
    - Jin & Sui (2026). Stochastic Attention. arXiv:2604.00754.

    Examples
    --------
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 2, 8, 4, generator=g) for _ in range(3))
    >>> out, perm = sa_attention(q, k, v, 3, seed=0, return_perm=True)
    >>> tuple(out.shape), perm.tolist()  # receptive.permutations.layer_permutation(8, 0, 1)
    ((1, 2, 8, 4), [3, 2, 1, 0, 6, 4, 7, 5])
    >>> bool(torch.allclose(sa_attention(q, k, v, 15, seed=0), full_attention(q, k, v), atol=1e-6))  # w = 2n - 1
    True
    """
    _check(q, k, v, backend, check_finite)
    causal = check_causal(causal)
    per_head, return_perm, validate = (
        check_bool(name, value)
        for name, value in (("per_head", per_head), ("return_perm", return_perm), ("validate", validate))
    )
    check_generator(generator)
    layer = check_int("layer", layer, 1)
    _, h, n, _ = q.shape
    w = check_window(w, n, False, False)
    if perm is None:
        if seed is not None:
            if per_head:
                raise ValueError("per_head: seeded permutations are shared by the heads; pass perm of shape (heads, n)")
            perm = _seeded_permutation(n, seed, layer, q.device)
        else:
            perm = _draw_permutation(n, h if per_head else None, generator, q.device)
    else:
        perm = check_perm(perm, n, h, q.device, validate=validate)
    left, right = window_offsets(w, False)
    backend = _resolve_backend(backend, q)
    if backend == "triton":
        from gpu.attention.triton_sa import triton_sa_attention

        out = triton_sa_attention(q, k, v, w, perm=perm, causal=causal, validate=False)
    elif backend == "flex":
        out = _flex_sa(q, k, v, perm, left, right, causal)
    else:
        out = _torch_sa(q, k, v, perm, left, right, causal)
    return (out, perm.clone()) if return_perm else out


def _torch_sa(q, k, v, perm, left, right, causal):
    """SA through :func:`gpu.attention.banded.banded_attention` on permuted copies of q, k, v (memory ``O(n w)``)."""
    n = q.shape[2]
    k, v = _expand_kv(q, k, v)
    extra = None
    if causal:
        origin = torch.cat([perm, torch.full((*perm.shape[:-1], 1), n, device=q.device)], dim=-1)

        def extra(qpos, kpos):  # original key position <= original query position
            qo = origin[..., qpos.clamp(max=n)] if perm.dim() == 1 else origin[:, qpos.clamp(max=n)]
            ko = origin[..., kpos] if perm.dim() == 1 else origin[:, kpos]
            if perm.dim() == 1:
                return ko[:, None, :] <= qo[:, :, None]
            return (ko[:, :, None, :] <= qo[:, :, :, None])[None]

    inverse = inverse_permutation(perm)  # once per call; _Permute.apply(x, perm, inverse) is permute_sequence(x, perm)
    qp, kp, vp = (_Permute.apply(t, perm, inverse) for t in (q, k, v))
    return _Permute.apply(banded_attention(qp, kp, vp, left, right, extra), inverse, perm)


def _flex_sa(q, k, v, perm, left, right, causal):
    """SA through FlexAttention: permute, band mask in permuted order (and original positions when causal: a block
    mask per permutation), unpermute."""
    shared = perm.dim() == 1
    n = q.shape[2]

    def mask_mod(b, h, qi, ki):
        rows = perm if shared else perm[h]
        return (qi - ki <= left) & (ki - qi <= right) & (rows[ki] <= rows[qi])

    if not shared:  # per-head permutations act on every query head's own copy of k and v
        k, v = _expand_kv(q, k, v)
    if causal:
        block_mask = _block_mask(mask_mod, n, None if shared else q.shape[1], q.device)
    else:
        block_mask = _static_block_mask("band", n, left, right, q.device)
    inverse = inverse_permutation(perm)
    qp, kp, vp = (_Permute.apply(t, perm, inverse) for t in (q, k, v))
    return _Permute.apply(_flex(qp, kp, vp, block_mask), inverse, perm)
