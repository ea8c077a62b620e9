"""Head plans: a causal pattern in generation form that gives each layer and head its own position-only key set.

A :class:`HeadPlan` lists, per layer and query head, a method of :data:`PLAN_METHODS` and its keys per query: a
streaming head a short window with the sink, a head whose mass lies far a long window, SA's shortcuts or every key. Each
head reads exactly the keys :func:`gpu.attention.generation_keys.position_keys` gives its method and budget (the same
draws as the uniform pattern, the layer's seed), so a plan decodes incrementally like the uniform methods and one built
from a single method equals that method. The attention profile (:mod:`gpu.profile.measures`) measures what each head's
candidates hold, from which a plan can be chosen.

Exact heads run PyTorch's fused SDPA on their own; the others attend through
:func:`gpu.attention.neighbour.neighbour_attention` over one padded key table, so a query reads its head's keys only.

References
----------
- Xiao et al. (2024). DuoAttention: efficient long-context LLM inference with retrieval and streaming heads.
  arXiv 2410.10819.
- Xiao et al. (2024). Efficient streaming language models with attention sinks. ICLR, arXiv 2309.17453.
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np
import torch

from gpu.attention.generation_keys import position_keys
from gpu.attention.neighbour import neighbour_attention
from gpu.validation import check_choice, check_int

__all__ = ["PLAN_METHODS", "HeadPlan", "head_plan_attention", "plan_mean_keys"]

#: The methods a head of a plan may take: the position-only generation forms with one softmax over one key set.
PLAN_METHODS = ("swa", "swa+sink", "sa", "sa+sink", "sa+swa-union", "swa+sink+sa", "exact")


@dataclass(frozen=True)
class HeadPlan:
    """Per layer and query head, a method of :data:`PLAN_METHODS` and its keys per query.

    Parameters
    ----------
    name : str
        A short name (letters, digits, ``+``, ``.``, ``_``); the registered implementation and the harness's label
        add the plan's :attr:`digest`.
    heads : tuple of tuple of (str, int)
        ``heads[layer][head] = (method, budget)``; every layer has the same number of heads; ``exact`` takes budget
        0.

    Raises
    ------
    TypeError
        If ``heads`` is not nested sequences of pairs.
    ValueError
        If a method is unknown, a budget out of range, layers differ in heads, or the name is not a short name.

    Examples
    --------
    >>> plan = HeadPlan("toy", ((("swa+sink", 8), ("exact", 0)),))
    >>> plan.layers, plan.n_heads, plan.methods()
    (1, 2, ['exact', 'swa+sink'])
    >>> HeadPlan.from_dict(plan.to_dict()) == plan
    True
    """

    name: str
    heads: tuple[tuple[tuple[str, int], ...], ...]

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or not all(c.isalnum() or c in "+._" for c in self.name):
            raise ValueError(f"name: expected a non-empty name of letters, digits, '+', '.', '_', got {self.name!r}")
        if isinstance(self.heads, str) or not hasattr(self.heads, "__len__") or not len(self.heads):
            raise TypeError("heads: expected per layer a sequence of (method, budget) pairs per head")
        layers = []
        for layer, row in enumerate(self.heads):
            if isinstance(row, str) or not hasattr(row, "__len__") or not len(row):
                raise TypeError(f"heads: layer {layer} is not a non-empty sequence of (method, budget) pairs")
            pairs = []
            for pair in row:
                if isinstance(pair, str) or not hasattr(pair, "__len__") or len(pair) != 2:
                    raise TypeError(f"heads: layer {layer} has {pair!r}, expected a (method, budget) pair")
                method = check_choice("heads", pair[0], PLAN_METHODS)
                budget = 0 if method == "exact" else check_int("heads", pair[1], 1, 1 << 16)
                pairs.append((method, budget))
            layers.append(tuple(pairs))
        if len({len(row) for row in layers}) != 1:
            raise ValueError(f"heads: every layer needs the same number of heads, got {[len(r) for r in layers]}")
        object.__setattr__(self, "heads", tuple(layers))

    @property
    def layers(self) -> int:
        """Layers."""
        return len(self.heads)

    @property
    def n_heads(self) -> int:
        """Query heads per layer."""
        return len(self.heads[0])

    @property
    def randomized(self) -> bool:
        """Whether the seed changes some head's keys (an SA band somewhere)."""
        return any(method.startswith("sa") or method.endswith("+sa") for method in self.methods())

    @property
    def digest(self) -> str:
        """The first 8 hex digits of the SHA-256 of the plan's JSON: two plans with one name stay apart."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:8]

    def methods(self) -> list[str]:
        """The methods some head takes, sorted."""
        return sorted({method for row in self.heads for method, _ in row})

    def to_dict(self) -> dict:
        """``{"name", "heads": [[[method, budget], ...], ...]}``, JSON-ready."""
        return {"name": self.name, "heads": [[list(pair) for pair in row] for row in self.heads]}

    @classmethod
    def from_dict(cls, data: dict) -> HeadPlan:
        """The plan :meth:`to_dict` wrote (``ValueError`` naming what is missing)."""
        if not isinstance(data, dict) or not {"name", "heads"} <= data.keys():
            raise ValueError("plan: expected a mapping with 'name' and 'heads' (HeadPlan.to_dict)")
        return cls(data["name"], tuple(tuple(tuple(pair) for pair in row) for row in data["heads"]))

    def __repr__(self) -> str:
        counts: dict[tuple[str, int], int] = {}
        for row in self.heads:
            for pair in row:
                counts[pair] = counts.get(pair, 0) + 1
        top = ", ".join(f"{m}@{b}: {c}" for (m, b), c in sorted(counts.items(), key=lambda kv: -kv[1])[:4])
        return f"HeadPlan({self.name!r}, {self.layers} layers x {self.n_heads} heads; {top})"


def _layer_keys(row, positions, n_keys, seed, max_length):
    """``(heads, q, K)`` key table of one layer, every head's row ``-1`` padded (an exact head's all ``-1``), or
    ``None`` when every head is exact."""
    tables: dict[tuple[str, int], torch.Tensor] = {}
    for method, budget in row:
        if method != "exact" and (method, budget) not in tables:
            idx, valid = position_keys(method, positions, n_keys, budget, 1, seed, max_length)
            tables[method, budget] = idx[0].masked_fill(~valid[0], -1)
    if not tables:
        return None
    width = max(t.shape[-1] for t in tables.values())
    table = torch.full((len(row), len(positions), width), -1, dtype=torch.long)
    for head, pair in enumerate(row):
        if pair in tables:
            table[head, :, : tables[pair].shape[-1]] = tables[pair]
    return table


def head_plan_attention(
    plan: HeadPlan, layer: int, q, k, v, seed: int = 0, max_length: int | None = None, trace=None
) -> torch.Tensor:
    """Causal attention of ``plan``'s layer ``layer`` for the last ``q.shape[2]`` positions of the ``k.shape[2]`` keys.

    Parameters
    ----------
    plan : HeadPlan
        The plan.
    layer : int
        The layer, below ``plan.layers``.
    q : torch.Tensor
        ``(batch, heads, q, d)`` queries of the last positions, ``heads == plan.n_heads``.
    k, v : torch.Tensor
        ``(batch, kv_heads, n, d)``, ``kv_heads`` dividing ``heads`` (query head ``h`` reads key head
        ``h // (heads / kv_heads)``, as transformers' ``repeat_kv`` pairs them; each key head is read in place).
    seed : int, default 0
        The layer's seed (SA's permutations).
    max_length : int, optional
        The length SA's permutations are drawn over, at least ``n``; ``None``: ``n``.
    trace : callable, optional
        ``trace(positions, keep)`` with the ``(q, n)`` keys some head reads.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, q, d_v)``.

    Raises
    ------
    ValueError
        If the layer or the heads do not match the plan, or the shapes do not fit.

    Examples
    --------
    >>> import torch
    >>> from gpu.attention.generation_patterns import generation_attention
    >>> q, k, v = torch.randn(3, 1, 2, 8, 4, dtype=torch.float64).unbind(0)
    >>> plan = HeadPlan("toy", ((("swa+sink", 3), ("swa+sink", 3)),))
    >>> torch.allclose(head_plan_attention(plan, 0, q, k, v), generation_attention("swa+sink", q, k, v, 3))
    True

    References
    ----------
    Xiao et al. (2024). DuoAttention. arXiv 2410.10819.
    """
    if not isinstance(plan, HeadPlan):
        raise TypeError(f"plan: expected a HeadPlan, got {type(plan).__name__}")
    layer = check_int("layer", layer, 0, plan.layers - 1)
    _, h, n_q, _ = q.shape
    n = k.shape[2]
    if h != plan.n_heads:
        raise ValueError(f"q: {h} heads, the plan has {plan.n_heads} per layer")
    if n_q > n:
        raise ValueError(f"q: {n_q} queries but only {n} keys (queries are the last positions of the keys)")
    if h % k.shape[1] or k.shape[1] != v.shape[1]:
        raise ValueError(f"k, v: {k.shape[1]} and {v.shape[1]} key heads, expected one count dividing {h}")
    max_length = n if max_length is None else check_int("max_length", max_length, n)
    positions = torch.arange(n - n_q, n)
    row = plan.heads[layer]
    table = _layer_keys(row, positions, n, seed, max_length)
    exact = [head for head, (method, _) in enumerate(row) if method == "exact"]
    causal = torch.arange(n)[None, :] <= positions[:, None] if trace is not None or 1 < n_q < n else None
    if trace is not None:
        keep = causal.clone() if exact else torch.zeros(n_q, n, dtype=torch.bool)
        if table is not None:
            rows = torch.arange(n_q)[None, :, None].expand_as(table)
            keep[rows[table >= 0], table[table >= 0]] = True
        trace(positions, keep)
    # every head through one call (key heads read in place, grouped as transformers' repeat_kv pairs them); an exact
    # head's row is all padding there and its output is replaced by SDPA over its key head's causal keys
    out = neighbour_attention(q, k, v, table) if table is not None else q.new_empty(*q.shape[:-1], v.shape[-1])
    group = h // k.shape[1]
    # the fused kernel's own causal mask where the queries are every position, none for one query (it sees every key)
    mask = {"is_causal": True} if n_q == n > 1 else {"attn_mask": causal if n_q > 1 else None}
    for kv in sorted({head // group for head in exact}):
        heads = [head for head in exact if head // group == kv]
        out[:, heads] = torch.nn.functional.scaled_dot_product_attention(
            q[:, heads], k[:, kv : kv + 1], v[:, kv : kv + 1], enable_gqa=True, **mask
        )
    return out


def plan_mean_keys(plan: HeadPlan, lengths, seed: int = 0, max_length: int | None = None) -> float:
    """The mean keys a query reads per head over every position of sequences of the given lengths, the mean over
    the plan's layers and heads: the attended (query, key) pairs per query and head, as
    ``gpu.attention.generation_patterns.mean_keys_read`` counts a uniform method.

    Parameters
    ----------
    plan : HeadPlan
        The plan.
    lengths : sequence of int
        The sequences' lengths (each at least 1).
    seed : int, default 0
        The model's seed; layer ``l`` draws with ``seed * layers + l``.
    max_length : int, optional
        SA's permutation length; ``None``: the longest length.

    Returns
    -------
    float

    Examples
    --------
    >>> plan_mean_keys(HeadPlan("toy", ((("swa", 2), ("exact", 0)),)), [4])  # (1.75 + 2.5) / 2
    2.125
    """
    lengths = [check_int("lengths", n, 1) for n in lengths]
    if not lengths:
        raise ValueError("lengths: expected at least one sequence length")
    longest = max(lengths)
    max_length = longest if max_length is None else check_int("max_length", max_length, longest)
    seed = check_int("seed", seed, 0)
    # a row's keys depend on the positions before it only: the rows of a length-n sequence are the first n rows of
    # the longest one, so one draw per (layer, method, budget) counts every length by a cumulative sum
    ends = np.asarray(lengths) - 1
    pairs = 0
    for layer, row in enumerate(plan.heads):
        counted: dict[tuple[str, int], int] = {}
        for method, budget in row:
            if (method, budget) not in counted:
                if method == "exact":
                    per_row = np.arange(1, longest + 1)
                else:
                    valid = position_keys(
                        method, torch.arange(longest), longest, budget, 1, seed * plan.layers + layer, max_length
                    )[1]
                    per_row = valid[0].sum(-1).numpy()
                counted[method, budget] = int(np.cumsum(per_row)[ends].sum())
            pairs += counted[method, budget]
    return pairs / (sum(lengths) * plan.layers * plan.n_heads)
