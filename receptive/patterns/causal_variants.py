"""Variants of Stochastic Attention meant to keep logarithmic coverage under the causal mask (issue 13).

Causal SA masks the keys of a query's random band that come after it, so a token only hears about its near
predecessors through rare direct edges: shortcuts land at random distances, almost all of order ``n``, and the
intermediate distances (tens to thousands of positions) are left to the sliding window (``docs/theory.md`` Sec. 5).
The variants below put shortcuts at every distance scale:

* :class:`MultiScaleSA` (``sa-ms``): head ``k`` draws its permutation within blocks of size ``b_k`` (default
  ``w, w^2, ..., n``), so its band mixes tokens at distances up to ``b_k``; each head is SA's band over its
  permutation (the banded path and the fused kernel run it unchanged), a layer is the union over heads.
* :class:`KleinbergAttention` (``kleinberg``): ``m`` random keys per query at distance ``d`` with probability
  ``ln(1 + 1/d) / ln(D + 1)`` (``D`` the largest distance available; the discrete log-uniform law, ``~1/d``:
  Kleinberg 2000, "Navigation in a small world", the harmonic distribution that makes a lattice navigable).
* :class:`DilatedHeads` (``dilated``): the deterministic baseline, LongNet-style (Ding et al. 2023,
  arXiv 2307.02486): head ``k`` is a window over every ``r_k``-th position, ``r_k = w^(k-1)``.

Each exists with the sliding window added (``+swa``) and in an equal-keys form (suffix ``-eq``): every head's
window (or the number of random keys) is shrunk so that the expected number of keys a query attends to matches
SA's (causal SA keeps about ``1 + (w-1) i/(n-1)`` of its ``w`` slots, ``(w+1)/2`` on average), except that a
bidirectional dilated head keeps one key on each side, which puts ``dilated-eq`` above SA's keys at large ``n``
(:class:`DilatedHeads`).
:func:`keys_per_query` measures the distinct keys per query of any pattern's layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from graphs.ops import NeighbourOp, Op, WindowOp

from ..permutations import layer_permutation
from ..validation import check_int
from ..windows import window_offsets
from .base import Pattern, WindowPattern
from .local import SlidingWindow

_BLOCK_STREAM = 2  # SeedSequence spawn keys (2, layer, block) for the block permutations of sa-ms heads
_KLEINBERG_STREAM = 3  # (3, layer) for Kleinberg's random keys


def default_blocks(n: int, w: int) -> list[int]:
    """``w, w^2, ...`` while they divide ``n`` and are smaller than it, then ``n`` (one head per distance scale)."""
    n, w = check_int("n", n, 2), check_int("w", w, 1)
    blocks, b = [], w
    while w > 1 and b < n and n % b == 0:
        blocks.append(b)
        b *= w
    return [*blocks, n]


def check_blocks(blocks: Sequence[int], n: int) -> list[int]:
    """Block sizes as a list of distinct ints in ``2..n`` that divide ``n``, else a one-line ``ValueError``."""
    out = []
    if len(blocks) == 0:
        raise ValueError("blocks: expected at least one block size")
    for b in blocks:
        if isinstance(b, bool) or not isinstance(b, int | np.integer) or not 2 <= b <= n or n % b:
            raise ValueError(f"blocks: every block size must be an integer in [2, n = {n}] dividing n, got {b!r}")
        out.append(int(b))
    if len(set(out)) != len(out):
        raise ValueError(f"blocks: expected distinct block sizes, got {list(blocks)}")
    return out


def block_permutation(n: int, block: int, seed: int, layer: int) -> np.ndarray:
    """A uniform random permutation within consecutive blocks of ``block`` positions (``perm[p]`` = original
    position at permuted position ``p``; block ``b`` maps onto itself). ``block = n`` is SA's
    :func:`receptive.layer_permutation`, so one head of ``sa-ms`` is exactly SA."""
    n, block = check_int("n", n, 1), check_int("block", block, 1, n)
    if n % block:
        raise ValueError(f"block: expected a divisor of n = {n}, got {block}")
    if block == n:
        return layer_permutation(n, seed, layer)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_BLOCK_STREAM, layer, block)))
    keys = np.arange(n, dtype=np.int64) // block + rng.random(n)  # block index, then a uniform tie-break
    return np.argsort(keys, kind="stable").astype(np.int64)


def dilation_permutation(n: int, r: int, gap: int = 0) -> np.ndarray:
    """Positions grouped by residue, ``(i mod r, i // r)``, with ``gap`` holes (``-1``) after each group: a window of
    at most ``gap + 1`` keys in this virtual order is a window of stride ``r`` that never crosses into another
    residue class (:class:`graphs.ops.WindowOp` skips holes)."""
    n, r, gap = check_int("n", n, 1), check_int("r", r, 1, n), check_int("gap", gap, 0)
    i = np.arange(n, dtype=np.int64)
    order = np.lexsort((i // r, i % r)).astype(np.int64)
    if gap == 0 or r == 1:
        return order
    counts = np.bincount(i % r, minlength=r)
    out = np.full(n + gap * r, -1, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts + gap)[:-1]])
    slot = np.repeat(starts, counts) + (np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts))
    out[slot] = order
    return out


def equal_key_window(w: int, heads: int, minimum: int = 2) -> int:
    """Per-head window so that ``heads`` heads together add about as many other keys as one window of ``w``:
    ``max(minimum, 1 + round((w - 1) / heads))``. ``minimum`` is 2 by default (a head must see one key besides the
    query); a bidirectional dilated head needs 3 (one key on each side, :class:`DilatedHeads`)."""
    w, heads = check_int("w", w, 1), check_int("heads", heads, 1)
    return max(check_int("minimum", minimum, 1), 1 + round((w - 1) / heads))


class _HeadsPattern(WindowPattern):
    """Shared plumbing: ``heads`` window operators per layer, plus the sliding window with ``swa``."""

    two_sided_band = True

    def __init__(self, n, w, causal=False, circular=False, swa=False, w_swa=None, equal_keys=False):
        super().__init__(n, w, causal, circular)
        self.swa = (
            SlidingWindow(self.n, self.w if w_swa is None else w_swa, self.causal, self.circular) if swa else None
        )
        self.equal_keys = bool(equal_keys)

    def _named(self, base: str) -> str:
        return base + ("+swa" if self.swa is not None else "") + ("-eq" if self.equal_keys else "")

    def _swa_ops(self, layer: int) -> tuple[Op, ...]:
        return self.swa.layer_ops(layer) if self.swa is not None else ()


class MultiScaleSA(_HeadsPattern):
    """Multi-scale SA (``sa-ms``): head ``k`` runs SA's two-sided band of ``head_w`` slots over a permutation drawn
    uniformly *within* blocks of ``blocks[k]`` positions (default :func:`default_blocks`: ``w, w^2, ..., n``); causal
    heads mask keys after the query in original positions, as SA does. A layer is the union over heads (and the
    sliding window of ``w`` keys with ``swa``). The head with block ``n`` uses SA's own permutation, so
    ``blocks=[n]`` is SA. ``head_w`` defaults to ``w`` (cost: ``heads`` times SA's per layer); ``equal_keys``
    sets it to :func:`equal_key_window` (about SA's keys per query in all).

    A band's members lie in the query's block or a neighbouring one, so head ``k`` links distances up to about
    ``2 b_k``, each at random: every distance scale gets random shortcuts, and the causal mask no longer leaves
    distances between ``w`` and ``n/w`` to the window alone.
    """

    name = "sa-ms"

    def __init__(
        self,
        n,
        w,
        causal=False,
        circular=False,
        seed: int = 0,
        blocks: Sequence[int] | None = None,
        head_w: int | None = None,
        swa: bool = False,
        w_swa: int | None = None,
        equal_keys: bool = False,
    ):
        super().__init__(n, w, causal, circular, swa, w_swa, equal_keys)
        self.seed = check_int("seed", seed, 0)
        self.blocks = check_blocks(default_blocks(self.n, self.w) if blocks is None else blocks, self.n)
        if head_w is None:
            head_w = equal_key_window(self.w, len(self.blocks)) if equal_keys else self.w
        self.head_w = check_int("head_w", head_w, 1, self.n)
        self.head_left, self.head_right = window_offsets(self.head_w, False)
        self.name = self._named("sa-ms")
        self.permutation = lru_cache(maxsize=None)(self._permutation)

    def _permutation(self, layer: int, head: int) -> np.ndarray:
        self._check_layer(layer)
        return block_permutation(
            self.n, self.blocks[check_int("head", head, 0, len(self.blocks) - 1)], self.seed, layer
        )

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        order = +1 if self.causal else 0
        heads = tuple(
            WindowOp(self.head_left, self.head_right, self.circular, self.permutation(layer, k), order)
            for k in range(len(self.blocks))
        )
        return heads + self._swa_ops(layer)

    def describe(self) -> str:
        return f"{self.name} w={self.w} head_w={self.head_w} blocks={self.blocks}" + (
            " circular" if self.circular else ""
        )


class DilatedHeads(_HeadsPattern):
    """Dilated heads (``dilated``, LongNet-style, Ding et al. 2023, arXiv 2307.02486; deterministic): head ``k``
    attends to ``i - r_k t`` for ``t = 0 .. head_w - 1`` (causal) or ``t`` in the two-sided window of ``head_w``
    (bidirectional), with dilations ``r_k = w^(k-1)`` while ``r_k < n`` (``r_1 = 1`` is the sliding window). Each
    head is a window over positions ordered by ``(i mod r, i // r)`` with holes between residue classes
    (:func:`dilation_permutation`), so it never leaves its class and, causal, never looks ahead. Causal, with
    ``head_w = w``: every distance ``d < w^H`` is ``sum_k t_k r_k`` with base-``w`` digits ``t_k < w``, one head per
    digit, so coverage is full after at most ``H = ceil(log_w n)`` layers, for ``H`` times SWA's cost per layer.
    ``dilated`` is LongNet's set (``r = 1`` is its own local path); ``dilated+swa`` adds a separate window of ``w``
    keys (it differs from ``dilated`` in the ``-eq`` form, whose heads are narrow).

    Equal keys (``-eq``): ``head_w = equal_key_window(target, H)`` with ``target = (w + 1) // 2`` causal (causal SA's
    mean keys) and ``w`` bidirectional, at least 2 keys causal and at least 3 bidirectional: a two-sided window of 2
    is one-sided (``window_offsets(2, False) = (1, 0)``), so with ``head_w = 2`` no head looks ahead and coverage is
    never full (that was the case at ``w = 8`` from ``n = 2^13``, ``H >= 5``). With ``head_w = 3`` a bidirectional
    layer has ``1 + 2H`` keys per query away from the edges, above SA's ``w`` by ``2H + 1 - w`` (``w = 8``: +3 at
    ``n = 2^14``, +7 at ``2^20``; :meth:`mean_keys` gives the exact mean). Keeping all ``H = ceil(log_w n)`` scales
    is deliberate: ``H'`` heads of 3 keys (``1 + 2H' <= w``) must span ``n`` with dilations of base
    ``n^(1/H')``, and a distance then needs up to ``H' n^(1/H') / 2`` steps, a polynomial law (``w = 8``,
    ``n = 2^12``, exact, rechecked in ``analysis/08_causal``: 3 re-based heads need ``L* = 31``, the 4 base-8 heads
    ``L* = 18``)."""

    name = "dilated"

    def __init__(
        self,
        n,
        w,
        causal=False,
        circular=False,
        dilations: Sequence[int] | None = None,
        head_w: int | None = None,
        swa: bool = False,
        w_swa: int | None = None,
        equal_keys: bool = False,
    ):
        super().__init__(n, w, causal, circular, swa, w_swa, equal_keys)
        if dilations is None:
            dilations, r = [], 1
            while r < self.n and (r == 1 or self.w > 1):
                dilations.append(r)
                r *= max(self.w, 2)
        self.dilations = [check_int("dilations", r, 1, self.n) for r in dilations]
        if not self.dilations:
            raise ValueError("dilations: expected at least one dilation")
        if head_w is None:  # causal heads keep all their keys: match causal SA's (w - 1)/2 other keys
            target = (self.w + 1) // 2 if self.causal else self.w
            # bidirectional, a head of 2 keys looks one way only (window_offsets(2, False) = (1, 0)): no head would
            # reach a later position, so a two-sided equal-keys head keeps one key on each side (head_w >= 3)
            floor = 2 if self.causal else 3
            head_w = equal_key_window(target, len(self.dilations), floor) if equal_keys else self.w
        self.head_w = check_int("head_w", head_w, 1, self.n)
        self.head_left, self.head_right = window_offsets(self.head_w, self.causal)
        self.name = self._named("dilated")
        gap = max(self.head_left, self.head_right)
        self._perms = [dilation_permutation(self.n, r, gap) for r in self.dilations]

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        self._check_layer(layer)
        heads = tuple(
            WindowOp(self.head_left, self.head_right, self.circular and r == 1, None if r == 1 else p)
            for r, p in zip(self.dilations, self._perms, strict=True)
        )
        return heads + self._swa_ops(layer)

    def offsets(self) -> np.ndarray:
        """The distinct offsets ``j - i`` of a layer's keys (sorted; the query's own ``0`` included): ``r t`` for
        every head (``t`` from ``-head_left`` to ``head_right``) and, with ``swa``, the window's. Non-circular only
        (the same set for every query; edges drop the keys that fall outside ``0..n-1``)."""
        if self.circular:
            raise ValueError("circular: offsets are defined for the non-circular dilated heads only")
        t = np.arange(-self.head_left, self.head_right + 1, dtype=np.int64)
        parts = [r * t for r in self.dilations]
        if self.swa is not None:
            parts.append(np.arange(-self.swa.left, self.swa.right + 1, dtype=np.int64))
        return np.unique(np.concatenate(parts))

    def mean_keys(self) -> float:
        """Distinct keys per query of a layer in closed form: an offset ``s`` is a key of the ``n - |s|`` queries
        ``i`` with ``0 <= i + s < n``, so the mean is ``sum_s max(0, n - |s|) / n`` over :meth:`offsets` (equals
        :func:`keys_per_query`, without enumerating the edges: usable at any ``n``)."""
        s = np.abs(self.offsets())
        return float(np.maximum(0, self.n - s).sum() / self.n)

    def describe(self) -> str:
        return f"{self.name} w={self.w} head_w={self.head_w} dilations={self.dilations}"


class KleinbergAttention(Pattern):
    """Distance-stratified random keys (``kleinberg``; Kleinberg 2000, "Navigation in a small world", Nature 406):
    every layer, query ``i`` attends to itself and ``m`` fresh random keys at distance ``d`` drawn from the
    discrete log-uniform law ``P(d) = ln(1 + 1/d) / ln(D + 1)`` on ``d = 1..D`` (``~ 1/d``, the harmonic law):
    causal ``D = i`` (keys ``i - d``); bidirectional a side is chosen in proportion to its mass ``ln(D_side + 1)``
    (``D_left = i``, ``D_right = n - 1 - i``). Every distance scale ``[2^k, 2^(k+1))`` gets the same share of the
    keys, ``~ m ln 2 / ln n`` each. ``m`` defaults to ``w - 1`` (``w`` keys with the query, SA's slots); with
    ``equal_keys`` to ``round((w - 1)/2)`` in causal mode (causal SA keeps ``(w + 1)/2`` keys on average) and
    ``w - 1`` otherwise. Draws are independent, so a query may repeat a key (counted once). Explicit neighbour lists:
    ``n (m + 1)`` int64 entries per layer."""

    name = "kleinberg"

    def __init__(
        self,
        n,
        w,
        causal=False,
        circular=False,
        seed: int = 0,
        m: int | None = None,
        swa: bool = False,
        w_swa: int | None = None,
        equal_keys: bool = False,
    ):
        super().__init__(n, causal)
        if circular:
            raise ValueError("circular: kleinberg draws distances on the line; circular=True is not supported")
        self.circular = False
        self.w = check_int("w", w, 1, n)
        self.seed = check_int("seed", seed, 0)
        self.equal_keys = bool(equal_keys)
        if m is None:
            m = round((self.w - 1) / 2) if (equal_keys and self.causal) else self.w - 1
        self.m = check_int("m", m, 0, n - 1)
        self.swa = SlidingWindow(self.n, self.w if w_swa is None else w_swa, self.causal, False) if swa else None
        self.name = "kleinberg" + ("+swa" if swa else "") + ("-eq" if equal_keys else "")
        self._ops = lru_cache(maxsize=4)(self._layer_op)

    def sample_keys(self, layer: int) -> np.ndarray:
        """``keys[i]``: the ``m`` random keys of query ``i`` in layer ``layer`` (shape ``(n, m)``)."""
        self._check_layer(layer)
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(_KLEINBERG_STREAM, layer)))
        n, m = self.n, self.m
        i = np.arange(n, dtype=np.int64)[:, None]
        u = rng.random((n, m))
        left = np.log1p(i.astype(float))  # mass of the left side: ln(D_left + 1), D_left = i
        if self.causal:
            side = np.ones((n, m), dtype=bool)
            mass = left
        else:
            right = np.log1p((n - 1 - i).astype(float))
            side = rng.random((n, m)) * (left + right) < left
            mass = np.where(side, left, right)
        d = np.floor(np.exp(u * mass)).astype(np.int64)  # P(d) = ln(1 + 1/d) / mass on 1..D
        d = np.clip(d, 1, None)
        keys = np.where(side, i - d, i + d)
        return np.where((keys >= 0) & (keys < n), keys, i)  # only i = 0 (causal) or D = 0 has no key: itself

    def _layer_op(self, layer: int) -> NeighbourOp:
        keys = self.sample_keys(layer)
        n = self.n
        both = np.concatenate([np.arange(n, dtype=np.int64)[:, None], keys], axis=1)
        indptr = np.arange(0, n * (self.m + 1) + 1, self.m + 1, dtype=np.int64)
        return NeighbourOp(indptr, np.ascontiguousarray(both.ravel()))

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        return (self._ops(self._check_layer(layer)),) + (self.swa.layer_ops(layer) if self.swa is not None else ())

    def describe(self) -> str:
        return f"{self.name} w={self.w} m={self.m}"


def keys_per_query(pattern: Pattern, layer: int = 1) -> float:
    """Mean number of distinct keys a query attends to in layer ``layer`` (self included): ``nnz(A_l) / n`` of the
    layer's adjacency (enumerates the ``O(n w)`` edges; for cross-checks and the equal-cost tables)."""
    return pattern.adjacency(layer).nnz / pattern.n


def sa_expected_keys(n: int, w: int, causal: bool) -> float:
    """Expected distinct keys per query of SA with a two-sided band of ``w`` slots (circular or not, edges
    ignored): ``w`` bidirectional; causal ``1 + (w - 1) i/(n - 1)`` at position ``i`` (each other slot holds a
    uniform other token, earlier with probability ``i/(n-1)``), ``(w + 1)/2`` averaged over ``i``."""
    n, w = check_int("n", n, 2), check_int("w", w, 1)
    return (w + 1) / 2 if causal else float(w)


VARIANT_FAMILIES = ("sa-ms", "kleinberg", "dilated")


def variant_names() -> list[str]:
    """Every registered name: ``family``, ``family+swa`` and their ``-eq`` forms."""
    return [f + s + e for f in VARIANT_FAMILIES for s in ("", "+swa") for e in ("", "-eq")]


def make_variant(name: str, n: int, w: int, causal: bool = False, circular: bool = False, seed: int = 0) -> Pattern:
    """Build one of :func:`variant_names` (``sa-ms+swa-eq``: multi-scale SA with the window, equal keys)."""
    if name not in variant_names():
        raise ValueError(f"name: unknown variant {name!r}; choose from {', '.join(variant_names())}")
    equal = name.endswith("-eq")
    base = name[:-3] if equal else name
    swa = base.endswith("+swa")
    family = base[:-4] if swa else base
    if family == "sa-ms":
        return MultiScaleSA(n, w, causal, circular, seed, swa=swa, equal_keys=equal)
    if family == "kleinberg":
        return KleinbergAttention(n, w, causal, circular, seed, swa=swa, equal_keys=equal)
    return DilatedHeads(n, w, causal, circular, swa=swa, equal_keys=equal)


def registry_constructors() -> dict:
    """``{name: constructor(n, w, causal, circular, seed, permutations)}`` for :mod:`.registry` (the variants draw
    their own permutations: passing ``permutations`` is an error)."""

    def build(name):
        def construct(n, w, causal, circular, seed, permutations):
            if permutations is not None:
                raise ValueError(f"permutations: {name} draws its own (per-head) permutations; pass None")
            return make_variant(name, n, w, causal, circular, seed)

        return construct

    return {name: build(name) for name in variant_names()}


def heads_of(n: int, w: int) -> int:
    """Number of heads of the default ``sa-ms`` (``len(default_blocks(n, w))``): ``~ log_w n``."""
    return len(default_blocks(n, w)) if w > 1 else 1


__all__ = [
    "DilatedHeads",
    "KleinbergAttention",
    "MultiScaleSA",
    "block_permutation",
    "check_blocks",
    "default_blocks",
    "dilation_permutation",
    "equal_key_window",
    "heads_of",
    "keys_per_query",
    "make_variant",
    "registry_constructors",
    "sa_expected_keys",
    "variant_names",
]
