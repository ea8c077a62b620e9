"""The approximation methods (one function each) and their registry."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from receptive import make_pattern


def exact_attention(q, k, v) -> torch.Tensor:
    """``softmax(q k^T / sqrt(d)) v``."""
    return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1) @ v


def relative_error(approx: torch.Tensor, exact: torch.Tensor) -> float:
    """``||O - O_hat||_F / ||O||_F``."""
    return float(torch.linalg.norm((approx - exact).double()) / torch.linalg.norm(exact.double()))


def _masked(q, k, v, mask: torch.Tensor, sink: bool = False) -> torch.Tensor:
    if sink:
        mask = mask.clone()
        mask[..., 0] = True
    scores = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def _pattern_mask(name: str, n: int, w: int, seed: int, device) -> torch.Tensor:
    mat = make_pattern(name, n, min(w, 2 * n - 1), seed=seed).adjacency(1).toarray()
    return torch.as_tensor(mat, device=device)


def _with_sink(method):
    """``method`` with ``m - 1`` keys plus the first position always kept, the attention sink (Xiao et al. 2024,
    StreamingLLM); in a BERT model the sink is ``[CLS]``."""

    def run(q, k, v, m, seed):
        return method(q, k, v, max(1, m - 1), seed, sink=True)

    run.__doc__ = f"{method.__name__} with m - 1 keys and the first position (the sink)."
    return run


def sliding_window(q, k, v, m, seed, sink=False):
    """SWA with ``w = m`` keys (itself included). Cost ``O(n m d)``."""
    return _masked(q, k, v, _pattern_mask("swa", q.shape[2], m, seed, q.device), sink)


def stochastic(q, k, v, m, seed, sink=False):
    """SA with ``w = m`` keys in the order of ``receptive.layer_permutation(n, seed, 1)``. Cost ``O(n m d)``."""
    return _masked(q, k, v, _pattern_mask("sa", q.shape[2], m, seed, q.device), sink)


def stochastic_plus_window(q, k, v, m, seed):
    """Union of an SA window and a sliding window of ``m // 2`` keys each. Cost ``O(n m d)``."""
    return _masked(q, k, v, _pattern_mask("sa+swa", q.shape[2], max(1, m // 2), seed, q.device))


def top_k(q, k, v, m, seed):
    """Oracle: each row keeps its ``m`` largest scores (needs the full ``O(n^2 d)`` scores to find them)."""
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    keep = min(m, scores.shape[-1])
    threshold = scores.topk(keep, dim=-1).values[..., -1:]
    return torch.softmax(scores.masked_fill(scores < threshold, float("-inf")), dim=-1) @ v


def truncated_svd(q, k, v, m, seed):
    """Oracle: the best rank-``m`` approximation of the attention matrix ``A`` (Eckart-Young), then ``A_m v``."""
    a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
    u, s, vh = torch.linalg.svd(a)
    r = min(m, s.shape[-1])
    return (u[..., :r] * s[..., None, :r]) @ (vh[..., :r, :] @ v)


def _generator(seed: int, device) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def performer(q, k, v, m, seed):
    """Performer FAVOR+ (Choromanski et al. 2021): ``m`` positive orthogonal random features
    ``phi(x) = exp(w^T x - |x|^2 / 2) / sqrt(m)`` on ``x = q / d^(1/4)``; ``softmax(qk^T) v ~ phi(q) (phi(k)^T v)``
    normalised by ``phi(q) (phi(k)^T 1)``. Cost ``O(n m d)``."""
    d = q.shape[-1]
    g = _generator(seed, "cpu")
    blocks = []
    for _ in range(-(-m // d)):
        gauss = torch.randn(d, d, generator=g, dtype=torch.float64)
        ortho, _ = torch.linalg.qr(gauss)
        norms = torch.randn(d, d, generator=g, dtype=torch.float64).norm(dim=1)  # chi(d) row lengths
        blocks.append(ortho * norms[:, None])
    w = torch.cat(blocks)[:m].to(q.device, q.dtype)
    scale = d**-0.25

    def features(x, is_query):
        x = x * scale
        proj = x @ w.T
        stab = proj.amax(dim=-1, keepdim=True) if is_query else proj.amax(dim=(-1, -2), keepdim=True)
        return torch.exp(proj - (x * x).sum(-1, keepdim=True) / 2 - stab) / math.sqrt(m)

    fq, fk = features(q, True), features(k, False)
    numerator = fq @ (fk.transpose(-1, -2) @ v)
    denominator = fq @ fk.sum(dim=-2, keepdim=True).transpose(-1, -2)
    return numerator / denominator.clamp_min(torch.finfo(q.dtype).tiny)


def _newton_schulz_pinv(a: torch.Tensor, iterations: int = 6) -> torch.Tensor:
    """Iterative Moore-Penrose inverse of Nystromformer (Xiong et al. 2021, Eq. 13)."""
    z = a.transpose(-1, -2) / (a.abs().sum(-1).amax(-1)[..., None, None] * a.abs().sum(-2).amax(-1)[..., None, None])
    eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
    for _ in range(iterations):
        az = a @ z
        z = 0.25 * z @ (13 * eye - az @ (15 * eye - az @ (7 * eye - az)))
    return z


def nystromformer(q, k, v, m, seed):
    """Nystromformer (Xiong et al. 2021): ``m`` landmarks as segment means of q and k,
    ``A ~ softmax(Q Kt^T) pinv(softmax(Qt Kt^T)) softmax(Qt K^T)`` with 6 Newton-Schulz iterations. Cost
    ``O(n m d + m^3)``."""
    n, d = q.shape[-2], q.shape[-1]
    m = min(m, n)
    edges = np.linspace(0, n, m + 1).round().astype(int)
    ql = torch.stack([q[..., a:b, :].mean(-2) for a, b in itertools.pairwise(edges)], dim=-2)
    kl = torch.stack([k[..., a:b, :].mean(-2) for a, b in itertools.pairwise(edges)], dim=-2)
    s = 1 / math.sqrt(d)
    f = torch.softmax(q @ kl.transpose(-1, -2) * s, dim=-1)
    core = _newton_schulz_pinv(torch.softmax(ql @ kl.transpose(-1, -2) * s, dim=-1))
    b = torch.softmax(ql @ k.transpose(-1, -2) * s, dim=-1)
    return f @ (core @ (b @ v))


def linformer(q, k, v, m, seed):
    """Linformer (Wang et al. 2020), untrained: a random Johnson-Lindenstrauss projection ``E`` (``m x n``, entries
    ``N(0, 1/m)``) of keys and values, ``softmax(q (E k)^T / sqrt d) (E v)``. Cost ``O(n m d)``."""
    n = q.shape[-2]
    e = torch.randn(m, n, generator=_generator(seed, "cpu"), dtype=torch.float64).to(q.device, q.dtype) / math.sqrt(m)
    return torch.softmax(q @ (e @ k).transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1) @ (e @ v)


def reformer_lsh(q, k, v, m, seed, rounds: int = 2):
    """Reformer-style LSH (Kitaev et al. 2020): normalised q and k hashed by shared random rotations
    (``argmax [xR, -xR]``, angular LSH), each sorted by bucket, cut into chunks of ``c``; query chunk ``j`` attends
    to key chunks ``j`` and ``j - 1``; ``rounds`` rounds merged by log-sum-exp. ``m = 2 c rounds``."""
    b, h, n, d = q.shape
    c = max(1, m // (2 * rounds))
    n_buckets = max(2, 2 * (n // max(c, 1) // 2))
    g = _generator(seed, "cpu")
    outs, lses = [], []
    qn, kn = q / q.norm(dim=-1, keepdim=True), k / k.norm(dim=-1, keepdim=True)
    chunks = -(-n // c)
    pad = chunks * c - n
    for _ in range(rounds):
        rot = torch.randn(d, n_buckets // 2, generator=g, dtype=torch.float64).to(q.device, q.dtype)
        qh = torch.cat([qn @ rot, -(qn @ rot)], -1).argmax(-1)
        kh = torch.cat([kn @ rot, -(kn @ rot)], -1).argmax(-1)
        qi = torch.argsort(qh * n + torch.arange(n, device=q.device), dim=-1)
        ki = torch.argsort(kh * n + torch.arange(n, device=q.device), dim=-1)
        qs = torch.gather(q, 2, qi[..., None].expand(-1, -1, -1, d))
        ks = torch.gather(k, 2, ki[..., None].expand(-1, -1, -1, d))
        vs = torch.gather(v, 2, ki[..., None].expand(-1, -1, -1, d))
        valid = torch.nn.functional.pad(torch.ones(n, dtype=torch.bool, device=q.device), (0, pad)).view(chunks, c)
        qs, ks, vs = (torch.nn.functional.pad(t, (0, 0, 0, pad)).view(b, h, chunks, c, d) for t in (qs, ks, vs))
        kk = torch.cat([ks, ks.roll(1, dims=2)], dim=3)  # own chunk and the previous one
        vv = torch.cat([vs, vs.roll(1, dims=2)], dim=3)
        kvalid = torch.cat([valid, valid.roll(1, dims=0)], dim=1)
        if chunks == 1:
            kvalid[:, c:] = False  # the "previous" chunk is the chunk itself
        scores = (qs @ kk.transpose(-1, -2) / math.sqrt(d)).masked_fill(~kvalid[:, None, :], float("-inf"))
        lse = torch.logsumexp(scores, dim=-1)
        out = torch.softmax(scores, dim=-1) @ vv
        out, lse = out.reshape(b, h, chunks * c, d)[:, :, :n], lse.reshape(b, h, chunks * c)[:, :, :n]
        undo = torch.argsort(qi, dim=-1)
        outs.append(torch.gather(out, 2, undo[..., None].expand(-1, -1, -1, d)))
        lses.append(torch.gather(lse, 2, undo))
    weights = torch.softmax(torch.stack(lses), dim=0)[..., None]
    return (torch.stack(outs) * weights).sum(0)


def moba(q, k, v, m, seed, blocks_per_query: int = 4):
    """MoBA (Lu et al. 2025): keys in blocks of ``B = m / blocks_per_query``; each query scores blocks by
    ``q . mean(k_block)``, keeps the top ``blocks_per_query`` (its own block always), and attends to their keys.
    ``m = B * blocks_per_query``."""
    b, h, n, d = q.shape
    size = max(1, m // blocks_per_query)
    nb = -(-n // size)
    block_of = torch.arange(n, device=q.device) // size
    means = torch.zeros(b, h, nb, d, dtype=q.dtype, device=q.device).index_add_(2, block_of, k)
    means = means / torch.bincount(block_of, minlength=nb).to(q.dtype)[:, None]
    gate = q @ means.transpose(-1, -2)
    gate[..., torch.arange(n, device=q.device), block_of] = float("inf")  # own block always kept
    chosen = gate.topk(min(blocks_per_query, nb), dim=-1).indices
    keep = torch.zeros(b, h, n, nb, dtype=torch.bool, device=q.device).scatter_(-1, chosen, True)
    return _masked(q, k, v, keep[..., block_of])


@dataclass(frozen=True)
class Method:
    """A method, its family in the survey's classification and how its parameter follows from the budget ``m``."""

    name: str
    family: str
    accounting: str
    run: Callable
    randomized: bool = True  # False: the seed does not change the output


METHODS = {
    m.name: m
    for m in (
        Method("swa", "sparsity", "window of m keys", sliding_window, randomized=False),
        Method("sa", "sparsity", "window of m keys in a random order", stochastic),
        Method("sa+swa", "sparsity", "m/2 keys of each window", stochastic_plus_window),
        Method(
            "swa+sink",
            "sparsity",
            "window of m - 1 keys and the first key",
            _with_sink(sliding_window),
            randomized=False,
        ),
        Method("sa+sink", "sparsity", "SA window of m - 1 keys and the first key", _with_sink(stochastic)),
        Method("reformer", "sparsity (LSH)", "2 rounds x 2 chunks of m/4", reformer_lsh),
        Method("moba", "sparsity (block routing)", "4 blocks of m/4 keys", moba, randomized=False),
        Method("linformer", "low rank", "keys projected to length m", linformer),
        Method("nystromformer", "low rank", "m landmarks", nystromformer, randomized=False),
        Method("performer", "kernel", "m random features", performer),
        Method("top-k", "oracle", "the m largest scores per row", top_k, randomized=False),
        Method("svd", "oracle", "rank m of the attention matrix", truncated_svd, randomized=False),
    )
}


def approximate(method: str, q, k, v, budget: int, seed: int = 0) -> torch.Tensor:
    """The output of ``method`` with ``budget`` effective keys per query."""
    if method not in METHODS:
        raise ValueError(f"method: expected one of {', '.join(METHODS)}, got {method!r}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"budget: expected a positive integer (keys per query), got {budget!r}")
    if q.dim() != 4 or k.shape != q.shape or v.shape[:-1] != q.shape[:-1]:
        raise ValueError("q, k, v: expected (batch, heads, n, d) tensors of one shape")
    return METHODS[method].run(q, k, v, budget, seed)
