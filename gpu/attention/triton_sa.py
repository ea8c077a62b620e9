"""Fused Stochastic Attention in Triton: the permutation is an index array the kernel gathers through.

One program owns ``BLOCK_M`` consecutive *permuted* query positions ``p``; it loads their rows ``q[perm[p]]``
straight from the unpermuted tensor (gather), walks the key band ``p-left .. p+right`` of the permuted order in
blocks of ``BLOCK_N`` loading ``k[perm[x]]``, ``v[perm[x]]`` the same way, keeps the online softmax of FlashAttention
(Dao et al. 2022, Alg. 1), and writes each output row to ``out[perm[p]]`` (scatter). So SA reads and writes the
same bytes as SWA (``perm = None`` is plain SWA): no permuted copies of q, k, v or the output.
Causal SA masks keys whose original position is after the query's. The backward recomputes the probabilities
from the saved log-sum-exp. On a machine without CUDA, run it under ``TRITON_INTERPRET=1`` (fp32 / fp16, small
shapes). fp32 products are IEEE by default (``tl.dot`` would use TF32 on Ampere and later); tile sizes are
autotuned on CUDA over :data:`CONFIGS`.
"""

from __future__ import annotations

import functools
import math

import torch
import triton
import triton.language as tl

from gpu.validation import check_choice, check_perm, check_qkv
from receptive.windows import check_window, window_offsets


@triton.jit
def _sa_forward(
    Q,
    K,
    V,
    Out,
    Lse,
    Perm,
    stride_qb,
    stride_qh,
    stride_qn,
    stride_kb,
    stride_kh,
    stride_kn,
    stride_ob,
    stride_oh,
    stride_on,
    stride_ph,
    n_ctx,
    heads,
    groups,
    left,
    right,
    scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HAS_PERM: tl.constexpr,
    CAUSAL: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
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
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION).to(tl.float32) * scale
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
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=DOT_PRECISION).to(tl.float32)
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
    Q,
    K,
    V,
    DO,
    Lse,
    Delta,
    DK,
    DV,
    Perm,
    stride_qb,
    stride_qh,
    stride_qn,
    stride_kb,
    stride_kh,
    stride_kn,
    stride_ph,
    n_ctx,
    heads,
    groups,
    left,
    right,
    scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HAS_PERM: tl.constexpr,
    CAUSAL: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
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
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION).to(tl.float32) * scale
        rel = offs_n[None, :] - offs_m[:, None]
        valid = (rel >= -left) & (rel <= right) & col_ok[None, :] & row_ok[:, None]
        if CAUSAL:
            valid = valid & (k_orig[None, :] <= q_orig[:, None])
        p = tl.where(valid, tl.exp(s - lse[:, None]), 0.0)
        dv += tl.dot(tl.trans(p.to(do.dtype)), do, input_precision=DOT_PRECISION).to(tl.float32)
        dp = tl.dot(do, tl.trans(v), input_precision=DOT_PRECISION).to(tl.float32)
        ds = p * (dp - delta[:, None])
        dk += tl.dot(tl.trans(ds.to(q.dtype)), q, input_precision=DOT_PRECISION).to(tl.float32) * scale
    out_offsets = b * stride_qb + h * stride_qh + k_orig[:, None] * stride_qn + offs_d[None, :]
    tl.store(DK + out_offsets, dk, mask=col_ok[:, None] & d_ok[None, :])
    tl.store(DV + out_offsets, dv, mask=col_ok[:, None] & d_ok[None, :])


@triton.jit
def _sa_backward_dq(
    Q,
    K,
    V,
    DO,
    Lse,
    Delta,
    DQ,
    Perm,
    stride_qb,
    stride_qh,
    stride_qn,
    stride_kb,
    stride_kh,
    stride_kn,
    stride_ph,
    n_ctx,
    heads,
    groups,
    left,
    right,
    scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HAS_PERM: tl.constexpr,
    CAUSAL: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
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
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION).to(tl.float32) * scale
        rel = offs_n[None, :] - offs_m[:, None]
        valid = (rel >= -left) & (rel <= right) & col_ok[None, :] & row_ok[:, None]
        if CAUSAL:
            valid = valid & (k_orig[None, :] <= q_orig[:, None])
        p = tl.where(valid, tl.exp(s - lse[:, None]), 0.0)
        dp = tl.dot(do, tl.trans(v), input_precision=DOT_PRECISION).to(tl.float32)
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k, input_precision=DOT_PRECISION).to(tl.float32) * scale
    tl.store(DQ + q_offsets, dq, mask=row_ok[:, None] & d_ok[None, :])


#: Configurations the autotuner tries on CUDA (64 or 128 query rows per program, key tiles of 64, 4 or 8 warps,
#: 2 or 3 pipeline stages); ones that do not fit the GPU's shared memory are skipped by the autotuner. The
#: interpreter runs ``INTERPRETER_CONFIG``; every configuration here is tested on the interpreter at tiny shapes.
CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": 64}, num_warps=warps, num_stages=stages)
    for bm in (64, 128)
    for warps in (4, 8)
    for stages in (2, 3)
]
INTERPRETER_CONFIG = triton.Config({"BLOCK_M": 16, "BLOCK_N": 16}, num_warps=4, num_stages=2)
#: ``tl.dot`` input precision for fp32 inputs: ``ieee`` (exact fp32 products, the default), ``tf32`` (tensor cores,
#: inputs rounded to a 10-bit mantissa, Ampere and later) or ``tf32x3`` (three TF32 products, close to fp32).
#: fp16 / bf16 inputs use their tensor-core path whatever the setting.
PRECISIONS = ("ieee", "tf32", "tf32x3")
_TUNING_KEY = ["n_ctx", "heads", "groups", "left", "right", "HEAD_DIM", "HAS_PERM", "CAUSAL", "DOT_PRECISION"]
_KERNELS = {"forward": _sa_forward, "dkdv": _sa_backward_dkdv, "dq": _sa_backward_dq}


@functools.cache
def autotuned(name: str, do_bench=None):
    """The kernel ``name`` (``forward``, ``dkdv``, ``dq``) wrapped in ``triton.autotune`` over :data:`CONFIGS`.

    Built on first use and cached (nothing touches a driver at import). ``do_bench`` replaces the timer (tests run
    the autotuner on the interpreter with a stand-in).

    Parameters
    ----------
    name : {"forward", "dkdv", "dq"}
        The kernel.
    do_bench : callable or None, default None
        The autotuner's timer; ``None``: Triton's.

    Returns
    -------
    triton.runtime.Autotuner
        The autotuned kernel, the same object for the same arguments.

    Raises
    ------
    KeyError
        If ``name`` is not one of the kernels.

    References
    ----------
    - Triton documentation, ``triton.autotune``,
      https://triton-lang.org/main/python-api/generated/triton.autotune.html

    Examples
    --------
    >>> kernel = autotuned("forward")
    >>> len(kernel.configs) == len(CONFIGS), autotuned("forward") is kernel
    (True, True)
    """
    timer = {} if do_bench is None else {"do_bench": do_bench}  # older Triton has no do_bench argument
    return triton.autotune(CONFIGS, key=_TUNING_KEY, **timer)(_KERNELS[name])


def _interpreting() -> bool:
    return type(_sa_forward).__name__ == "InterpretedFunction"


def _launch_args(q, k, v, w, perm, causal, precision, validate):
    check_qkv(q, k, v)
    _, h, n, d = q.shape
    if q.dtype not in (torch.float16, torch.float32, torch.bfloat16):
        raise ValueError(f"q, k, v: expected one dtype of float16, bfloat16, float32, got {q.dtype}")
    if not q.is_cuda and not _interpreting():
        raise ValueError(
            f"q: the fused kernel needs CUDA tensors, got device {q.device} (on the CPU set TRITON_INTERPRET=1 before "
            "triton is imported to run the interpreter)"
        )
    check_choice("precision", precision, PRECISIONS)
    one_sided = perm is None and causal
    w = check_window(w, n, one_sided, False)
    left, right = window_offsets(w, one_sided)
    if perm is not None:
        perm = check_perm(perm, n, h, q.device, validate=validate)
        perm_arg, stride_ph = perm.to(torch.int32).contiguous(), (0 if perm.dim() == 1 else n)
    else:
        perm_arg, stride_ph = torch.zeros(1, dtype=torch.int32, device=q.device), 0
    scalars = (n, h, h // k.shape[1], left, right, 1.0 / math.sqrt(d))
    flags = dict(
        HEAD_DIM=d,
        BLOCK_D=max(16, triton.next_power_of_2(d)),
        HAS_PERM=perm is not None,
        CAUSAL=causal and perm is not None,
        DOT_PRECISION=precision,
    )
    return perm_arg, stride_ph, scalars, flags


def _launch(name, tile: str, args, flags, config, n, bh, do_bench):
    """Run kernel ``name`` with ``config`` (a ``triton.Config``), or through the autotuner when ``config is None``.
    ``tile`` is the block size the grid is cut by (``BLOCK_M`` for query tiles, ``BLOCK_N`` for key tiles)."""
    if config is None:
        grid = lambda meta: (triton.cdiv(n, meta[tile]), bh)  # noqa: E731
        autotuned(name, do_bench)[grid](*args, **flags)
        return
    grid = (triton.cdiv(n, config.kwargs[tile]), bh)
    _KERNELS[name][grid](*args, **flags, **config.kwargs, num_warps=config.num_warps, num_stages=config.num_stages)


class _FusedSA(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, w, perm, causal, config, precision, validate, do_bench):
        q, k, v = (t.contiguous() for t in (q, k, v))
        perm_arg, stride_ph, scalars, flags = _launch_args(q, k, v, w, perm, causal, precision, validate)
        b, h, n, _ = q.shape
        out = torch.empty_like(q)
        lse = torch.empty(b * h * n, dtype=torch.float32, device=q.device)
        args = (
            q,
            k,
            v,
            out,
            lse,
            perm_arg,
            q.stride(0),
            q.stride(1),
            q.stride(2),
            k.stride(0),
            k.stride(1),
            k.stride(2),
            out.stride(0),
            out.stride(1),
            out.stride(2),
            stride_ph,
            *scalars,
        )
        _launch("forward", "BLOCK_M", args, flags, config, n, b * h, do_bench)
        ctx.save_for_backward(q, k, v, out, lse, perm_arg)
        ctx.meta = (stride_ph, scalars, flags, config, do_bench)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, lse, perm_arg = ctx.saved_tensors
        stride_ph, scalars, flags, config, do_bench = ctx.meta
        b, h, n, d = q.shape
        grad_out = grad_out.contiguous()
        delta = (grad_out.float() * out.float()).sum(-1)  # rowsum(dO * O), original order
        if flags["HAS_PERM"]:
            index = perm_arg.long()
            delta = delta[..., index] if index.dim() == 1 else torch.gather(delta, 2, index[None].expand(b, -1, -1))
        delta = delta.contiguous().view(-1)
        dq = torch.empty(q.shape, dtype=torch.float32, device=q.device)  # every row is written (stores, no atomics)
        dk = torch.empty(q.shape, dtype=torch.float32, device=q.device)  # per query head, summed over GQA groups
        dv = torch.empty(q.shape, dtype=torch.float32, device=q.device)
        strides = (q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2), stride_ph)
        dkdv_args = (q, k, v, grad_out, lse, delta, dk, dv, perm_arg, *strides, *scalars)
        _launch("dkdv", "BLOCK_N", dkdv_args, flags, config, n, b * h, do_bench)
        _launch(
            "dq",
            "BLOCK_M",
            (q, k, v, grad_out, lse, delta, dq, perm_arg, *strides, *scalars),
            flags,
            config,
            n,
            b * h,
            do_bench,
        )
        groups = h // k.shape[1]
        dk = dk.view(b, k.shape[1], groups, n, d).sum(2)
        dv = dv.view(b, k.shape[1], groups, n, d).sum(2)
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), *([None] * 7)


def _config_for(block, config, autotune: bool):
    if block is not None and config is not None:
        raise ValueError("block: give block or config, not both")
    if config is not None:
        if not isinstance(config, triton.Config) or not {"BLOCK_M", "BLOCK_N"} <= set(config.kwargs):
            raise ValueError(f"config: expected a triton.Config with BLOCK_M and BLOCK_N, got {config!r}")
        for key in ("BLOCK_M", "BLOCK_N"):
            size = config.kwargs[key]
            if isinstance(size, bool) or not isinstance(size, int) or size < 16 or size & (size - 1):
                raise ValueError(f"config: {key} must be a power of two >= 16, got {size!r}")
        return config
    if block is not None:
        if isinstance(block, bool) or not isinstance(block, int) or block < 16 or block & (block - 1):
            raise ValueError(f"block: expected a power of two >= 16, got {block!r}")
        return triton.Config({"BLOCK_M": block, "BLOCK_N": block}, num_warps=4, num_stages=2)
    return None if autotune else INTERPRETER_CONFIG


def triton_sa_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    w: int,
    perm: torch.Tensor | None = None,
    causal: bool = False,
    block: int | None = None,
    *,
    config: triton.Config | None = None,
    precision: str = "ieee",
    validate: bool = True,
    _do_bench=None,
) -> torch.Tensor:
    """Fused SA with permutation ``perm`` (``(n,)`` or per head ``(heads, n)``), or SWA when ``perm is None`` (then
    ``causal`` uses the one-sided window ``(w-1, 0)``, as :func:`gpu.swa_attention`). Differentiable: the backward
    recomputes the probabilities from the saved log-sum-exp (FlashAttention-2 style: one program per key tile for
    dK, dV and one per query tile for dQ, no atomics), gathering and scattering through the same permutation.

    Tiles: on CUDA ``triton.autotune`` picks one of :data:`CONFIGS` per shape (``block`` or ``config`` fix it);
    on the interpreter ``INTERPRETER_CONFIG`` (16 x 16). ``precision``: :data:`PRECISIONS` (``ieee``: fp32
    inputs give fp32-exact products; :func:`gpu.attention.oracle.check_backends` checks the kernel against a float64
    oracle). ``validate``: check that ``perm`` is a permutation (``gpu.validation.check_perm``; a device-resident
    ``perm`` costs one synchronisation).

    Parameters
    ----------
    q : torch.Tensor
        ``(batch, heads, n, d)``, float16, bfloat16 or float32, on CUDA (or on the CPU under the interpreter).
    k, v : torch.Tensor
        ``(batch, kv_heads, n, d)``, same dtype and device; ``kv_heads`` divides ``heads`` (GQA).
    w : int
        The window (``receptive.windows.check_window``: ``1..2n-1`` two-sided, ``1..n`` one-sided).
    perm : torch.Tensor or None, default None
        The permutation ``(n,)`` or per head ``(heads, n)``; ``None``: SWA.
    causal : bool, default False
        SA: mask keys whose original position is after the query's; SWA: the one-sided window.
    block : int or None, default None
        Fixed square tiles (a power of two ``>= 16``) instead of the autotuner.
    config : triton.Config or None, default None
        A fixed tile configuration with ``BLOCK_M`` and ``BLOCK_N`` (not with ``block``).
    precision : {"ieee", "tf32", "tf32x3"}, default "ieee"
        ``tl.dot``'s input precision for fp32 inputs.
    validate : bool, default True
        Check that ``perm`` is a permutation.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d)``, q's dtype.

    Raises
    ------
    TypeError
        If a tensor argument is not a tensor, or ``precision`` is not a string.
    ValueError
        If the shapes, dtypes or devices do not fit (a CPU tensor without the interpreter), ``w`` is out of range,
        ``perm`` is not a permutation, or ``block``, ``config`` or ``precision`` is invalid.

    References
    ----------
    - T. Dao, D. Y. Fu, S. Ermon, A. Rudra, C. Ré, "FlashAttention: Fast and Memory-Efficient Exact Attention with
      IO-Awareness", 2022, arXiv:2205.14135 (the online softmax, Alg. 1).
    - T. Dao, "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning", 2023,
      arXiv:2307.08691 (the backward's split into dK, dV and dQ programs).
    - Jin & Sui (2026). Stochastic Attention. arXiv:2604.00754.

    Examples
    --------
    Needs a CUDA GPU (or ``TRITON_INTERPRET=1`` set before triton is imported), so not run here:

    >>> import torch
    >>> from gpu import sa_attention
    >>> q, k, v = (torch.randn(1, 4, 1024, 64, device="cuda") for _ in range(3))  # doctest: +SKIP
    >>> perm = torch.randperm(1024, device="cuda")  # doctest: +SKIP
    >>> out = triton_sa_attention(q, k, v, 64, perm=perm)  # doctest: +SKIP
    >>> bool(torch.allclose(out, sa_attention(q, k, v, 64, perm=perm, backend="torch"), atol=1e-4))  # doctest: +SKIP
    True
    """
    autotune = bool(getattr(q, "is_cuda", False)) or _do_bench is not None
    config = _config_for(block, config, autotune)
    return _FusedSA.apply(q, k, v, w, perm, causal, config, precision, validate, _do_bench)
