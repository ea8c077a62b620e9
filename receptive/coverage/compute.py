"""Coverage of an attention pattern through depth: closed form, exact (all slabs) or sampled targets."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from graphs import admissible_sizes, backward_counts, forward_counts
from graphs.memory import DEFAULT_MAX_MEMORY, parse_bytes, slab_bytes

from ..patterns import Pattern
from ..permutations import TARGET_STREAM
from ..validation import check_bool, check_choice, check_instance, check_int
from .results import CoverageResult, LayerCoverage
from .sampling import betting_intervals, clopper_pearson, stratified_targets

METHODS = ("auto", "exact", "sampled", "closed-form")
DEFAULT_TARGETS = 1024
DEFAULT_MAX_LAYERS = 64
#: ``auto`` runs exact coverage while one layer over all slabs touches at most this many 64-bit words
#: (``n * ceil(n / 64)``; 2^26 is n = 65536, about a second per layer on two cores), else sampled targets.
EXACT_WORDS_PER_LAYER = 2**26


def coverage_by_layer(
    pattern: Pattern,
    layers: int | None = None,
    *,
    method: str = "auto",
    targets: int | np.ndarray | None = None,
    max_layers: int = DEFAULT_MAX_LAYERS,
    max_memory: int | str = DEFAULT_MAX_MEMORY,
    slab_size: int | None = None,
    seed: int = 0,
    progress: bool | None = None,
) -> CoverageResult:
    """Per-layer coverage of ``pattern``: mean, minimum and fully-covered share of ``|RF_L(i)| / |A(i)|``, and L*.

    ``RF_L(i)`` is the set of positions with a path to ``i`` through layers ``1..L`` (the query itself included)
    and ``A(i)`` all positions, or ``j <= i`` when causal; ``L*`` is the first layer at which every position is
    fully covered.

    Parameters
    ----------
    pattern : Pattern
        The attention pattern (or layer stack).
    layers : int, optional
        Compute layers ``1..layers``; ``None`` runs until every position is fully covered, at most ``max_layers``.
    method : {"auto", "exact", "sampled", "closed-form"}, default "auto"
        ``closed-form`` (patterns that have one), ``exact`` (every position, slab by slab), ``sampled``
        (``targets`` positions, each receptive field exact), or ``auto`` (closed form if any, else exact while
        ``n * ceil(n / 64) <= 2^26`` words, else 1024 sampled targets).
    targets : int or array_like of int, optional
        A number of stratified random target positions (both ends always in), or the positions themselves.
    max_layers : int, default 64
        Cap on the layers when ``layers`` is ``None``.
    max_memory : int or str, default 3 GiB
        Bound on what the call holds: the per-layer sizes and statistics plus the engine's slabs (``"512MiB"``,
        ``2**30``, ...). Checked before anything large is allocated.
    slab_size : int, optional
        Seeds per slab of the exact engine (default: as many as ``max_memory`` allows).
    seed : int, default 0
        Seed of the sampled targets and of the interval estimates.
    progress : bool, optional
        Show a progress bar (``None``: only on a terminal).

    Returns
    -------
    CoverageResult
        Per-layer :class:`LayerCoverage` rows, ``full_coverage_layer`` (``L*`` or ``None``), the sizes
        ``|RF_L(i)|`` per (layer, position) and the positions they belong to.

    Raises
    ------
    TypeError
        If ``pattern`` is not a :class:`~receptive.patterns.Pattern`, ``method`` is not a string, ``targets`` is
        neither a count nor integer positions, an integer argument is not an integer, ``max_memory`` is not a size
        or ``progress`` is neither a bool nor ``None``.
    ValueError
        If a value is out of range, or ``method`` does not apply to ``pattern`` / ``targets``.
    MemoryError
        If the layers asked for cannot fit ``max_memory`` (the message says how many would).

    Examples
    --------
    >>> from receptive import coverage_by_layer, make_pattern
    >>> result = coverage_by_layer(make_pattern("sa", 1024, 16, seed=0), method="exact")
    >>> result.full_coverage_layer is not None and result.layers[-1].full_fraction == 1.0
    True
    >>> coverage_by_layer(make_pattern("swa", 64, 8), 3).layers[0].mean
    0.12109375

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754 (coverage and ``L*`` of SA, SWA and SA+SWA).
    Waudby-Smith & Ramdas 2024, "Estimating means of bounded random variables by betting", JRSS B (the interval
    of the sampled mean); Clopper & Pearson 1934, Biometrika 26 (the interval of the full share).
    """
    if not isinstance(pattern, Pattern):
        raise TypeError(f"pattern: expected a receptive.patterns.Pattern, got {type(pattern).__name__}")
    check_choice("method", method, METHODS)
    n = pattern.n
    if layers is not None:
        layers = check_int("layers", layers, 1)
    max_layers = check_int("max_layers", max_layers, 1)
    max_memory = parse_bytes(max_memory)
    if slab_size is not None:
        slab_size = check_int("slab_size", slab_size, 1)
    seed = check_int("seed", seed, 0)
    check_bool("progress", progress, none=True)
    positions = target_positions(targets, n, seed) if targets is not None else None
    designed = targets is None or (isinstance(targets, int | np.integer) and not isinstance(targets, bool))
    if positions is not None and method in ("exact", "closed-form"):
        raise ValueError(f"targets: only with method 'sampled' or 'auto', not {method!r}")

    chosen = _choose_method(pattern, method, positions)
    cap = layers if layers is not None else max_layers
    rows = cap if pattern.max_layers is None else min(cap, pattern.max_layers)
    columns = n if chosen != "sampled" else min(n, DEFAULT_TARGETS) if positions is None else positions.size
    engine_memory = _check_result_memory(chosen, rows, columns, n, max_memory)
    note = ""
    if pattern.max_layers is not None and cap > pattern.max_layers:
        note = f"the pattern defines {pattern.max_layers} layers (one per given permutation); computed those"
        cap = pattern.max_layers

    if chosen == "closed-form":
        full_layer = pattern.closed_form_full_layer()
        count = layers if layers is not None else min(full_layer or max_layers, max_layers)
        sizes = np.vstack([pattern.closed_form_counts(layer) for layer in range(1, count + 1)])
        if full_layer is not None and full_layer > count:  # as exact: L* only within the layers computed
            note = f"not fully covered within {count} layers (closed form: L* = {full_layer})"
            full_layer = None
        positions = np.arange(n, dtype=np.int64)
    else:
        if chosen == "sampled" and positions is None:
            positions = target_positions(min(DEFAULT_TARGETS, n), n, seed)
        engine = dict(
            max_layers=cap, causal=pattern.causal, max_memory=engine_memory, slab_size=slab_size, progress=progress
        )
        if chosen == "exact":
            reach = forward_counts(pattern.layer_ops, n, **engine)
            positions = np.arange(n, dtype=np.int64)
        else:
            reach = backward_counts(pattern.layer_ops, n, positions, **engine)
            note = (note + "; " if note else "") + (
                f"{positions.size} sampled targets, each exact; L* = first layer with no sampled target uncovered"
            )
        sizes = _pad_layers(reach.counts, cap if layers is not None else reach.counts.shape[0])
        full_layer = reach.full_layer
        if full_layer is None and layers is None:
            note = (note + "; " if note else "") + f"not fully covered within {cap} layers"

    stats = _layer_stats(
        sizes,
        admissible_sizes(positions, n, pattern.causal),
        sampled=chosen == "sampled",
        n=n,
        positions=positions,
        designed=designed,
        seed=seed,
    )
    return CoverageResult(
        pattern=pattern.name,
        description=pattern.describe(),
        n=n,
        causal=pattern.causal,
        method=chosen,
        layers=stats,
        full_coverage_layer=full_layer,
        targets=positions.size if chosen == "sampled" else None,
        note=note,
        sizes=sizes,
        positions=positions,
    )


#: bytes held per (layer, position) of the result at the call's peak, by method (measured with tracemalloc, with a
#: margin): the exact engine sums its slabs' per-layer int64 counts (the slab's rows and their stack, the running
#: sums, the completed slabs' last rows, their stack and cumulative sum, the total), the sampled engine stacks its
#: rows and the interval estimates copy the inner targets' float64 coverages; the statistics hold the coverages and
#: a boolean mask. What is left of ``max_memory`` goes to the engine's slabs.
BYTES_PER_CELL = {"exact": 72, "sampled": 96, "closed-form": 32}


def _check_result_memory(method: str, rows: int, cols: int, n: int, max_memory: int) -> int:
    """Refuse before allocating when the per-layer arrays of ``rows`` layers x ``cols`` positions and the smallest
    slab of the engine (one 64-bit word per position, twice, and a row of counts) exceed ``max_memory``; return what
    is left of it for the engine's slabs."""
    per_layer = BYTES_PER_CELL[method] * cols
    need = per_layer * rows
    slab = 0 if method == "closed-form" else slab_bytes(n, 1)
    if slab > max_memory:  # not even one slab of the engine: a smaller n, or a larger bound where it was lowered
        at_fault = "n" if max_memory >= DEFAULT_MAX_MEMORY else "max_memory"
        raise MemoryError(
            f"{at_fault}: the engine's smallest slab for n = {n} holds {_size(slab)} > {_size(max_memory)} "
            f"(max_memory); pass a smaller n or a larger max_memory"
        )
    if need + slab > max_memory:
        fit = max(0, (max_memory - slab) // per_layer)
        raise MemoryError(
            f"max_memory: {rows} layers x {cols} positions ({method}) hold {_size(need + slab)} of per-layer "
            f"sizes > {_size(max_memory)}; {fit} layers fit (pass fewer layers or max_layers, sampled "
            f"targets, or a larger max_memory)"
        )
    return max_memory - need


def _size(nbytes: int) -> str:
    """``nbytes`` in GiB, or in MiB below one GiB."""
    return f"{nbytes / 2**30:.2f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:.1f} MiB"


def exact_fits(n: int) -> bool:
    """Whether ``auto`` computes every receptive field of an ``n``-token pattern (see EXACT_WORDS_PER_LAYER).

    Parameters
    ----------
    n : int
        Sequence length.

    Returns
    -------
    bool
        ``n * ceil(n / 64) <= EXACT_WORDS_PER_LAYER`` (the bit matrix of one layer, in 64-bit words).

    Raises
    ------
    TypeError
        If ``n`` is not an integer.
    ValueError
        If ``n < 1``.

    Examples
    --------
    >>> from receptive.coverage.compute import exact_fits
    >>> exact_fits(4096), exact_fits(2**20)
    (True, False)
    """
    n = check_int("n", n, 1)
    return n * math.ceil(n / 64) <= EXACT_WORDS_PER_LAYER


def _choose_method(pattern: Pattern, method: str, positions: np.ndarray | None) -> str:
    if method == "closed-form" and not pattern.has_closed_form:
        raise ValueError(f"method: pattern {pattern.name!r} has no closed form; use exact or sampled")
    if method != "auto":
        return method
    if positions is not None:
        return "sampled"
    if pattern.has_closed_form:
        return "closed-form"
    return "exact" if exact_fits(pattern.n) else "sampled"


def target_positions(targets, n: int, seed: int = 0) -> np.ndarray:
    """The target positions of sampled coverage: a stratified seeded draw, or the given positions.

    Parameters
    ----------
    targets : int or array_like of int
        A count ``K`` in ``[1, n]`` (the design of :func:`receptive.coverage.sampling.stratified_targets`: both
        ends always in), or positions in ``0..n-1``.
    n : int
        Sequence length.
    seed : int, default 0
        Seed of the draw (stream ``TARGET_STREAM`` of :mod:`receptive.permutations`).

    Returns
    -------
    numpy.ndarray
        Sorted distinct int64 positions.

    Raises
    ------
    TypeError
        If ``targets`` is neither an integer count nor an array of integer positions (a string, a float, ...), or
        ``n`` or ``seed`` is not an integer.
    ValueError
        If the count is out of range, the positions are not a non-empty 1-d array in ``0..n-1``, ``n < 1`` or
        ``seed < 0``.

    Examples
    --------
    >>> from receptive.coverage.compute import target_positions
    >>> pos = target_positions(4, 100, seed=0)
    >>> pos.size, int(pos[0]), int(pos[-1])
    (4, 0, 99)
    >>> target_positions([5, 3, 5], 10).tolist()
    [3, 5]
    """
    n, seed = check_int("n", n, 1), check_int("seed", seed, 0)
    if isinstance(targets, int | np.integer) and not isinstance(targets, bool):
        k = check_int("targets", targets, 1, n)
        return stratified_targets(k, n, np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(TARGET_STREAM,))))
    arr = np.asarray(targets)
    if isinstance(targets, str | bytes | bool) or arr.ndim == 0 or (arr.size and arr.dtype.kind not in "iu"):
        raise TypeError(
            f"targets: expected a count in [1, {n}] or a 1-d array of integer positions, got {type(targets).__name__}"
        )
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"targets: expected a count in [1, {n}] or a 1-d array of positions")
    if arr.min() < 0 or arr.max() >= n:
        raise ValueError(f"targets: positions must lie in 0..{n - 1}")
    return np.unique(arr.astype(np.int64))


def _pad_layers(counts: np.ndarray, layers: int) -> np.ndarray:
    """Repeat the last row up to ``layers`` rows: after full coverage (the engine's early stop) nothing changes."""
    if counts.shape[0] >= layers:
        return counts[:layers]
    return np.vstack([counts, np.repeat(counts[-1:], layers - counts.shape[0], axis=0)])


def _layer_stats(
    sizes: np.ndarray, admissible: np.ndarray, sampled: bool, n: int, positions: np.ndarray, designed: bool, seed: int
) -> list[LayerCoverage]:
    """Per-layer mean, min and full share. Sampled: the Horvitz-Thompson estimates of the stratified design (the two
    ends count for themselves, every inner target for ``(n - 2) / (K - 2)`` positions) with the betting interval
    of the mean and the Clopper-Pearson interval of the full share (``receptive.coverage.sampling``); targets
    given by the caller are taken as a simple random sample."""
    cov = sizes / admissible[None, :]
    full = cov == 1.0
    if not sampled or positions.size >= n:
        return [
            LayerCoverage(layer, float(row.mean()), float(row.min()), float(f.mean()))
            for layer, (row, f) in enumerate(zip(cov, full, strict=True), start=1)
        ]
    certain = (positions == 0) | (positions == n - 1) if designed else np.zeros(positions.size, dtype=bool)
    inner, n_certain = ~certain, int(certain.sum())
    population = n - n_certain

    def scale(inner_value):  # inner mean (or interval end) -> mean over all n positions
        return lambda row: (row[certain].sum() + population * inner_value) / n

    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(TARGET_STREAM, 1)))
    intervals = betting_intervals(cov[:, inner], population, rng)
    stats = []
    for layer, (row, f, (lo, hi)) in enumerate(zip(cov, full, intervals, strict=True), start=1):
        mean = scale(row[inner].mean())(row)
        f_lo, f_hi = clopper_pearson(int(f[inner].sum()), int(inner.sum()))
        share = scale(f[inner].mean())(f)
        stats.append(
            LayerCoverage(
                layer,
                float(mean),
                float(row.min()),
                float(share),
                (float(min(mean, scale(lo)(row))), float(max(mean, scale(hi)(row)))),
                (float(min(share, scale(f_lo)(f))), float(max(share, scale(f_hi)(f)))),
            )
        )
    return stats


def extend(result: CoverageResult, layers: int) -> CoverageResult:
    """``result`` with its per-layer rows repeated up to ``layers`` rows, only past full coverage.

    Past full coverage nothing changes any more, so the last row is repeated; a result not yet full raises.

    Parameters
    ----------
    result : CoverageResult
        A coverage result.
    layers : int
        Rows wanted (a result with as many or more is returned as it is).

    Returns
    -------
    CoverageResult
        The extended result (a copy).

    Raises
    ------
    TypeError
        If ``result`` is not a :class:`CoverageResult` or ``layers`` is not an integer.
    ValueError
        If ``layers < 1``, or ``result`` has fewer rows than ``layers`` and is not fully covered within them.

    Examples
    --------
    >>> from receptive import make_pattern
    >>> from receptive.coverage import coverage_by_layer
    >>> from receptive.coverage.compute import extend
    >>> res = coverage_by_layer(make_pattern("swa", 16, 3, causal=True), 8, method="exact", progress=False)
    >>> res.full_coverage_layer, len(extend(res, 12).layers), extend(res, 12).layers[-1].layer
    (8, 12, 12)
    """
    check_instance("result", result, CoverageResult, "receptive.CoverageResult")
    layers = check_int("layers", layers, 1)
    have = len(result.layers)
    if have >= layers:
        return result
    if result.full_coverage_layer is None or result.full_coverage_layer > have:
        raise ValueError(f"layers: cannot extend {result.pattern} past layer {have} before it is fully covered")
    last = result.layers[-1]
    rows = result.layers + [dataclasses.replace(last, layer=k) for k in range(have + 1, layers + 1)]
    sizes = None if result.sizes is None else _pad_layers(result.sizes, layers)
    return dataclasses.replace(result, layers=rows, sizes=sizes)
