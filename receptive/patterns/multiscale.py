"""Multi-scale Stochastic Attention (``sa-ms``), a causal SA variant (registry: :mod:`.causal_variants`).

Causal SA masks the keys of a query's random band that come after it, so a token only hears about its near
predecessors through rare direct edges: shortcuts land at random distances, almost all of order ``n``, and the
intermediate distances (tens to thousands of positions) are left to the sliding window (``docs/theory.md`` Sec. 5).
Multi-scale SA puts random shortcuts at every distance scale.

:class:`MultiScaleSA` (``sa-ms``): head ``k`` draws its permutation within blocks of size ``b_k`` (default
``w, w^2, ..., n``), so its band mixes tokens at distances up to ``b_k``; each head is SA's band over its
permutation (the banded path and the fused kernel run it unchanged), a layer is the union over heads.
:func:`block_permutation` draws a head's permutation, :func:`default_blocks` / :func:`check_blocks` give and check
the block sizes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphs.ops import Op, WindowOp

from ..permutations import layer_permutation
from ..validation import check_int
from ..windows import window_offsets
from ._heads import _HeadsPattern, equal_key_window
from .base import layer_cached

_BLOCK_STREAM = 2  # SeedSequence spawn keys (2, layer, block) for the block permutations of sa-ms heads


def default_blocks(n: int, w: int) -> list[int]:
    """``w, w^2, ...`` while they divide ``n`` and are smaller than it, then ``n`` (one head per distance scale).

    Parameters
    ----------
    n : int
        Sequence length, ``>= 2``.
    w : int
        Window size, ``>= 1`` (``1``: the single block ``n``).

    Returns
    -------
    list of int
        The block sizes, increasing, ending with ``n``.

    Raises
    ------
    TypeError
        If ``n`` or ``w`` is not an integer.
    ValueError
        If ``n`` or ``w`` is out of range.

    Examples
    --------
    >>> from receptive.patterns.multiscale import default_blocks
    >>> default_blocks(4096, 8), default_blocks(1000, 8), default_blocks(64, 1)
    ([8, 64, 512, 4096], [8, 1000], [64])

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    n, w = check_int("n", n, 2), check_int("w", w, 1)
    blocks, b = [], w
    while w > 1 and b < n and n % b == 0:
        blocks.append(b)
        b *= w
    return [*blocks, n]


def check_blocks(blocks: Sequence[int], n: int) -> list[int]:
    """Block sizes as a list of distinct ints in ``2..n`` that divide ``n``, else a one-line error.

    Parameters
    ----------
    blocks : sequence of int
        The block sizes.
    n : int
        Sequence length.

    Returns
    -------
    list of int
        The block sizes as Python ints, in the given order.

    Raises
    ------
    TypeError
        If a block size is not an integer.
    ValueError
        If ``blocks`` is empty, a size is outside ``2..n`` or does not divide ``n``, or sizes repeat.

    Examples
    --------
    >>> from receptive.patterns.multiscale import check_blocks
    >>> check_blocks([4, 16], 16)
    [4, 16]
    >>> check_blocks([3], 16)
    Traceback (most recent call last):
    ...
    ValueError: blocks: every block size must be an integer in [2, n = 16] dividing n, got 3
    """
    out = []
    if len(blocks) == 0:
        raise ValueError("blocks: expected at least one block size")
    for b in blocks:
        if isinstance(b, bool) or not isinstance(b, int | np.integer):
            raise TypeError(f"blocks: every block size must be an integer, got {b!r} ({type(b).__name__})")
        if not 2 <= b <= n or n % b:
            raise ValueError(f"blocks: every block size must be an integer in [2, n = {n}] dividing n, got {b!r}")
        out.append(int(b))
    if len(set(out)) != len(out):
        raise ValueError(f"blocks: expected distinct block sizes, got {list(blocks)}")
    return out


def block_permutation(n: int, block: int, seed: int, layer: int) -> np.ndarray:
    """A uniform random permutation within consecutive blocks of ``block`` positions.

    ``perm[p]`` = original position at permuted position ``p``; block ``b`` maps onto itself. ``block = n`` is SA's
    :func:`receptive.layer_permutation`, so one head of ``sa-ms`` is exactly SA.

    Parameters
    ----------
    n : int
        Sequence length, ``>= 1``.
    block : int
        Block size, a divisor of ``n``.
    seed : int
        Seed.
    layer : int
        Layer (one independent permutation per layer and block size).

    Returns
    -------
    numpy.ndarray
        int64 permutation of ``0..n-1``.

    Raises
    ------
    TypeError
        If ``n`` or ``block`` is not an integer.
    ValueError
        If ``block`` is outside ``1..n`` or does not divide ``n``.

    Examples
    --------
    >>> import numpy as np
    >>> from receptive import layer_permutation
    >>> from receptive.patterns.multiscale import block_permutation
    >>> perm = block_permutation(8, 4, 0, 1)
    >>> sorted(perm[:4].tolist()), sorted(perm[4:].tolist())
    ([0, 1, 2, 3], [4, 5, 6, 7])
    >>> bool(np.array_equal(block_permutation(8, 8, 0, 1), layer_permutation(8, 0, 1)))
    True

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    n, block = check_int("n", n, 1), check_int("block", block, 1, n)
    if n % block:
        raise ValueError(f"block: expected a divisor of n = {n}, got {block}")
    if block == n:
        return layer_permutation(n, seed, layer)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_BLOCK_STREAM, layer, block)))
    keys = np.arange(n, dtype=np.int64) // block + rng.random(n)  # block index, then a uniform tie-break
    return np.argsort(keys, kind="stable").astype(np.int64)


class MultiScaleSA(_HeadsPattern):
    """Multi-scale SA (``sa-ms``): SA's band per head over a permutation drawn within blocks.

    Head ``k`` runs SA's two-sided band of ``head_w`` slots over a permutation drawn uniformly *within* blocks of
    ``blocks[k]`` positions (default :func:`default_blocks`: ``w, w^2, ..., n``); causal heads mask keys after the
    query in original positions, as SA does. A layer is the union over heads (and the sliding window of ``w`` keys
    with ``swa``). The head with block ``n`` uses SA's own permutation, so ``blocks=[n]`` is SA. ``head_w`` defaults
    to ``w`` (cost: ``heads`` times SA's per layer); ``equal_keys`` sets it to :func:`equal_key_window` (about SA's
    keys per query in all).

    A band's members lie in the query's block or a neighbouring one, so head ``k`` links distances up to about
    ``2 b_k``, each at random: every distance scale gets random shortcuts, and the causal mask no longer leaves
    distances between ``w`` and ``n/w`` to the window alone.

    Parameters
    ----------
    n : int
        Sequence length.
    w : int
        Window size (and the default head band).
    causal : bool, optional
        Causal mask.
    circular : bool, optional
        Circular bands.
    seed : int, optional
        Seed of the permutations, ``>= 0``.
    blocks : sequence of int or None, optional
        Block sizes, one head each (:func:`check_blocks`); ``None``: :func:`default_blocks`.
    head_w : int or None, optional
        Band slots per head, in ``1..n``; ``None``: ``w``, or :func:`equal_key_window` with ``equal_keys``.
    swa : bool, optional
        Add the sliding window.
    w_swa : int or None, optional
        Its size; ``None``: ``w``.
    equal_keys : bool, optional
        Shrink the heads to about SA's keys per query.

    Raises
    ------
    TypeError
        If an integer argument is not an integer or a flag is not a bool.
    ValueError
        If an argument is out of range.

    Examples
    --------
    >>> from receptive.patterns.multiscale import MultiScaleSA
    >>> p = MultiScaleSA(256, 4, causal=True)
    >>> p.describe(), len(p.layer_ops(1))
    ('sa-ms w=4 head_w=4 blocks=[4, 16, 64, 256]', 4)

    References
    ----------
    * Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754. (the band over a permutation)
    * Kleinberg 2000, Navigation in a small world, Nature 406, 845 (shortcuts at every distance scale).
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

    @layer_cached()
    def permutation(self, layer: int, head: int) -> np.ndarray:
        """Head ``head``'s permutation in layer ``layer``: :func:`block_permutation` (kept once drawn)."""
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
