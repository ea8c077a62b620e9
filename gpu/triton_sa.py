"""Fused Stochastic Attention in Triton: the permutation is an index array the kernel gathers through.

One program owns ``BLOCK_M`` consecutive *permuted* query positions ``p``; it loads their rows ``q[perm[p]]``
straight from the unpermuted tensor (gather), walks the key band ``p-left .. p+right`` of the permuted order in
blocks of ``BLOCK_N`` loading ``k[perm[x]]``, ``v[perm[x]]`` the same way, keeps the online softmax of FlashAttention
(Dao et al. 2022, Alg. 1), and writes each output row to ``out[perm[p]]`` (scatter). So SA reads and writes the
same bytes as SWA (``perm = None`` is plain SWA): no permuted copies of q, k, v or the output.
Causal SA masks keys whose original position is after the query's. The backward recomputes the probabilities
from the saved log-sum-exp. On a machine without CUDA, run it under ``TRITON_INTERPRET=1`` (fp32 / fp16, small
shapes).
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from receptive.windows import check_window, window_offsets


@triton.jit
def _sa_forward(
    Q, K, V, Out, Lse, Perm,
    stride_qb, stride_qh, stride_qn,
    stride_kb, stride_kh, stride_kn,
    stride_ob, stride_oh, stride_on,
    stride_ph,
    n_ctx, heads, groups, left, right, scale,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    HAS_PERM: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = bh // heads
    h = bh % heads
    kv_h = h // groups
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = offs_m < n_ctx
    if HAS_PERM:
        q_orig = tl.load(Perm + h * stride_ph + offs_m, mask=row_ok, other=0)
    else:
        q_orig = offs_m
    d_ok = offs_d < HEAD_DIM
    q = tl.load(
        Q + b * stride_qb + h * stride_qh + q_orig[:, None] * stride_qn + offs_d[None, :],
        mask=row_ok[:, None] & d_ok[None, :],
        other=0.0,
    )
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    lo = tl.maximum(start_m - left, 0)
    hi = tl.minimum(start_m + BLOCK_M + right, n_ctx)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        col_ok = offs_n < hi
        if HAS_PERM:
            k_orig = tl.load(Perm + h * stride_ph + offs_n, mask=col_ok, other=0)
        else:
            k_orig = offs_n
        kv_offsets = b * stride_kb + kv_h * stride_kh + k_orig[:, None] * stride_kn + offs_d[None, :]
        k = tl.load(K + kv_offsets, mask=col_ok[:, None] & d_ok[None, :], other=0.0)
        v = tl.load(V + kv_offsets, mask=col_ok[:, None] & d_ok[None, :], other=0.0)
        s = tl.dot(q, tl.trans(k)).to(tl.float32) * scale
        rel = offs_n[None, :] - offs_m[:, None]
        valid = (rel >= -left) & (rel <= right) & col_ok[None, :] & row_ok[:, None]
        if CAUSAL:
            valid = valid & (k_orig[None, :] <= q_orig[:, None])
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # rows with nothing valid yet
        alpha = tl.exp(m_i - m_safe)
        p = tl.exp(s - m_safe[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v).to(tl.float32)
        m_i = m_new
    safe_l = tl.where(l_i > 0, l_i, 1.0)
    out = acc / safe_l[:, None]
    tl.store(
        Out + b * stride_ob + h * stride_oh + q_orig[:, None] * stride_on + offs_d[None, :],
        out.to(Out.dtype.element_ty),
        mask=row_ok[:, None] & d_ok[None, :],
    )
    tl.store(Lse + bh * n_ctx + offs_m, tl.where(m_i == float("-inf"), 0.0, m_i) + tl.log(safe_l), mask=row_ok)


@triton.jit
def _sa_backward_dkdv(
    Q, K, V, DO, Lse, Delta, DK, DV, Perm,
    stride_qb, stride_qh, stride_qn,
    stride_kb, stride_kh, stride_kn,
    stride_ph,
    n_ctx, heads, groups, left, right, scale,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    HAS_PERM: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    """dK, dV of one block of permuted key positions (per query head; GQA groups are summed afterwards)."""
    start_n = tl.program_id(0) * BLOCK_N
    bh = tl.program_id(1)
    b = bh // heads
    h = bh % heads
    kv_h = h // groups
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    col_ok = offs_n < n_ctx
    d_ok = offs_d < HEAD_DIM
    if HAS_PERM:
        k_orig = tl.load(Perm + h * stride_ph + offs_n, mask=col_ok, other=0)
    else:
        k_orig = offs_n
    kv_offsets = b * stride_kb + kv_h * stride_kh + k_orig[:, None] * stride_kn + offs_d[None, :]
    k = tl.load(K + kv_offsets, mask=col_ok[:, None] & d_ok[None, :], other=0.0)
    v = tl.load(V + kv_offsets, mask=col_ok[:, None] & d_ok[None, :], other=0.0)
    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    lo = tl.maximum(start_n - right, 0)
    hi = tl.minimum(start_n + BLOCK_N + left, n_ctx)
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        row_ok = offs_m < hi
        if HAS_PERM:
            q_orig = tl.load(Perm + h * stride_ph + offs_m, mask=row_ok, other=0)
        else:
            q_orig = offs_m
        q_offsets = b * stride_qb + h * stride_qh + q_orig[:, None] * stride_qn + offs_d[None, :]
        q = tl.load(Q + q_offsets, mask=row_ok[:, None] & d_ok[None, :], other=0.0)
        do = tl.load(DO + q_offsets, mask=row_ok[:, None] & d_ok[None, :], other=0.0)
        lse = tl.load(Lse + bh * n_ctx + offs_m, mask=row_ok, other=0.0)
        delta = tl.load(Delta + bh * n_ctx + offs_m, mask=row_ok, other=0.0)
        s = tl.dot(q, tl.trans(k)).to(tl.float32) * scale
        rel = offs_n[None, :] - offs_m[:, None]
        valid = (rel >= -left) & (rel <= right) & col_ok[None, :] & row_ok[:, None]
        if CAUSAL:
            valid = valid & (k_orig[None, :] <= q_orig[:, None])
        p = tl.where(valid, tl.exp(s - lse[:, None]), 0.0)
        dv += tl.dot(tl.trans(p.to(do.dtype)), do).to(tl.float32)
        dp = tl.dot(do, tl.trans(v)).to(tl.float32)
        ds = p * (dp - delta[:, None])
        dk += tl.dot(tl.trans(ds.to(q.dtype)), q).to(tl.float32) * scale
    out_offsets = b * stride_qb + h * stride_qh + k_orig[:, None] * stride_qn + offs_d[None, :]
    tl.store(DK + out_offsets, dk, mask=col_ok[:, None] & d_ok[None, :])
    tl.store(DV + out_offsets, dv, mask=col_ok[:, None] & d_ok[None, :])


@triton.jit
def _sa_backward_dq(
    Q, K, V, DO, Lse, Delta, DQ, Perm,
    stride_qb, stride_qh, stride_qn,
    stride_kb, stride_kh, stride_kn,
    stride_ph,
    n_ctx, heads, groups, left, right, scale,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    HAS_PERM: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    """dQ of one block of permuted query positions."""
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = bh // heads
    h = bh % heads
    kv_h = h // groups
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = offs_m < n_ctx
    d_ok = offs_d < HEAD_DIM
    if HAS_PERM:
        q_orig = tl.load(Perm + h * stride_ph + offs_m, mask=row_ok, other=0)
    else:
        q_orig = offs_m
    q_offsets = b * stride_qb + h * stride_qh + q_orig[:, None] * stride_qn + offs_d[None, :]
    q = tl.load(Q + q_offsets, mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    do = tl.load(DO + q_offsets, mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    lse = tl.load(Lse + bh * n_ctx + offs_m, mask=row_ok, other=0.0)
    delta = tl.load(Delta + bh * n_ctx + offs_m, mask=row_ok, other=0.0)
    dq = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    lo = tl.maximum(start_m - left, 0)
    hi = tl.minimum(start_m + BLOCK_M + right, n_ctx)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        col_ok = offs_n < hi
        if HAS_PERM:
            k_orig = tl.load(Perm + h * stride_ph + offs_n, mask=col_ok, other=0)
        else:
            k_orig = offs_n
        kv_offsets = b * stride_kb + kv_h * stride_kh + k_orig[:, None] * stride_kn + offs_d[None, :]
        k = tl.load(K + kv_offsets, mask=col_ok[:, None] & d_ok[None, :], other=0.0)
        v = tl.load(V + kv_offsets, mask=col_ok[:, None] & d_ok[None, :], other=0.0)
        s = tl.dot(q, tl.trans(k)).to(tl.float32) * scale
        rel = offs_n[None, :] - offs_m[:, None]
        valid = (rel >= -left) & (rel <= right) & col_ok[None, :] & row_ok[:, None]
        if CAUSAL:
            valid = valid & (k_orig[None, :] <= q_orig[:, None])
        p = tl.where(valid, tl.exp(s - lse[:, None]), 0.0)
        dp = tl.dot(do, tl.trans(v)).to(tl.float32)
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k).to(tl.float32) * scale
    tl.store(DQ + q_offsets, dq, mask=row_ok[:, None] & d_ok[None, :])


def _launch_args(q, k, v, w, perm, causal):
    b, h, n, d = q.shape
    if k.shape != v.shape or k.shape[0] != b or k.shape[2:] != (n, d) or h % k.shape[1]:
        raise ValueError(f"k, v: expected (batch, kv_heads, seq, head_dim) compatible with q {tuple(q.shape)}")
    if q.dtype not in (torch.float16, torch.float32, torch.bfloat16) or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"q, k, v: expected one dtype of float16, bfloat16, float32, got {q.dtype}")
    one_sided = perm is None and causal
    w = check_window(w, n, one_sided, False)
    left, right = window_offsets(w, one_sided)
    if perm is not None:
        perm = torch.as_tensor(perm, device=q.device).to(torch.int32)
        if perm.shape not in ((n,), (h, n)):
            raise ValueError(f"perm: expected shape ({n},) or ({h}, {n}), got {tuple(perm.shape)}")
        perm_arg, stride_ph = perm.contiguous(), (0 if perm.dim() == 1 else n)
    else:
        perm_arg, stride_ph = torch.zeros(1, dtype=torch.int32, device=q.device), 0
    scalars = (n, h, h // k.shape[1], left, right, 1.0 / math.sqrt(d))
    flags = dict(
        HEAD_DIM=d,
        BLOCK_D=max(16, triton.next_power_of_2(d)),
        HAS_PERM=perm is not None,
        CAUSAL=causal and perm is not None,
    )
    return perm_arg, stride_ph, scalars, flags


class _FusedSA(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, w, perm, causal, block):
        q, k, v = (t.contiguous() for t in (q, k, v))
        perm_arg, stride_ph, scalars, flags = _launch_args(q, k, v, w, perm, causal)
        b, h, n, _ = q.shape
        out = torch.empty_like(q)
        lse = torch.empty(b * h * n, dtype=torch.float32, device=q.device)
        _sa_forward[(triton.cdiv(n, block), b * h)](
            q, k, v, out, lse, perm_arg,
            q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
            out.stride(0), out.stride(1), out.stride(2), stride_ph, *scalars,
            BLOCK_M=block, BLOCK_N=block, **flags,
        )  # fmt: skip
        ctx.save_for_backward(q, k, v, out, lse, perm_arg)
        ctx.meta = (stride_ph, scalars, flags, block)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, lse, perm_arg = ctx.saved_tensors
        stride_ph, scalars, flags, block = ctx.meta
        b, h, n, d = q.shape
        grad_out = grad_out.contiguous()
        delta = (grad_out.float() * out.float()).sum(-1)  # rowsum(dO * O), original order
        if flags["HAS_PERM"]:
            index = perm_arg.long()
            delta = delta[..., index] if index.dim() == 1 else torch.gather(delta, 2, index[None].expand(b, -1, -1))
        delta = delta.contiguous().view(-1)
        dq = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
        dk = torch.zeros(q.shape, dtype=torch.float32, device=q.device)  # per query head, summed over GQA groups
        dv = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
        strides = (q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2), stride_ph)
        _sa_backward_dkdv[(triton.cdiv(n, block), b * h)](
            q, k, v, grad_out, lse, delta, dk, dv, perm_arg, *strides, *scalars,
            BLOCK_M=block, BLOCK_N=block, **flags,
        )  # fmt: skip
        _sa_backward_dq[(triton.cdiv(n, block), b * h)](
            q, k, v, grad_out, lse, delta, dq, perm_arg, *strides, *scalars,
            BLOCK_M=block, BLOCK_N=block, **flags,
        )  # fmt: skip
        groups = h // k.shape[1]
        dk = dk.view(b, k.shape[1], groups, n, d).sum(2)
        dv = dv.view(b, k.shape[1], groups, n, d).sum(2)
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None, None, None, None


def triton_sa_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    w: int,
    perm: torch.Tensor | None = None,
    causal: bool = False,
    block: int = 16,
) -> torch.Tensor:
    """Fused SA with permutation ``perm`` (``(n,)`` or per head ``(heads, n)``), or SWA when ``perm is None`` (then
    ``causal`` uses the one-sided window ``(w-1, 0)``, as :func:`gpu.swa_attention`). Differentiable: the backward
    recomputes the probabilities from the saved log-sum-exp (FlashAttention-2 style: one program per key tile for
    dK, dV and one per query tile for dQ, no atomics), gathering and scattering through the same permutation."""
    if block < 16 or block & (block - 1):
        raise ValueError(f"block: expected a power of two >= 16, got {block}")
    return _FusedSA.apply(q, k, v, w, perm, causal, block)
