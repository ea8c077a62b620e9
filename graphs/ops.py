"""The edge sets one layer is made of, and how a slab of bitsets flows through them.

A layer is a tuple of operators whose edge sets are united (Gated SA+SWA = the SA operator and the SWA operator).
Edges point from key ``j`` to query ``i`` ("``i`` attends to ``j``"); forward propagation moves seeds along
them, backward propagation along their transpose. Every operator has the same four methods: ``transpose()``,
``apply(bits, out, accumulate)`` on ``(n, n_words)`` uint64 bitsets (bit ``s`` of row ``i``: seed ``s`` has
reached ``i``), ``pair_count(n)`` and ``buffer_bytes(n, n_words)``.

References
----------
- I. Beltagy, M. E. Peters and A. Cohan, "Longformer: the long-document transformer", arXiv:2004.05150 (2020)
  (sliding windows and global tokens).
- M. Zaheer et al., "Big Bird: transformers for longer sequences", NeurIPS 2020 (block-sparse attention).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from . import block_kernels, kernels
from .pair_counts import window_pairs
from .validation import check_bool, check_int

_EMPTY_PERM = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class WindowOp:
    """Each query at (permuted) position ``p`` attends to positions ``p-left .. p+right`` in the same order.

    ``perm[p]`` is the original index at permuted position ``p`` (``None``: identity). ``perm`` may be longer than
    ``n`` with entries ``-1``: holes of a virtual sequence that keep windows from crossing the segments they separate
    (a dilated window is a window over the positions grouped by residue, with holes between the groups). Windows
    are truncated at the sequence edges or wrap around (``circular``). ``order = +1`` keeps only keys whose original
    index is ``<=`` the query's (the causal mask in original positions), ``-1`` only ``>=`` (its transpose), 0 keeps
    all.

    Parameters
    ----------
    left, right : int
        Keys before and after the query's position.
    circular : bool, optional
        Windows wrap around the sequence.
    perm : numpy.ndarray or None, optional
        Original index at each permuted position (``-1`` for holes).
    order : {0, 1, -1}, optional
        Causal filter in original positions.

    Raises
    ------
    TypeError
        If ``left``, ``right`` or ``order`` is not an integer, ``circular`` is not a bool, or ``perm`` is neither
        ``None`` nor an integer numpy array.
    ValueError
        If ``left`` or ``right`` is negative, ``order`` is not -1, 0 or 1, or ``perm`` is not 1-d.

    Methods
    -------
    transpose()
        The operator of the reversed edges (backward propagation).
    apply(bits, out, accumulate)
        ``out = op(bits)`` (``accumulate``: ``out |= op(bits)``) on ``(n, n_words)`` uint64 bitsets.
    pair_count(n)
        Number of attended (query, key) pairs.
    buffer_bytes(n, n_words)
        Scratch bytes :meth:`apply` needs, for memory estimates.

    References
    ----------
    - I. Beltagy, M. E. Peters and A. Cohan, "Longformer: the long-document transformer", arXiv:2004.05150
      (2020) (sliding windows).
    - L. Jin and Y. Sui, arXiv:2604.00754 (2026) (the window in permuted order).

    Examples
    --------
    >>> import numpy as np
    >>> op = WindowOp(1, 1)
    >>> op.pair_count(5), op.transpose() == op
    (13, True)
    >>> bits = np.zeros((5, 1), dtype=np.uint64); bits[2, 0] = 1
    >>> out = np.empty_like(bits); op.apply(bits, out, accumulate=False); out[:, 0].tolist()
    [0, 1, 1, 1, 0]
    """

    left: int
    right: int
    circular: bool = False
    perm: np.ndarray | None = field(default=None, repr=False)
    order: int = 0

    def __post_init__(self):
        # types and ranges only (the perm's entries are the kernel's to check): a transpose per layer stays cheap
        check_int("left", self.left, 0)
        check_int("right", self.right, 0)
        check_bool("circular", self.circular)
        check_int("order", self.order, -1, 1)
        if self.perm is not None:
            _check_index_array("perm", self.perm, "None or ")

    def transpose(self) -> WindowOp:
        """Key at ``p`` reaches the queries at ``p-right .. p+left``: swap the offsets, flip the order filter."""
        return WindowOp(self.right, self.left, self.circular, self.perm, -self.order)

    @property
    def size(self) -> int:
        """Window width ``left + right + 1``."""
        return self.left + self.right + 1

    def length(self, n: int) -> int:
        """Positions of the (virtual) sequence the window slides over: ``n``, or ``len(perm)`` with holes."""
        return n if self.perm is None else self.perm.shape[0]

    def buffer_bytes(self, n: int, n_words: int) -> int:
        """Bytes of per-task scratch this operator needs (two threads' buffers), for memory estimates."""
        chunk, tile = _window_tiling(self.length(n), self.size, n_words)
        return 2 * 2 * (chunk + self.size - 1) * tile * 8

    def pair_count(self, n: int) -> int:
        """Attended (query, key) pairs (``graphs.pair_counts.window_pairs``)."""
        return window_pairs(self.length(n), self.perm, self.left, self.right, self.circular, self.order)

    def apply(self, bits: np.ndarray, out: np.ndarray, accumulate: bool) -> None:
        """``out = op(bits)``, or ``out |= op(bits)`` with ``accumulate``."""
        n, n_words = bits.shape
        chunk, tile = _window_tiling(self.length(n), self.size, n_words)
        perm = _EMPTY_PERM if self.perm is None else self.perm
        if self.order == 0:
            chunk, tile = kernels.window_or_tiling(self.length(n), self.size, n_words)
            kernels.window_or(bits, out, perm, self.left, self.right, self.circular, accumulate, chunk, tile)
        else:
            kernels.window_or_ordered(
                bits, out, perm, self.left, self.right, self.circular, self.order, accumulate, chunk, tile
            )


@dataclass(frozen=True)
class NeighbourOp:
    """Explicit neighbour lists in CSR form: query ``i`` attends to ``indices[indptr[i]:indptr[i+1]]``.

    Parameters
    ----------
    indptr : numpy.ndarray
        Row offsets (int64, length ``n + 1``).
    indices : numpy.ndarray
        Key indices (int64).

    Raises
    ------
    TypeError
        If ``indptr`` or ``indices`` is not an integer numpy array (:meth:`from_csr` converts array-likes).
    ValueError
        If one is not 1-d.

    Methods
    -------
    transpose()
        The operator of the reversed edges (backward propagation).
    apply(bits, out, accumulate)
        ``out = op(bits)`` (``accumulate``: ``out |= op(bits)``) on ``(n, n_words)`` uint64 bitsets.
    pair_count(n)
        Number of attended (query, key) pairs.
    buffer_bytes(n, n_words)
        Scratch bytes :meth:`apply` needs, for memory estimates.

    Examples
    --------
    >>> op = NeighbourOp.from_lists([[0], [0, 1], [1, 2]], 3)
    >>> op.pair_count(3), op.transpose().indices.tolist()
    (5, [0, 1, 1, 2, 2])
    """

    indptr: np.ndarray = field(repr=False)
    indices: np.ndarray = field(repr=False)

    def __post_init__(self):
        _check_index_array("indptr", self.indptr)
        _check_index_array("indices", self.indices)

    @classmethod
    def from_lists(cls, neighbours, n: int) -> NeighbourOp:
        """Build from ``n`` iterables of key indices, one per query (checked as :meth:`from_csr`)."""
        n = check_int("n", n, 0)
        if not hasattr(neighbours, "__len__") or isinstance(neighbours, str | bytes):
            raise TypeError(
                f"neighbours: expected {n} lists of key indices (one per query), got {type(neighbours).__name__}"
            )
        if len(neighbours) != n:
            raise ValueError(f"neighbours: expected {n} lists (one per query), got {len(neighbours)}")
        lengths = np.fromiter((len(nb) for nb in neighbours), dtype=np.int64, count=n)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        flat = [j for nb in neighbours for j in nb]
        return cls.from_csr(indptr, np.asarray(flat, dtype=np.int64), n)

    @classmethod
    def from_csr(cls, indptr, indices, n: int) -> NeighbourOp:
        """Build from CSR arrays; ``ValueError`` naming the array unless they describe ``n`` rows of keys in
        ``0..n-1``."""
        n = check_int("n", n, 0)
        indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        indices = np.ascontiguousarray(indices, dtype=np.int64)
        if indptr.shape != (n + 1,) or indptr[0] != 0 or np.any(np.diff(indptr) < 0):
            raise ValueError(f"indptr: expected a non-decreasing array of length n + 1 = {n + 1} starting at 0")
        if indptr[-1] != indices.size:
            raise ValueError(f"indices: expected indptr[-1] = {indptr[-1]} entries, got {indices.size}")
        if indices.size and (indices.min() < 0 or indices.max() >= n):
            raise ValueError(f"indices: every key index must lie in 0..{n - 1}")
        return cls(indptr, indices)

    def transpose(self) -> NeighbourOp:
        """The reversed edges: key ``j``'s row lists the queries that attend to it."""
        n = self.indptr.size - 1
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.indptr))
        order = np.argsort(self.indices, kind="stable")
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.indices, minlength=n), out=indptr[1:])
        return NeighbourOp(indptr, rows[order])

    def buffer_bytes(self, n: int, n_words: int) -> int:
        """No scratch."""
        return 0

    def pair_count(self, n: int) -> int:
        """Number of stored (query, key) pairs."""
        return int(self.indices.size)

    def apply(self, bits: np.ndarray, out: np.ndarray, accumulate: bool) -> None:
        """``out = op(bits)``, or ``out |= op(bits)`` with ``accumulate``."""
        kernels.neighbour_or(bits, out, self.indptr, self.indices, accumulate)


_DIAG_TRANSPOSE = {
    block_kernels.NONE: block_kernels.NONE,
    block_kernels.FULL: block_kernels.FULL,
    block_kernels.PREFIX: block_kernels.SUFFIX,
    block_kernels.SUFFIX: block_kernels.PREFIX,
}


@dataclass(frozen=True)
class BlockOp:
    """A block-sparse layer: the (permuted) order is cut into contiguous blocks ``starts[b] .. starts[b+1]-1``;
    every query of block ``b`` attends the whole key blocks ``indices[indptr[b]:indptr[b+1]]`` and, inside its own
    block, all keys (``diag = FULL``), those at or before it (``PREFIX``: causal when the order within a block
    is increasing), at or after it (``SUFFIX``) or none (``NONE``). ``perm[p]`` = original index at position ``p``.

    Parameters
    ----------
    starts : numpy.ndarray
        Block boundaries in the permuted order (``n_blocks + 1`` entries, from 0 to ``n``).
    indptr, indices : numpy.ndarray
        CSR lists of the key blocks of each query block.
    diag : int, optional
        ``block_kernels.FULL``, ``PREFIX``, ``SUFFIX`` or ``NONE``.
    perm : numpy.ndarray or None, optional
        Original index at each permuted position.

    Methods
    -------
    transpose()
        The operator of the reversed edges (backward propagation).
    apply(bits, out, accumulate)
        ``out = op(bits)`` (``accumulate``: ``out |= op(bits)``) on ``(n, n_words)`` uint64 bitsets.
    pair_count(n)
        Number of attended (query, key) pairs.
    buffer_bytes(n, n_words)
        Scratch bytes :meth:`apply` needs, for memory estimates.

    References
    ----------
    - M. Zaheer et al., "Big Bird: transformers for longer sequences", NeurIPS 2020.

    Examples
    --------
    >>> op = BlockOp.diagonal([0, 2, 4])
    >>> op.n_blocks, op.pair_count(4)
    (2, 8)
    """

    starts: np.ndarray = field(repr=False)
    indptr: np.ndarray = field(repr=False)
    indices: np.ndarray = field(repr=False)
    diag: int = block_kernels.FULL
    perm: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def diagonal(cls, starts, diag: int = block_kernels.FULL, perm=None) -> BlockOp:
        """Blocks that attend only within themselves (chunked attention, grouped full attention)."""
        starts = np.ascontiguousarray(starts, dtype=np.int64)
        empty = np.zeros(starts.size, dtype=np.int64)
        return cls(starts, empty, np.empty(0, dtype=np.int64), diag, perm)

    @property
    def n_blocks(self) -> int:
        """Number of blocks."""
        return self.starts.size - 1

    def transpose(self) -> BlockOp:
        """The reversed edges: key blocks become query blocks, a prefix diagonal a suffix one."""
        n_blocks = self.n_blocks
        rows = np.repeat(np.arange(n_blocks, dtype=np.int64), np.diff(self.indptr))
        order = np.argsort(self.indices, kind="stable")
        indptr = np.zeros(n_blocks + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.indices, minlength=n_blocks), out=indptr[1:])
        return BlockOp(self.starts, indptr, rows[order], _DIAG_TRANSPOSE[self.diag], self.perm)

    def buffer_bytes(self, n: int, n_words: int) -> int:
        """One row of words per block (the blocks' ORs)."""
        return self.n_blocks * n_words * 8

    def apply(self, bits: np.ndarray, out: np.ndarray, accumulate: bool) -> None:
        """``out = op(bits)``, or ``out |= op(bits)`` with ``accumulate``."""
        perm = _EMPTY_PERM if self.perm is None else self.perm
        block_kernels.block_or(bits, out, perm, self.starts, self.indptr, self.indices, self.diag, accumulate)

    def pair_count(self, n: int) -> int:
        """Attended (query, key) pairs: ``sum_b |b| (sum of its key blocks' sizes + diagonal part)``."""
        size = np.diff(self.starts)
        rows = np.repeat(np.arange(self.n_blocks), np.diff(self.indptr))
        off = np.bincount(rows, weights=size[self.indices], minlength=self.n_blocks) if rows.size else 0
        diag = {0: 0, 1: size * size}.get(self.diag, size * (size + 1) // 2)
        return int(np.sum(size * off + diag))


@dataclass(frozen=True)
class GlobalOp:
    """Global tokens: every query attends them (``keys``) and/or they attend every key (``queries``), restricted
    by original position with ``order`` (``+1``: keys ``<=`` the query, causal; ``-1``: ``>=``; ``0``: all).

    Parameters
    ----------
    tokens : numpy.ndarray
        Positions of the global tokens.
    keys : bool, optional
        Every query attends the tokens.
    queries : bool, optional
        The tokens attend every key.
    order : {0, 1, -1}, optional
        Causal filter in original positions.

    Methods
    -------
    transpose()
        The operator of the reversed edges (backward propagation).
    apply(bits, out, accumulate)
        ``out = op(bits)`` (``accumulate``: ``out |= op(bits)``) on ``(n, n_words)`` uint64 bitsets.
    pair_count(n)
        Number of attended (query, key) pairs.
    buffer_bytes(n, n_words)
        Scratch bytes :meth:`apply` needs, for memory estimates.

    References
    ----------
    - I. Beltagy, M. E. Peters and A. Cohan, "Longformer: the long-document transformer", arXiv:2004.05150
      (2020).

    Examples
    --------
    >>> import numpy as np
    >>> GlobalOp(np.array([0])).pair_count(10), GlobalOp(np.array([0]), order=1).pair_count(10)
    (20, 11)
    """

    tokens: np.ndarray = field(repr=False)
    keys: bool = True
    queries: bool = True
    order: int = 0

    def transpose(self) -> GlobalOp:
        """The reversed edges: the two roles swap and the order flips."""
        return GlobalOp(self.tokens, self.queries, self.keys, -self.order)

    def buffer_bytes(self, n: int, n_words: int) -> int:
        """Two rows of words per token."""
        return 2 * self.tokens.size * n_words * 8

    def apply(self, bits: np.ndarray, out: np.ndarray, accumulate: bool) -> None:
        """``out = op(bits)``, or ``out |= op(bits)`` with ``accumulate``."""
        if not accumulate:
            out[:] = 0
        if self.keys:
            block_kernels.global_keys_or(bits, out, self.tokens, self.order)
        if self.queries:
            block_kernels.global_queries_or(bits, out, self.tokens, self.order)

    def pair_count(self, n: int) -> int:
        """``n G`` per role without an order; causal: ``sum_i |{g <= i}|`` (keys) and ``sum_g (g + 1)`` (queries)."""
        g = self.tokens.astype(np.int64)
        if self.order == 0:
            return int((self.keys + self.queries) * n * g.size)
        before = int(np.sum(n - g)) if self.order > 0 else int(np.sum(g + 1))
        after = int(np.sum(g + 1)) if self.order > 0 else int(np.sum(n - g))
        return (before if self.keys else 0) + (after if self.queries else 0)


@dataclass(frozen=True)
class FullOp:
    """Full attention: every query attends every key (``order = 0``), the keys ``<=`` it (``+1``, causal) or
    ``>=`` it (``-1``, the transpose). One running OR per word tile: ``O(n W)`` whatever ``n`` is.

    Parameters
    ----------
    order : {0, 1, -1}, optional
        Causal filter in original positions.

    Methods
    -------
    transpose()
        The operator of the reversed edges (backward propagation).
    apply(bits, out, accumulate)
        ``out = op(bits)`` (``accumulate``: ``out |= op(bits)``) on ``(n, n_words)`` uint64 bitsets.
    pair_count(n)
        Number of attended (query, key) pairs.
    buffer_bytes(n, n_words)
        Scratch bytes :meth:`apply` needs, for memory estimates.

    References
    ----------
    - A. Vaswani et al., "Attention Is All You Need", NeurIPS 2017, arXiv:1706.03762.

    Examples
    --------
    >>> FullOp().pair_count(4), FullOp(1).pair_count(4), FullOp(1).transpose()
    (16, 10, FullOp(order=-1))
    """

    order: int = 0

    def transpose(self) -> FullOp:
        """The reversed edges (the order flips)."""
        return FullOp(-self.order)

    def buffer_bytes(self, n: int, n_words: int) -> int:
        """No scratch."""
        return 0

    def apply(self, bits: np.ndarray, out: np.ndarray, accumulate: bool) -> None:
        """``out = op(bits)``, or ``out |= op(bits)`` with ``accumulate``."""
        n_words = bits.shape[1]
        block_kernels.full_or(bits, out, self.order, accumulate, max(64, -(-n_words // 4)))

    def pair_count(self, n: int) -> int:
        """``n^2``, or ``n (n + 1) / 2`` with an order."""
        return n * n if self.order == 0 else n * (n + 1) // 2


Op = WindowOp | NeighbourOp | BlockOp | GlobalOp | FullOp


def _check_index_array(name: str, value, alternative: str = "") -> None:
    """``value`` a 1-d integer numpy array: ``TypeError`` for another type, ``ValueError`` for another shape."""
    if not (isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.integer)):
        what = f"{value.dtype} array" if isinstance(value, np.ndarray) else type(value).__name__
        raise TypeError(f"{name}: expected {alternative}a 1-d integer numpy array, got {what}")
    if value.ndim != 1:
        raise ValueError(f"{name}: expected a 1-d integer array, got shape {value.shape}")


_TILE_BUDGET_WORDS = 64 * 1024  # 512 KiB of scratch per task: about half the L2 of a current core


def _window_tiling(length: int, m: int, n_words: int) -> tuple[int, int]:
    """Chunk length (window positions per task) and tile width (words per task) for the window kernels.

    The halo costs ``m - 1`` extra rows per chunk, so chunks are a few windows long; the tile is as wide as the
    scratch budget allows, so that rows are read in long runs.
    """
    chunk = min(length, max(1024, 4 * m)) if m <= 16384 else min(length, m)
    tile = max(1, min(n_words, _TILE_BUDGET_WORDS // (2 * (chunk + m - 1))))
    return chunk, tile


def apply_layer(ops, bits: np.ndarray, out: np.ndarray) -> None:
    """Propagate a slab through one layer: ``out = OR over ops of op(bits)``, the union of the layer's edge sets.

    Parameters
    ----------
    ops : sequence of operators
        The layer's operators (:class:`WindowOp`, :class:`NeighbourOp`, ``BlockOp``, ``GlobalOp``,
        ``FullOp``).
    bits : numpy.ndarray
        ``(n, n_words)`` uint64 bitsets of the current layer.
    out : numpy.ndarray
        Array of the same shape that receives the next layer (overwritten).

    Returns
    -------
    None
        The result is in ``out``.

    Raises
    ------
    TypeError
        If ``ops`` is not a sequence of operators.

    References
    ----------
    - L. Jin and Y. Sui, arXiv:2604.00754 (2026) (receptive fields of stacked sparse-attention layers).

    Examples
    --------
    >>> import numpy as np
    >>> bits = np.zeros((6, 1), dtype=np.uint64); bits[0, 0] = 1
    >>> out = np.empty_like(bits)
    >>> apply_layer([WindowOp(0, 1), NeighbourOp.from_lists([[], [], [], [], [], [0]], 6)], bits, out)
    >>> out[:, 0].tolist()
    [1, 0, 0, 0, 0, 1]
    """
    if not isinstance(ops, Sequence):
        raise TypeError(f"ops: expected a sequence of operators, got {type(ops).__name__}")
    for k, op in enumerate(ops):
        if not isinstance(op, Op):
            raise TypeError(
                f"ops[{k}]: expected a graphs.ops operator (WindowOp, NeighbourOp, ...), got {type(op).__name__}"
            )
        op.apply(bits, out, accumulate=k > 0)
