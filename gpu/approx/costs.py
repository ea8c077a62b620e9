"""What the methods cost, computed from their parameters: FLOPs and peak memory of one forward of length ``n``, and
KV-cache bytes per token at decode time.

Each method's cost function sits beside the method in its family module (``<method>_cost``, e.g.
:func:`gpu.approx.families.windows.sliding_window_cost`) and is wired to it in :data:`gpu.approx.METHODS`
(:func:`gpu.approx.method_cost` calls it). This module holds what they share: the :class:`Cost` they return, the
cost of the dense reference (:func:`full`), and the pieces several formulas use (:func:`dense_flops`,
:func:`banded_pass`, :func:`listed_numbers`, :func:`per_head_cost`).

Conventions (all per sequence, ``heads`` heads of dimension ``d``, ``element_bytes`` per number):

* FLOPs: the method's arithmetic, a matrix product ``(a x b)(b x c)`` is ``2abc``, a softmax ``5`` per score
  (max, subtract, exp, sum, divide), an exponential or comparison ``1``; index work (sorting, gathers) is free.
  Counting the method, not the lab's reference code: the top-k oracle is ``2 n^2 d`` scores plus ``2 n m d``
  products, although the lab masks a dense matrix. The dense reference is ``4 n^2 d + 5 n^2`` per head (the
  Triton tutorial's ``4 B H N^2 D``; causal half). :func:`gpu.approx.measure.measured_flops` counts what the lab's
  code multiplies (``torch.utils.flop_counter``, matrix products only), and ``tests/gpu/approx/test_approx.py`` checks
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
  of ``python -m gpu.approx --costs --measure`` show both), and a test checks every formula against it.
* KV-cache bytes per token: the state a decoder must keep for the method after ``n`` tokens, divided by ``n``:
  ``2 h d`` numbers for a full cache; ``2 h d min(w, n) / n`` for a sliding window (only the last ``w`` tokens);
  MLA ``r``; TPA ``2 R (h + d)``; Performer's prefix state ``h m (d + 1) / n``; Linformer's ``m`` projected keys
  and values ``2 h m d / n`` (a bidirectional method: the figure says what it would keep, not that it decodes).
  Methods that select among all past keys (SA, top-k, LSH, sampling, Loki) keep the full cache and add their
  index structure (Loki: ``h r`` reduced keys; MoBA: block means ``h d / B``; Reformer and HyperAttention: hash
  codes, counted as one number per head and round).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gpu.approx.families.common import LIST_CHUNK
from gpu.attention.banded import _block_size
from receptive.windows import max_window, window_offsets

__all__ = ["SOFTMAX", "Cost", "banded_pass", "dense_flops", "full", "listed_numbers", "per_head_cost"]

#: FLOPs per score of a softmax (max, subtract, exp, sum, divide)
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


def dense_flops(n, d):
    """FLOPs of dense attention in one head: two products and a softmax over the ``n^2`` scores.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.

    Returns
    -------
    int
        ``4 n^2 d + 5 n^2``.

    Examples
    --------
    >>> from gpu.approx.costs import dense_flops
    >>> dense_flops(16, 4)
    5376
    """
    return 4 * n * n * d + SOFTMAX * n * n


def banded_pass(n, d, w, causal):
    """Keys, FLOPs and memory (numbers) of one banded pass with a window of ``w`` keys, in one head.

    Scores and probabilities (``2 n span``), the padded copies of q, k, v (``(2 (nb + 1) + nb) bq d``) and each
    query block's key and value span joined from them (``2 nb span d``;
    :func:`gpu.attention.banded.banded_attention`, bounded per chunk on the CPU only when nothing is kept for a
    backward pass, so counted whole).

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    w : int
        Window in keys (clipped to the longest window at ``n``).
    causal : bool
        Causal windows if true.

    Returns
    -------
    w : int
        The window used.
    flops : int
        ``4 n w d + 5 n w``.
    numbers : int
        The intermediates held at once.

    Examples
    --------
    >>> from gpu.approx.costs import banded_pass
    >>> banded_pass(64, 8, 16, False)
    (16, 37888, 7744)
    """
    w = min(w, max_window(n, causal, False))
    left, right = window_offsets(w, causal)
    bq = _block_size(n, left, right)
    nb = -(-n // bq)
    span = bq + left + right
    copies = (2 * (nb + 1) + nb) * bq * d + 2 * nb * span * d
    return w, 4 * n * w * d + SOFTMAX * n * w, 2 * n * span + copies


def listed_numbers(n, keys, d):
    """Numbers a method's attention over key lists holds in one head.

    :func:`gpu.attention.neighbour.neighbour_attention`'s gather path in blocks of
    :data:`gpu.approx.families.common.LIST_CHUNK` queries: the key lists (index and padded table) and one block's
    gathered keys, values and scores.

    Parameters
    ----------
    n : int
        Sequence length.
    keys : int
        Keys per query (the lists' width).
    d : int
        Head dimension.

    Returns
    -------
    int
        ``2 n keys + min(n, LIST_CHUNK) keys (2 d + 2)``.

    Examples
    --------
    >>> from gpu.approx.costs import listed_numbers
    >>> listed_numbers(64, 8, 4)
    6144
    """
    return 2 * n * keys + min(n, LIST_CHUNK) * keys * (2 * d + 2)


def per_head_cost(flops, memory, cache, n, d, heads, element_bytes):
    """Per-head numbers as the :class:`Cost` of all heads.

    Parameters
    ----------
    flops : float
        FLOPs of one head.
    memory : float
        Intermediate numbers one head holds at once (the inputs and output, ``4 n d``, are added).
    cache : float
        Numbers per token one head keeps in the KV cache.
    n : int
        Sequence length.
    d : int
        Head dimension.
    heads : int
        Number of heads.
    element_bytes : int
        Bytes per number.

    Returns
    -------
    Cost
        ``heads flops`` FLOPs, ``element_bytes heads (4 n d + memory)`` peak bytes, ``element_bytes heads cache``
        KV-cache bytes per token.

    Examples
    --------
    >>> from gpu.approx.costs import per_head_cost
    >>> per_head_cost(10, 100, 2, 8, 4, 2, 4)
    Cost(flops=20.0, peak_bytes=1824.0, kv_cache_bytes_per_token=16.0)
    """
    peak = element_bytes * heads * (4 * n * d + memory)
    return Cost(float(heads * flops), float(peak), float(element_bytes * heads * cache))


def full(n, d, budget, heads, causal, element_bytes):
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
    budget : int
        Unused: the dense reference has no budget (the cost formulas' third argument, ``m`` in the families).
    heads : int
        Number of heads.
    causal : bool
        Causal (decoder) attention if true, bidirectional otherwise.
    element_bytes : int
        Bytes per number (2 for bfloat16, 4 for float32).

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
    f = dense_flops(n, d) / (2 if causal else 1)
    return per_head_cost(f, n * n, 2 * d, n, d, heads, element_bytes)
