"""The pattern interface: a layered attention pattern as the engine's operators (:mod:`graphs.ops`).

A pattern turns layer ``l`` into operators: a window in (possibly permuted) order, explicit neighbour lists,
block-sparse layouts or global tokens; a layer with several operators is their union. Every pattern includes the
query itself (it also stands for the residual path). Window offsets follow :mod:`receptive.windows`.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections import OrderedDict

import numpy as np

from graphs.block_kernels import FULL, PREFIX, SUFFIX
from graphs.ops import BlockOp, FullOp, GlobalOp, NeighbourOp, Op

from ..validation import check_bool, check_int
from ..windows import check_window, window_offsets


def layer_cached(maxsize: int | None = None):
    """Decorate a pattern's per-layer draw so that the pattern keeps its last ``maxsize`` results (``None``: all).

    The results live in the instance's ``__dict__``, not in a cache that holds a bound method: ``functools.lru_cache``
    on ``self.method`` makes a reference cycle, so a dropped pattern (a 2^20-position Kleinberg draw is ~1 GB)
    stays until the garbage collector runs, while this one is freed as soon as its last reference goes.

    Parameters
    ----------
    maxsize : int or None, default None
        Results kept per instance, the least recently used dropped first; ``None``: every result.

    Returns
    -------
    callable
        The decorator: it wraps a method ``method(self, *args)`` of hashable arguments.

    Raises
    ------
    TypeError
        If ``maxsize`` is neither ``None`` nor an integer.
    ValueError
        If ``maxsize < 1``.

    Examples
    --------
    >>> class Draws:
    ...     calls = 0
    ...     @layer_cached(maxsize=1)
    ...     def draw(self, layer):
    ...         self.calls += 1
    ...         return layer * 10
    >>> d = Draws()
    >>> d.draw(1), d.draw(1), d.calls, d.draw(2), d.draw(1), d.calls
    (10, 10, 1, 20, 10, 3)
    """
    if maxsize is not None:
        maxsize = check_int("maxsize", maxsize, 1)

    def decorate(method):
        slot = f"_layer_cache_{method.__name__}"

        @functools.wraps(method)
        def cached(self, *args):
            cache = self.__dict__.setdefault(slot, OrderedDict())
            if args in cache:
                cache.move_to_end(args)
                return cache[args]
            value = cache[args] = method(self, *args)
            if maxsize is not None and len(cache) > maxsize:
                cache.popitem(last=False)
            return value

        return cached

    return decorate


class Pattern(ABC):
    """A layered attention pattern on ``n`` positions: layer ``l`` as the engine's operators (edges key -> query).

    Subclasses implement :meth:`layer_ops`; those with a closed form also :meth:`closed_form_counts` and
    :meth:`closed_form_full_layer`.

    Parameters
    ----------
    n : int
        Sequence length (``>= 1``).
    causal : bool, default False
        Keys never come after the query.

    Raises
    ------
    TypeError
        If ``n`` is not an integer or ``causal`` is not a bool.
    ValueError
        If ``n < 1``.

    Examples
    --------
    >>> from receptive import Pattern, make_pattern
    >>> isinstance(make_pattern("swa", 32, 4), Pattern)
    True
    """

    name: str = "pattern"

    def __init__(self, n: int, causal: bool = False):
        self.n = check_int("n", n, 1)
        self.causal = check_bool("causal", causal)

    #: number of layers the pattern defines (``None``: unlimited), e.g. the number of explicit permutations
    max_layers: int | None = None

    @abstractmethod
    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        """The operators of layer ``layer`` (1-based) whose union is its edge set key -> query."""

    def closed_form_counts(self, layers: int) -> np.ndarray | None:
        """``|RF_layers(i)|`` for every ``i`` in closed form, or ``None`` if the pattern has none."""
        return None

    def closed_form_full_layer(self) -> int | None:
        """The closed-form first layer of full coverage (only meaningful when :meth:`closed_form_counts` exists)."""
        raise NotImplementedError(f"{self.name} has no closed form")

    def search_full_layer(self, limit: int) -> int | None:
        """The first layer ``<= limit`` at which the closed form is complete, by bisection (coverage only grows
        with depth), or ``None``: ``O(n log limit)``."""
        full = np.arange(1, self.n + 1) if self.causal else np.full(self.n, self.n)

        def complete(layers: int) -> bool:
            return bool(np.array_equal(self.closed_form_counts(layers), full))

        if not complete(limit):
            return None
        low, high = 0, limit
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (low, mid) if complete(mid) else (mid, high)
        return high

    @property
    def has_closed_form(self) -> bool:
        return type(self).closed_form_counts is not Pattern.closed_form_counts

    def adjacency(self, layer: int):
        """Boolean ``n x n`` sparse matrix of layer ``layer``: entry ``[i, j]`` is set when query ``i`` attends to
        key ``j``. Built by enumerating the ``O(n w)`` edges; meant for small ``n`` and for cross-checks."""
        import scipy.sparse as sp  # imported on use: the coverage CLI never needs it

        rows, cols = [], []
        for op in self.layer_ops(self._check_layer(layer)):
            r, c = _edges(op, self.n)
            rows.append(r)
            cols.append(c)
        r, c = np.concatenate(rows), np.concatenate(cols)
        mat = sp.coo_array((np.ones(r.size, dtype=bool), (r, c)), shape=(self.n, self.n)).tocsr()
        mat.sum_duplicates()
        return mat

    def pair_count(self, layer: int) -> int:
        """(query, key) pairs the layer's operators attend, summed over operators (a pair two operators share, e.g.
        the SA and SWA paths of gated SA+SWA, is counted twice: each path computes it). Attention costs about
        ``pairs x head_dim`` multiply-adds for the scores and as many for the values: the FLOP proxy."""
        return sum(op.pair_count(self.n) for op in self.layer_ops(self._check_layer(layer)))

    @property
    def full_pairs(self) -> int:
        """Pairs of full attention on the same positions: ``n^2``, or ``n (n + 1) / 2`` causal."""
        return self.n * (self.n + 1) // 2 if self.causal else self.n * self.n

    def kv_cache_entries(self, layer: int) -> int:
        """Keys a causal decoder must keep in layer ``layer`` to generate the next token at position ``n``: those a
        later query may still attend. ``n`` (keep everything) unless the pattern knows better (a window keeps ``w``).
        """
        self._check_layer(layer)
        return self.n

    def _check_layer(self, layer: int) -> int:
        high = self.max_layers if self.max_layers is not None else None
        return check_int("layer", layer, 1, high)

    def describe(self) -> str:
        """A short label of the pattern and its parameters, as tables and command lines print it.

        Returns
        -------
        str
            The pattern's name; subclasses add their parameters (``"swa w=16"``).

        Examples
        --------
        >>> from receptive import make_pattern
        >>> make_pattern("swa", 64, 16).describe()
        'swa w=16'
        """
        return self.name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()} n={self.n} causal={self.causal}>"


class WindowPattern(Pattern):
    """Base of the patterns parameterised by a window of ``w`` keys, the query itself included.

    Parameters
    ----------
    n : int
        Sequence length.
    w : int
        Keys per query (``receptive.windows.check_window`` gives the range).
    causal : bool, default False
        Keys never come after the query.
    circular : bool, default False
        Windows wrap around.

    Raises
    ------
    TypeError
        If ``n`` or ``w`` is not an integer, or ``causal`` or ``circular`` is not a bool.
    ValueError
        If a value is out of range.

    Examples
    --------
    >>> from receptive import SlidingWindow
    >>> (SlidingWindow(32, 5).left, SlidingWindow(32, 5).right)
    (2, 2)
    """

    two_sided_band = False  # SA keeps the two-sided band in permuted order even when causal

    def __init__(self, n: int, w: int, causal: bool = False, circular: bool = False):
        super().__init__(n, causal)
        self.circular = check_bool("circular", circular)
        self.w = check_window(w, self.n, self.causal and not self.two_sided_band, self.circular)
        self.left, self.right = window_offsets(self.w, self.causal and not self.two_sided_band)

    def describe(self) -> str:
        return f"{self.name} w={self.w}" + (" circular" if self.circular else "")


class NeighbourListPattern(Pattern):
    """An arbitrary pattern given as explicit neighbour lists: ``neighbours[i]`` are the keys of query ``i``, one
    list for every layer or a sequence of them (one per layer; the pattern then has that many layers). Content-based
    patterns (routing, LSH buckets, top-k) fit here. The query itself is added to its own list; with ``causal``
    a key after its query is an error.

    Parameters
    ----------
    n : int
        Sequence length.
    neighbours : sequence of sequences of int
        ``neighbours[i]``: the keys of query ``i`` (or, with ``per_layer``, one such list per layer).
    causal : bool, default False
        Keys never come after the query.
    per_layer : bool, default False
        ``neighbours`` holds one set of lists per layer.

    Raises
    ------
    TypeError
        If ``neighbours`` is not a sequence of lists, or ``causal`` or ``per_layer`` is not a bool.
    ValueError
        If a key is out of range, or after its query when causal.

    Examples
    --------
    >>> from receptive import NeighbourListPattern, coverage_by_layer
    >>> ring = NeighbourListPattern(4, [[3], [0], [1], [2]])
    >>> coverage_by_layer(ring, method="exact").full_coverage_layer
    3
    """

    name = "neighbours"

    def __init__(self, n: int, neighbours, causal: bool = False, per_layer: bool = False):
        super().__init__(n, causal)
        if not hasattr(neighbours, "__len__") or isinstance(neighbours, str | bytes):
            raise TypeError(f"neighbours: expected a sequence of neighbour lists, got {type(neighbours).__name__}")
        layers = list(neighbours) if check_bool("per_layer", per_layer) else [neighbours]
        if per_layer and not layers:
            raise ValueError("neighbours: expected at least one layer of neighbour lists")
        self._ops = [self._with_self(NeighbourOp.from_lists(nb, self.n)) for nb in layers]
        if per_layer:
            self.max_layers = len(self._ops)

    def _with_self(self, op: NeighbourOp) -> NeighbourOp:
        rows = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(op.indptr))
        if self.causal and np.any(op.indices > rows):
            raise ValueError("neighbours: a causal pattern cannot list a key after its query")
        import scipy.sparse as sp

        mat = sp.csr_array((np.ones(rows.size, dtype=bool), (rows, op.indices)), shape=(self.n, self.n))
        mat = (mat + sp.eye_array(self.n, dtype=bool, format="csr")).tocsr()
        mat.sort_indices()
        return NeighbourOp(mat.indptr.astype(np.int64), mat.indices.astype(np.int64))

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        self._check_layer(layer)
        return (self._ops[0] if len(self._ops) == 1 and self.max_layers is None else self._ops[layer - 1],)


def _edges(op: Op, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(query, key) index arrays of one operator's edges."""
    if isinstance(op, NeighbourOp):
        return np.repeat(np.arange(n, dtype=np.int64), np.diff(op.indptr)), op.indices
    if isinstance(op, BlockOp):
        return _block_edges(op, n)
    if isinstance(op, GlobalOp):
        return _global_edges(op, n)
    if isinstance(op, FullOp):
        i, j = np.divmod(np.arange(n * n, dtype=np.int64), n)
        keep = j <= i if op.order > 0 else j >= i if op.order < 0 else np.ones(i.size, dtype=bool)
        return i[keep], j[keep]
    perm = np.arange(n, dtype=np.int64) if op.perm is None else op.perm
    length = perm.size  # a virtual sequence with holes (-1) may be longer than n
    p = np.repeat(np.arange(length, dtype=np.int64), op.size)
    x = p + np.tile(np.arange(-op.left, op.right + 1, dtype=np.int64), length)
    keep = (x >= 0) & (x < length) if not op.circular else np.ones(x.size, dtype=bool)
    query, key = perm[p[keep]], perm[x[keep] % length]
    real = (query >= 0) & (key >= 0)
    query, key = query[real], key[real]
    if op.order:
        ok = key <= query if op.order > 0 else key >= query
        query, key = query[ok], key[ok]
    return query, key


def _block_edges(op: BlockOp, n: int) -> tuple[np.ndarray, np.ndarray]:
    perm = np.arange(n, dtype=np.int64) if op.perm is None else op.perm
    queries, keys = [], []
    for b in range(op.n_blocks):
        q = np.arange(op.starts[b], op.starts[b + 1])
        kb = op.indices[op.indptr[b] : op.indptr[b + 1]]
        k = np.concatenate([np.arange(op.starts[c], op.starts[c + 1]) for c in kb] + [np.empty(0, np.int64)])
        qq, kk = np.repeat(q, k.size), np.tile(k, q.size)
        dq, dk = np.repeat(q, q.size), np.tile(q, q.size)
        keep = {FULL: dq == dq, PREFIX: dk <= dq, SUFFIX: dk >= dq}.get(op.diag, dq != dq)
        queries += [perm[qq], perm[dq[keep]]]
        keys += [perm[kk], perm[dk[keep]]]
    return np.concatenate(queries), np.concatenate(keys)


def _global_edges(op: GlobalOp, n: int) -> tuple[np.ndarray, np.ndarray]:
    i = np.repeat(np.arange(n, dtype=np.int64), op.tokens.size)
    g = np.tile(op.tokens.astype(np.int64), n)
    rows, cols = [], []
    if op.keys:  # query i attends global key g
        keep = g <= i if op.order > 0 else g >= i if op.order < 0 else np.ones(i.size, dtype=bool)
        rows.append(i[keep])
        cols.append(g[keep])
    if op.queries:  # global query g attends key i
        keep = i <= g if op.order > 0 else i >= g if op.order < 0 else np.ones(i.size, dtype=bool)
        rows.append(g[keep])
        cols.append(i[keep])
    return np.concatenate(rows or [np.empty(0, np.int64)]), np.concatenate(cols or [np.empty(0, np.int64)])
