"""The causal SA variants as attention heads: what :class:`gpu.StochasticAttentionLayer` ``(variant=...)`` and
:class:`gpu.GatedSAPlusSWALayer` ``(variant=...)`` run in place of SA.

:func:`variant_attention` computes, for query head ``h`` of ``heads`` and window ``w``, softmax attention of every
query ``i`` over its key set ``K_h(i)`` (one softmax per head, ``y_i = sum_{j in K_h(i)} softmax_j(q_i . k_j /
sqrt(d)) v_j``):

* ``sa``: SA (Jin & Sui 2026, arXiv 2604.00754): the two-sided band of ``w`` slots in the order of one permutation
  shared by the heads (causal: keys whose original position is after the query's are masked).
* ``sa-ms``: multi-scale SA: the same band over head ``h``'s own permutation, drawn uniformly within blocks of
  :func:`head_blocks`'s size ``b_h`` (default ``w, w^2, ..., n``, largest first): the banded path and the fused
  kernel run it as per-head permutations.
* ``kleinberg``: distance-stratified random keys (Kleinberg 2000, Nature 406): ``K(i)`` is ``i`` and ``m = w - 1``
  keys at distance ``d`` with ``P(d) = ln(1 + 1/d) / ln(D + 1)`` on ``d = 1..D`` (causal ``D = i``; bidirectional a
  side with probability proportional to ``ln(D_side + 1)``), one table per layer shared by the heads (the pattern
  has one key list per layer), repeats counted once. Explicit lists: the gather path of
  :func:`gpu.attention.neighbour.neighbour_attention` (``O(n w d)`` gathered rows; no band to run it on).
* ``dilated``: dilated heads (LongNet, Ding et al. 2023, arXiv 2307.02486; deterministic): head ``h`` attends
  ``i + r_h t`` for ``t`` in the window offsets of ``w`` (causal ``t = -(w-1)..0``, bidirectional
  ``-(w//2)..(w-1)//2``) inside ``0..n-1``, ``r_h`` from ``head_dilations`` (``1, w, w^2, ... < n``, smallest
  first). Banded, not gathered: the positions of residue class ``c = i mod r`` are a contiguous sequence
  ``c, c + r, ...`` of the ``(n/r, r)`` reshape's transpose, so each class is a sliding window of ``w`` over its own
  row (``gpu.swa_attention``, any backend, fused on CUDA); rows of unequal length (``r`` not dividing ``n``) run as
  two batches of exact length, so no padding key is ever attended. Cost: SWA's per head, plus one copy of q, k, v.

Keys: in eval (``seed`` given) the keys are exactly those of
:func:`receptive.patterns.causal_variants.make_variant` ``(variant, n, w, causal, seed=seed)``'s layer ``layer``
(``sa``: :func:`receptive.permutations.layer_permutation`); the union over the heads is that pattern's adjacency
once ``heads`` is at least its number of scales (fewer heads drop scales: see :func:`head_blocks`,
``head_dilations``). Without ``seed`` every call draws fresh permutations or keys on q's device (or
``generator``'s) with torch's generator: no host round trip, no synchronisation.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
import torch.nn.functional as F

from gpu.attention.functional import _expand_kv, sa_attention, swa_attention
from gpu.attention.neighbour import neighbour_attention
from gpu.validation import check_backend, check_bool, check_causal, check_choice, check_generator, check_int, check_qkv
from receptive.patterns.causal_variants import (
    DilatedHeads,
    KleinbergAttention,
    block_permutation,
    check_blocks,
    default_blocks,
)
from receptive.patterns.names import check_names
from receptive.windows import check_window, max_window

__all__ = [
    "VARIANTS",
    "check_variant",
    "dilated_attention",
    "head_blocks",
    "head_dilations",
    "kleinberg_keys",
    "multiscale_permutations",
    "variant_attention",
]

VARIANTS = ("sa", "sa-ms", "kleinberg", "dilated")
check_names(VARIANTS, "gpu.attention.variants.VARIANTS")
#: the variants that run a permutation through SA's band (their state is a permutation)
PERMUTED = ("sa", "sa-ms")


def check_variant(variant) -> str:
    """``variant`` if it is one of :data:`VARIANTS`, else a one-line error naming ``variant``.

    Parameters
    ----------
    variant : str
        The variant's name.

    Returns
    -------
    str
        ``variant`` unchanged.

    Raises
    ------
    TypeError
        If ``variant`` is not a string.
    ValueError
        If ``variant`` is not one of :data:`VARIANTS`.

    Examples
    --------
    >>> check_variant("sa-ms")
    'sa-ms'
    >>> check_variant("swa")
    Traceback (most recent call last):
    ...
    ValueError: variant: expected one of sa, sa-ms, kleinberg, dilated, got 'swa'
    """
    return check_choice("variant", variant, VARIANTS)


def check_blocks_option(blocks, variant: str):
    """``blocks`` as given (``None`` or a sequence of ints >= 2, checked against ``n`` when it is known), only for
    ``sa-ms``; a one-line ``ValueError`` naming ``blocks`` otherwise."""
    if blocks is None:
        return None
    if variant != "sa-ms":
        raise ValueError(f"blocks: only variant 'sa-ms' takes block sizes, got blocks with variant {variant!r}")
    if isinstance(blocks, str | bytes) or not hasattr(blocks, "__len__"):
        raise TypeError(f"blocks: expected a sequence of block sizes, got {type(blocks).__name__}")
    bad = [b for b in blocks if isinstance(b, bool) or not isinstance(b, int | np.integer) or b < 2]
    if len(blocks) == 0 or bad or len(set(blocks)) != len(blocks):
        raise ValueError(f"blocks: expected distinct integers >= 2 (divisors of n), got {list(blocks)!r}")
    return tuple(int(b) for b in blocks)  # that they divide n is checked once n is known (check_blocks)


def head_blocks(n: int, heads: int, w: int, blocks=None) -> list[int]:
    """Block size of every head of multi-scale SA (``sa-ms``).

    ``blocks`` (default :func:`receptive.patterns.causal_variants.default_blocks`: ``w, w^2, ..., n``) are assigned
    to the heads in turn, the largest scale first (with fewer heads than scales, the smallest scales are dropped).

    Parameters
    ----------
    n : int
        The sequence length.
    heads : int
        The number of query heads, ``>= 1``.
    w : int
        The window.
    blocks : sequence of int or None, default None
        The block sizes (divisors of ``n``); ``None``: the default scales.

    Returns
    -------
    list of int
        The block size of head ``h`` at index ``h``.

    Raises
    ------
    TypeError
        If ``heads`` is not an integer.
    ValueError
        If ``heads < 1`` or a block size does not divide ``n``.

    Examples
    --------
    >>> head_blocks(64, 4, 4)
    [64, 16, 4, 64]
    >>> head_blocks(64, 2, 4, blocks=[2, 8])
    [8, 2]
    """
    heads = check_int("heads", heads, 1)
    scales = check_blocks(default_blocks(n, w) if blocks is None else blocks, n)[::-1]
    return [scales[h % len(scales)] for h in range(heads)]


def multiscale_permutations(n, heads, w, *, blocks=None, seed=None, layer=1, generator=None, device=None):
    """Per-head permutations ``(heads, n)`` of multi-scale SA (``sa-ms``).

    Head ``h`` permutes uniformly within blocks of :func:`head_blocks`'s size. ``seed`` gives
    :func:`receptive.patterns.causal_variants.block_permutation`'s (the ones the coverage engine analyses);
    otherwise they are drawn on ``device`` (q's) with ``generator``: the block index plus a uniform tie-break,
    argsorted, so no host round trip.

    Parameters
    ----------
    n : int
        The sequence length, ``>= 1``.
    heads : int
        The number of heads, ``>= 1``.
    w : int
        The window (sets the default block sizes).
    blocks : sequence of int or None, default None
        The block sizes (divisors of ``n``); ``None``: :func:`head_blocks`'s default.
    seed : int or None, default None
        Seed of the pattern's permutations; ``None`` draws fresh ones.
    layer : int, default 1
        Layer of the seeded permutations (1-based).
    generator : torch.Generator or None, default None
        Generator of fresh permutations (without ``seed``).
    device : torch.device or str or None, default None
        Where the permutations live.

    Returns
    -------
    torch.Tensor
        int64 ``(heads, n)``; row ``h`` is a permutation of ``0..n-1`` that maps every block of size ``b_h`` onto
        itself.

    Raises
    ------
    TypeError
        If ``n`` or ``heads`` is not an integer.
    ValueError
        If ``n`` or ``heads`` is below 1, or a block size does not divide ``n``.

    Examples
    --------
    >>> import torch
    >>> perms = multiscale_permutations(16, 2, 4, generator=torch.Generator().manual_seed(0))
    >>> tuple(perms.shape)
    (2, 16)
    >>> bool((perms[1] // 4 == torch.arange(16) // 4).all())  # head 1 permutes within blocks of 4
    True
    """
    if check_int("n", n, 1) == 1:  # one token: nothing to permute (the patterns start at n = 2)
        return torch.zeros((check_int("heads", heads, 1), 1), dtype=torch.int64, device=device)
    sizes = head_blocks(n, heads, w, blocks)
    if seed is not None:
        return _seeded_multiscale(n, tuple(sizes), seed, layer, torch.device(device) if device else torch.device("cpu"))
    where = device if generator is None else generator.device
    positions = torch.arange(n, device=where, dtype=torch.float64)
    noise = torch.rand((heads, n), generator=generator, device=where, dtype=torch.float64)
    size = _device_sizes(tuple(sizes), torch.device(where) if where is not None else torch.device("cpu"))
    return torch.argsort(torch.floor(positions / size) + noise, dim=-1).to(device)


@functools.lru_cache(maxsize=64)
def _device_sizes(sizes: tuple, device: torch.device) -> torch.Tensor:
    """The block sizes as a float64 column on ``device``, copied there once (no host-to-device copy per forward)."""
    return torch.tensor(sizes, device=device, dtype=torch.float64)[:, None]


@functools.lru_cache(maxsize=8)
def _seeded_multiscale(n: int, sizes: tuple, seed: int, layer: int, device: torch.device) -> torch.Tensor:
    """The seeded per-head block permutations on ``device``, built and copied once per (n, sizes, seed, layer)."""
    return torch.as_tensor(np.stack([block_permutation(n, b, seed, layer) for b in sizes]), device=device)


@functools.lru_cache(maxsize=256)
def _pattern_dilations(n: int, w: int) -> tuple[int, ...]:
    return (1,) if n == 1 else tuple(DilatedHeads(n, w).dilations)  # one token: the window is the token itself


def head_dilations(n: int, heads: int, w: int) -> list[int]:
    """Dilation of every head of ``dilated``.

    The default dilations of :class:`receptive.patterns.causal_variants.DilatedHeads` ``(n, w)`` (``1, w, w^2,
    ...`` below ``n``; only ``1`` for ``w = 1``), smallest first, assigned to the heads in turn (with fewer heads
    than dilations the largest are dropped: ``r = 1`` is the window that reaches the nearest keys). The pattern is
    LongNet's dilated attention [1]_.

    Parameters
    ----------
    n : int
        The sequence length, ``>= 1``.
    heads : int
        The number of heads, ``>= 1``.
    w : int
        The window, ``1..n``.

    Returns
    -------
    list of int
        The dilation of head ``h`` at index ``h``.

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If an argument is out of range.

    References
    ----------
    .. [1] J. Ding et al., "LongNet: Scaling Transformers to 1,000,000,000 Tokens", 2023, arXiv:2307.02486.

    Examples
    --------
    >>> head_dilations(64, 4, 4)
    [1, 4, 16, 1]
    """
    n, heads = check_int("n", n, 1), check_int("heads", heads, 1)
    scales = _pattern_dilations(n, check_int("w", w, 1, n))
    return [scales[h % len(scales)] for h in range(heads)]


def _distinct(table: torch.Tensor) -> torch.Tensor:
    """Rows sorted, every repeat of a key replaced by ``-1`` (padding): each key is attended once."""
    table = torch.sort(table, dim=-1).values
    repeat = torch.zeros_like(table, dtype=torch.bool)
    repeat[:, 1:] = table[:, 1:] == table[:, :-1]
    return table.masked_fill(repeat, -1)


@functools.lru_cache(maxsize=8)
def _seeded_kleinberg(n: int, w: int, causal: bool, seed: int, layer: int, device: torch.device) -> torch.Tensor:
    keys = KleinbergAttention(n, w, causal, seed=seed).sample_keys(layer)
    table = np.concatenate([np.arange(n, dtype=np.int64)[:, None], keys], axis=1)
    return _distinct(torch.as_tensor(table, device=device))


def kleinberg_keys(n: int, w: int, causal: bool = False, *, seed=None, layer: int = 1, generator=None, device=None):
    """Key table ``(n, w)`` of ``kleinberg``: each query, itself and ``w - 1`` distance-stratified random keys.

    Row ``i`` holds ``i`` and ``m = w - 1`` keys at distance ``d`` with ``P(d) = ln(1 + 1/d) / ln(D + 1)`` on
    ``d = 1..D`` (Kleinberg's harmonic law of long-range contacts [1]_; causal: ``D = i``, key ``i - d``;
    bidirectional: the left side with probability ``ln(i + 1) / (ln(i + 1) + ln(n - i))``, then ``D`` that side's
    room), sorted, repeats as ``-1``. Drawn as ``d = floor(exp(u ln(D + 1)))``, ``u`` uniform (a query without room
    keeps only itself).

    ``seed``: exactly :meth:`receptive.patterns.causal_variants.KleinbergAttention.sample_keys` ``(layer)`` of
    ``KleinbergAttention(n, w, causal, seed=seed)`` (copied to ``device`` once, then cached); otherwise drawn with
    torch on ``generator``'s device (``device`` without one) in float64, the same law.

    Parameters
    ----------
    n : int
        The sequence length, ``>= 1``.
    w : int
        Keys per query, ``1..n``.
    causal : bool, default False
        Only keys before the query.
    seed : int or None, default None
        Seed of the pattern's keys; ``None`` draws fresh ones.
    layer : int, default 1
        Layer of the seeded keys (1-based).
    generator : torch.Generator or None, default None
        Generator of fresh keys (without ``seed``).
    device : torch.device or str or None, default None
        Where the table lives.

    Returns
    -------
    torch.Tensor
        int64 ``(n, w)``; row ``i`` sorted, ``-1`` for a repeated key.

    Raises
    ------
    TypeError
        If ``n``, ``w``, ``layer`` or ``seed`` is not an integer.
    ValueError
        If one of them is out of range.

    References
    ----------
    .. [1] J. Kleinberg, "Navigation in a small world", Nature 406, 845 (2000).

    Examples
    --------
    >>> import torch
    >>> table = kleinberg_keys(16, 4, causal=True, generator=torch.Generator().manual_seed(0))
    >>> tuple(table.shape)
    (16, 4)
    >>> bool(((table <= torch.arange(16)[:, None]) | (table == -1)).all())  # causal: no key after the query
    True
    """
    n = check_int("n", n, 1)
    w = check_int("w", w, 1, n)
    layer = check_int("layer", layer, 1)
    if seed is not None:
        return _seeded_kleinberg(n, w, bool(causal), check_int("seed", seed, 0), layer, torch.device(device or "cpu"))
    where = device if generator is None else generator.device
    m = w - 1
    pos = torch.arange(n, device=where, dtype=torch.int64)[:, None]
    left = torch.log1p(pos.to(torch.float64))  # ln(D_left + 1), D_left = i
    u = torch.rand((n, m), generator=generator, device=where, dtype=torch.float64)
    if causal:
        side = torch.ones((n, m), device=where, dtype=torch.bool)
        mass = left
    else:
        right = torch.log1p((n - 1 - pos).to(torch.float64))
        side = torch.rand((n, m), generator=generator, device=where, dtype=torch.float64) * (left + right) < left
        mass = torch.where(side, left, right)
    d = torch.floor(torch.exp(u * mass)).clamp(min=1).to(torch.int64)
    keys = torch.where(side, pos - d, pos + d)
    keys = torch.where((keys >= 0) & (keys < n), keys, pos)  # no room on the side (i = 0 causal): the query itself
    return _distinct(torch.cat([pos, keys], dim=1)).to(device)


def _dilated_group(q, k, v, r: int, w: int, causal: bool, backend: str) -> torch.Tensor:
    """One dilation ``r`` on heads that share it: residue class ``c`` is row ``c`` of the ``(ceil(n/r), r)`` reshape's
    transpose, a sliding window of ``w`` runs along each row (classes ``c < n mod r`` have one position more: two
    batches of exact length, so no padding is attended)."""
    b, h, n, d = q.shape

    def window(*rows):
        count, length = rows[0].shape[2], rows[0].shape[3]
        flat = [t.reshape(b, h * count, length, d) for t in rows]
        out = swa_attention(
            *flat, min(w, max_window(length, causal, False)), causal=causal, backend=backend, check_finite=False
        )
        return out.view(b, h, count, length, d)

    if r == 1:
        return swa_attention(
            q, k, v, min(w, max_window(n, causal, False)), causal=causal, backend=backend, check_finite=False
        )
    length, extra = -(-n // r), n % r

    def fold(x):  # (b, h, n, d) -> (b, h, r, length, d): row c holds positions c, c + r, c + 2r, ...
        return F.pad(x, (0, 0, 0, length * r - n)).view(b, h, length, r, d).transpose(2, 3)

    fq, fk, fv = fold(q), fold(k), fold(v)
    if extra == 0:
        out = window(fq, fk, fv)
    else:
        longer = window(fq[:, :, :extra], fk[:, :, :extra], fv[:, :, :extra])
        shorter = window(fq[:, :, extra:, :-1], fk[:, :, extra:, :-1], fv[:, :, extra:, :-1])
        out = torch.cat([longer, F.pad(shorter, (0, 0, 0, 1))], dim=2)
    return out.transpose(2, 3).reshape(b, h, length * r, d)[:, :, :n]


def dilated_attention(q, k, v, w: int, causal: bool = False, dilations=None, backend: str = "auto") -> torch.Tensor:
    """Dilated heads (LongNet [1]_): query head ``h`` attends ``i + r t`` for the window offsets ``t`` of ``w``.

    ``t`` runs over the window offsets of ``w`` (see :mod:`receptive.windows`; positions in ``0..n-1``),
    ``r = dilations[h mod len(dilations)]``; ``dilations`` defaults to ``head_dilations``'s. Banded per residue
    class (see the module docstring), ``backend`` as :func:`gpu.swa_attention`'s.

    Parameters
    ----------
    q : torch.Tensor
        ``(batch, heads, n, d)``, floating point.
    k, v : torch.Tensor
        ``(batch, kv_heads, n, d)``, same dtype and device; ``kv_heads`` divides ``heads`` (GQA).
    w : int
        The window, ``1..n``.
    causal : bool, default False
        Only keys at or before the query's position.
    dilations : sequence of int or None, default None
        The dilations, each in ``1..n``, assigned to the heads in turn; ``None``: ``head_dilations``'s.
    backend : str, default "auto"
        The band's backend, one of ``gpu.BACKENDS``.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d)``.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``w`` or a dilation is out of range, ``dilations`` is empty, or the shapes do not match.

    References
    ----------
    .. [1] J. Ding et al., "LongNet: Scaling Transformers to 1,000,000,000 Tokens", 2023, arXiv:2307.02486.

    Examples
    --------
    >>> import torch
    >>> from gpu import swa_attention
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 2, 12, 4, generator=g) for _ in range(3))
    >>> out = dilated_attention(q, k, v, 3, causal=True, dilations=[1, 2])
    >>> bool(torch.allclose(out[:, :1], swa_attention(q[:, :1], k[:, :1], v[:, :1], 3, causal=True)))  # r = 1
    True
    >>> even = dilated_attention(q[:, 1:, ::2], k[:, 1:, ::2], v[:, 1:, ::2], 3, causal=True, dilations=[1])
    >>> bool(torch.allclose(out[:, 1:, ::2], even))  # r = 2: the even positions attend among themselves
    True
    """
    check_backend(backend)
    check_qkv(q, k, v)
    causal = check_causal(causal)
    _, heads, n, _ = q.shape
    w = check_int("w", w, 1, n)
    if dilations is None:
        scales = list(_pattern_dilations(n, w))
    else:
        if isinstance(dilations, str | bytes) or not hasattr(dilations, "__len__") or len(dilations) == 0:
            raise ValueError(f"dilations: expected a non-empty sequence of integers in [1, {n}], got {dilations!r}")
        scales = [check_int("dilations", r, 1, n) for r in dilations]
    used = min(len(scales), heads)
    k, v = _expand_kv(q, k, v)
    if used == 1:
        return _dilated_group(q, k, v, scales[0], w, causal, backend)
    out = q.new_empty(q.shape)
    for j in range(used):  # one call per dilation (a handful): heads j, j + used, ... share scales[j]
        out[:, j::used] = _dilated_group(q[:, j::used], k[:, j::used], v[:, j::used], scales[j], w, causal, backend)
    return out


def variant_attention(
    q,
    k,
    v,
    w: int,
    variant: str = "sa",
    *,
    causal: bool = False,
    seed: int | None = None,
    layer: int = 1,
    blocks=None,
    generator: torch.Generator | None = None,
    backend: str = "auto",
    return_state: bool = False,
):
    """Attention of ``variant`` (:data:`VARIANTS`, see the module docstring) with window ``w`` on ``(batch, heads,
    n, d)`` tensors (GQA: ``k, v`` may have a divisor of the query heads).

    ``w``: ``1..2n-1`` for ``sa`` and ``sa-ms`` (SA's band), ``1..n`` for ``kleinberg`` and ``dilated`` (the
    patterns' range). ``seed`` (with ``layer``): the keys of the seeded pattern, the ones ``receptive.coverage``
    analyses; ``None``: fresh randomness on q's device (``generator``'s if given). ``blocks``: ``sa-ms``'s block
    sizes (divisors of ``n``). ``backend``: the band's (``sa``, ``sa-ms``, ``dilated``); ``kleinberg`` always
    gathers. ``return_state=True`` returns ``(out, state)``: the permutation (``sa``: ``(n,)``; ``sa-ms``:
    ``(heads, n)``), the key table (``kleinberg``: ``(n, w)``, ``-1`` = repeat), or the per-head dilations
    (``dilated``: a tuple of ints; nothing random).

    Parameters
    ----------
    q : torch.Tensor
        ``(batch, heads, n, d)``, floating point.
    k, v : torch.Tensor
        ``(batch, kv_heads, n, d)``, same dtype and device; ``kv_heads`` divides ``heads``.
    w : int
        The window (see above for the range per variant).
    variant : str, default "sa"
        One of :data:`VARIANTS`.
    causal : bool, default False
        Only keys at or before the query's position.
    seed : int or None, default None
        Seed of the pattern's keys; ``None`` draws fresh ones.
    layer : int, default 1
        Layer of the seeded keys (1-based).
    blocks : sequence of int or None, default None
        ``sa-ms`` only: the block sizes.
    generator : torch.Generator or None, default None
        Generator of fresh randomness (without ``seed``).
    backend : str, default "auto"
        The band's backend, one of ``gpu.BACKENDS``.
    return_state : bool, default False
        Also return the permutation, key table or dilations used.

    Returns
    -------
    torch.Tensor or tuple
        ``(batch, heads, n, d)``; with ``return_state`` ``(out, state)``.

    Raises
    ------
    TypeError
        If an argument has the wrong type (``variant`` not a string, ``causal`` not a bool, ...).
    ValueError
        If ``variant`` is unknown or a value is out of range.

    References
    ----------
    - Jin & Sui (2026). Stochastic Attention. arXiv:2604.00754.
    - Kleinberg, J. (2000). Navigation in a small world. Nature 406, 845.
    - Ding, J. et al. (2023). LongNet: Scaling Transformers to 1,000,000,000 Tokens. arXiv:2307.02486.

    Examples
    --------
    >>> import torch
    >>> from gpu import sa_attention
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 2, 8, 4, generator=g) for _ in range(3))
    >>> bool(torch.allclose(variant_attention(q, k, v, 3, "sa", seed=0), sa_attention(q, k, v, 3, seed=0)))
    True
    >>> out, dilations = variant_attention(q, k, v, 3, "dilated", return_state=True)  # head h: every r_h-th position
    >>> tuple(out.shape), dilations
    ((1, 2, 8, 4), (1, 3))
    """
    variant = check_variant(variant)
    check_generator(generator)
    return_state = check_bool("return_state", return_state)
    check_backend(backend)
    check_qkv(q, k, v)
    causal = check_causal(causal)
    _, heads, n, _ = q.shape
    blocks = check_blocks_option(blocks, variant)
    layer = check_int("layer", layer, 1)
    seed = None if seed is None else check_int("seed", seed, 0)
    if variant in PERMUTED:
        w = check_window(w, n, False, False)
    else:
        w = check_int("w", w, 1, n)
    if variant == "sa":
        out, state = sa_attention(
            q,
            k,
            v,
            w,
            causal=causal,
            generator=generator,
            seed=seed,
            layer=layer,
            backend=backend,
            return_perm=True,
            check_finite=False,
        )
    elif variant == "sa-ms":
        state = multiscale_permutations(
            n, heads, w, blocks=blocks, seed=seed, layer=layer, generator=generator, device=q.device
        )
        out = sa_attention(q, k, v, w, perm=state, causal=causal, backend=backend, validate=False, check_finite=False)
    elif variant == "kleinberg":
        state = kleinberg_keys(n, w, causal, seed=seed, layer=layer, generator=generator, device=q.device)
        out = neighbour_attention(q, k, v, state, validate=False)
    else:
        state = tuple(head_dilations(n, heads, w))
        out = dilated_attention(q, k, v, w, causal, dilations=list(_pattern_dilations(n, w)), backend=backend)
    if not return_state:
        return out
    return out, state.clone() if isinstance(state, torch.Tensor) else state
