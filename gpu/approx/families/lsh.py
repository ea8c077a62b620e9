"""Locality-sensitive hashing: Reformer (Kitaev, Kaiser & Levskaya 2020, ICLR, Sec. 2-3)."""

from __future__ import annotations

import torch

from gpu.approx.costs import SOFTMAX, listed_numbers, per_head_cost
from gpu.approx.families.common import LIST_CHUNK, generator, padded_keys, randn
from gpu.attention.functional import inverse_permutation
from gpu.attention.neighbour import dedupe, neighbour_attention
from gpu.validation import check_int


def angular_hash(x: torch.Tensor, rotations: torch.Tensor) -> torch.Tensor:
    """Angular LSH of Andoni et al. [1]_ as in Reformer Eq. (1) [2]_: ``h(x) = argmax [xR; -xR]`` on ``x / ||x||``.

    Parameters
    ----------
    x : torch.Tensor
        Vectors ``(..., d)``.
    rotations : torch.Tensor
        Random ``(d, buckets / 2)`` projection ``R``; zero columns mean a single bucket.

    Returns
    -------
    torch.Tensor
        Long bucket ids ``(...)`` in ``[0, 2 R.shape[-1])`` (zeros for a single bucket).

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.lsh import angular_hash
    >>> x = torch.tensor([[1.0, 0.0], [-1.0, 0.0]])
    >>> angular_hash(x, torch.eye(2))
    tensor([0, 2])
    >>> angular_hash(x, torch.zeros(2, 0))
    tensor([0, 0])

    References
    ----------
    .. [1] Andoni, Indyk, Laarhoven, Razenshteyn & Schmidt, "Practical and Optimal LSH for Angular
       Distance", NeurIPS 2015, arXiv:1509.02897.
    .. [2] Kitaev, Kaiser & Levskaya, "Reformer: The Efficient Transformer", ICLR 2020, arXiv:2001.04451.
    """
    if rotations.shape[-1] == 0:  # a single bucket
        return torch.zeros_like(x[..., 0], dtype=torch.long)
    proj = (x / x.norm(dim=-1, keepdim=True).clamp_min(1e-30)) @ rotations
    return torch.cat([proj, -proj], -1).argmax(-1)


def reformer_lsh(q, k, v, m, seed, causal=False, rounds: int = 2):
    """Reformer LSH attention [1]_, shared-QK style, over ``rounds`` independent hashings.

    Reformer ties keys to queries (``k_j = q_j / ||q_j||``), so one sort puts every query next to the keys of its
    bucket. A pretrained model has ``k != q``; here the ``2n`` vectors (queries and keys) are hashed by the same
    random rotations and sorted together by ``(bucket, position)``, so sorting is by bucket for both; the sorted
    sequence is cut into chunks of ``c = m / rounds`` items and a query attends to the keys of its own chunk and the
    previous one (about ``c`` keys: half the items are keys), plus the key at its own position so that no row is
    empty. ``rounds`` independent hashings: a query attends to the union of its keys, each key once: this is the
    paper's de-duplication (scores minus ``log N_ij``, the number of rounds in which ``i`` meets ``j``), which makes
    the merged output softmax over the union. About ``m + 1`` keys per query on average (at most ``2m + 1``, when two
    chunks hold only keys); ``n_buckets = 2n / c`` (about one chunk per bucket).

    Causal: chunk boundaries of a joint sort move when a future vector changes, so the causal version keeps the
    paper's bucket rule without chunks: in every round query ``i`` attends to the last ``c`` keys ``j <= i`` of its
    own bucket (found by a binary search in the keys sorted by ``(bucket, position)``), plus itself.

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    m : int
        Keys per query, over all rounds.
    seed : int
        Seed of the random rotations.
    causal : bool, optional
        Causal attention (bucket rule without chunks).
    rounds : int, optional
        Hash rounds (``>= 1``).

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Raises
    ------
    TypeError
        If ``rounds`` is not an integer.
    ValueError
        If ``rounds`` is below 1.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention, relative_error
    >>> from gpu.approx.families.lsh import reformer_lsh
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 8, 4, generator=g, dtype=torch.float64) for _ in range(3))
    >>> reformer_lsh(q, k, v, 4, seed=0).shape
    torch.Size([1, 1, 8, 4])
    >>> relative_error(reformer_lsh(q, k, v, 16, seed=0, causal=True), exact_attention(q, k, v, causal=True)) < 1e-12
    True

    References
    ----------
    .. [1] Kitaev, Kaiser & Levskaya, "Reformer: The Efficient Transformer", ICLR 2020, arXiv:2001.04451.
    """
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
        where = inverse_permutation(order)[..., :n] // c  # chunk of every query (items 0..n-1 are queries)
        lists.append(
            (
                torch.gather(both, 2, where[..., None].expand(-1, -1, -1, 2 * c)),
                torch.gather(ok, 2, where[..., None].expand(-1, -1, -1, 2 * c)),
            )
        )
    self_key = torch.arange(n, device=q.device).expand(b, h, n)[..., None]
    idx = torch.cat([self_key, *(ix for ix, _ in lists)], dim=-1)
    valid = torch.cat([torch.ones_like(self_key, dtype=torch.bool), *(ok for _, ok in lists)], dim=-1)
    keys = padded_keys(idx, dedupe(idx, valid), causal)
    return neighbour_attention(q, k, v, keys, method="gather", chunk=LIST_CHUNK)


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
    keys = padded_keys(idx, dedupe(idx, valid), causal=True)
    return neighbour_attention(q, k, v, keys, method="gather", chunk=LIST_CHUNK)


def reformer_lsh_cost(n, d, m, heads, causal, element_bytes, rounds=2):
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
    element_bytes : int
        Bytes per number (2 for bfloat16, 4 for float32).
    rounds : int, optional
        Number of hash rounds.

    Returns
    -------
    Cost
        FLOPs, peak bytes and KV-cache bytes per token of one forward, summed over the heads.

    Examples
    --------
    >>> from gpu.approx.families.lsh import reformer_lsh_cost
    >>> reformer_lsh_cost(64, 8, 16, 2, False, 4)
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
        return per_head_cost(f, listed_numbers(n, keys, d), 2 * d + rounds, n, d, heads, element_bytes)
    c = max(2, m // rounds)
    buckets = max(2, 2 * (2 * n // c // 2))
    keys = min(n, rounds * c + 1)
    hashing = rounds * 2 * (2 * n) * d * (buckets // 2)
    mem = listed_numbers(n, rounds * 2 * c + 1, d) + 2 * n * rounds * 2 * c  # lists of every round before the union
    f = hashing + 4 * n * keys * d + SOFTMAX * n * keys
    return per_head_cost(f, mem, 2 * d + rounds, n, d, heads, element_bytes)
