"""The numerics of the attention profile for one layer of one sequence, in blocks of queries: where exact attention's
mass goes (sink, distance bands, the rest), what a pattern's keys hold of it, the output the layer gives when it reads
only those keys, and one step of attention rollout, exact or restricted to the pattern.

Conventions: one sequence, ``q`` of shape ``(heads, n, d)`` and ``k``, ``v`` of ``(kv_heads, n, d)`` (query head
``h`` reads key head ``h // (heads / kv_heads)``, as transformers' ``repeat_kv``), the scores ``q k^T scaling``
causal. Every block holds at most ``block`` query rows, ``block`` fixed by the sequence's shape and the memory budget
alone (:func:`block_rows`), never by which patterns are asked, so a pattern's numbers are the same alone or with
others. A pattern's key sets come as ``(idx, valid)`` tables of shape ``(heads, rows, K)``
(:func:`gpu.attention.generation_keys.position_keys`), ``parts`` with a weight each (``sa+swa``: two halves, each its
own softmax, averaged).

References
----------
- Abnar & Zuidema (2020). Quantifying attention flow in transformers. ACL, arXiv 2005.00928 (rollout, Eq. 1-2).
- Xiao et al. (2024). Efficient streaming language models with attention sinks. ICLR, arXiv 2309.17453.
"""

from __future__ import annotations

import itertools

import torch

from gpu.attention.neighbour import dedupe

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


def _expand(x: torch.Tensor, heads: int) -> torch.Tensor:
    """``(kv_heads, n, d)`` to ``(heads, n, d)`` as transformers' ``repeat_kv``."""
    return x.repeat_interleave(heads // x.shape[0], dim=0) if x.shape[0] != heads else x


def dense_block(q, k, v, rows: slice, scaling: float, sink: int, bands: tuple[int, ...], top_k: tuple[int, ...] = ()):
    """Exact attention of the query rows ``rows``: its log-normaliser, output, mass per region and, for each budget of
    ``top_k``, the ``m`` highest-scoring keys.

    Parameters
    ----------
    q : torch.Tensor
        ``(heads, n, d)`` queries.
    k, v : torch.Tensor
        ``(kv_heads, n, d)`` keys and values.
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
    lse : torch.Tensor
        ``(heads, rows)`` log of each row's softmax normaliser.
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
    >>> lse, out, regions, mean, _ = dense_block(q, k, v, slice(3, 4), 1.0, 1, (1, 2))
    >>> regions[0, 0].tolist()  # four equal keys: the sink, distance 0, 1 and 2 (far)
    [0.25, 0.25, 0.25, 0.25]
    """
    heads, n, _ = q.shape
    kx, vx = _expand(k, heads), _expand(v, heads)
    positions = torch.arange(n)[rows]
    scores = q[:, rows] @ kx.transpose(1, 2) * scaling  # (heads, r, n)
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
    return lse, weights @ vx, regions, weights.mean(0), top


def keyed_block(q, k, v, rows: slice, scaling: float, lse, parts):
    """A pattern's block: the exact mass its keys hold (over the union of its parts), its output when the layer reads
    only those keys (each part's softmax renormalised, parts averaged by weight) and its head-averaged weights.

    Parameters
    ----------
    q : torch.Tensor
        ``(heads, n, d)`` queries.
    k, v : torch.Tensor
        ``(kv_heads, n, d)``.
    rows : slice
        The block's query rows.
    scaling : float
        The score scale.
    lse : torch.Tensor
        ``(heads, rows)`` the exact log-normalisers (:func:`dense_block`).
    parts : list of (weight, idx, valid)
        Key tables ``(heads, rows, K)`` for the block's rows; a repeated key is invalid after its first slot.

    Returns
    -------
    recall : torch.Tensor
        ``(heads, rows)`` exact softmax mass on the union of the parts' keys.
    out : torch.Tensor
        ``(heads, rows, d)``.
    scatter : list of (idx, weights)
        Per part, its keys and their head-averaged rollout weights ``(heads, rows, K)`` (weight / heads included).

    Examples
    --------
    >>> import torch
    >>> q, k, v = torch.zeros(3, 1, 4, 2, dtype=torch.float64).unbind(0)
    >>> lse = torch.full((1, 1), float(torch.tensor(4.0).log()))
    >>> idx, valid = torch.tensor([[[2, 3]]]), torch.tensor([[[True, True]]])
    >>> recall, out, _ = keyed_block(q, k, v, slice(3, 4), 1.0, lse, [(1.0, idx, valid)])
    >>> recall.tolist()
    [[0.5]]
    """
    heads, _, d = q.shape
    kx, vx = _expand(k, heads), _expand(v, heads)
    qb = q[:, rows]
    out = torch.zeros_like(qb)
    masses, scatter = [], []
    for weight, idx, valid in parts:
        h, r, width = idx.shape
        flat = idx.reshape(h, r * width, 1).expand(-1, -1, d)
        scores = torch.einsum("hrd,hrkd->hrk", qb, kx.gather(1, flat).view(h, r, width, d)) * scaling
        scores = scores.masked_fill(~valid, float("-inf"))
        masses.append((scores - lse[..., None]).exp())
        probs = torch.softmax(scores, -1).nan_to_num(0.0)  # a row without a key reads nothing
        out += weight * torch.einsum("hrk,hrkd->hrd", probs, vx.gather(1, flat).view(h, r, width, d))
        scatter.append((idx, probs * (weight / heads)))
    if len(parts) == 1:
        return masses[0].sum(-1), out, scatter
    first = dedupe(torch.cat([i.expand(heads, -1, -1) for _, i, _ in parts], -1),
                   torch.cat([x.expand(heads, -1, -1) for _, _, x in parts], -1))  # fmt: skip
    return (torch.cat(masses, -1) * first).sum(-1), out, scatter


def rollout_step(carry: torch.Tensor, rows: slice, weights) -> torch.Tensor:
    """One block's share of ``carry @ A``: the rollout vectors ``carry`` (``(s, n)``) through the block's rows of a
    layer's head-averaged weights, dense ``(rows, n)`` or as a pattern's ``scatter`` (:func:`keyed_block`).

    Parameters
    ----------
    carry : torch.Tensor
        ``(s, n)`` rollout vectors at the layer's output.
    rows : slice
        The block's query rows.
    weights : torch.Tensor or list of (idx, weights)
        The block's head-averaged weights.

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
    if isinstance(weights, torch.Tensor):
        return carry[:, rows] @ weights
    out = torch.zeros_like(carry)
    s = carry.shape[0]
    for idx, w in weights:
        contribution = carry[:, None, rows, None] * w[None]
        out.scatter_add_(1, idx.expand_as(w).reshape(1, -1).expand(s, -1), contribution.reshape(s, -1))
    return out
