"""Sparsity by windows, through the attention backend users run (:func:`gpu.swa_attention`,
:func:`gpu.sa_attention`): O(n w) memory, any n, the backend's causal flag.

* SWA: query ``i`` sees a window of ``w = m`` keys (:mod:`receptive.windows`: causal ``i-w+1..i``).
* SA (Jin & Sui 2026, arXiv 2604.00754): the same band in the order of ``receptive.layer_permutation(n, seed, 1)``;
  causal keeps the band and drops keys whose original position is after the query's, so a causal SA query sees
  about ``(w + 1) / 2`` of its ``w`` band keys (equal compute, half the keys).
* SA+SWA: the gated dual path of :class:`gpu.GatedSAPlusSWALayer`, ``g_sa Y_sa + g_swa Y_swa`` with windows of
  ``m / 2``. Training-free there are no learned gates: both are 1/2, the mean of the two paths, the mean gate of an
  untrained ``GatedSAPlusSWALayer`` (its ``sigmoid(x W + b)`` with ``nn.Linear``'s symmetric init scatter around
  1/2). This is not the union mask (one softmax over both key sets).
* ``+sink``: a window of ``m - 1`` keys plus the first position (the attention sink of StreamingLLM, Xiao et al.
  2024; ``[CLS]`` in BERT), merged exactly by log-sum-exp: ``O = O_w + sigmoid(s_0 - lse_w) (v_0 - O_w)`` where
  ``lse_w`` is the window's log-normaliser; a query whose window already holds position 0 keeps ``O_w``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from gpu.approx.costs import SOFTMAX, banded_pass, per_head_cost
from gpu.attention.banded import _block_size
from gpu.attention.functional import inverse_permutation, sa_attention, swa_attention
from gpu.attention.neighbour import scale_of
from receptive.windows import max_window, window_offsets


def _window(m: int, n: int, causal: bool) -> int:
    return min(m, max_window(n, causal, False))


def band_logsumexp(q, k, left: int, right: int, perm: torch.Tensor | None = None, causal: bool = False):
    """The log-normaliser of banded attention [1]_: ``log sum_j exp(q_i . k_j / sqrt d)`` over the band.

    The band is ``-left <= p(j) - p(i) <= right`` in the order ``perm`` (identity without), with ``causal`` also
    ``j <= i`` in original positions; ``(batch, heads, n)`` in original order. Queries in blocks of ``b_q`` meet
    ``b_q + left + right`` keys, as in :func:`gpu.attention.banded.banded_attention`: memory ``O(n (b_q + left +
    right))``.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    left : int
        Keys before the query in the band.
    right : int
        Keys after the query in the band.
    perm : torch.Tensor or None, optional
        The order of the band, a permutation of ``range(n)``; ``None``: the identity.
    causal : bool, optional
        Also drop keys after the query in original positions.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n)``, in original order.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.windows import band_logsumexp
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(2))
    >>> torch.allclose(band_logsumexp(q, k, 7, 7), torch.logsumexp(q @ k.transpose(-1, -2) / 2, dim=-1))
    True

    References
    ----------
    .. [1] Beltagy, Peters & Cohan, "Longformer: The Long-Document Transformer", 2020, arXiv:2004.05150.
    """
    b, h, n, d = q.shape
    if perm is not None:
        q, k = q.index_select(2, perm), k.index_select(2, perm)
    bq = _block_size(n, left, right)
    nb = -(-n // bq)
    span = bq + left + right
    keys = F.pad(k, (0, 0, left, nb * bq - n + right)).unfold(2, span, bq)  # (b, h, nb, d, span), a view
    scores = torch.einsum("bhnqd,bhnds->bhnqs", F.pad(q, (0, 0, 0, nb * bq - n)).view(b, h, nb, bq, d), keys)
    qpos = torch.arange(nb * bq, device=q.device).view(nb, bq)
    kpos = torch.arange(nb, device=q.device)[:, None] * bq - left + torch.arange(span, device=q.device)[None, :]
    rel = kpos[:, None, :] - qpos[:, :, None]
    valid = (rel >= -left) & (rel <= right) & ((kpos >= 0) & (kpos < n))[:, None, :]
    if causal:
        origin = torch.arange(n, device=q.device) if perm is None else perm
        qo = origin[qpos.clamp(max=n - 1)]
        ko = origin[kpos.clamp(0, n - 1)]
        valid &= ko[:, None, :] <= qo[:, :, None]
    lse = torch.logsumexp((scores * scale_of(q)).masked_fill(~valid, float("-inf")), dim=-1).view(b, h, -1)[..., :n]
    return lse if perm is None else lse.index_select(2, inverse_permutation(perm))


def _add_sink(q, k, v, out, lse, in_window):
    s0 = (q * k[:, :, :1]).sum(-1) * scale_of(q)
    share = torch.sigmoid(s0 - lse).masked_fill(in_window, 0.0)[..., None]
    return out + share * (v[:, :, :1] - out)


def sliding_window(q, k, v, m, seed, causal=False, sink=False):
    """SWA [1]_ with ``w = m`` keys (itself included), :func:`gpu.swa_attention`.

    With ``sink`` a window of ``m - 1`` keys and the first position (the attention sink [2]_), merged exactly by
    log-sum-exp of the two parts' log-normalisers [3]_.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Window size in keys (the sink included), capped at the largest window of ``n``.
    seed : int
        Unused: the window is deterministic.
    causal : bool, optional
        Causal window ``i-w+1..i``.
    sink : bool, optional
        A window of ``m - 1`` keys plus the first position, merged by log-sum-exp.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.windows import sliding_window
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> relative_error(sliding_window(q, k, v, 8, seed=0, causal=True), exact_attention(q, k, v, causal=True)) < 1e-12
    True
    >>> sliding_window(q, k, v, 3, seed=0, causal=True, sink=True).shape
    torch.Size([1, 1, 8, 4])

    References
    ----------
    .. [1] Beltagy, Peters & Cohan, "Longformer: The Long-Document Transformer", 2020, arXiv:2004.05150.
    .. [2] Xiao et al., "Efficient Streaming Language Models with Attention Sinks" (StreamingLLM),
       ICLR 2024, arXiv:2309.17453.
    .. [3] Milakov & Gimelshein, "Online normalizer calculation for softmax", 2018, arXiv:1805.02867
       (merging softmax parts by their log-normalisers).
    """
    n = q.shape[2]
    w = _window(max(1, m - 1) if sink else m, n, causal)
    out = swa_attention(q, k, v, w, causal=causal, check_finite=False)
    if not sink:
        return out
    left, right = window_offsets(w, causal)
    in_window = torch.arange(n, device=q.device) <= left
    return _add_sink(q, k, v, out, band_logsumexp(q, k, left, right, causal=causal), in_window)


def sliding_window_cost(n, d, m, heads, causal, element_bytes, sink=False):
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
    element_bytes : int
        Bytes per number (2 for bfloat16, 4 for float32).
    sink : bool, optional
        Add the first key to every window (the window then has ``m - 1`` keys); the sink's score and a second
        log-normaliser are counted.

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx.families.windows import sliding_window_cost
    >>> sliding_window_cost(64, 8, 16, 2, False, 4)
    Cost(flops=75776.0, peak_bytes=78336.0, kv_cache_bytes_per_token=32.0)
    >>> sliding_window_cost(64, 8, 16, 2, True, 4, sink=True).flops > sliding_window_cost(64, 8, 16, 2, True, 4).flops
    True

    References
    ----------
    .. [1] Beltagy, Peters & Cohan, "Longformer: The Long-Document Transformer", 2020, arXiv:2004.05150.
    .. [2] Xiao et al., "Efficient Streaming Language Models with Attention Sinks" (StreamingLLM), ICLR 2024,
       arXiv:2309.17453.
    """
    w, f, mem = banded_pass(n, d, max(1, m - 1) if sink else m, causal)
    if sink:  # the window's log-normaliser once more, and the sink's score
        f, mem = f + 2 * n * w * d + SOFTMAX * n * w + 2 * n * d, mem + n * w
    return per_head_cost(f, mem, 2 * d * min(n, w + sink) / n, n, d, heads, element_bytes)


def stochastic(q, k, v, m, seed, causal=False, sink=False):
    """SA [1]_ with ``w = m`` keys in the order of ``receptive.layer_permutation(n, seed, 1)``.

    Through :func:`gpu.sa_attention`; with ``sink`` a window of ``m - 1`` keys and the first position (the attention
    sink [2]_).

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Window size in keys (the sink included), capped at the largest window of ``n``.
    seed : int
        Seed of the permutation.
    causal : bool, optional
        Keep the band and drop keys whose original position is after the query's (the lab's ``sa-band``: about
        ``(m + 1) / 2`` keys per query).
    sink : bool, optional
        A window of ``m - 1`` keys plus the first position, merged by log-sum-exp.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.windows import stochastic
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> relative_error(stochastic(q, k, v, 15, seed=0), exact_attention(q, k, v)) < 1e-12  # the band covers all
    True

    References
    ----------
    .. [1] Jin & Sui, 2026, arXiv:2604.00754 (stochastic attention, SA + SWA).
    .. [2] Xiao et al., "Efficient Streaming Language Models with Attention Sinks" (StreamingLLM),
       ICLR 2024, arXiv:2309.17453.
    """
    n = q.shape[2]
    w = _window(max(1, m - 1) if sink else m, n, False)
    out, perm = sa_attention(q, k, v, w, causal=causal, seed=seed, layer=1, return_perm=True, check_finite=False)
    if not sink:
        return out
    left, right = window_offsets(w, False)
    inverse = inverse_permutation(perm)
    offset = inverse[0] - inverse  # permuted position of key 0 relative to each query's
    in_window = (offset >= -left) & (offset <= right)
    return _add_sink(q, k, v, out, band_logsumexp(q, k, left, right, perm=perm, causal=causal), in_window)


def stochastic_cost(n, d, m, heads, causal, element_bytes, sink=False):
    """Cost of stochastic (SA) attention [1]_: a window of ``m`` keys in a random order of the sequence.

    The banded pass of :func:`sliding_window_cost` on permuted copies of ``q, k, v`` (``3 n d`` more numbers); every
    past key may be selected, so the decoder keeps the full cache.

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
    element_bytes : int
        Bytes per number (2 for bfloat16, 4 for float32).
    sink : bool, optional
        Add the first key to every window (the window then has ``m - 1`` keys).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx.families.windows import stochastic_cost
    >>> stochastic_cost(64, 8, 16, 2, False, 4)
    Cost(flops=75776.0, peak_bytes=90624.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Jin & Sui, 2026, arXiv:2604.00754 (stochastic attention, the ``sa`` entry of
       :data:`gpu.approx.methods.METHODS`).
    """
    w, f, mem = banded_pass(n, d, max(1, m - 1) if sink else m, False)
    if sink:
        f, mem = f + 2 * n * w * d + SOFTMAX * n * w + 2 * n * d, mem + n * w
    # the permuted copies of q, k, v; the full cache
    return per_head_cost(f, mem + 3 * n * d, 2 * d, n, d, heads, element_bytes)


def stochastic_plus_window(q, k, v, m, seed, causal=False):
    """SA+SWA [1]_ as the gated dual path with equal gates: ``(Y_sa + Y_swa) / 2``, ``m // 2`` keys each.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Total keys per query, split evenly over the two paths.
    seed : int
        Seed of the SA permutation.
    causal : bool, optional
        Causal attention in both paths.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.windows import stochastic_plus_window
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> relative_error(stochastic_plus_window(q, k, v, 30, seed=0), exact_attention(q, k, v)) < 1e-12
    True

    References
    ----------
    .. [1] Jin & Sui, 2026, arXiv:2604.00754 (stochastic attention, SA + SWA).
    """
    half = max(1, m // 2)
    return 0.5 * (stochastic(q, k, v, half, seed, causal) + sliding_window(q, k, v, half, seed, causal))


def stochastic_plus_window_cost(n, d, m, heads, causal, element_bytes):
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
    element_bytes : int
        Bytes per number (2 for bfloat16, 4 for float32).

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx.families.windows import stochastic_plus_window_cost
    >>> stochastic_plus_window_cost(64, 8, 16, 2, False, 4)
    Cost(flops=78848.0, peak_bytes=82432.0, kv_cache_bytes_per_token=128.0)

    References
    ----------
    .. [1] Jin & Sui, 2026, arXiv:2604.00754 (gated SA + SWA).
    """
    half = max(1, m // 2)
    a, b = stochastic_cost(n, d, half, 1, causal, 1), sliding_window_cost(n, d, half, 1, causal, 1)
    mem = max(a.peak_bytes, b.peak_bytes) + n * d  # one path's output kept while the other runs
    return per_head_cost(a.flops + b.flops + 3 * n * d, mem - 4 * n * d, 2 * d, n, d, heads, element_bytes)


def with_sink(method):
    """``method`` with ``m - 1`` window keys plus the first position (the attention sink [1]_).

    Parameters
    ----------
    method : callable
        A window method with a ``sink`` keyword (:func:`sliding_window`, :func:`stochastic`).

    Returns
    -------
    callable
        ``run(q, k, v, m, seed, causal=False)`` calling ``method`` with ``sink=True``, named ``<method>_sink``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.windows import sliding_window, with_sink
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> swa_sink = with_sink(sliding_window)
    >>> swa_sink.__name__
    'sliding_window_sink'
    >>> torch.equal(swa_sink(q, k, v, 3, 0, True), sliding_window(q, k, v, 3, 0, True, sink=True))
    True

    References
    ----------
    .. [1] Xiao et al., "Efficient Streaming Language Models with Attention Sinks" (StreamingLLM),
       ICLR 2024, arXiv:2309.17453.
    """

    def run(q, k, v, m, seed, causal=False):
        return method(q, k, v, m, seed, causal, sink=True)

    run.__name__ = f"{method.__name__}_sink"
    run.__doc__ = f"{method.__name__} with m - 1 keys and the first position (the sink)."
    return run
