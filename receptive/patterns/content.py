"""Content-based layers: the keys a query attends to depend on the actual ``q, k`` (top-k, MoBA, Reformer LSH).

Each router takes numpy arrays ``q, k`` of shape ``(n, d)`` or ``(heads, n, d)`` (a layer is the union over heads)
and returns the routing as an ``n x n`` boolean CSR (``*_routing``, exactly the routed pairs), or a
:class:`~receptive.patterns.flex.CSRPattern` (``*_pattern``) that adds the query itself (every receptive pattern
includes it: the residual path). ``*_pattern`` takes one array pair (the same layer at every depth) or lists of
per-layer arrays (one layer each). All routing is numpy (``receptive`` imports without torch), vectorised over
tokens; the score blocks are ``O(n^2 d)`` work, as the methods' own dense references are.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..validation import check_bool, check_int
from .flex import CSRPattern

#: bytes of score matrix one query block may hold (float64)
SCORE_BLOCK_BYTES = 2**26


def random_qk(n: int, d: int, seed: int = 0, heads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A synthetic stand-in for a layer's queries and keys: i.i.d. standard Gaussian ``q`` and ``k`` of shape
    ``(n, d)`` (``(heads, n, d)`` with ``heads``), from ``numpy.random.default_rng(seed)``.

    Not a model's activations: the routing it induces has no locality, no attention sinks and no semantic
    clusters, so coverage measured on it describes score-based routing on random data, not a trained model's.

    Parameters
    ----------
    n : int
        Tokens, ``>= 1``.
    d : int
        Head dimension, ``>= 1``.
    seed : int, default 0
        Seed of ``numpy.random.default_rng``.
    heads : int or None, default None
        Heads; ``None`` gives 2-d arrays.

    Returns
    -------
    tuple of numpy.ndarray
        ``(q, k)``, float64.

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If one is out of range.

    Examples
    --------
    >>> q, k = random_qk(8, 4, seed=0)
    >>> q.shape, random_qk(8, 4, heads=2)[0].shape
    ((8, 4), (2, 8, 4))
    """
    n, d, seed = check_int("n", n, 1), check_int("d", d, 1), check_int("seed", seed, 0)
    shape = (n, d) if heads is None else (check_int("heads", heads, 1), n, d)
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape), rng.standard_normal(shape)


# ------------------------------------------------------------------------------------------------------ validation


def _heads(name: str, x) -> np.ndarray:
    """``x`` as a float64 ``(heads, n, d)`` array."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name}: expected a float array of shape (n, d) or (heads, n, d)") from err
    if arr.ndim not in (2, 3) or 0 in arr.shape:
        raise ValueError(f"{name}: expected a float array of shape (n, d) or (heads, n, d), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: every entry must be finite")
    return arr[None] if arr.ndim == 2 else arr


def _pair(q, k) -> tuple[np.ndarray, np.ndarray]:
    q3 = _heads("q", q)
    k3 = q3 if k is None else _heads("k", k)
    if k3.shape != q3.shape:
        raise ValueError(f"k: expected the shape of q {np.shape(q)}, got {np.shape(k)}")
    return q3, k3


def _layers(q, k) -> tuple[list, list, bool]:
    """Per-layer lists from a list/tuple of arrays, or a single layer."""
    if isinstance(q, (list, tuple)):
        if not q:
            raise ValueError("q: expected at least one layer of queries")
        ks = [None] * len(q) if k is None else k
        if not isinstance(ks, (list, tuple)) or len(ks) != len(q):
            raise ValueError(f"k: expected a list of {len(q)} per-layer key arrays like q")
        return list(q), list(ks), True
    if isinstance(k, (list, tuple)):
        raise ValueError("k: a list of per-layer keys needs a list of per-layer queries q")
    return [q], [k], False


def _csr(rows: np.ndarray, cols: np.ndarray, n: int) -> sp.csr_array:
    mat = sp.coo_array((np.ones(rows.size, dtype=bool), (rows, cols)), shape=(n, n)).tocsr()
    mat.sum_duplicates()
    mat.sort_indices()
    return mat


def _query_blocks(n: int, width: int):
    rows = max(1, SCORE_BLOCK_BYTES // (8 * max(1, width)))
    for start in range(0, n, rows):
        yield start, min(n, start + rows)


# ------------------------------------------------------------------------------------------------------------ top-k


def topk_routing(q, k, k_keys: int, causal: bool = False) -> sp.csr_array:
    """Top-k attention: query ``i`` attends to ``{j in A(i) : s_ij >= s_i^(k)}`` where ``s_ij = q_i . k_j`` and
    ``s_i^(k)`` is the ``k``-th largest score of row ``i`` over its admissible keys ``A(i)`` (all keys; ``j <= i``
    causal, where a row with fewer than ``k`` admissible keys keeps all of them); keys tied at the threshold are
    all kept (so a row holds more than ``k`` keys only on exact ties), as ``gpu.approx``'s ``top_k`` oracle does.
    Union over heads. The routing of top-k / "oracle sparse" attention (e.g. Gupta et al. 2021, top-k attention;
    the Loki and HyperAttention families approximate it). Cost ``O(n^2 d)``; no self added.

    Parameters
    ----------
    q : array_like of float
        Queries, ``(n, d)`` or ``(heads, n, d)``; finite.
    k : array_like of float
        Keys of the same shape.
    k_keys : int
        Keys per query, ``1 .. n``.
    causal : bool, default False
        Only keys ``j <= i``.

    Returns
    -------
    scipy.sparse.csr_array
        ``n x n`` boolean: ``[i, j]`` when query ``i`` attends to key ``j``.

    Raises
    ------
    TypeError
        If ``k_keys`` is not an integer or ``causal`` is not a bool.
    ValueError
        If ``q`` or ``k`` has a bad shape or non-finite entries, or ``k_keys`` is out of range.

    References
    ----------
    Gupta et al. 2021, "Memory-efficient Transformers via Top-k Attention", arXiv 2106.06899.

    Examples
    --------
    >>> q, k = random_qk(8, 4, seed=0)
    >>> topk_routing(q, k, 2).sum(axis=1).tolist()
    [2, 2, 2, 2, 2, 2, 2, 2]
    >>> topk_routing(q, k, 2, causal=True).sum(axis=1).tolist()  # query 0 has one admissible key
    [1, 2, 2, 2, 2, 2, 2, 2]
    """
    q3, k3 = _pair(q, k)
    h, n, _ = q3.shape
    k_keys = check_int("k_keys", k_keys, 1, n)
    causal = check_bool("causal", causal)
    rows_out, cols_out = [], []
    for start, stop in _query_blocks(n, n):
        i = np.arange(start, stop)
        future = np.arange(n)[None, :] > i[:, None] if causal else None
        for head in range(h):
            scores = q3[head, start:stop] @ k3[head].T
            if causal:
                scores[future] = -np.inf
            threshold = -np.partition(-scores, k_keys - 1, axis=1)[:, k_keys - 1 : k_keys]
            keep = scores >= threshold
            if causal:
                keep &= ~future
            r, c = np.nonzero(keep)
            rows_out.append(r + start)
            cols_out.append(c)
    return _csr(np.concatenate(rows_out), np.concatenate(cols_out), n)


def topk_pattern(q, k, k_keys: int, causal: bool = False) -> CSRPattern:
    """:func:`topk_routing` as a pattern (query itself added); lists of per-layer ``q, k`` give one layer each.

    Parameters
    ----------
    q, k : array_like of float, or list of them
        One layer's queries and keys (``(n, d)`` or ``(heads, n, d)``), the same at every depth; or lists of
        per-layer arrays, one layer each.
    k_keys : int
        Keys per query, ``1 .. n``.
    causal : bool, default False
        Only keys ``j <= i``.

    Returns
    -------
    CSRPattern
        The pattern (``max_layers`` = the number of layers given as lists, else ``None``).

    Raises
    ------
    ValueError
        As :func:`topk_routing`, or if the lists of ``q`` and ``k`` differ in length.

    Examples
    --------
    >>> q, k = random_qk(8, 4, seed=0)
    >>> pattern = topk_pattern(q, k, 2)
    >>> pattern.describe(), pattern.adjacency(1).sum(axis=1).tolist()  # 2 keys, plus the query when not among them
    ('top-k k=2 (content, every layer)', [3, 3, 3, 3, 3, 2, 2, 3])
    """
    qs, ks, per_layer = _layers(q, k)
    mats = [topk_routing(a, b, k_keys, causal) for a, b in zip(qs, ks, strict=True)]
    return _pattern(mats, causal, per_layer, "top-k", f"top-k k={k_keys}")


# ------------------------------------------------------------------------------------------------------------- MoBA


def moba_routing(q, k, block: int, top_blocks: int, causal: bool = False) -> sp.csr_array:
    """MoBA, Mixture of Block Attention (Lu et al. 2025, arXiv 2502.13189, Sec. 2.2): keys in ``n / block`` blocks
    ``B_b = [b * block, (b + 1) * block)``; gate ``g_ib = q_i . mean_{j in B_b} k_j``; the query's own block gets
    ``g = +inf`` (always chosen) and, causal, every later block ``g = -inf`` (never chosen); query ``i`` attends to
    the keys of its ``top_blocks`` highest-gated blocks (its own block counted among them, as in the paper's
    reference code; causal: only blocks with a finite gate, and inside its own block only keys ``j <= i``).
    Union over heads; ties between equal gates broken arbitrarily (as ``torch.topk``). No self added (the own block
    holds it).

    Parameters
    ----------
    q : array_like of float
        Queries, ``(n, d)`` or ``(heads, n, d)``; finite.
    k : array_like of float
        Keys of the same shape.
    block : int
        Keys per block, a divisor of ``n``.
    top_blocks : int
        Blocks per query, its own included: ``1 .. n / block``.
    causal : bool, default False
        Only earlier blocks and, in the own block, keys ``j <= i``.

    Returns
    -------
    scipy.sparse.csr_array
        ``n x n`` boolean routing.

    Raises
    ------
    TypeError
        If ``block`` or ``top_blocks`` is not an integer or ``causal`` is not a bool.
    ValueError
        If ``block`` does not divide ``n``, ``top_blocks`` is out of range, or ``q``, ``k`` are bad.

    References
    ----------
    Lu et al. 2025, "MoBA: Mixture of Block Attention for Long-Context LLMs", arXiv 2502.13189.

    Examples
    --------
    >>> q, k = random_qk(8, 4, seed=0)
    >>> moba_routing(q, k, 4, 1).sum(axis=1).tolist()  # the own block of 4 keys only
    [4, 4, 4, 4, 4, 4, 4, 4]
    >>> moba_routing(q, k, 2, 2, causal=True).sum(axis=1).tolist()
    [1, 2, 3, 4, 3, 4, 3, 4]
    """
    q3, k3 = _pair(q, k)
    h, n, d = q3.shape
    block = check_int("block", block, 1, n)
    if n % block:
        raise ValueError(f"block: expected a divisor of n = {n} (whole key blocks), got {block}")
    nb = n // block
    top_blocks = check_int("top_blocks", top_blocks, 1, nb)
    causal = check_bool("causal", causal)
    means = k3.reshape(h, nb, block, d).mean(axis=2)
    offsets = np.arange(block)
    rows_out, cols_out = [], []
    for start, stop in _query_blocks(n, nb):
        i = np.arange(start, stop)
        own = i // block
        later = np.arange(nb)[None, :] > own[:, None]
        for head in range(h):
            gate = q3[head, start:stop] @ means[head].T
            gate[np.arange(i.size), own] = np.inf
            if causal:
                gate[later] = -np.inf
            chosen = np.argpartition(-gate, top_blocks - 1, axis=1)[:, :top_blocks]  # (rows, top_blocks)
            ok = np.take_along_axis(gate, chosen, axis=1) > -np.inf  # causal: later blocks are never chosen
            keys = chosen[:, :, None] * block + offsets  # (rows, top_blocks, block)
            valid = np.broadcast_to(ok[:, :, None], keys.shape)
            if causal:
                valid = valid & (keys <= i[:, None, None])
            r = np.broadcast_to(i[:, None, None], keys.shape)[valid]
            rows_out.append(r)
            cols_out.append(keys[valid])
    return _csr(np.concatenate(rows_out), np.concatenate(cols_out), n)


def moba_pattern(q, k, block: int, top_blocks: int, causal: bool = False) -> CSRPattern:
    """:func:`moba_routing` as a pattern (query itself added); lists of per-layer ``q, k`` give one layer each.

    Parameters
    ----------
    q, k : array_like of float, or list of them
        One layer's queries and keys, or lists of per-layer arrays (one layer each).
    block, top_blocks : int
        As :func:`moba_routing`.
    causal : bool, default False
        As :func:`moba_routing`.

    Returns
    -------
    CSRPattern
        The pattern.

    Raises
    ------
    ValueError
        As :func:`moba_routing`.

    References
    ----------
    Lu et al. 2025, "MoBA: Mixture of Block Attention for Long-Context LLMs", arXiv 2502.13189.

    Examples
    --------
    >>> q, k = random_qk(8, 4, seed=0)
    >>> pattern = moba_pattern([q, q], [k, k], 4, 1)
    >>> pattern.max_layers, pattern.describe()
    (2, 'moba block=4 top=1 (content, 2 layers)')
    """
    qs, ks, per_layer = _layers(q, k)
    mats = [moba_routing(a, b, block, top_blocks, causal) for a, b in zip(qs, ks, strict=True)]
    return _pattern(mats, causal, per_layer, "moba", f"moba block={block} top={top_blocks}")


# -------------------------------------------------------------------------------------------------------------- LSH


def lsh_rotations(d: int, buckets: int, rounds: int, seed: int = 0) -> np.ndarray:
    """The random rotations of :func:`lsh_routing`: ``(rounds, d, buckets / 2)`` i.i.d. standard Gaussian entries
    from ``numpy.random.default_rng(seed)``.

    Parameters
    ----------
    d : int
        Head dimension.
    buckets : int
        Hash buckets, even and ``>= 2``.
    rounds : int
        Hash rounds.
    seed : int, default 0
        Seed of the rotations.

    Returns
    -------
    numpy.ndarray
        float64, ``(rounds, d, buckets // 2)``.

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If ``buckets`` is odd or an argument is out of range.

    References
    ----------
    Kitaev, Kaiser & Levskaya 2020, "Reformer: The Efficient Transformer", ICLR, arXiv 2001.04451 (Sec. 3).

    Examples
    --------
    >>> lsh_rotations(4, 8, 2).shape
    (2, 4, 4)
    """
    d, rounds, seed = check_int("d", d, 1), check_int("rounds", rounds, 1), check_int("seed", seed, 0)
    buckets = _check_buckets(buckets)
    return np.random.default_rng(seed).standard_normal((rounds, d, buckets // 2))


def _check_buckets(buckets) -> int:
    buckets = check_int("buckets", buckets, 2)
    if buckets % 2:
        raise ValueError(f"buckets: expected an even number >= 2 (angular LSH hashes to [xR, -xR]), got {buckets}")
    return buckets


def lsh_routing(
    q,
    k=None,
    buckets: int = 8,
    rounds: int = 1,
    chunk: int = 64,
    causal: bool = False,
    seed: int = 0,
    *,
    rotations=None,
    wrap: bool = False,
) -> sp.csr_array:
    """Reformer LSH attention (Kitaev et al. 2020, ICLR, Sec. 3, Eqs. 4-6): angular LSH
    ``h(x) = argmax [x R ; -x R]`` with a random ``R`` of ``d x buckets/2`` per round; tokens sorted by bucket, then
    by position (``s_i`` = slot of ``i``); cut into chunks of ``chunk`` slots; query ``i`` attends to the keys in its
    own chunk and the previous one, ``P_i = {j : floor(s_i/c) - 1 <= floor(s_j/c) <= floor(s_i/c)}`` (Eq. 5); with
    ``rounds`` rounds, the union of the rounds' sets (Eq. 6); causal: only ``j <= i`` (original positions), after
    the sort, as in the paper: the edges are causal, but chunk boundaries (hence which past keys a query meets)
    depend on later tokens' hashes. (``gpu.approx``'s causal Reformer avoids that with the last ``c`` past keys of
    the query's bucket; a different routing.)

    Reformer shares queries and keys (``k_j = q_j / |q_j|``): ``k=None`` (the hash is scale-free, so ``k=q`` is the
    same). With distinct ``k`` the ``2n`` vectors are hashed by the same rotations and sorted together by
    ``(bucket, position, query before key)``, cut into chunks of ``2 chunk`` items, and a query attends to the key
    items of its own chunk and the previous one: about ``chunk`` keys of its bucket per chunk, and for ``k = q``
    exactly Eq. 5 (each token's query and key items are adjacent). ``wrap=True``: the first chunk also looks back at
    the last (``roll``), as ``gpu.approx``'s ``reformer_lsh`` does; Eq. 5 does not. ``rotations``: explicit
    ``(rounds, d, buckets/2)`` rotations (default :func:`lsh_rotations`), shared by the heads. No self added.

    Parameters
    ----------
    q : array_like of float
        Queries, ``(n, d)`` or ``(heads, n, d)``.
    k : array_like of float or None, default None
        Keys of the same shape; ``None``: shared with the queries, as in Reformer.
    buckets : int, default 8
        Hash buckets, even.
    rounds : int, default 1
        Hash rounds (their sets are united).
    chunk : int, default 64
        Slots per chunk, ``1 .. n``.
    causal : bool, default False
        Only keys ``j <= i``.
    seed : int, default 0
        Seed of the rotations (without ``rotations``).
    rotations : array_like or None, default None
        Explicit rotations, ``(rounds, d, buckets // 2)``.
    wrap : bool, default False
        The first chunk also looks back at the last.

    Returns
    -------
    scipy.sparse.csr_array
        ``n x n`` boolean routing.

    Raises
    ------
    TypeError
        If an integer argument is not an integer or a flag is not a bool.
    ValueError
        If an argument is out of range, ``rotations`` has the wrong shape or ``q``, ``k`` are bad.

    References
    ----------
    Kitaev, Kaiser & Levskaya 2020, "Reformer: The Efficient Transformer", ICLR, arXiv 2001.04451.

    Examples
    --------
    >>> q, _ = random_qk(8, 4, seed=0)
    >>> routing = lsh_routing(q, buckets=4, chunk=4)
    >>> routing.shape, bool((routing != routing.T).nnz > 0)  # chunks look back, not forward: not symmetric
    ((8, 8), True)
    """
    q3, k3 = _pair(q, k)
    h, n, d = q3.shape
    buckets = _check_buckets(buckets)
    rounds = check_int("rounds", rounds, 1)
    chunk = check_int("chunk", chunk, 1, n)
    seed = check_int("seed", seed, 0)
    causal, wrap = check_bool("causal", causal), check_bool("wrap", wrap)
    if rotations is None:
        rotations = lsh_rotations(d, buckets, rounds, seed)
    rotations = np.asarray(rotations, dtype=np.float64)
    if rotations.shape != (rounds, d, buckets // 2):
        raise ValueError(f"rotations: expected shape {(rounds, d, buckets // 2)}, got {rotations.shape}")
    size = 2 * chunk  # items (queries and keys) per chunk
    chunks = -(-2 * n // size)
    position = np.concatenate([np.arange(n), np.arange(n)])
    is_key = np.arange(2 * n) >= n
    rows_out, cols_out = [], []
    for r in range(rounds):
        for head in range(h):
            x = np.concatenate([q3[head], k3[head]]) @ rotations[r]
            bucket = np.argmax(np.concatenate([x, -x], axis=1), axis=1)
            order = np.argsort(bucket * (2 * n) + 2 * position + is_key, kind="stable")
            items = np.full(chunks * size, -1, dtype=np.int64)
            items[: 2 * n] = order
            items = items.reshape(chunks, size)
            queries = np.where((items >= 0) & (items < n), items, -1)
            keys = np.where(items >= n, items - n, -1)
            previous = (
                np.roll(keys, 1, axis=0) if wrap and chunks > 1 else np.vstack([np.full((1, size), -1), keys[:-1]])
            )
            near = np.concatenate([keys, previous], axis=1)  # (chunks, 2 size): own chunk and the previous one
            qq = np.broadcast_to(queries[:, :, None], (chunks, size, 2 * size))
            kk = np.broadcast_to(near[:, None, :], (chunks, size, 2 * size))
            valid = (qq >= 0) & (kk >= 0)
            if causal:
                valid &= kk <= qq
            rows_out.append(qq[valid])
            cols_out.append(kk[valid])
    return _csr(np.concatenate(rows_out), np.concatenate(cols_out), n)


def lsh_pattern(
    q,
    k=None,
    buckets: int = 8,
    rounds: int = 1,
    chunk: int = 64,
    causal: bool = False,
    seed: int = 0,
    *,
    wrap: bool = False,
) -> CSRPattern:
    """:func:`lsh_routing` as a pattern (query itself added); lists of per-layer ``q`` (and ``k``) give one layer
    each, layer ``l`` hashed with ``seed + l - 1``.

    Parameters
    ----------
    q, k : array_like of float, or list of them
        One layer's queries (and keys; ``None`` shares the queries), or lists of per-layer arrays.
    buckets, rounds, chunk, causal, seed, wrap
        As :func:`lsh_routing`.

    Returns
    -------
    CSRPattern
        The pattern.

    Raises
    ------
    ValueError
        As :func:`lsh_routing`.

    References
    ----------
    Kitaev, Kaiser & Levskaya 2020, "Reformer: The Efficient Transformer", ICLR, arXiv 2001.04451.

    Examples
    --------
    >>> q, _ = random_qk(8, 4, seed=0)
    >>> lsh_pattern(q, buckets=4, chunk=4).describe()
    'reformer buckets=4 rounds=1 chunk=4 (content, every layer)'
    """
    qs, ks, per_layer = _layers(q, k)
    mats = [
        lsh_routing(a, b, buckets, rounds, chunk, causal, check_int("seed", seed, 0) + i, wrap=wrap)
        for i, (a, b) in enumerate(zip(qs, ks, strict=True))
    ]
    return _pattern(mats, causal, per_layer, "reformer", f"reformer buckets={buckets} rounds={rounds} chunk={chunk}")


def _pattern(mats, causal: bool, per_layer: bool, name: str, text: str) -> CSRPattern:
    depth = f"{len(mats)} layers" if per_layer else "every layer"
    return CSRPattern(
        mats[0].shape[0], mats, causal, per_layer, name=name, description=f"{text} (content, {depth})", what="q"
    )


def random_content_pattern(
    kind: str,
    n: int,
    layers: int,
    *,
    d: int = 64,
    heads: int = 1,
    seed: int = 0,
    causal: bool = False,
    **params,
) -> CSRPattern:
    """A content-based pattern on synthetic data: layer ``l`` routes :func:`random_qk` ``(n, d, seed + l - 1)``
    (i.i.d. Gaussian; a stand-in, not a model's activations) with ``kind`` = ``top-k`` (``k_keys``), ``moba``
    (``block``, ``top_blocks``) or ``reformer`` (``buckets``, ``rounds``, ``chunk``, ``wrap``).

    Parameters
    ----------
    kind : str
        ``"top-k"``, ``"moba"`` or ``"reformer"``.
    n : int
        Tokens.
    layers : int
        Layers (each routes its own random ``q, k``).
    d : int, default 64
        Head dimension.
    heads : int, default 1
        Heads per layer (united).
    seed : int, default 0
        Seed of layer 1's data (layer ``l``: ``seed + l - 1``).
    causal : bool, default False
        Causal routing.
    **params
        The router's own parameters (see above).

    Returns
    -------
    CSRPattern
        ``layers`` layers of content-based routing.

    Raises
    ------
    TypeError
        If an integer argument is not an integer.
    ValueError
        If ``kind`` is unknown, ``params`` do not fit the router, or a value is out of range.

    Examples
    --------
    >>> from receptive import coverage_by_layer
    >>> pattern = random_content_pattern("top-k", 16, 3, d=8, k_keys=2)
    >>> pattern.max_layers, pattern.describe()
    (3, 'top-k k=2 (content, 3 layers)')
    >>> moba = random_content_pattern("moba", 16, 3, d=8, block=4, top_blocks=2)
    >>> coverage_by_layer(moba, max_layers=3).full_coverage_layer
    2
    """
    builders = {"top-k": topk_pattern, "moba": moba_pattern, "reformer": lsh_pattern}
    if kind not in builders:
        raise ValueError(f"kind: expected one of {', '.join(builders)}, got {kind!r}")
    layers, seed = check_int("layers", layers, 1), check_int("seed", seed, 0)
    pairs = [random_qk(n, d, seed + layer, heads) for layer in range(layers)]
    qs, ks = [p[0] for p in pairs], [p[1] for p in pairs]
    if kind == "reformer":
        params.setdefault("seed", seed)
    try:
        return builders[kind](qs, ks, causal=causal, **params)
    except TypeError as err:
        raise ValueError(f"params: {kind} takes other parameters ({err})") from err


__all__ = [
    "lsh_pattern",
    "lsh_rotations",
    "lsh_routing",
    "moba_pattern",
    "moba_routing",
    "random_content_pattern",
    "random_qk",
    "topk_pattern",
    "topk_routing",
]
