"""Locality-sensitive hashing: Reformer (Kitaev, Kaiser & Levskaya 2020, ICLR, Sec. 2-3)."""

from __future__ import annotations

import torch

from ...validation import check_int
from .common import dedupe, generator, indexed_attention, randn


def angular_hash(x: torch.Tensor, rotations: torch.Tensor) -> torch.Tensor:
    """Angular LSH of Andoni et al. (2015) as in Reformer Eq. (1): ``h(x) = argmax [xR; -xR]`` on ``x / |x|``."""
    if rotations.shape[-1] == 0:  # a single bucket
        return torch.zeros_like(x[..., 0], dtype=torch.long)
    proj = (x / x.norm(dim=-1, keepdim=True).clamp_min(1e-30)) @ rotations
    return torch.cat([proj, -proj], -1).argmax(-1)


def reformer_lsh(q, k, v, m, seed, causal=False, rounds: int = 2):
    """Reformer LSH attention, shared-QK style. Reformer ties keys to queries (``k_j = q_j / |q_j|``), so one sort
    puts every query next to the keys of its bucket. A pretrained model has ``k != q``; here the ``2n`` vectors
    (queries and keys) are hashed by the same random rotations and sorted together by ``(bucket, position)``, so
    sorting is by bucket for both; the sorted sequence is cut into chunks of ``c = m / rounds`` items and a query
    attends to the keys of its own chunk and the previous one (about ``c`` keys: half the items are keys), plus
    the key at its own position so that no row is empty. ``rounds`` independent hashings: a query attends to the
    union of its keys, each key once: this is the paper's de-duplication (scores minus ``log N_ij``, the number of
    rounds in which ``i`` meets ``j``), which makes the merged output softmax over the union. About ``m + 1``
    keys per query on average (at most ``2m + 1``, when two chunks hold only keys); ``n_buckets = 2n / c`` (about
    one chunk per bucket).

    Causal: chunk boundaries of a joint sort move when a future vector changes, so the causal version keeps the
    paper's bucket rule without chunks: in every round query ``i`` attends to the last ``c`` keys ``j <= i`` of its
    own bucket (found by a binary search in the keys sorted by ``(bucket, position)``), plus itself."""
    rounds = check_int("rounds", rounds, 1)
    if causal:
        return _causal_reformer(q, k, v, m, seed, rounds)
    b, h, n, d = q.shape
    c = max(2, m // rounds)
    n_buckets = max(2, 2 * (2 * n // c // 2))
    g = generator(seed)
    total = 2 * n
    chunks = -(-total // c)
    pad = chunks * c - total
    x = torch.cat([q, k], dim=2)
    lists = []
    for _ in range(rounds):
        buckets = angular_hash(x, randn(g, d, n_buckets // 2, like=q))  # (b, h, 2n)
        position = torch.cat([torch.arange(n), torch.arange(n)]).to(q.device)
        order = torch.argsort(buckets * total + 2 * position + (torch.arange(total, device=q.device) >= n), dim=-1)
        items = torch.nn.functional.pad(order, (0, pad), value=-1).view(b, h, chunks, c)
        is_key = items >= n
        keys = torch.where(is_key, items - n, 0)
        both = torch.cat([keys, keys.roll(1, dims=2)], dim=3)  # own chunk and the previous one
        ok = torch.cat([is_key, is_key.roll(1, dims=2)], dim=3)
        if chunks == 1:
            ok[..., c:] = False  # the "previous" chunk is the chunk itself
        where = torch.argsort(order, dim=-1)[..., :n] // c  # chunk of every query (items 0..n-1 are queries)
        lists.append(
            (
                torch.gather(both, 2, where[..., None].expand(-1, -1, -1, 2 * c)),
                torch.gather(ok, 2, where[..., None].expand(-1, -1, -1, 2 * c)),
            )
        )
    self_key = torch.arange(n, device=q.device).expand(b, h, n)[..., None]
    idx = torch.cat([self_key, *(ix for ix, _ in lists)], dim=-1)
    valid = torch.cat([torch.ones_like(self_key, dtype=torch.bool), *(ok for _, ok in lists)], dim=-1)
    return indexed_attention(q, k, v, idx, dedupe(idx, valid), causal=causal)


def _causal_reformer(q, k, v, m, seed, rounds):
    b, h, n, d = q.shape
    c = max(1, m // rounds)
    n_buckets = n // c // 2 * 2  # about c keys per bucket; one bucket (every past key) when c > n / 2
    g = generator(seed)
    pos = torch.arange(n, device=q.device)
    idx, valid = [pos.expand(b, h, n)[..., None]], [torch.ones(b, h, n, 1, dtype=torch.bool, device=q.device)]
    for _ in range(rounds):
        rot = randn(g, d, n_buckets // 2, like=q)
        hq, hk = angular_hash(q, rot), angular_hash(k, rot)
        code_k = hk * n + pos
        sorted_k, order = torch.sort(code_k, dim=-1)
        end = torch.searchsorted(sorted_k, (hq * n + pos).contiguous(), right=True)  # after the last key j <= i
        take = end[..., None] - c + torch.arange(c, device=q.device)  # the c entries before it
        inside = take >= 0
        take = take.clamp_min(0)
        same = torch.gather(sorted_k, 2, take.flatten(2)).view(b, h, n, c) // n == hq[..., None]
        idx.append(torch.gather(order, 2, take.flatten(2)).view(b, h, n, c))
        valid.append(inside & same)
    idx, valid = torch.cat(idx, dim=-1), torch.cat(valid, dim=-1)
    return indexed_attention(q, k, v, idx, dedupe(idx, valid), causal=True)
