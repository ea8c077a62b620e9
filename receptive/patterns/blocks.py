"""Block-local layouts: chunked attention (Llama 4) and BigBird's block-sparse attention."""

from __future__ import annotations

import numpy as np

from graphs.block_kernels import FULL, PREFIX
from graphs.ops import BlockOp, Op

from ..permutations import RANDOM_BLOCKS_STREAM, layer_rng
from ..validation import check_int
from .base import Pattern, layer_cached


def block_starts(n: int, block: int) -> np.ndarray:
    """``0, block, 2 block, .., n``: the last block may be shorter.

    Parameters
    ----------
    n : int
        Sequence length.
    block : int
        Block size.

    Returns
    -------
    numpy.ndarray
        int64 block starts, ending with ``n``.

    Examples
    --------
    >>> from receptive.patterns.blocks import block_starts
    >>> block_starts(10, 4).tolist()
    [0, 4, 8, 10]
    """
    return np.append(np.arange(0, n, block, dtype=np.int64), n)


class Chunked(Pattern):
    """Chunked attention: a query attends only its own chunk of ``chunk`` positions.

    Chunked attention: the sequence is cut into chunks of ``chunk`` positions and a query attends only its own
    chunk (causal: the keys of its chunk up to itself). Llama 4's local layers (HF ``attention_chunk_size``, 8192).

    Closed form, ``L >= 1``: ``|RF_L(i)| = |chunk(i)|`` (causal ``i - chunk_start(i) + 1``): nothing crosses a chunk
    boundary however deep the stack, so ``L* = 1`` if one chunk holds the sequence and never otherwise.

    Parameters
    ----------
    n : int
        Sequence length.
    chunk : int
        Chunk size, in ``1..n``.
    causal : bool, optional
        Causal mask inside the chunk.

    Raises
    ------
    TypeError
        If ``n`` or ``chunk`` is not an integer.
    ValueError
        If ``chunk`` is out of range.

    Examples
    --------
    >>> from receptive.patterns.blocks import Chunked
    >>> p = Chunked(16, 4, causal=True)
    >>> p.closed_form_counts(1).tolist()[:8], p.closed_form_full_layer(), p.describe()
    ([1, 2, 3, 4, 1, 2, 3, 4], None, 'chunk size=4')

    References
    ----------
    Meta AI 2025, Llama 4 model card and Hugging Face ``Llama4TextConfig`` (``attention_chunk_size``).
    """

    name = "chunk"

    def __init__(self, n: int, chunk: int, causal: bool = False):
        super().__init__(n, causal)
        self.chunk = check_int("chunk", chunk, 1, self.n)
        self._op = BlockOp.diagonal(block_starts(self.n, self.chunk), PREFIX if self.causal else FULL)

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        self._check_layer(layer)
        return (self._op,)

    def closed_form_counts(self, layers: int) -> np.ndarray:
        layers = check_int("layers", layers, 0)
        i = np.arange(self.n, dtype=np.int64)
        if layers == 0:
            return np.ones(self.n, dtype=np.int64)
        start = i - i % self.chunk
        return i - start + 1 if self.causal else np.minimum(start + self.chunk, self.n) - start

    def closed_form_full_layer(self) -> int | None:
        return 1 if self.chunk >= self.n else None

    def kv_cache_entries(self, layer: int) -> int:
        self._check_layer(layer)
        return self.chunk

    def describe(self) -> str:
        return f"{self.name} size={self.chunk}"


class BigBird(Pattern):
    """BigBird's block-sparse attention (ITC): window, random and global blocks.

    BigBird's block-sparse attention, ITC variant (Zaheer et al. 2020, NeurIPS, arXiv 2007.14062, Sec. 2 and
    App. D; HF ``block_size`` 64, ``num_random_blocks`` 3): blocks of ``block`` positions; query block ``b``
    attends the ``window`` blocks around it (``b-1 .. b+1`` for 3), ``random`` blocks drawn afresh per layer among
    the others, and the ``globals`` global blocks (the first ``ceil(g/2)`` and last ``floor(g/2)``), which attend
    every block. Causal (a decoder reading, not in the paper): only blocks before ``b`` (window ``b-window+1 .. b``,
    random among earlier blocks, global blocks at the start), the own block causally.

    Parameters
    ----------
    n : int
        Sequence length.
    block : int, optional
        Block size, in ``1..n``.
    window : int, optional
        Window blocks per query block, in ``1 .. 2 n_blocks - 1``.
    random : int, optional
        Random blocks per query block and layer, in ``0..n_blocks``.
    globals : int, optional
        Global blocks, in ``0..n_blocks``.
    causal : bool, optional
        The decoder reading (see above).
    seed : int, optional
        Seed of the random blocks, ``>= 0``.

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If an argument is out of range.

    Examples
    --------
    >>> from receptive.coverage import coverage_by_layer
    >>> from receptive.patterns.blocks import BigBird
    >>> p = BigBird(256, block=16, window=3, random=1, globals=2)
    >>> p.global_blocks.tolist(), coverage_by_layer(p, 4, progress=False).full_coverage_layer
    ([0, 15], 2)

    References
    ----------
    Zaheer et al. 2020, "Big Bird: Transformers for Longer Sequences", NeurIPS, arXiv 2007.14062.
    """

    name = "bigbird"

    def __init__(
        self,
        n: int,
        block: int = 64,
        window: int = 3,
        random: int = 3,
        globals: int = 2,
        causal: bool = False,
        seed: int = 0,
    ):
        super().__init__(n, causal)
        self.block = check_int("block", block, 1, self.n)
        self.n_blocks = -(-self.n // self.block)
        self.window = check_int("window", window, 1, 2 * self.n_blocks - 1)
        self.random = check_int("random", random, 0, self.n_blocks)
        self.globals = check_int("globals", globals, 0, self.n_blocks)
        self.seed = check_int("seed", seed, 0)
        self.starts = block_starts(self.n, self.block)
        nb, g = self.n_blocks, self.globals
        first = np.arange((g + 1) // 2)
        last = np.arange(nb - g // 2, nb) if not self.causal else np.empty(0, dtype=np.int64)
        if self.causal:
            first = np.arange(g)
        self.global_blocks = np.unique(np.concatenate([first, last])).astype(np.int64)

    @layer_cached(maxsize=8)
    def _draw(self, layer: int) -> BlockOp:
        nb = self.n_blocks
        rng = layer_rng(self.seed, layer, RANDOM_BLOCKS_STREAM)
        b = np.arange(nb, dtype=np.int64)
        lo = b - (self.window - 1 if self.causal else (self.window - 1) // 2)
        hi = b if self.causal else b + self.window // 2
        is_global = np.zeros(nb, dtype=bool)
        is_global[self.global_blocks] = True
        lists = []
        for q in range(nb):  # per block, not per token: n / block iterations
            if is_global[q]:
                keys = np.arange(q if self.causal else nb)
            else:
                near = np.arange(max(0, lo[q]), min(nb - 1, hi[q]) + 1)
                glob = self.global_blocks[self.global_blocks <= q] if self.causal else self.global_blocks
                limit = q if self.causal else nb
                others = np.setdiff1d(np.arange(limit), np.concatenate([near, glob]), assume_unique=False)
                pick = rng.choice(others, size=min(self.random, others.size), replace=False) if others.size else others
                keys = np.unique(np.concatenate([near, glob, pick]))
            lists.append(keys[keys != q].astype(np.int64))
        indptr = np.zeros(nb + 1, dtype=np.int64)
        np.cumsum([len(x) for x in lists], out=indptr[1:])
        return BlockOp(self.starts, indptr, np.concatenate(lists), PREFIX if self.causal else FULL)

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        return (self._draw(self._check_layer(layer)),)

    def describe(self) -> str:
        return f"{self.name} block={self.block} window={self.window} random={self.random} globals={self.globals}"
