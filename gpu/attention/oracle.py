"""The one reference attention, a float64 dense oracle for every attention backend, and the check that runs them all
against it.

:func:`masked_attention` is dense softmax attention under a boolean mask with one rule for a query that sees no key
(0, never NaN); the approximation lab's exact attention and every test's reference are it. :func:`dense_oracle` is
``softmax(q k^T / sqrt d + bias) v`` in float64 under an explicit boolean mask (a row without a key gives 0);
:func:`oracle_mask` builds that mask from ``receptive``'s pattern definitions (the adjacency the coverage engine
analyses: ``mask[q, k]`` = query ``q`` attends to key ``k``), so a backend that passes computes exactly the attention
whose receptive fields ``receptive.coverage`` reports. :func:`check_backends` runs full, SWA and SA (shared and
per-head permutations) through the torch, FlexAttention and fused Triton backends against it;
``benchmarks/gpu_check.py`` calls it first on a GPU. Errors are ``max |out - ref| / (1 + |ref|)`` against
``TOLERANCE`` per dtype (10x for gradients)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np
import torch

from gpu.attention.functional import full_attention, sa_attention, swa_attention
from gpu.validation import check_choice, check_int
from receptive import StochasticAttention, make_pattern
from receptive.windows import max_window

BACKENDS = ("torch", "flex", "triton")
TOLERANCE = {"float32": 1e-4, "float16": 5e-3, "bfloat16": 3e-2}  # max |out - ref| / (1 + |ref|)


@dataclass
class Check:
    """One backend's check against :func:`dense_oracle`: its worst relative error and whether it is in tolerance.

    Parameters
    ----------
    case : str
        What was checked, e.g. ``"sa per-head causal [flex] grad"``.
    n : int
        The sequence length.
    dtype : str
        The dtype of the call, a key of ``TOLERANCE``.
    max_error : float
        ``max |out - ref| / (1 + |ref|)`` over the output (or the gradients); ``inf`` when the call raised.
    tolerance : float
        The bound ``max_error`` is held to.
    ok : bool
        ``max_error <= tolerance``.
    note : str, default ""
        The exception's type and first line when the call raised.

    Examples
    --------
    >>> Check("swa [torch]", 64, "float32", 2e-7, 1e-4, True).to_dict()["ok"]
    True
    """

    case: str
    n: int
    dtype: str
    max_error: float
    tolerance: float
    ok: bool
    note: str = ""

    def to_dict(self) -> dict:
        """The fields as a plain dict (for a JSON record)."""
        return asdict(self)


def oracle_mask(kind: str, n: int, w: int, causal: bool, perm=None, heads: int | None = None, device=None):
    """Boolean (heads or 1, n, n) mask from receptive's patterns: ``mask[q, k]`` = query q attends to key k.

    ``full`` is all ones (lower triangle when causal), ``swa`` the adjacency of
    :func:`receptive.make_pattern` ``("swa", n, w, causal)``, ``sa`` that of :class:`receptive.StochasticAttention`
    with the permutation ``perm`` (one mask per row of a per-head ``perm``).

    Parameters
    ----------
    kind : {"full", "swa", "sa"}
        The attention.
    n : int
        The sequence length.
    w : int
        The window (``swa``, ``sa``).
    causal : bool
        Only keys at or before the query.
    perm : torch.Tensor or numpy.ndarray or None, default None
        ``sa``: the permutation ``(n,)`` or per-head permutations ``(heads, n)``, on any device.
    heads : int or None, default None
        The number of heads (unused: the mask's first axis follows ``perm`` and broadcasts over the heads).
    device : torch.device or str or None, default None
        Where the mask lives (``None``: the CPU).

    Returns
    -------
    torch.Tensor
        bool ``(1, n, n)``, or ``(heads, n, n)`` for per-head permutations.

    Examples
    --------
    >>> import torch
    >>> oracle_mask("swa", 5, 3, True)[0].int().tolist()
    [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [0, 1, 1, 1, 0], [0, 0, 1, 1, 1]]
    >>> mask = oracle_mask("sa", 6, 3, False, torch.tensor([2, 0, 1, 5, 3, 4]), 1, "cpu")
    >>> mask[0, 0].int().tolist()  # position 0 sits between 2 and 1 in permuted order
    [1, 1, 1, 0, 0, 0]
    """
    if kind == "full":
        dense = np.tril(np.ones((n, n), bool)) if causal else np.ones((n, n), bool)
        return torch.as_tensor(dense, device=device)[None]
    if kind == "swa":
        return torch.as_tensor(make_pattern("swa", n, w, causal).adjacency(1).toarray(), device=device)[None]
    rows = np.asarray(torch.as_tensor(perm).cpu())
    rows = rows if rows.ndim == 2 else rows[None]
    masks = [StochasticAttention(n, w, causal, permutations=[p]).adjacency(1).toarray() for p in rows]
    return torch.as_tensor(np.stack(masks), device=device)


def dense_oracle(q, k, v, mask, scale: float | None = None, bias=None):
    """float64 ``softmax(q k^T scale + bias) v`` under ``mask`` (GQA by repetition); a row without a key gives 0:
    :func:`masked_attention` in float64.

    Scaled dot-product attention [1]_ with the scores of pairs outside ``mask`` set to ``-inf``, written out with
    nothing fused or blocked, on ``q``'s device: the reference every backend of :mod:`gpu.attention` is tested
    against. Differentiable (float64 autograd gives the reference gradients; a row without a key gets zero ones).

    Parameters
    ----------
    q : torch.Tensor
        ``(batch, heads, m, d)``.
    k, v : torch.Tensor
        ``(batch, kv_heads, n, d)`` and ``(batch, kv_heads, n, d_v)``, ``kv_heads`` dividing ``heads``.
    mask : torch.Tensor or numpy.ndarray
        bool, broadcastable to ``(batch, heads, m, n)``: ``mask[..., i, j]`` = query ``i`` attends to key ``j``.
    scale : float or None, default None
        The scores' factor; ``None``: ``1 / sqrt(d)``.
    bias : torch.Tensor or numpy.ndarray or None, default None
        Broadcastable to ``(batch, heads, m, n)``, added to the scaled scores.

    Returns
    -------
    torch.Tensor
        float64 ``(batch, heads, m, d_v)``; rows of ``mask`` without a key are 0.

    References
    ----------
    .. [1] A. Vaswani et al., "Attention Is All You Need", 2017, arXiv:1706.03762.

    Examples
    --------
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 2, 5, 4, generator=g) for _ in range(3))
    >>> out = dense_oracle(q, k, v, torch.ones(1, 5, 5, dtype=torch.bool))
    >>> ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double())
    >>> out.dtype, bool(torch.allclose(out, ref))
    (torch.float64, True)
    >>> dense_oracle(q, k, v, torch.zeros(5, 5, dtype=torch.bool))[0, 0, 0].tolist()  # no key: 0
    [0.0, 0.0, 0.0, 0.0]
    """
    q, k, v = (t.double() for t in (q, k, v))
    bias = None if bias is None else torch.as_tensor(bias, device=q.device).double()
    return masked_attention(q, k, v, torch.as_tensor(mask, device=q.device), scale=scale, bias=bias)


def masked_attention(q, k, v, mask=None, causal: bool = False, scale: float | None = None, bias=None):
    """``softmax(q k^T scale + bias) v`` over the keys of ``mask`` (and ``j <= i`` when causal), in ``q``'s dtype,
    written out dense: the one definition of attention the toolkit's references share.

    The rule for a query with no visible key: its output is 0 (never NaN), and so are its gradients, as in
    FlexAttention; softmax over an empty set is undefined. Grouped key heads are repeated to the query heads.

    Parameters
    ----------
    q : torch.Tensor
        ``(batch, heads, m, d)``.
    k, v : torch.Tensor
        ``(batch, kv_heads, n, d)`` and ``(batch, kv_heads, n, d_v)``, ``kv_heads`` dividing ``heads``.
    mask : torch.Tensor, optional
        bool, broadcastable to ``(batch, heads, m, n)``; ``None``: every key.
    causal : bool, default False
        Also drop the keys after the query (``j > i``; the queries are the last ``m`` of the ``n`` positions).
    scale : float or None, default None
        The scores' factor; ``None``: ``1 / sqrt(d)``.
    bias : torch.Tensor or None, default None
        Broadcastable to ``(batch, heads, m, n)``, added to the scaled scores.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, m, d_v)`` in ``q``'s dtype.

    Examples
    --------
    >>> import torch
    >>> q = k = v = torch.eye(3)[None, None]
    >>> masked_attention(q, k, v, causal=True)[0, 0, 0].tolist()  # the first query sees only itself
    [1.0, 0.0, 0.0]
    >>> masked_attention(q, k, v, torch.zeros(3, 3, dtype=torch.bool))[0, 0, 0].tolist()  # no key: 0
    [0.0, 0.0, 0.0]

    References
    ----------
    .. [1] A. Vaswani et al., "Attention Is All You Need", 2017, arXiv:1706.03762, Eq. 1.
    """
    groups = q.shape[1] // k.shape[1]
    if groups > 1:
        k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    m, n = q.shape[-2], k.shape[-2]
    scores = (q @ k.transpose(-1, -2)) * (q.shape[-1] ** -0.5 if scale is None else scale)
    if bias is not None:
        scores = scores + bias
    if causal:
        past = torch.ones(m, n, dtype=torch.bool, device=q.device).tril(n - m)
        mask = past if mask is None else mask & past
    if mask is None:
        return torch.softmax(scores, -1) @ v
    has_key = mask.any(-1, keepdim=True)
    # a row without a key gets finite scores (uniform weights) and is zeroed afterwards: 0, not NaN, and its
    # gradients are 0 too
    scores = scores.masked_fill(~mask, float("-inf")).masked_fill(~has_key, 0.0)
    return (torch.softmax(scores, -1) @ v) * has_key


def _call(kind: str, backend: str, q, k, v, w: int, causal: bool, perm):
    """One attention call through the public API; the fused kernel with one fixed tile configuration on CUDA
    (``CONFIGS[0]``: every configuration runs the same code and each is tested on the interpreter; autotuning all
    of them for every checked shape and variant would compile about a hundred kernels), so the timings alone pay
    for autotuning."""
    if backend == "triton" and q.is_cuda:
        from gpu.attention.triton_sa import CONFIGS, triton_sa_attention

        fixed = {"config": CONFIGS[0]}
        if kind == "full":
            return triton_sa_attention(q, k, v, max_window(q.shape[2], causal, False), causal=causal, **fixed)
        return triton_sa_attention(q, k, v, w, perm=perm if kind == "sa" else None, causal=causal, **fixed)
    if kind == "full":
        return full_attention(q, k, v, causal=causal, backend=backend)
    if kind == "swa":
        return swa_attention(q, k, v, w, causal=causal, backend=backend)
    return sa_attention(q, k, v, w, perm=perm, causal=causal, backend=backend)


def _error(out, ref) -> float:
    return float(((out.double() - ref).abs() / (1 + ref.abs())).max())


def _forward_error(call, qkv, ref) -> float:
    kind, backend, w, causal, perm = call
    return _error(_call(kind, backend, *qkv, w, causal, perm), ref.detach())


def _grad_error(call, qkv, leaves, upstream) -> float:
    """Worst relative error of dq, dk, dv against float64 autograd through the oracle (``leaves`` hold its grads)."""
    kind, backend, w, causal, perm = call
    ours = [t.detach().clone().requires_grad_() for t in qkv]
    (_call(kind, backend, *ours, w, causal, perm) * upstream).sum().backward()
    return max(_error(x.grad, y.grad) for x, y in zip(ours, leaves, strict=True))


def _check(case: str, n: int, dtype: str, error, *args) -> Check:
    """Run ``error(*args)`` (the worst relative error against the oracle; gradients get 10x the tolerance); an
    exception is a failed check, recorded with its message."""
    tol = (10 if error is _grad_error else 1) * TOLERANCE[dtype]
    try:
        err = error(*args)
    except Exception as exc:  # a backend that cannot run here fails its check; the others still run
        note = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        return Check(case, n, dtype, float("inf"), tol, False, note)
    return Check(case, n, dtype, err, tol, err <= tol)


def _cases(n: int, w: int, heads: int, device, g):
    """The checked attention calls at length ``n``: (name, kind, w, causal, perm) for full, SWA and SA with a shared
    and with per-head permutations, bidirectional and causal."""
    for kind, perms in (("full", None), ("swa", None), ("sa", "shared"), ("sa", "per-head")):
        for causal in (False, True):
            perm = None
            if perms == "shared":
                perm = torch.randperm(n, generator=g).to(device)
            elif perms == "per-head":
                perm = torch.stack([torch.randperm(n, generator=g) for _ in range(heads)]).to(device)
            name = f"{kind}{'' if perms is None else ' ' + perms}{' causal' if causal else ''}"
            yield name, kind, min(w, n), causal, perm


def check_backends(
    check_n,
    grad_n=(),
    heads: int = 4,
    kv_heads: int = 2,
    d: int = 64,
    w: int = 256,
    dtype: str = "float32",
    device="cuda",
    log=print,
    deadline: float = float("inf"),
) -> tuple[list[Check], list[str]]:
    """Every backend (full, SWA, SA with shared and per-head permutations; torch, FlexAttention, fused Triton;
    bidirectional and causal; GQA with ``kv_heads``) against :func:`dense_oracle`, in three passes, the most
    important first: fp32 forward at every ``check_n`` (largest first), ``dtype`` forward at the largest, fp32
    gradients (dq, dk, dv against float64 autograd) at ``grad_n``. Checks not started by ``deadline``
    (``time.perf_counter``) are returned as skipped: compiling FlexAttention for every mask and shape is what
    takes time on a GPU.

    Parameters
    ----------
    check_n : sequence of int
        The lengths of the forward checks (non-empty).
    grad_n : sequence of int, default ()
        The lengths of the gradient checks.
    heads : int, default 4
        Query heads.
    kv_heads : int, default 2
        Key/value heads, a divisor of ``heads``.
    d : int, default 64
        Head dimension.
    w : int, default 256
        The window of SWA and SA (clipped to ``n``).
    dtype : {"float32", "float16", "bfloat16"}, default "float32"
        The dtype of the second pass.
    device : torch.device or str, default "cuda"
        Where the checks run.
    log : callable, default print
        Called with one line per checked case.
    deadline : float, default inf
        A ``time.perf_counter`` value after which no case is started.

    Returns
    -------
    checks : list of Check
        The checks run.
    skipped : list of str
        The cases not started by ``deadline``.

    Raises
    ------
    TypeError
        If ``dtype`` is not a string or an integer argument is not an integer.
    ValueError
        If ``dtype`` is unknown, an integer argument is below 1, or ``kv_heads`` does not divide ``heads``.

    Examples
    --------
    >>> checks, skipped = check_backends([8], heads=2, kv_heads=1, d=4, w=4, device="cpu", deadline=0.0)
    >>> checks, len(skipped), skipped[:2]  # past the deadline: every case is skipped, nothing compiled
    ([], 24, ['full [torch] n=8 float32', 'full [flex] n=8 float32'])
    """
    check_choice("dtype", dtype, TOLERANCE)
    for name, value in (("heads", heads), ("kv_heads", kv_heads), ("d", d), ("w", w)):
        check_int(name, value, 1)
    if heads % kv_heads:
        raise ValueError(f"kv_heads: must divide heads ({heads}), got {kv_heads}")
    checks, skipped = [], []
    passes = [("float32", n, False) for n in sorted(check_n, reverse=True)]
    passes += [(dtype, max(check_n), False)] if dtype != "float32" else []
    passes += [("float32", n, True) for n in sorted(grad_n, reverse=True)]
    for pass_dtype, n, grads in passes:
        g = torch.Generator().manual_seed(n)
        q, k, v = (torch.randn(1, x, n, d, generator=g).to(device) for x in (heads, kv_heads, kv_heads))
        upstream = torch.randn(1, heads, n, d, generator=g).to(device)
        for name, kind, case_w, causal, perm in _cases(n, w, heads, device, g):
            backends = [b for b in BACKENDS if not (grads and b == "flex" and str(device) != "cuda")]  # CPU: no bwd
            suffix = " grad" if grads else ""
            if time.perf_counter() > deadline:
                skipped += [f"{name} [{b}]{suffix} n={n} {pass_dtype}" for b in backends]
                continue
            leaves = [t.double().requires_grad_(grads) for t in (q, k, v)]
            ref = dense_oracle(*leaves, oracle_mask(kind, n, case_w, causal, perm, heads, device))
            if grads:
                (ref * upstream.double()).sum().backward()
            found = []
            for b in backends:
                case, call = f"{name} [{b}]{suffix}", (kind, b, case_w, causal, perm)
                if grads:
                    found.append(_check(case, n, pass_dtype, _grad_error, call, (q, k, v), leaves, upstream))
                else:
                    qkv = [t.to(getattr(torch, pass_dtype)) for t in (q, k, v)]
                    found.append(_check(case, n, pass_dtype, _forward_error, call, qkv, ref))
            checks += found
            failed = [c.case for c in found if not c.ok]
            log(
                f"checked n={n:>5} {pass_dtype:<8} {name + suffix:<27} worst {max(c.max_error for c in found):.2e}"
                + (f"  FAILED: {', '.join(failed)}" if failed else "")
            )
    return checks, skipped
