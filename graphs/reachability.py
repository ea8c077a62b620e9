"""Bit-parallel multi-source reachability through a layered graph.

Layer ``l`` (``l = 1, 2, ...``) is a union of operators (:mod:`graphs.ops`) with edges key -> query. The
receptive field of node ``i`` after ``L`` layers is the set of sources with a path through layers ``1..L``::

    RF_0(i) = {i},    RF_L(i) = U_{j in N_L(i)} RF_{L-1}(j)

A slab holds ``64 * W`` seeds as ``W`` machine words per node, so one layer costs ``O(n * W)`` word operations for
window operators (independent of the window) and ``O(nnz * W)`` for explicit neighbour lists.

* :func:`forward_counts`: seeds are sources; after layer ``L`` bit ``s`` of row ``i`` says ``s in RF_L(i)``, and the
  row popcounts summed over slabs give ``|RF_L(i)|`` for every ``i`` (exact coverage). Slabs are independent tasks.
* :func:`graphs.backward.backward_counts`: seeds are targets; propagating through the transposed layers
  ``L, L-1, .., 1`` leaves bit ``t`` set in exactly the rows ``j in RF_L(t)``, so column popcounts give
  ``|RF_L(t)|`` for a sample of targets, exactly, without touching the other ``n - K`` receptive fields
  (:mod:`graphs.backward`, which builds on the pieces here: :class:`ReachCounts`, the slabs' memory plan, the
  progress bar).

References
----------
- L. Jin and Y. Sui, arXiv:2604.00754 (2026) (receptive fields of stacked sparse-attention layers).
- M. Then et al., "The more the merrier: efficient multi-source graph traversal", Proc. VLDB Endow. 8, 449-460
  (2014) (bit-parallel multi-source BFS).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from . import kernels
from .memory import DEFAULT_MAX_MEMORY, parse_bytes, slab_bytes, words_per_slab
from .ops import Op, apply_layer
from .validation import check_bool, check_int

LayerOps = Callable[[int], Sequence[Op]]


@dataclass(frozen=True)
class ReachCounts:
    """Receptive-field sizes layer by layer, as returned by :func:`forward_counts` and
    :func:`graphs.backward.backward_counts`.

    Attributes
    ----------
    counts : numpy.ndarray
        ``counts[l - 1, k] = |RF_l(node k)|`` for ``l = 1 .. layers`` (int64).
    full_layer : int or None
        First layer at which every node's receptive field is its whole admissible set (``None``: not within the
        layers computed).
    slabs : int
        Number of slabs run.
    seeds_per_slab : int
        Seeds of the widest slab.
    layers : int
        Number of layers computed (rows of ``counts``).

    References
    ----------
    - L. Jin and Y. Sui, arXiv:2604.00754 (2026) (receptive fields of stacked sparse-attention layers).

    Examples
    --------
    >>> from graphs import WindowOp, forward_counts
    >>> ops = lambda layer: [WindowOp(1, 0, order=1)]  # causal window of 2: i attends i-1 and i
    >>> result = forward_counts(ops, 5, max_layers=3, causal=True)
    >>> result.counts[:, -1].tolist(), result.full_layer, result.layers  # node 4 reaches 2, 3, 4 sources
    ([2, 3, 4], None, 3)
    """

    counts: np.ndarray
    full_layer: int | None
    slabs: int
    seeds_per_slab: int

    @property
    def layers(self) -> int:
        """Number of layers computed."""
        return self.counts.shape[0]


def admissible_sizes(nodes: np.ndarray, n: int, causal: bool) -> np.ndarray:
    """Return ``|A(i)|``, the size of each node's admissible set: all ``n`` positions, or ``j <= i`` when causal.

    Parameters
    ----------
    nodes : array_like of int
        Node positions.
    n : int
        Sequence length.
    causal : bool
        Causal masks.

    Returns
    -------
    numpy.ndarray
        int64, the shape of ``nodes``.

    Raises
    ------
    TypeError
        If ``nodes`` are not integers, ``n`` is not an integer or ``causal`` is not a bool.
    ValueError
        If ``n < 1`` or a node lies outside ``0..n-1``.

    References
    ----------
    - L. Jin and Y. Sui, arXiv:2604.00754 (2026) (receptive fields of stacked sparse-attention layers).

    Examples
    --------
    >>> admissible_sizes([0, 3], 8, causal=True).tolist(), admissible_sizes([0, 3], 8, causal=False).tolist()
    ([1, 4], [8, 8])
    """
    n = check_int("n", n, 1)
    causal = check_bool("causal", causal)
    nodes = _check_positions("nodes", nodes, n, empty=True)
    return nodes + 1 if causal else np.full(nodes.shape, n, dtype=np.int64)


def _check_positions(name: str, positions, n: int, empty: bool = False) -> np.ndarray:
    """``positions`` as int64, every one in ``0..n-1`` (``TypeError`` unless integers, ``ValueError`` out of range)."""
    arr = np.asarray(positions)
    if arr.size and not (np.issubdtype(arr.dtype, np.integer) and arr.dtype != bool):
        raise TypeError(f"{name}: expected integer positions in 0..{n - 1}, got {arr.dtype} {type(positions).__name__}")
    arr = arr.astype(np.int64)
    if (arr.size == 0 and not empty) or (arr.size and (arr.min() < 0 or arr.max() >= n)):
        raise ValueError(f"{name}: expected {'' if empty else 'a non-empty array of '}positions in 0..{n - 1}")
    return arr


def _check_common(
    layer_ops, n: int, max_layers: int, causal, stop_when_full=True, progress=None, max_memory=DEFAULT_MAX_MEMORY
) -> tuple[int, int, bool, int]:
    """``layer_ops`` callable, ``n`` and ``max_layers`` integers >= 1, the flags bools (``progress`` also ``None``),
    ``max_memory`` a size (:func:`graphs.memory.parse_bytes`); returns ``n, max_layers, causal, max_memory``."""
    if not callable(layer_ops):
        raise TypeError(f"layer_ops: expected a callable layer -> operators, got {type(layer_ops).__name__}")
    n, max_layers = check_int("n", n, 1), check_int("max_layers", max_layers, 1)
    causal = check_bool("causal", causal)
    check_bool("stop_when_full", stop_when_full)
    check_bool("progress", progress, none=True)
    return n, max_layers, causal, parse_bytes(max_memory)


def _op_buffer_bytes(layer_ops: LayerOps, n: int, n_words: int) -> int:
    return max(op.buffer_bytes(n, n_words) for op in layer_ops(1))


def _slab_words(layer_ops: LayerOps, n: int, n_seeds: int, max_memory: int, slab_size: int | None) -> int:
    if slab_size is not None:
        slab_size = check_int("slab_size", slab_size, 1)
        n_words = -(-min(slab_size, n_seeds) // 64)
        needed = slab_bytes(n, n_words, _op_buffer_bytes(layer_ops, n, n_words))
        if needed > max_memory:
            raise MemoryError(f"slab_size: {slab_size} seeds need {needed / 2**20:.1f} MiB > max_memory")
        return n_words
    n_words = words_per_slab(n, n_seeds, max_memory)
    # the operators' scratch is a few MiB at most: shrink once if it tips the slab over the budget
    while n_words > 1 and slab_bytes(n, n_words, _op_buffer_bytes(layer_ops, n, n_words)) > max_memory:
        n_words = max(1, n_words * 7 // 8)
    return n_words


def _seed(bits: np.ndarray, nodes: np.ndarray) -> None:
    """Bit ``k`` of row ``nodes[k]``: slab seed ``k`` starts at node ``nodes[k]``."""
    bits[:] = 0
    k = np.arange(nodes.size)
    np.bitwise_or.at(bits, (nodes, k // 64), np.left_shift(np.uint64(1), (k % 64).astype(np.uint64)))


@dataclass(frozen=True)
class SlabCounts:
    """One slab's share of the receptive fields, as returned by :func:`slab_counts`.

    Attributes
    ----------
    start, stop : int
        The slab's sources ``start..stop-1``.
    counts : numpy.ndarray
        ``counts[l - 1, i] = |RF_l(i) & {start..stop-1}|``.
    full : bool
        The slab was complete at its last layer (every node held all its admissible sources), so its last row
        holds for every later layer too.

    Examples
    --------
    >>> from graphs import WindowOp, slab_counts
    >>> part = slab_counts(lambda layer: [WindowOp(1, 1)], 6, 0, 3, max_layers=2)  # sources 0, 1, 2 only
    >>> part.start, part.stop, part.counts.tolist(), part.full
    (0, 3, [[2, 3, 2, 1, 0, 0], [3, 3, 3, 2, 1, 0]], False)
    """

    start: int
    stop: int
    counts: np.ndarray
    full: bool


def slab_counts(
    layer_ops: LayerOps,
    n: int,
    start: int,
    stop: int,
    *,
    max_layers: int,
    causal: bool = False,
    stop_when_full: bool = True,
    buffers: tuple[np.ndarray, np.ndarray] | None = None,
) -> SlabCounts:
    """Propagate the sources ``start..stop-1`` forward through layers ``1..max_layers`` (an independent task).

    Parameters
    ----------
    layer_ops : callable
        ``layer_ops(l)`` returns the operators of layer ``l`` (edges key -> query, self included).
    n : int
        Nodes.
    start, stop : int
        The slab's sources, ``0 <= start < stop <= n``.
    max_layers : int
        Layers to run at most.
    causal : bool, optional
        Admissible sets are ``j <= i``.
    stop_when_full : bool, optional
        Stop at the first layer at which every node holds all its admissible sources of the slab.
    buffers : tuple of numpy.ndarray, optional
        Two ``(n, W)`` uint64 arrays with ``64 W >= stop - start`` to reuse across slabs.

    Returns
    -------
    SlabCounts

    Raises
    ------
    TypeError
        If ``layer_ops`` is not callable, ``n``, ``start``, ``stop`` or ``max_layers`` is not an integer, or a flag
        is not a bool.
    ValueError
        If the slab or the buffers do not fit ``n``.

    References
    ----------
    - M. Then et al., "The more the merrier: efficient multi-source graph traversal", Proc. VLDB Endow. 8,
      449-460 (2014) (bit-parallel multi-source BFS).

    Examples
    --------
    >>> from graphs import WindowOp
    >>> ops = lambda layer: [WindowOp(1, 0, order=1)]  # causal window of 2: i attends i-1 and i
    >>> slab = slab_counts(ops, 8, 0, 4, max_layers=10, causal=True)
    >>> slab.counts.shape, slab.full
    ((7, 8), True)
    """
    n, max_layers, causal, _ = _check_common(layer_ops, n, max_layers, causal, stop_when_full)
    start, stop = check_int("start", start, 0), check_int("stop", stop, 1)
    if not start < stop <= n:
        raise ValueError(f"start, stop: expected 0 <= start < stop <= n = {n}, got {start}, {stop}")
    if buffers is None:
        n_words = -(-(stop - start) // 64)
        buffers = (np.empty((n, n_words), dtype=np.uint64), np.empty((n, n_words), dtype=np.uint64))
    bits, nxt = buffers
    if bits.shape[0] != n or 64 * bits.shape[1] < stop - start:
        raise ValueError(f"buffers: expected two ({n}, >= {-(-(stop - start) // 64)}) uint64 arrays")
    nodes = np.arange(n, dtype=np.int64)
    expected = np.clip(nodes - start + 1, 0, stop - start) if causal else np.full(n, stop - start)
    _seed(bits, np.arange(start, stop, dtype=np.int64))
    rows = []
    for layer in range(1, max_layers + 1):
        apply_layer(layer_ops(layer), bits, nxt)
        bits, nxt = nxt, bits
        rows.append(kernels.row_popcounts(bits))
        if stop_when_full and np.array_equal(rows[-1], expected):
            return SlabCounts(start, stop, np.vstack(rows), True)
    return SlabCounts(start, stop, np.vstack(rows), False)


def combine_slabs(slabs: Iterable[SlabCounts], n: int, causal: bool) -> ReachCounts:
    """Sum the slabs' counts into ``|RF_l(i)|``; a slab that stopped full adds its last row to every later layer.

    The slabs are consumed one at a time (memory: one slab's counts plus the sum).

    Parameters
    ----------
    slabs : iterable of SlabCounts
        Slabs that partition ``0..n-1``.
    n : int
        Nodes.
    causal : bool
        Admissible sets are ``j <= i``.

    Returns
    -------
    ReachCounts

    Raises
    ------
    TypeError
        If ``n`` is not an integer, ``causal`` is not a bool or a slab is not a :class:`SlabCounts`.
    ValueError
        If ``n < 1``, or the slabs do not partition ``0..n-1`` or one stopped early without being full.

    References
    ----------
    - L. Jin and Y. Sui, arXiv:2604.00754 (2026) (receptive fields of stacked sparse-attention layers).

    Examples
    --------
    >>> from graphs import WindowOp
    >>> ops = lambda layer: [WindowOp(1, 0, order=1)]  # causal window of 2: i attends i-1 and i
    >>> parts = [slab_counts(ops, 8, a, b, max_layers=10, causal=True) for a, b in [(0, 4), (4, 8)]]
    >>> combine_slabs(parts, 8, causal=True).full_layer
    7
    """
    n, causal = check_int("n", n, 1), check_bool("causal", causal)
    per_layer: list[np.ndarray] = []  # summed counts of the slabs that ran layer l
    finals: list[np.ndarray] = []  # finals[l - 1]: summed last rows of the slabs that stopped full at layer l
    ranges = []
    for k, slab in enumerate(slabs):
        if not isinstance(slab, SlabCounts):
            raise TypeError(f"slabs[{k}]: expected a graphs.SlabCounts, got {type(slab).__name__}")
        rows = slab.counts.shape[0]
        while len(per_layer) < rows:
            per_layer.append(np.zeros(n, dtype=np.int64))
            finals.append(np.zeros(n, dtype=np.int64))
        for layer in range(rows):
            per_layer[layer] += slab.counts[layer]
        if slab.full:
            finals[rows - 1] += slab.counts[-1]
        ranges.append((slab.start, slab.stop, rows, slab.full))
    ranges.sort()
    if not ranges or ranges[0][0] != 0 or ranges[-1][1] != n or any(a[1] != b[0] for a, b in pairwise(ranges)):
        raise ValueError(f"slabs: expected slabs that partition 0..{n - 1}, got {[r[:2] for r in ranges]}")
    layers = len(per_layer)
    unfinished = [r[:2] for r in ranges if r[2] < layers and not r[3]]
    if unfinished:
        raise ValueError(f"slabs: {unfinished} stopped before layer {layers} without being full")
    done = np.vstack(finals)
    counts = np.vstack(per_layer) + np.cumsum(done, axis=0) - done
    nodes = np.arange(n, dtype=np.int64)
    widest = max(r[1] - r[0] for r in ranges)
    return ReachCounts(counts, _full_layer(counts, nodes, n, causal), len(ranges), widest)


def _slab_ranges(n: int, seeds_per_slab: int) -> list[tuple[int, int]]:
    """Return ``[(start, stop), ...]`` covering ``0..n-1`` in slabs of ``seeds_per_slab`` sources.

    Parameters
    ----------
    n : int
        Number of sources (nodes).
    seeds_per_slab : int
        Sources per slab; the last slab holds the rest.

    Returns
    -------
    list of tuple of int
        The half-open ranges, in order.

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If an argument is below 1.

    Examples
    --------
    >>> _slab_ranges(10, 4)
    [(0, 4), (4, 8), (8, 10)]
    """
    n, seeds_per_slab = check_int("n", n, 1), check_int("seeds_per_slab", seeds_per_slab, 1)
    return [(s, min(n, s + seeds_per_slab)) for s in range(0, n, seeds_per_slab)]


def plan_slabs(
    layer_ops: LayerOps, n: int, max_memory: int = DEFAULT_MAX_MEMORY, slab_size: int | None = None
) -> list[tuple[int, int]]:
    """Return the slabs :func:`forward_counts` uses: as wide as ``max_memory`` allows (a multiple of 64 seeds).

    Parameters
    ----------
    layer_ops : callable
        ``layer_ops(l)`` returns the operators of layer ``l`` (edges key -> query, self included).
    n : int
        Nodes.
    max_memory : int or str, optional
        Bytes available for the bitsets and the operators' scratch (``"512MiB"``, ... as
        :func:`graphs.memory.parse_bytes`).
    slab_size : int or None, optional
        Seeds per slab instead (rounded up to a multiple of 64).

    Returns
    -------
    list of tuple of int

    Raises
    ------
    TypeError
        If ``layer_ops`` is not callable or ``n``, ``max_memory`` or ``slab_size`` is of the wrong type.
    ValueError
        If ``n``, ``max_memory`` or ``slab_size`` is below 1.
    MemoryError
        If not even one 64-seed slab fits ``max_memory``.

    Examples
    --------
    >>> from graphs import WindowOp
    >>> ops = lambda layer: [WindowOp(1, 0, order=1)]  # causal window of 2: i attends i-1 and i
    >>> plan_slabs(ops, 200, max_memory=2**20)
    [(0, 200)]
    """
    if not callable(layer_ops):
        raise TypeError(f"layer_ops: expected a callable layer -> operators, got {type(layer_ops).__name__}")
    n, max_memory = check_int("n", n, 1), parse_bytes(max_memory)
    return _slab_ranges(n, 64 * _slab_words(layer_ops, n, n, max_memory, slab_size))


def forward_counts(
    layer_ops: LayerOps,
    n: int,
    *,
    max_layers: int,
    causal: bool = False,
    stop_when_full: bool = True,
    max_memory: int = DEFAULT_MAX_MEMORY,
    slab_size: int | None = None,
    progress: bool | None = None,
) -> ReachCounts:
    """``|RF_l(i)|`` for every node ``i`` and layer ``l <= max_layers``, from all ``n`` sources, slab by slab.

    ``layer_ops(l)`` returns the operators of layer ``l`` (forward edges key -> query, self included).
    A slab stops once each node holds all of the slab's admissible sources (coverage cannot fall), and the whole
    run stops at the first layer at which every slab has (``stop_when_full``); later layers repeat that row.

    Parameters
    ----------
    layer_ops : callable
        ``layer_ops(l)`` returns the operators of layer ``l`` (edges key -> query, self included).
    n : int
        Nodes, at least 1.
    max_layers : int
        Layers to run at most, at least 1.
    causal : bool, optional
        Admissible sets are ``j <= i``.
    stop_when_full : bool, optional
        Stop once every receptive field is full.
    max_memory : int or str, optional
        Bytes available for the bitsets and the operators' scratch (``"512MiB"``, ... as
        :func:`graphs.memory.parse_bytes`).
    slab_size : int or None, optional
        Seeds per slab (default: as many as fit).
    progress : bool or None, optional
        Show a progress bar (``None``: only on a terminal).

    Returns
    -------
    ReachCounts

    Raises
    ------
    TypeError
        If ``layer_ops`` is not callable, ``n``, ``max_layers`` or ``slab_size`` is not an integer, a flag is not a
        bool or ``max_memory`` is not a size.
    ValueError
        If ``n``, ``max_layers``, ``max_memory`` or ``slab_size`` is below 1.
    MemoryError
        If not even one 64-seed slab fits ``max_memory``.

    References
    ----------
    - L. Jin and Y. Sui, arXiv:2604.00754 (2026) (receptive fields of stacked sparse-attention layers).

    Examples
    --------
    >>> from graphs import WindowOp
    >>> ops = lambda layer: [WindowOp(1, 0, order=1)]  # causal window of 2: i attends i-1 and i
    >>> reach = forward_counts(ops, 8, max_layers=10, causal=True)
    >>> reach.full_layer, reach.counts[0].tolist()
    (7, [1, 2, 2, 2, 2, 2, 2, 2])
    """
    n, max_layers, causal, max_memory = _check_common(
        layer_ops, n, max_layers, causal, stop_when_full, progress, max_memory
    )
    ranges = plan_slabs(layer_ops, n, max_memory, slab_size)
    n_words = -(-(ranges[0][1] - ranges[0][0]) // 64)
    buffers = (np.empty((n, n_words), dtype=np.uint64), np.empty((n, n_words), dtype=np.uint64))
    bar = progress_bar(progress, ranges, unit="slab", desc="coverage", leave=False)
    slabs = (
        slab_counts(
            layer_ops,
            n,
            start,
            stop,
            max_layers=max_layers,
            causal=causal,
            stop_when_full=stop_when_full,
            buffers=buffers,
        )
        for start, stop in bar
    )
    return combine_slabs(slabs, n, causal)


def _full_layer(counts: np.ndarray, nodes: np.ndarray, n: int, causal: bool) -> int | None:
    full = np.all(counts == admissible_sizes(nodes, n, causal)[None, :], axis=1)
    hits = np.flatnonzero(full)
    return int(hits[0]) + 1 if hits.size else None


class _NoBar:
    """What a disabled tqdm bar does: iterate, and ignore updates."""

    def __init__(self, iterable=None):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def update(self, _n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(progress: bool | None, iterable=None, **kwargs):
    """Return a tqdm bar if ``progress`` (``None``: only when stderr is a terminal), else a silent stand-in.

    tqdm is imported only when a bar is shown, which keeps it out of the start-up of scripts and CLIs that run
    without a terminal.

    Parameters
    ----------
    progress : bool or None
        Show the bar.
    iterable : iterable, optional
        What the bar iterates over.
    **kwargs
        Passed to ``tqdm``.

    Returns
    -------
    object
        Iterable, with ``update(n)`` and ``close()``.

    Examples
    --------
    >>> list(progress_bar(False, range(3)))
    [0, 1, 2]
    """
    progress = check_bool("progress", progress, none=True)
    if progress is False or (progress is None and not sys.stderr.isatty()):
        return _NoBar(iterable)
    from tqdm.auto import tqdm

    return tqdm(iterable, **kwargs)


def _quiet(progress: bool | None) -> bool | None:
    """tqdm's ``disable``: ``None`` shows a bar only on a terminal (used by :mod:`graphs.paths`)."""
    return None if progress is None else not progress
