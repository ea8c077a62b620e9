"""The numerics of the attention profile for one layer of one sequence, in blocks of queries: where exact attention's
mass goes (sink, distance bands, the rest), what a pattern's keys hold of it, the output the layer gives when it reads
only those keys, and one step of attention rollout, exact or restricted to the pattern.

Conventions: one sequence, ``q``, ``k``, ``v`` of shape ``(heads, n, d)`` (grouped key heads repeated as
transformers' ``repeat_kv`` does), the scores ``q k^T scaling`` causal. A block holds at most :func:`block_rows`
query rows, fixed by the sequence's shape and the memory budget alone, never by which patterns are asked, so a
pattern's numbers are the same alone or with others. A pattern's key sets come as ``(idx, valid)`` tables of shape
``(heads, rows, K)`` (:func:`gpu.attention.generation_keys.position_keys`), ``parts`` with a weight each
(``sa+swa``: two halves, each its own softmax, averaged): the block's exact weights are gathered at those keys and
renormalised, and the output is attention over exactly those keys, so a pattern costs ``heads * rows * K * d``.

References
----------
- Abnar & Zuidema (2020). Quantifying attention flow in transformers. ACL, arXiv 2005.00928 (rollout, Eq. 1-2).
- Xiao et al. (2024). Efficient streaming language models with attention sinks. ICLR, arXiv 2309.17453.
"""

from __future__ import annotations

import itertools

import torch

from gpu.attention.neighbour import dedupe, neighbour_attention

__all__ = ["block_rows", "dense_block", "keyed_block", "region_names", "rollout_step"]


def region_names(sink: int, bands: tuple[int, ...]) -> list[str]:
    """The names of the mass regions: the sink, each distance band ``[edges[b-1], edges[b])``, and ``far``.

    Parameters
    ----------
    sink : int
        Sink tokens (keys ``0 .. sink-1``), at least 0.
    bands : tuple of int
        Increasing band edges, the first at least 1 (distance 0 is the query itself).

    Returns
    -------
    list of str

    Examples
    --------
    >>> region_names(1, (1, 2, 4))
    ['sink', '0', '1', '2-3', 'far']
    """
    edges = (0, *bands)
    names = [str(a) if b - a == 1 else f"{a}-{b - 1}" for a, b in itertools.pairwise(edges)]
    return ["sink", *names, "far"]


def block_rows(n: int, heads: int, budget_bytes: int) -> int:
    """Query rows per block so that a block's ``(heads, rows, n)`` score arrays (about six of them, 8 bytes each)
    fit in ``budget_bytes``.

    Parameters
    ----------
    n : int
        Keys.
    heads : int
        Query heads.
    budget_bytes : int
        The memory a block may take.

    Returns
    -------
    int
        At least 1, at most ``n``.

    Examples
    --------
    >>> block_rows(1000, 9, 1 << 26)
    155
    """
    return max(1, min(n, budget_bytes // (heads * n * 8 * 6)))


def dense_block(q, k, v, rows: slice, scaling: float, sink: int, bands: tuple[int, ...], top_k: tuple[int, ...] = ()):
    """Exact attention of the query rows ``rows``: the weights, the output, the mass per region
    and, for each budget of ``top_k``, the ``m`` highest-scoring keys.

    Parameters
    ----------
    q, k, v : torch.Tensor
        ``(heads, n, d)`` queries, keys and values (grouped key heads repeated).
    rows : slice
        The block's query rows.
    scaling : float
        The score scale.
    sink : int
        Sink tokens.
    bands : tuple of int
        Distance band edges (:func:`region_names`).
    top_k : tuple of int, default ()
        Budgets whose top-scoring keys to return.

    Returns
    -------
    weights : torch.Tensor
        ``(heads, rows, n)`` the softmax weights.
    out : torch.Tensor
        ``(heads, rows, d)`` the exact output.
    regions : torch.Tensor
        ``(heads, rows, len(bands) + 2)`` the mass on the sink, each band and the rest.
    mean_weights : torch.Tensor
        ``(rows, n)`` the softmax weights averaged over heads (the rollout's matrix).
    top : dict of int to (idx, valid)
        Per budget ``m``, ``(heads, rows, min(m, n))`` key tables (ties at the ``m``-th score broken by index).

    Examples
    --------
    >>> import torch
    >>> q, k, v = torch.zeros(3, 1, 4, 2, dtype=torch.float64).unbind(0)
    >>> _, out, regions, mean, _ = dense_block(q, k, v, slice(3, 4), 1.0, 1, (1, 2))
    >>> regions[0, 0].tolist()  # four equal keys: the sink, distance 0, 1 and 2 (far)
    [0.25, 0.25, 0.25, 0.25]
    """
    heads, n, _ = q.shape
    positions = torch.arange(n)[rows]
    scores = q[:, rows] @ k.transpose(1, 2) * scaling  # (heads, r, n)
    distance = positions[:, None] - torch.arange(n)[None, :]
    scores = scores.masked_fill(distance < 0, float("-inf"))
    lse = scores.logsumexp(-1)
    weights = (scores - lse[..., None]).exp()
    region = torch.bucketize(distance.clamp(min=0), torch.tensor(bands), right=True) + 1
    region[:, :sink] = 0
    regions = q.new_zeros(heads, len(positions), len(bands) + 2)
    regions.scatter_add_(2, region.expand(heads, -1, -1), weights)
    top = {}
    for m in top_k:
        values, idx = scores.topk(min(m, n), dim=-1)
        top[m] = (idx, values > float("-inf"))
    return weights, weights @ v, regions, weights.mean(0), top


def keyed_block(weights, q, k, v, rows: slice, scaling: float, parts):
    """A pattern's block: the exact mass its keys hold (over the union of its parts), its output when the layer reads
    only those keys (each part's softmax renormalised, parts averaged by weight) and its head-averaged weights.

    The mass and the restricted weights are the block's exact weights gathered at the keys and renormalised; the
    output is :func:`gpu.attention.neighbour.neighbour_attention` over the same keys, the path the harness runs.

    Parameters
    ----------
    weights : torch.Tensor
        ``(heads, rows, n)`` the block's exact softmax weights (:func:`dense_block`).
    q, k, v : torch.Tensor
        ``(heads, n, d)`` (grouped key heads repeated).
    rows : slice
        The block's query rows.
    scaling : float
        The score scale.
    parts : list of (weight, idx, valid)
        Key tables ``(heads, rows, K)`` for the block's rows; a repeated key is invalid after its first slot.

    Returns
    -------
    recall : torch.Tensor
        ``(heads, rows)`` exact softmax mass on the union of the parts' keys.
    out : torch.Tensor
        ``(heads, rows, d)``; a row without a key reads nothing.
    mean_weights : torch.Tensor
        ``(rows, n)`` the restricted weights averaged over heads and parts (the pattern's rollout matrix).

    Examples
    --------
    >>> import torch
    >>> q, k, v = torch.zeros(3, 1, 4, 2, dtype=torch.float64).unbind(0)
    >>> weights = torch.full((1, 1, 4), 0.25, dtype=torch.float64)
    >>> idx, valid = torch.tensor([[[2, 3]]]), torch.tensor([[[True, True]]])
    >>> recall, out, mean = keyed_block(weights, q, k, v, slice(3, 4), 1.0, [(1.0, idx, valid)])
    >>> recall.tolist(), mean.tolist()
    ([[0.5]], [[0.0, 0.0, 0.5, 0.5]])
    """
    heads, rows_n, n = weights.shape
    out = torch.zeros(heads, rows_n, v.shape[-1], dtype=weights.dtype)
    mean_weights = torch.zeros(rows_n, n, dtype=weights.dtype)
    held, tables = [], []
    for part, idx, valid in parts:
        shared = idx.shape[0] == 1 or (idx.stride(0) == 0 and valid.stride(0) == 0)  # one table for every head
        keys = idx[:1].masked_fill(~valid[:1], -1) if shared else idx.masked_fill(~valid, -1)
        out += part * neighbour_attention(q[None, :, rows], k[None], v[None], keys, scale=scaling)[0]
        idx, valid = idx.expand(heads, -1, -1), valid.expand(heads, -1, -1)
        mass = weights.gather(2, idx).masked_fill_(~valid, 0.0)  # a repeated or unused slot holds nothing
        probs = mass / mass.sum(-1, keepdim=True).clamp(min=torch.finfo(weights.dtype).tiny)
        flat = (rows_n, heads * idx.shape[-1])
        spread = (probs * (part / heads)).transpose(0, 1).reshape(flat)
        mean_weights.scatter_add_(1, idx.transpose(0, 1).reshape(flat), spread)
        held.append(mass)
        tables.append((idx, valid))
    if len(parts) == 1:
        return held[0].sum(-1), out, mean_weights
    first = dedupe(torch.cat([i for i, _ in tables], -1), torch.cat([x for _, x in tables], -1))
    return (torch.cat(held, -1) * first).sum(-1), out, mean_weights


def rollout_step(carry: torch.Tensor, rows: slice, weights: torch.Tensor) -> torch.Tensor:
    """One block's share of ``carry @ A``: the rollout vectors ``carry`` (``(s, n)``) through the block's rows of a
    layer's head-averaged weights ``(rows, n)``.

    Parameters
    ----------
    carry : torch.Tensor
        ``(s, n)`` rollout vectors at the layer's output.
    rows : slice
        The block's query rows.
    weights : torch.Tensor
        ``(rows, n)`` the block's head-averaged weights.

    Returns
    -------
    torch.Tensor
        ``(s, n)``: this block's contribution to ``carry @ A``.

    Examples
    --------
    >>> import torch
    >>> carry = torch.tensor([[0.0, 1.0]])
    >>> rollout_step(carry, slice(0, 2), torch.tensor([[1.0, 0.0], [0.5, 0.5]]))
    tensor([[0.5000, 0.5000]])
    """
    return carry[:, rows] @ weights
