"""Receptive fields of sampled targets, exactly, by propagating through the transposed layers.

Seeds are targets: running the transposed layers ``L, L-1, .., 1`` leaves bit ``t`` set in exactly the rows
``j in RF_L(t)`` (layer ``l``'s edges key -> query reversed), so column popcounts give ``|RF_L(t)|`` for a sample of
``K`` targets without touching the other ``n - K`` receptive fields (:func:`backward_counts`), and the first layer at
which all of them are complete is found by search (:func:`backward_full_layer`). The forward direction, every
receptive field from all ``n`` sources, and the shared pieces (:class:`~graphs.reachability.ReachCounts`, the slabs'
memory plan, the progress bar) are in :mod:`graphs.reachability`.

References
----------
- L. Jin and Y. Sui, arXiv:2604.00754 (2026) (receptive fields of stacked sparse-attention layers).
- M. Then et al., "The more the merrier: efficient multi-source graph traversal", Proc. VLDB Endow. 8, 449-460
  (2014) (bit-parallel multi-source BFS).
"""

from __future__ import annotations

import numpy as np

from . import kernels
from .memory import DEFAULT_MAX_MEMORY
from .ops import apply_layer
from .reachability import (
    LayerOps,
    ReachCounts,
    _check_common,
    _check_positions,
    _seed,
    _slab_words,
    admissible_sizes,
    progress_bar,
)
from .validation import check_int


def _check_targets(targets, n: int) -> np.ndarray:
    """``targets`` as a non-empty 1-d int64 array of positions in ``0..n-1``."""
    targets = _check_positions("targets", targets, n)
    if targets.ndim != 1:
        raise ValueError(f"targets: expected a non-empty 1-d array of positions in 0..{n - 1}")
    return targets


def _backward_sizes(layer_ops: LayerOps, chunk: np.ndarray, layers: int, bits: np.ndarray, nxt: np.ndarray):
    """``|RF_layers(t)|`` for each target of ``chunk``: seed them, run the transposed layers ``layers, .., 1``,
    count each target's bit over the rows. ``bits`` and ``nxt`` are scratch slabs."""
    _seed(bits, chunk)
    for back in range(layers, 0, -1):
        apply_layer([op.transpose() for op in layer_ops(back)], bits, nxt)
        bits, nxt = nxt, bits
    return kernels.column_popcounts(bits)[: chunk.size]


def backward_counts(
    layer_ops: LayerOps,
    n: int,
    targets: np.ndarray,
    *,
    max_layers: int,
    causal: bool = False,
    stop_when_full: bool = True,
    max_memory: int = DEFAULT_MAX_MEMORY,
    slab_size: int | None = None,
    progress: bool | None = None,
) -> ReachCounts:
    """``|RF_l(t)|`` for the given targets ``t`` and every layer ``l <= max_layers``, exactly.

    ``RF_L(t)`` depends on the order of the layers, so each ``L`` runs the transposed layers ``L, .., 1`` afresh:
    ``L (L + 1) / 2`` layer applications in all, each on ``n * ceil(K / 64)`` words.

    Parameters
    ----------
    layer_ops : callable
        ``layer_ops(l)`` returns the operators of layer ``l`` (edges key -> query, self included).
    n : int
        Nodes, at least 1.
    targets : array_like of int
        Target positions in ``0..n-1`` (non-empty).
    max_layers : int
        Layers to run at most, at least 1.
    causal : bool, optional
        Admissible sets are ``j <= i``.
    stop_when_full : bool, optional
        Stop once every target's receptive field is full.
    max_memory : int or str, optional
        Bytes available (``"512MiB"``, ... as :func:`graphs.memory.parse_bytes`).
    slab_size : int or None, optional
        Targets per slab (default: as many as fit).
    progress : bool or None, optional
        Show a progress bar (``None``: only on a terminal).

    Returns
    -------
    ReachCounts
        ``counts[l - 1, k] = |RF_l(targets[k])|``.

    Raises
    ------
    TypeError
        If ``layer_ops`` is not callable, ``targets`` are not integers, ``n``, ``max_layers`` or ``slab_size`` is
        not an integer, a flag is not a bool or ``max_memory`` is not a size.
    ValueError
        If ``targets`` is empty or out of range, or ``n``, ``max_layers``, ``max_memory`` or ``slab_size`` is
        below 1.
    MemoryError
        If not even one 64-target slab fits ``max_memory``.

    References
    ----------
    - L. Jin and Y. Sui, arXiv:2604.00754 (2026) (receptive fields of stacked sparse-attention layers).

    Examples
    --------
    >>> from graphs import WindowOp
    >>> ops = lambda layer: [WindowOp(1, 0, order=1)]  # causal window of 2: i attends i-1 and i
    >>> reach = backward_counts(ops, 8, [7, 3], max_layers=10, causal=True)
    >>> reach.counts[:, 0].tolist(), reach.full_layer
    ([2, 3, 4, 5, 6, 7, 8], 7)
    """
    n, max_layers, causal, max_memory = _check_common(
        layer_ops, n, max_layers, causal, stop_when_full, progress, max_memory
    )
    targets = _check_targets(targets, n)
    n_words = _slab_words(layer_ops, n, targets.size, max_memory, slab_size)
    per_slab = 64 * n_words
    bits = np.empty((n, n_words), dtype=np.uint64)
    nxt = np.empty_like(bits)
    wanted = admissible_sizes(targets, n, causal)
    rows: list[np.ndarray] = []
    total = max_layers * (max_layers + 1) // 2
    bar = progress_bar(progress, total=total, unit="layer", desc="sampled coverage", leave=False)
    for layer in range(1, max_layers + 1):
        row = np.empty(targets.size, dtype=np.int64)
        for k0 in range(0, targets.size, per_slab):
            chunk = targets[k0 : k0 + per_slab]
            row[k0 : k0 + chunk.size] = _backward_sizes(layer_ops, chunk, layer, bits, nxt)
        rows.append(row)
        bar.update(layer)
        if stop_when_full and np.array_equal(row, wanted):
            break
    bar.close()
    counts = np.vstack(rows)
    full = np.flatnonzero(np.all(counts == wanted[None, :], axis=1))
    full_layer = int(full[0]) + 1 if full.size else None
    return ReachCounts(counts, full_layer, -(-targets.size // per_slab), per_slab)


def backward_full_layer(
    layer_ops: LayerOps,
    n: int,
    targets: np.ndarray,
    *,
    guess: int,
    max_layers: int,
    causal: bool = False,
    max_memory: int = DEFAULT_MAX_MEMORY,
) -> tuple[int | None, int]:
    """The first layer at which every target's receptive field is complete, by search instead of a layer-by-layer
    scan: coverage only grows with depth, so "complete after L" is monotone in L and ``L*`` is found from a good
    ``guess`` in a few backward passes of about ``L*`` layers each (instead of ``L* (L* + 1) / 2`` layers).

    Parameters
    ----------
    layer_ops : callable
        ``layer_ops(l)`` returns the operators of layer ``l`` (edges key -> query, self included).
    n : int
        Nodes, at least 1.
    targets : array_like of int
        Target positions in ``0..n-1`` (non-empty).
    guess : int
        Starting point of the search (e.g. a closed form's L*), ``>= 1``.
    max_layers : int
        Deepest layer to try, at least 1.
    causal : bool, optional
        Admissible sets are ``j <= i``.
    max_memory : int or str, optional
        Bytes available (``"512MiB"``, ... as :func:`graphs.memory.parse_bytes`).

    Returns
    -------
    full_layer : int or None
        ``L*``, or ``None`` if not complete at ``max_layers``.
    applied : int
        Layer applications the search used.

    Raises
    ------
    TypeError
        If ``layer_ops`` is not callable, ``targets`` are not integers, ``n``, ``guess`` or ``max_layers`` is not an
        integer, ``causal`` is not a bool or ``max_memory`` is not a size.
    ValueError
        If ``targets`` is empty or out of range, or ``n``, ``guess``, ``max_layers`` or ``max_memory`` is below 1.
    MemoryError
        If not even one 64-target slab fits ``max_memory``.

    References
    ----------
    - L. Jin and Y. Sui, arXiv:2604.00754 (2026) (receptive fields of stacked sparse-attention layers).

    Examples
    --------
    >>> from graphs import WindowOp
    >>> ops = lambda layer: [WindowOp(1, 0, order=1)]  # causal window of 2: i attends i-1 and i
    >>> backward_full_layer(ops, 8, [7, 3], guess=4, max_layers=10, causal=True)
    (7, 22)
    """
    n, max_layers, causal, max_memory = _check_common(layer_ops, n, max_layers, causal, max_memory=max_memory)
    targets = _check_targets(targets, n)
    guess = check_int("guess", guess, 1)
    wanted = admissible_sizes(targets, n, causal)
    n_words = _slab_words(layer_ops, n, targets.size, max_memory, None)
    per_slab = 64 * n_words
    bits = np.empty((n, n_words), dtype=np.uint64)
    nxt = np.empty_like(bits)
    applied = 0

    def complete(layers: int) -> bool:
        nonlocal applied
        for k0 in range(0, targets.size, per_slab):
            chunk = targets[k0 : k0 + per_slab]
            applied += layers
            if not np.array_equal(_backward_sizes(layer_ops, chunk, layers, bits, nxt), wanted[k0 : k0 + chunk.size]):
                return False
        return True

    # gallop from the guess to a bracket (incomplete low, complete high], then bisect it
    high = min(max(1, guess), max_layers)
    low = 0
    if complete(high):
        step = 1
        while high > 1:
            probe = max(1, high - step)
            if not complete(probe):
                low = probe
                break
            high, step = probe, step * 2
    else:
        low, step = high, 1
        while True:
            if low == max_layers:
                return None, applied
            probe = min(max_layers, low + step)
            if complete(probe):
                high = probe
                break
            low, step = probe, step * 2
    while high - low > 1:
        mid = (low + high) // 2
        if complete(mid):
            high = mid
        else:
            low = mid
    return high, applied
