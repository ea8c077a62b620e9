"""What every method costs, computed from its parameters: FLOPs and peak memory of one forward of length ``n``, and
KV-cache bytes per token at decode time.

Conventions (all per sequence, ``heads`` heads of dimension ``d``, ``element_bytes`` per number):

* FLOPs: the method's arithmetic, a matrix product ``(a x b)(b x c)`` is ``2abc``, a softmax ``5`` per score
  (max, subtract, exp, sum, divide), an exponential or comparison ``1``; index work (sorting, gathers) is free.
  Counting the method, not the lab's reference code: the top-k oracle is ``2 n^2 d`` scores plus ``2 n m d``
  products, although the lab masks a dense matrix. The dense reference is ``4 n^2 d + 5 n^2`` per head (the
  Triton tutorial's ``4 B H N^2 D``; causal half). :func:`measured_flops` counts what the lab's code multiplies
  (``torch.utils.flop_counter``, matrix products only): it agrees within 10% for the methods whose code is the
  algorithm (tested), and shows where the code does more: the banded backend about ``2x`` a window (query blocks
  meet ``b_q + w - 1`` keys), MoBA and top-k a dense masked product, the latent methods their basis (a one-time
  conversion, not counted here). :func:`measured_peak_bytes` records the lab code's allocations with
  ``torch.profiler``, next to the formula in the rows of ``python -m gpu.approx --costs --measure`` (the formula
  omits short-lived temporaries such as a softmax's output next to its scores; tested within 0.7-2.2 at n = 256).
* Peak bytes: the inputs ``q, k, v`` and output (``4 n d``) plus the largest set of intermediates the method holds
  at once, as the functions in :mod:`gpu.approx.families` compute them (the dense reference holds ``n^2`` scores;
  the windows' banded backend ``2 n (b_q + w - 1)`` scores and probabilities plus its padded copies of q, k, v and
  each query block's joined key and value span, :func:`gpu.banded.banded_attention`). the study's
  ``python -m analysis.numerical_methods.refresh_costs`` recomputes the cost fields of result files from them.
* KV-cache bytes per token: the state a decoder must keep for the method after ``n`` tokens, divided by ``n``:
  ``2 h d`` numbers for a full cache; ``2 h d min(w, n) / n`` for a sliding window (only the last ``w`` tokens);
  MLA ``r``; TPA ``2 R (h + d)``; Performer's prefix state ``h m (d + 1) / n``; Linformer's ``m`` projected keys
  and values ``2 h m d / n`` (a bidirectional method: the figure says what it would keep, not that it decodes).
  Methods that select among all past keys (SA, top-k, LSH, sampling, Loki) keep the full cache and add their
  index structure (Loki: ``h r`` reduced keys; MoBA: block means ``h d / B``; Reformer and HyperAttention: hash
  codes, counted as one number per head and round).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from gpu.banded import _block_size
from receptive.windows import max_window, window_offsets

SOFTMAX = 5


@dataclass(frozen=True)
class Cost:
    """FLOPs and peak bytes of one forward of length ``n``, KV-cache bytes per token at decode."""

    flops: float
    peak_bytes: float
    kv_cache_bytes_per_token: float

    def to_dict(self) -> dict:
        return asdict(self)


def _dense(n, d):
    return 4 * n * n * d + SOFTMAX * n * n


def _band(n, d, w, causal):
    """Keys, FLOPs and memory (numbers) of one banded pass with a window of ``w`` keys: scores and probabilities
    (``2 n span``), the padded copies of q, k, v (``(2 (nb + 1) + nb) bq d``) and each query block's key and value
    span joined from them (``2 nb span d``; :func:`gpu.banded.banded_attention`, bounded per chunk on the CPU only
    when nothing is kept for a backward pass, so counted whole)."""
    w = min(w, max_window(n, causal, False))
    left, right = window_offsets(w, causal)
    bq = _block_size(n, left, right)
    nb = -(-n // bq)
    span = bq + left + right
    copies = (2 * (nb + 1) + nb) * bq * d + 2 * nb * span * d
    return w, 4 * n * w * d + SOFTMAX * n * w, 2 * n * span + copies


def _indexed(n, keys, d):
    """Numbers :func:`gpu.approx.families.common.indexed_attention` holds: the key lists (index and flag) and one
    block of 256 queries' gathered keys, values and scores."""
    return 2 * n * keys + min(n, 256) * keys * (2 * d + 2)


def _per_head(flops, memory, cache, n, d, heads, eb):
    """Scale per-head numbers (FLOPs, intermediate numbers, cached numbers per token and head) to a Cost."""
    return Cost(float(heads * flops), float(eb * heads * (4 * n * d + memory)), float(eb * heads * cache))


def full(n, d, m, heads, causal, eb):
    f = _dense(n, d) / (2 if causal else 1)
    return _per_head(f, n * n, 2 * d, n, d, heads, eb)


def swa(n, d, m, heads, causal, eb, sink=False):
    w, f, mem = _band(n, d, max(1, m - 1) if sink else m, causal)
    if sink:  # the window's log-normaliser once more, and the sink's score
        f, mem = f + 2 * n * w * d + SOFTMAX * n * w + 2 * n * d, mem + n * w
    return _per_head(f, mem, 2 * d * min(n, w + sink) / n, n, d, heads, eb)


def sa(n, d, m, heads, causal, eb, sink=False):
    w, f, mem = _band(n, d, max(1, m - 1) if sink else m, False)
    if sink:
        f, mem = f + 2 * n * w * d + SOFTMAX * n * w + 2 * n * d, mem + n * w
    return _per_head(f, mem + 3 * n * d, 2 * d, n, d, heads, eb)  # permuted copies of q, k, v; full cache


def sa_swa(n, d, m, heads, causal, eb):
    half = max(1, m // 2)
    a, b = sa(n, d, half, 1, causal, 1), swa(n, d, half, 1, causal, 1)
    mem = max(a.peak_bytes, b.peak_bytes) + n * d  # one path's output kept while the other runs
    return _per_head(a.flops + b.flops + 3 * n * d, mem - 4 * n * d, 2 * d, n, d, heads, eb)


def top_k(n, d, m, heads, causal, eb):
    m = min(m, n)
    div = 2 if causal else 1
    return _per_head((2 * n * n * d + n * n) / div + 2 * n * m * d + SOFTMAX * n * m, 2 * n * n, 2 * d, n, d, heads, eb)


def svd(n, d, m, heads, causal, eb):
    # scores, softmax, a full SVD (Golub-Van Loan: about 22 n^3 for U, S, V), then A_m v by the factors
    return _per_head(_dense(n, d) + 22 * n**3 + 4 * n * m * d, 3 * n * n, 2 * d, n, d, heads, eb)


def reformer(n, d, m, heads, causal, eb, rounds=2):
    if causal:  # per round: hash q and k, binary search; the last c same-bucket keys
        c = max(1, m // rounds)
        buckets = n // c // 2 * 2
        keys = min(n, rounds * c + 1)
        f = rounds * 2 * n * d * (buckets // 2) + 4 * n * keys * d + SOFTMAX * n * keys
        return _per_head(f, _indexed(n, keys, d), 2 * d + rounds, n, d, heads, eb)
    c = max(2, m // rounds)
    buckets = max(2, 2 * (2 * n // c // 2))
    keys = min(n, rounds * c + 1)
    hashing = rounds * 2 * (2 * n) * d * (buckets // 2)
    mem = _indexed(n, rounds * 2 * c + 1, d) + 2 * n * rounds * 2 * c  # lists of every round before the union
    return _per_head(hashing + 4 * n * keys * d + SOFTMAX * n * keys, mem, 2 * d + rounds, n, d, heads, eb)


def moba(n, d, m, heads, causal, eb, blocks_per_query=4):
    size = max(1, m // blocks_per_query)
    nb = -(-n // size)
    keys = min(n, size * blocks_per_query)
    f = n * d + 2 * n * nb * d + n * nb + 4 * n * keys * d + SOFTMAX * n * keys
    return _per_head(f, n * nb + 2 * n * n, 2 * d + d / size, n, d, heads, eb)  # dense block mask in the lab


def routing(n, d, m, heads, causal, eb, iterations=10):
    m = min(m, n)
    c = -(-n // m)
    f = iterations * (2 * 2 * n * c * d + 2 * 2 * n * c * d) + 2 * c * n * d + 2 * n * c * d
    f += 4 * n * m * d + SOFTMAX * n * m
    return _per_head(f, 2 * n * c + _indexed(n, m, d) + c * m, 2 * d, n, d, heads, eb)


def hyperattention(n, d, m, heads, causal, eb):
    if causal:  # exact diagonal blocks of B = m/2, then per level n/2 queries against (m - B) / L keys
        base = max(1, m // 2)
        levels = max(1, math.ceil(math.log2(max(1.0, n / base))))
        m_off = max(2, (m - base) // levels)
        size, f, mem = n, 0.0, 0.0
        for _ in range(levels):
            size //= 2
            if size < 1:
                break
            inner = hyperattention(size, d, m_off, 1, False, 1)
            f += (n // (2 * size)) * inner.flops
            mem = max(mem, inner.peak_bytes)
        f += n * min(base, n) * (2 * d + SOFTMAX)  # the exact causal diagonal blocks (half of b x b each)
        return _per_head(f, mem + n * base, 2 * d + 1, n, d, heads, eb)
    block = min(n, max(1, -(-m // 2)))
    samples = max(1, m - block)
    planes = max(1, math.ceil(math.log2(max(2, n / block))))
    keys = block + samples
    f = 2 * 2 * n * d * planes + 4 * n * keys * d + SOFTMAX * n * keys
    return _per_head(f, 2 * n * block * d + 2 * n * keys, 2 * d + 1, n, d, heads, eb)


def kdeformer(n, d, m, heads, causal, eb):
    f = 2 * m * n * d + SOFTMAX * m * n + 4 * n * m * d + SOFTMAX * n * m
    return _per_head(f, m * n + 2 * n * m, 2 * d, n, d, heads, eb)


def linformer(n, d, m, heads, causal, eb):
    m = min(m, n)
    f = 2 * 2 * m * n * d + 4 * n * m * d + SOFTMAX * n * m
    return _per_head(f, m * n + 2 * m * d + n * m, 2 * m * d / n, n, d, heads, eb)


def nystromformer(n, d, m, heads, causal, eb):
    m = min(m, n)
    pinv = 6 * 4 * 2 * m**3 + 2 * m**3  # 6 Newton-Schulz iterations of 4 products, and the initial scaling
    f = 2 * n * d + 2 * (2 * n * m * d + SOFTMAX * n * m) + 2 * m * m * d + SOFTMAX * m * m + pinv
    f += 2 * m * n * d + 2 * m * m * d + 2 * n * m * d
    return _per_head(f, 2 * n * m + 3 * m * m + 2 * m * d, 2 * d, n, d, heads, eb)


def skyformer(n, d, m, heads, causal, eb):
    m = min(m, 2 * n)
    kernel = 2 * m * m * d + 2 * (2 * n * m * d) + 3 * (m * m + 2 * n * m)  # C_SS, C_QS, C_KS (+ exp)
    pinv = 22 * m**3  # symmetric eigendecomposition / SVD
    f = kernel + pinv + 2 * n * m * m + 2 * (2 * n * m * d)
    return _per_head(f, 3 * n * m + 2 * m * m, 2 * d, n, d, heads, eb)


def pivoted_cholesky(n, d, m, heads, causal, eb):
    m = min(m, 2 * n)
    f = m * (2 * (2 * n) * d + 3 * 2 * n) + 2 * (2 * n) * m * m / 2 + 2 * (2 * n * m * d)
    return _per_head(f, 2 * n * m + 2 * n, 2 * d, n, d, heads, eb)


def loki(n, d, m, heads, causal, eb, rank=None):
    r = max(1, d // 4) if rank is None else rank
    m = min(m, n)
    f = 2 * 2 * n * d * r + 2 * n * n * r / (2 if causal else 1) + n * n + 4 * n * m * d + SOFTMAX * n * m
    return _per_head(f, n * n + 2 * n * r + _indexed(n, m, d), 2 * d + r, n, d, heads, eb)


def performer(n, d, m, heads, causal, eb):
    f = 2 * (2 * n * m * d + 3 * n * m) + 2 * n * m * d + 2 * n * m * d + 2 * n * m * 2
    if causal:  # blocked prefix sums: the in-block products of 128 x 128
        c = min(n, 128)
        f += 2 * n * c * m + 2 * n * c * d
    return _per_head(f, 2 * n * m + m * (d + 1) + (128 * 128 if causal else 0), m * (d + 1) / n, n, d, heads, eb)


def polysketch(n, d, m, heads, causal, eb, degree=4):
    r = max(1, math.isqrt(m))
    feat = r * r
    f = 2 * n * (degree // 2) * (2 * (d + 1) * r + r) + 2 * n * feat + 2 * n * feat * d * 2 + 2 * n * feat * 2
    if causal:
        c = min(n, 128)
        f += 2 * n * c * feat + 2 * n * c * d
    return _per_head(f, 2 * n * feat + feat * (d + 1), feat * (d + 1) / n, n, d, heads, eb)


def levattention(n, d, m, heads, causal, eb):
    m = min(m, n)
    f = 2 * n * d * d + 22 * d**3 + 2 * n * d * d + 2 * n * d + 4 * n * m * d + SOFTMAX * n * m
    return _per_head(f, n * d + d * d + _indexed(n, m, d), 2 * d, n, d, heads, eb)


def mla(n, d, m, heads, causal, eb):
    """Per token the latent ``c = x W`` and back ``x W W^T`` (``2 (2hd) r`` FLOPs each), then exact attention: the
    full cost plus the projections; the saving is the cache. The basis (the second-moment matrix, ``2 n (2hd)^2``,
    and its eigendecomposition, ``22 (2hd)^3``) is the one-time conversion, like trained weights: not counted."""
    width = 2 * heads * d
    f = heads * _dense(n, d) / (2 if causal else 1) + 2 * (2 * n * width * m)
    mem = heads * (4 * n * d + n * n) + n * (width + m) + width * width
    return Cost(float(f), float(eb * mem), float(eb * m))


def tpa(n, d, m, heads, causal, eb):
    """Per token two ``h x d`` SVDs (about ``4 h d min(h, d) + 8 min(h,d)^3`` each, Golub-Van Loan's thin SVD),
    the rank-``R`` reconstruction, then exact attention; cache ``2 R (h + d)`` numbers per token."""
    small = min(heads, d)
    svds = 2 * n * (4 * heads * d * small + 8 * small**3)
    f = heads * _dense(n, d) / (2 if causal else 1) + svds + 2 * 2 * n * heads * d * m
    return Cost(float(f), float(eb * heads * (4 * n * d + n * n + 2 * n * d)), float(eb * 2 * m * (heads + d)))
