"""What every method costs, computed from its parameters: FLOPs and peak memory of one forward of length ``n``, and
KV-cache bytes per token at decode time.

Conventions (all per sequence, ``heads`` heads of dimension ``d``, ``element_bytes`` per number):

* FLOPs: the method's arithmetic, a matrix product ``(a x b)(b x c)`` is ``2abc``, a softmax ``5`` per score
  (max, subtract, exp, sum, divide), an exponential or comparison ``1``; index work (sorting, gathers) is free.
  Counting the method, not the lab's reference code: the top-k oracle is ``2 n^2 d`` scores plus ``2 n m d``
  products, although the lab masks a dense matrix. The dense reference is ``4 n^2 d + 5 n^2`` per head (the
  Triton tutorial's ``4 B H N^2 D``; causal half). :func:`gpu.approx.measure.measured_flops` counts what the lab's
  code multiplies (``torch.utils.flop_counter``, matrix products only), and ``tests/gpu/test_approx.py`` checks
  every formula against that count for the methods whose code is the algorithm. The count is higher where the code
  does more than the method: the banded backend's query blocks of ``b_q`` each meet ``b_q + w - 1`` keys, MoBA and
  top-k multiply a dense masked matrix, the latent methods also fit their basis (a one-time conversion, not counted
  here).
* Peak bytes: the inputs ``q, k, v`` and output (``4 n d``) plus the largest set of intermediates the method holds
  at once, as the functions in :mod:`gpu.approx.families` compute them (the dense reference holds ``n^2`` scores;
  the windows' banded backend ``2 n (b_q + w - 1)`` scores and probabilities plus its padded copies of q, k, v and
  each query block's joined key and value span, :func:`gpu.attention.banded.banded_attention`). Short-lived
  temporaries, such as a softmax's output next to its scores, are left out.
  :func:`gpu.approx.measure.measured_peak_bytes` records the lab code's allocations with ``torch.profiler`` (the rows
  of ``python -m gpu.approx --costs --measure`` show both), and a test checks every formula against it. ``python -m
  analysis.numerical_methods.refresh_costs`` recomputes the cost fields of the result files from these formulas.
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

from gpu.approx.families.common import LIST_CHUNK
from gpu.attention.banded import _block_size
from receptive.windows import max_window, window_offsets

SOFTMAX = 5


@dataclass(frozen=True)
class Cost:
    """FLOPs and peak bytes of one forward of length ``n``, KV-cache bytes per token at decode.

    Parameters
    ----------
    flops : float
        Arithmetic of one forward (the module's conventions: a matrix product ``(a x b)(b x c)`` is ``2abc``).
    peak_bytes : float
        Inputs, output and the largest set of intermediates held at once, in bytes.
    kv_cache_bytes_per_token : float
        The state a decoder keeps after ``n`` tokens, divided by ``n``, in bytes.

    Examples
    --------
    >>> from gpu.approx.costs import Cost
    >>> Cost(1.0, 2.0, 3.0).flops
    1.0
    """

    flops: float
    peak_bytes: float
    kv_cache_bytes_per_token: float

    def to_dict(self) -> dict:
        """The three fields as a dict, for result files.

        Returns
        -------
        dict
            ``{"flops": ..., "peak_bytes": ..., "kv_cache_bytes_per_token": ...}``.

        Examples
        --------
        >>> from gpu.approx.costs import Cost
        >>> Cost(1.0, 2.0, 3.0).to_dict()
        {'flops': 1.0, 'peak_bytes': 2.0, 'kv_cache_bytes_per_token': 3.0}
        """
        return asdict(self)


def _dense(n, d):
    return 4 * n * n * d + SOFTMAX * n * n


def _band(n, d, w, causal):
    """Keys, FLOPs and memory (numbers) of one banded pass with a window of ``w`` keys: scores and probabilities
    (``2 n span``), the padded copies of q, k, v (``(2 (nb + 1) + nb) bq d``) and each query block's key and value
    span joined from them (``2 nb span d``; :func:`gpu.attention.banded.banded_attention`, bounded per chunk on the CPU
    only when nothing is kept for a backward pass, so counted whole)."""
    w = min(w, max_window(n, causal, False))
    left, right = window_offsets(w, causal)
    bq = _block_size(n, left, right)
    nb = -(-n // bq)
    span = bq + left + right
    copies = (2 * (nb + 1) + nb) * bq * d + 2 * nb * span * d
    return w, 4 * n * w * d + SOFTMAX * n * w, 2 * n * span + copies


def _indexed(n, keys, d):
    """Numbers a method's attention over key lists holds (:func:`gpu.attention.neighbour.neighbour_attention`'s
    gather path in blocks of :data:`gpu.approx.families.common.LIST_CHUNK` queries): the key lists (index and
    padded table) and one block's gathered keys, values and scores."""
    return 2 * n * keys + min(n, LIST_CHUNK) * keys * (2 * d + 2)


def _per_head(flops, memory, cache, n, d, heads, eb):
    """Scale per-head numbers (FLOPs, intermediate numbers, cached numbers per token and head) to a Cost."""
    return Cost(float(heads * flops), float(eb * heads * (4 * n * d + memory)), float(eb * heads * cache))


def full(n, d, m, heads, causal, eb):
    """Cost of exact (dense) softmax attention, the reference.

    ``4 n^2 d + 5 n^2`` FLOPs per head (two products and a softmax over ``n^2`` scores), half of it when causal, as
    in the FLOP count of Triton's fused-attention tutorial [2]_ of the attention of [1]_; it holds the ``n^2``
    scores and keeps a full cache of ``2 h d`` numbers per token.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Unused: the dense reference has no budget.
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.full(64, 8, 16, 2, False, 4)
    Cost(flops=303104.0, peak_bytes=49152.0, kv_cache_bytes_per_token=128.0)
    >>> costs.full(64, 8, 16, 2, True, 4).flops * 2 == costs.full(64, 8, 16, 2, False, 4).flops
    True

    References
    ----------
    .. [1] Vaswani et al., "Attention Is All You Need", NeurIPS 2017, arXiv:1706.03762.
    .. [2] Triton documentation, tutorial "Fused Attention" (``06-fused-attention.py``), FLOP count
       ``4 B H N^2 D``.
    """
    f = _dense(n, d) / (2 if causal else 1)
    return _per_head(f, n * n, 2 * d, n, d, heads, eb)


def swa(n, d, m, heads, causal, eb, sink=False):
    """Cost of sliding-window attention [1]_ through the banded backend, optionally with an attention sink [2]_.

    A window of ``w = m`` keys (``m - 1`` and the first key with ``sink``): ``4 n w d + 5 n w`` FLOPs per head;
    memory as :func:`gpu.attention.banded.banded_attention` holds it; the cache keeps only the last ``w`` tokens.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Window size in keys (the sink included).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).
    sink : bool, optional
        Add the first key to every window (the window then has ``m - 1`` keys); the sink's score and a second
        log-normaliser are counted.

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.swa(64, 8, 16, 2, False, 4)
    Cost(flops=75776.0, peak_bytes=78336.0, kv_cache_bytes_per_token=32.0)
    >>> costs.swa(64, 8, 16, 2, True, 4, sink=True).flops > costs.swa(64, 8, 16, 2, True, 4).flops
    True

    References
    ----------
    .. [1] Beltagy, Peters & Cohan, "Longformer: The Long-Document Transformer", 2020, arXiv:2004.05150.
    .. [2] Xiao et al., "Efficient Streaming Language Models with Attention Sinks" (StreamingLLM), ICLR 2024,
       arXiv:2309.17453.
    """
    w, f, mem = _band(n, d, max(1, m - 1) if sink else m, causal)
    if sink:  # the window's log-normaliser once more, and the sink's score
        f, mem = f + 2 * n * w * d + SOFTMAX * n * w + 2 * n * d, mem + n * w
    return _per_head(f, mem, 2 * d * min(n, w + sink) / n, n, d, heads, eb)


def sa(n, d, m, heads, causal, eb, sink=False):
    """Cost of stochastic (SA) attention [1]_: a window of ``m`` keys in a random order of the sequence.

    The banded pass of :func:`swa` on permuted copies of ``q, k, v`` (``3 n d`` more numbers); every past key
    may be selected, so the decoder keeps the full cache.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Window size in keys (the sink included).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).
    sink : bool, optional
        Add the first key to every window (the window then has ``m - 1`` keys).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.sa(64, 8, 16, 2, False, 4)
    Cost(flops=75776.0, peak_bytes=90624.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Jin & Sui, 2026, arXiv:2604.00754 (stochastic attention, the ``sa`` entry of
       :data:`gpu.approx.methods.METHODS`).
    """
    w, f, mem = _band(n, d, max(1, m - 1) if sink else m, False)
    if sink:
        f, mem = f + 2 * n * w * d + SOFTMAX * n * w + 2 * n * d, mem + n * w
    return _per_head(f, mem + 3 * n * d, 2 * d, n, d, heads, eb)  # permuted copies of q, k, v; full cache


def sa_swa(n, d, m, heads, causal, eb):
    """Cost of the gated SA + SWA pair [1]_: a stochastic and a sliding window of ``m / 2`` keys each.

    The FLOPs of both paths plus the gate (``3 n d``); memory of the larger path plus the other path's output.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Total keys per query, split evenly over the two paths.
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.sa_swa(64, 8, 16, 2, False, 4)
    Cost(flops=78848.0, peak_bytes=82432.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Jin & Sui, 2026, arXiv:2604.00754 (gated SA + SWA).
    """
    half = max(1, m // 2)
    a, b = sa(n, d, half, 1, causal, 1), swa(n, d, half, 1, causal, 1)
    mem = max(a.peak_bytes, b.peak_bytes) + n * d  # one path's output kept while the other runs
    return _per_head(a.flops + b.flops + 3 * n * d, mem - 4 * n * d, 2 * d, n, d, heads, eb)


def top_k(n, d, m, heads, causal, eb):
    """Cost of the top-k oracle [1]_: all ``n^2`` scores, then softmax attention over the ``m`` largest per row.

    ``2 n^2 d`` scores and ``n^2`` comparisons (half when causal) plus ``4 n m d + 5 n m`` on the kept keys;
    the lab masks a dense matrix, so it holds ``2 n^2`` numbers.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Keys kept per query (at most ``n``).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.top_k(64, 8, 16, 2, False, 4)
    Cost(flops=182272.0, peak_bytes=81920.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Gupta et al., "Memory-efficient Transformers via Top-k Attention", 2021, arXiv:2106.06899.
    """
    m = min(m, n)
    div = 2 if causal else 1
    return _per_head((2 * n * n * d + n * n) / div + 2 * n * m * d + SOFTMAX * n * m, 2 * n * n, 2 * d, n, d, heads, eb)


def svd(n, d, m, heads, causal, eb):
    # scores, softmax, a full SVD (Golub-Van Loan: about 22 n^3 for U, S, V), then A_m v by the factors
    """Cost of the rank-``m`` SVD oracle: the dense attention matrix, its full SVD, then ``A_m v`` by the factors.

    The SVD of an ``n x n`` matrix is counted as about ``22 n^3`` FLOPs for ``U, S, V`` (Golub & Van Loan [1]_);
    the best rank-``m`` approximation in the Frobenius norm is the truncated SVD (Eckart & Young [2]_).

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Rank of the approximation.
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.svd(64, 8, 16, 2, False, 4)
    Cost(flops=11902976.0, peak_bytes=114688.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Golub & Van Loan, "Matrix Computations", 4th ed., Johns Hopkins University Press, 2013, Sec. 8.6.
    .. [2] Eckart & Young, "The approximation of one matrix by another of lower rank", Psychometrika 1, 1936.
    """
    return _per_head(_dense(n, d) + 22 * n**3 + 4 * n * m * d, 3 * n * n, 2 * d, n, d, heads, eb)


def reformer(n, d, m, heads, causal, eb, rounds=2):
    """Cost of Reformer's LSH attention [1]_: ``rounds`` angular hashes, sorted chunks of about ``m / rounds`` items.

    Hashing ``2 n d`` FLOPs per round and half-bucket (random rotations), then exact attention over the union of
    each query's chunk keys (:func:`gpu.attention.neighbour.neighbour_attention`); the cache adds one hash code
    per head and round.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Keys per query, over all rounds.
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).
    rounds : int, optional
        Number of hash rounds.

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.reformer(64, 8, 16, 2, False, 4)
    Cost(flops=146048.0, peak_bytes=387072.0, kv_cache_bytes_per_token=144.0)

    References
    ----------
    .. [1] Kitaev, Kaiser & Levskaya, "Reformer: The Efficient Transformer", ICLR 2020, arXiv:2001.04451.
    """
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
    """Cost of MoBA [1]_: ``blocks_per_query`` blocks of ``m / blocks_per_query`` keys chosen by the block means.

    Block means and their scores (``2 n (n / B) d``), then attention over the chosen blocks; the lab applies a
    dense block mask, so memory holds ``2 n^2`` numbers; the cache adds the block means (``h d / B``).

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Keys per query (``blocks_per_query`` blocks).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).
    blocks_per_query : int, optional
        Blocks each query attends to.

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.moba(64, 8, 16, 2, False, 4)
    Cost(flops=111616.0, peak_bytes=90112.0, kv_cache_bytes_per_token=144.0)

    References
    ----------
    .. [1] Lu et al., "MoBA: Mixture of Block Attention for Long-Context LLMs", 2025, arXiv:2502.13189.
    """
    size = max(1, m // blocks_per_query)
    nb = -(-n // size)
    keys = min(n, size * blocks_per_query)
    f = n * d + 2 * n * nb * d + n * nb + 4 * n * keys * d + SOFTMAX * n * keys
    return _per_head(f, n * nb + 2 * n * n, 2 * d + d / size, n, d, heads, eb)  # dense block mask in the lab


def routing(n, d, m, heads, causal, eb, iterations=10):
    """Cost of the Routing Transformer [1]_: ``ceil(n / m)`` k-means clusters of ``m`` keys each.

    ``iterations`` rounds of assigning ``q`` and ``k`` to the centroids and updating them, the final assignment,
    then exact attention over each query's cluster.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Keys per cluster (at most ``n``).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).
    iterations : int, optional
        k-means iterations.

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.routing(64, 8, 16, 2, False, 4)
    Cost(flops=419840.0, peak_bytes=184832.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Roy, Saffar, Vaswani & Grangier, "Efficient Content-Based Sparse Attention with Routing
       Transformers", TACL 2021, arXiv:2003.05997.
    """
    m = min(m, n)
    c = -(-n // m)
    f = iterations * (2 * 2 * n * c * d + 2 * 2 * n * c * d) + 2 * c * n * d + 2 * n * c * d
    f += 4 * n * m * d + SOFTMAX * n * m
    return _per_head(f, 2 * n * c + _indexed(n, m, d) + c * m, 2 * d, n, d, heads, eb)


def hyperattention(n, d, m, heads, causal, eb):
    """Cost of HyperAttention [1]_: ``m / 2`` sortLSH block keys plus ``m / 2`` uniformly sampled columns.

    Bidirectional: ``log2(n / block)`` hyperplanes for ``q`` and ``k``, then attention over ``block + samples``
    keys. Causal: the paper's recursion, exact diagonal blocks of ``m / 2`` and per level ``n / 2`` queries
    against the bidirectional method on the off-diagonal blocks.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Keys per query (half by sortLSH, half sampled).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.hyperattention(64, 8, 16, 2, False, 4)
    Cost(flops=88064.0, peak_bytes=98304.0, kv_cache_bytes_per_token=136.0)
    >>> costs.hyperattention(64, 8, 16, 2, True, 4).flops
    60288.0

    References
    ----------
    .. [1] Han et al., "HyperAttention: Long-context Attention in Near-Linear Time", ICLR 2024,
       arXiv:2310.05869.
    """
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
    """Cost of KDEformer [1]_: ``m`` columns sampled by kernel-density importance, estimated with ``m`` probe queries.

    The probes' scores against every key (``2 m n d + 5 m n``), then attention over the ``m`` sampled columns.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Sampled columns (and probe queries).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.kdeformer(64, 8, 16, 2, False, 4)
    Cost(flops=118784.0, peak_bytes=40960.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Zandieh, Han, Daliri & Karbasi, "KDEformer: Accelerating Transformers via Kernel Density
       Estimation", ICML 2023, arXiv:2302.02451.
    """
    f = 2 * m * n * d + SOFTMAX * m * n + 4 * n * m * d + SOFTMAX * n * m
    return _per_head(f, m * n + 2 * n * m, 2 * d, n, d, heads, eb)


def linformer(n, d, m, heads, causal, eb):
    """Cost of Linformer [1]_: keys and values projected to length ``m``, then attention over ``m`` columns.

    Two projections (``2 m n d`` each) and ``4 n m d + 5 n m``; the cache figure is what the ``m`` projected keys
    and values would take (``2 h m d / n``), for a method that does not decode.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Projected length (at most ``n``).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.linformer(64, 8, 16, 2, False, 4)
    Cost(flops=141312.0, peak_bytes=34816.0, kv_cache_bytes_per_token=32.0)

    References
    ----------
    .. [1] Wang, Li, Khabsa, Fang & Ma, "Linformer: Self-Attention with Linear Complexity", 2020,
       arXiv:2006.04768.
    """
    m = min(m, n)
    f = 2 * 2 * m * n * d + 4 * n * m * d + SOFTMAX * n * m
    return _per_head(f, m * n + 2 * m * d + n * m, 2 * m * d / n, n, d, heads, eb)


def nystromformer(n, d, m, heads, causal, eb):
    """Cost of Nystromformer [1]_: ``m`` segment-mean landmarks, three softmax kernels and an iterative pseudo-inverse.

    The landmarks (``2 n d``), the kernels ``n x m``, ``m x m``, ``m x n`` with their softmaxes, six Newton-Schulz
    iterations of four ``m x m`` products for the pseudo-inverse, and the products with ``v``.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Number of landmarks (at most ``n``).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.nystromformer(64, 8, 16, 2, False, 4)
    Cost(flops=582144.0, peak_bytes=40960.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Xiong et al., "Nystromformer: A Nystrom-Based Algorithm for Approximating Self-Attention",
       AAAI 2021, arXiv:2102.03902.
    """
    m = min(m, n)
    pinv = 6 * 4 * 2 * m**3 + 2 * m**3  # 6 Newton-Schulz iterations of 4 products, and the initial scaling
    f = 2 * n * d + 2 * (2 * n * m * d + SOFTMAX * n * m) + 2 * m * m * d + SOFTMAX * m * m + pinv
    f += 2 * m * n * d + 2 * m * m * d + 2 * n * m * d
    return _per_head(f, 2 * n * m + 3 * m * m + 2 * m * d, 2 * d, n, d, heads, eb)


def skyformer(n, d, m, heads, causal, eb):
    """Cost of Skyformer [1]_: Nystrom approximation with ``m`` landmarks of the PSD kernel on ``[Q; K]``.

    The kernel blocks ``C_SS, C_QS, C_KS`` (with their exponentials), a symmetric decomposition of ``C_SS``
    (``22 m^3``, Golub & Van Loan) and the products with ``v``.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Number of landmarks (at most ``2 n``).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.skyformer(64, 8, 16, 2, False, 4)
    Cost(flops=398848.0, peak_bytes=45056.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Chen, Zeng, Ji & Yang, "Skyformer: Remodel Self-Attention with Gaussian Kernel and Nystrom
       Method", NeurIPS 2021, arXiv:2111.00035.
    """
    m = min(m, 2 * n)
    kernel = 2 * m * m * d + 2 * (2 * n * m * d) + 3 * (m * m + 2 * n * m)  # C_SS, C_QS, C_KS (+ exp)
    pinv = 22 * m**3  # symmetric eigendecomposition / SVD
    f = kernel + pinv + 2 * n * m * m + 2 * (2 * n * m * d)
    return _per_head(f, 3 * n * m + 2 * m * m, 2 * d, n, d, heads, eb)


def pivoted_cholesky(n, d, m, heads, causal, eb):
    """Cost of a rank-``m`` pivoted Cholesky factor [1]_ of ``exp(X X^T / sqrt d)``, ``X = [Q; K]``.

    Per pivot one kernel column over ``2 n`` rows and the update of the factor, then the products with ``v``.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Rank of the factor (at most ``2 n``).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.pivoted_cholesky(64, 8, 16, 2, False, 4)
    Cost(flops=208896.0, peak_bytes=33792.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Harbrecht, Peters & Schneider, "On the low-rank approximation by the pivoted Cholesky
       decomposition", Applied Numerical Mathematics 62(4), 2012.
    """
    m = min(m, 2 * n)
    f = m * (2 * (2 * n) * d + 3 * 2 * n) + 2 * (2 * n) * m * m / 2 + 2 * (2 * n * m * d)
    return _per_head(f, 2 * n * m + 2 * n, 2 * d, n, d, heads, eb)


def loki(n, d, m, heads, causal, eb, rank=None):
    """Cost of Loki [1]_: scores in ``r`` PCA dimensions of the keys pick the top ``m`` keys, exact attention on them.

    Projecting ``q`` and ``k`` (``2 n d r`` each), the reduced ``n^2`` scores (half when causal) and their
    selection, then attention over ``m`` keys; the cache adds the ``h r`` reduced keys.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Keys kept per query (at most ``n``).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).
    rank : int, optional
        PCA dimensions ``r``; ``None`` means ``max(1, d // 4)``.

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.loki(64, 8, 16, 2, False, 4)
    Cost(flops=124928.0, peak_bytes=215040.0, kv_cache_bytes_per_token=144.0)
    >>> costs.loki(64, 8, 16, 2, False, 4, rank=8).flops > costs.loki(64, 8, 16, 2, False, 4).flops
    True

    References
    ----------
    .. [1] Singhania, Singh, He, Feizi & Bhatele, "Loki: Low-Rank Keys for Efficient Sparse Attention",
       NeurIPS 2024, arXiv:2406.02542.
    """
    r = max(1, d // 4) if rank is None else rank
    m = min(m, n)
    f = 2 * 2 * n * d * r + 2 * n * n * r / (2 if causal else 1) + n * n + 4 * n * m * d + SOFTMAX * n * m
    return _per_head(f, n * n + 2 * n * r + _indexed(n, m, d), 2 * d + r, n, d, heads, eb)


def performer(n, d, m, heads, causal, eb):
    """Cost of Performer FAVOR+ [1]_ with ``m`` positive random features.

    Features of ``q`` and ``k`` (``2 n m d`` and the exponentials each), ``phi(k)^T v`` and ``phi(q)`` times it,
    and the normaliser; causal adds the in-block products of the blocked prefix sums (blocks of 128). The decoder
    keeps the prefix state of ``m (d + 1)`` numbers per head, not a cache.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Number of random features.
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.performer(64, 8, 16, 2, False, 4)
    Cost(flops=151552.0, peak_bytes=33920.0, kv_cache_bytes_per_token=18.0)

    References
    ----------
    .. [1] Choromanski et al., "Rethinking Attention with Performers", ICLR 2021, arXiv:2009.14794.
    """
    f = 2 * (2 * n * m * d + 3 * n * m) + 2 * n * m * d + 2 * n * m * d + 2 * n * m * 2
    if causal:  # blocked prefix sums: the in-block products of 128 x 128
        c = min(n, 128)
        f += 2 * n * c * m + 2 * n * c * d
    return _per_head(f, 2 * n * m + m * (d + 1) + (128 * 128 if causal else 0), m * (d + 1) / n, n, d, heads, eb)


def polysketch(n, d, m, heads, causal, eb, degree=4):
    """Cost of PolySketchFormer-style attention [1]_ with ``floor(sqrt m)^2`` sketched features.

    ``degree / 2`` Gaussian sketches of ``(d + 1) x r`` for ``q`` and ``k``, their self tensor product to ``r^2``
    features, then linear attention on them (causal: blocked prefix sums, blocks of 128).

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Feature budget; ``r = floor(sqrt m)`` sketch columns give ``r^2`` features.
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).
    degree : int, optional
        Even degree ``p`` of the polynomial kernel.

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.polysketch(64, 8, 16, 2, False, 4)
    Cost(flops=116736.0, peak_bytes=33920.0, kv_cache_bytes_per_token=18.0)

    References
    ----------
    .. [1] Kacham, Mirrokni & Zhong, "PolySketchFormer: Fast Transformers via Sketching Polynomial Kernels",
       ICML 2024, arXiv:2310.01655.
    """
    r = max(1, math.isqrt(m))
    feat = r * r
    f = 2 * n * (degree // 2) * (2 * (d + 1) * r + r) + 2 * n * feat + 2 * n * feat * d * 2 + 2 * n * feat * 2
    if causal:
        c = min(n, 128)
        f += 2 * n * c * feat + 2 * n * c * d
    return _per_head(f, 2 * n * feat + feat * (d + 1), feat * (d + 1) / n, n, d, heads, eb)


def levattention(n, d, m, heads, causal, eb):
    """Cost of LevAttention [1]_: the ``m`` keys of largest leverage score, shared by every query.

    The Gram matrix ``K^T K`` (``2 n d^2``), its pseudo-inverse (``22 d^3``), the leverage scores and exact
    attention over the ``m`` chosen keys.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Keys kept (at most ``n``).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.levattention(64, 8, 16, 2, False, 4)
    Cost(flops=133120.0, peak_bytes=184832.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Kannan, Bhattacharyya, Kacham & Woodruff, "LevAttention: Time, Space, and Streaming Efficient
       Algorithm for Heavy Attentions", 2024, arXiv:2410.05462.
    """
    m = min(m, n)
    f = 2 * n * d * d + 22 * d**3 + 2 * n * d * d + 2 * n * d + 4 * n * m * d + SOFTMAX * n * m
    return _per_head(f, n * d + d * d + _indexed(n, m, d), 2 * d, n, d, heads, eb)


def mla(n, d, m, heads, causal, eb):
    """Cost of multi-head latent attention (MLA [1]_) with a latent of width ``r = m`` per token.

    Per token the latent ``c = x W`` and back ``x W W^T`` (``2 (2hd) r`` FLOPs each), then exact attention: the
    full cost plus the projections; the saving is the cache. The basis (the second-moment matrix, ``2 n (2hd)^2``,
    and its eigendecomposition, ``22 (2hd)^3``) is the one-time conversion, like trained weights: not counted.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Latent width ``r`` (numbers cached per token).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.mla(64, 8, 16, 2, False, 4)
    Cost(flops=434176.0, peak_bytes=65536.0, kv_cache_bytes_per_token=64.0)

    References
    ----------
    .. [1] DeepSeek-AI, "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model",
       2024, arXiv:2405.04434.
    """
    width = 2 * heads * d
    f = heads * _dense(n, d) / (2 if causal else 1) + 2 * (2 * n * width * m)
    mem = heads * (4 * n * d + n * n) + n * (width + m) + width * width
    return Cost(float(f), float(eb * mem), float(eb * m))


def tpa(n, d, m, heads, causal, eb):
    """Cost of tensor product attention (TPA [1]_) with per-token rank ``R = m`` of keys and values.

    Per token two ``h x d`` SVDs (about ``4 h d min(h, d) + 8 min(h,d)^3`` each, Golub-Van Loan's thin SVD),
    the rank-``R`` reconstruction, then exact attention; cache ``2 R (h + d)`` numbers per token.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    m : int
        Rank ``R`` of each token's key and value factors.
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    eb : int
        Bytes per number (``element_bytes``: 2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx import costs
    >>> costs.tpa(64, 8, 16, 2, False, 4)
    Cost(flops=393216.0, peak_bytes=57344.0, kv_cache_bytes_per_token=1280.0)

    References
    ----------
    .. [1] Zhang et al., "Tensor Product Attention Is All You Need", 2025, arXiv:2501.06425.
    """
    small = min(heads, d)
    svds = 2 * n * (4 * heads * d * small + 8 * small**3)
    f = heads * _dense(n, d) / (2 if causal else 1) + svds + 2 * 2 * n * heads * d * m
    return Cost(float(f), float(eb * heads * (4 * n * d + n * n + 2 * n * d)), float(eb * 2 * m * (heads + d)))
