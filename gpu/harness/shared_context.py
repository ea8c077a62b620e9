"""Exact attention of several continuations over one shared context cache, read in place (cascade attention).

A multiple-choice item scores each choice's continuation after the same context. Run as a batch over a cache with one
row per choice, every choice copies its context's keys and values (and SDPA repeats them again per query head of a
group). Here the continuation rows keep only their own keys in the model's cache; the context's keys and values stay
in one row per context, and each layer attends in two parts, merged exactly by their log-sum-exp (Juravsky et al.
2024): the queries of every choice of a context against that context's keys, one matrix product per key head and
context, and each choice's queries against its own earlier tokens (causal). The result is softmax attention over the
context's valid keys and the continuation's own keys, as SDPA gives it over a copied cache.

References
----------
- Juravsky et al. (2024). Hydragen: high-throughput LLM inference with shared prefixes. arXiv 2402.05099.
- Ye et al. (2024). Cascade inference: memory bandwidth efficient shared prefix batch decoding. FlashInfer blog.
"""

from __future__ import annotations

import torch

__all__ = ["SHARED_CONTEXT", "shared_context_attention"]

#: The ``attn_implementation`` name the scorer registers for a continuation forward over shared contexts.
SHARED_CONTEXT = "receptive-shared-context"


def shared_context_attention(context_kv: list, valid: torch.Tensor, rows: torch.Tensor):
    """A transformers attention function: each query row attends to its context row's keys, then its own keys.

    Parameters
    ----------
    context_kv : list of (torch.Tensor, torch.Tensor)
        Per layer the contexts' ``(keys, values)``, each ``(contexts, kv_heads, S, d)``.
    valid : torch.Tensor
        ``(contexts, S)`` bool: which context slots hold a key (right padding is not).
    rows : torch.Tensor
        ``(batch,)`` long: the context row of each continuation row.

    Returns
    -------
    callable
        ``forward(module, query, key, value, attention_mask, ...) -> (output, None)`` for
        ``transformers.AttentionInterface``: ``query`` ``(batch, heads, T, d)``, ``key`` and ``value`` the
        continuation's own ``(batch, kv_heads, T, d)`` (its cache holds no context), causal among themselves; the
        output is ``(batch, T, heads, d)``. Every query sees at least its own key, so no row is empty.

    Examples
    --------
    >>> import torch
    >>> from types import SimpleNamespace
    >>> g = torch.Generator().manual_seed(0)
    >>> ck, cv = torch.randn(2, 1, 1, 5, 4, generator=g, dtype=torch.float64)
    >>> q, k, v = torch.randn(3, 2, 2, 3, 4, generator=g, dtype=torch.float64)  # 2 choices, 2 heads, 3 tokens
    >>> forward = shared_context_attention([(ck, cv)], torch.ones(1, 5, dtype=torch.bool), torch.tensor([0, 0]))
    >>> out, _ = forward(SimpleNamespace(layer_idx=0), q, k[:, :1], v[:, :1], None, scaling=0.5)
    >>> keys = torch.cat([ck.expand(2, -1, -1, -1), k[:, :1]], 2)  # the copied cache SDPA would read
    >>> values = torch.cat([cv.expand(2, -1, -1, -1), v[:, :1]], 2)
    >>> mask = torch.ones(3, 8, dtype=torch.bool).tril(5)
    >>> expected = torch.nn.functional.scaled_dot_product_attention(q, keys, values, mask, scale=0.5, enable_gqa=True)
    >>> torch.allclose(out, expected.transpose(1, 2))
    True
    """
    rows = rows.long()
    groups = [(int(r), (rows == r).nonzero().squeeze(1)) for r in torch.unique(rows)]
    biases: dict = {}

    def valid_bias(r: int, dtype) -> torch.Tensor:
        """``(1, 1, S)``: 0 on the context row's keys, -inf on its padding (one per row and dtype)."""
        if (r, dtype) not in biases:
            bias = torch.zeros(valid.shape[1], dtype=dtype).masked_fill(~valid[r], float("-inf"))
            biases[r, dtype] = bias[None, None]
        return biases[r, dtype]

    def forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kwargs):
        ctx_k, ctx_v = context_kv[module.layer_idx]
        batch, heads, t, d = query.shape
        kv_heads = key.shape[1]
        group = heads // kv_heads
        scale = scaling if scaling is not None else d**-0.5
        dtype = query.dtype
        blocked = torch.ones(t, t, dtype=torch.bool).triu(1)  # a later own token
        out = query.new_empty(batch, heads, t, d)
        for r, members in groups:
            c = len(members)
            q = query[members].view(c, kv_heads, group, t, d)
            # the context part: one (kv_heads, c * group * t, d) @ (kv_heads, d, S) product, the keys read in place
            flat = q.permute(1, 0, 2, 3, 4).reshape(kv_heads, c * group * t, d)
            s_ctx = torch.baddbmm(valid_bias(r, dtype), flat, ctx_k[r].to(dtype).transpose(1, 2), alpha=scale)
            s_own = (q @ key[members][:, :, None].transpose(-1, -2)) * scale  # (c, kv_heads, group, t, t)
            s_own = s_own.masked_fill(blocked, float("-inf"))
            s_ctx = s_ctx.view(kv_heads, c, group, t, -1).permute(1, 0, 2, 3, 4)
            top = torch.maximum(s_ctx.amax(-1, keepdim=True), s_own.amax(-1, keepdim=True))
            p_ctx, p_own = (s_ctx - top).exp(), (s_own - top).exp()
            total = p_ctx.sum(-1, keepdim=True) + p_own.sum(-1, keepdim=True)
            flat_p = p_ctx.permute(1, 0, 2, 3, 4).reshape(kv_heads, c * group * t, -1)
            ctx_out = (flat_p @ ctx_v[r].to(dtype)).view(kv_heads, c, group, t, d).permute(1, 0, 2, 3, 4)
            own_out = p_own @ value[members][:, :, None]
            out[members] = ((ctx_out + own_out) / total).reshape(c, heads, t, d)
        return out.transpose(1, 2).contiguous(), None

    return forward
