"""What the lab's code does, measured: the matrix-product FLOPs torch counts and the peak bytes its profiler records
in one call of a method, to check the formulas of ``gpu.approx.costs`` against the code that runs.

References
----------
Serret, Cortinovis, ..., Grigori (2026). A survey of fast attention approximations. arXiv 2604.01757.
"""

from __future__ import annotations

import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils.flop_counter import FlopCounterMode

from gpu.approx.methods import METHODS, approximate, exact_attention
from gpu.validation import check_choice


def _random_inputs(method, n, d, heads, causal, seed, options):
    """Random ``(1, heads, n, d)`` q, k, v and, for causal methods that need it, calibration data."""
    g = torch.Generator().manual_seed(seed)
    q, k, v, ck, cv = (torch.randn(1, heads, n, d, generator=g) for _ in range(5))
    if method != "exact" and causal and "calibration" in METHODS[method].options and "calibration" not in options:
        options = {**options, "calibration": ck if method == "loki" else (ck, cv)}
    return q, k, v, options


def _call(method, q, k, v, budget, seed, causal, options):
    """Run ``method`` (or ``"exact"``) once."""
    if method == "exact":
        return exact_attention(q, k, v, causal=causal)
    return approximate(method, q, k, v, budget, seed=seed, causal=causal, **options)


def _check_method(method):
    """Raise unless ``method`` is ``"exact"`` or a registered method."""
    check_choice("method", method, ("exact", *METHODS))


def measured_peak_bytes(
    method: str, n: int, d: int, budget: int, heads: int = 1, causal: bool = False, seed: int = 0, **options
) -> int:
    """The most bytes the lab's ``method`` holds at once beyond its inputs in one call.

    The running sum of the CPU allocations and frees ``torch.profiler`` records (``profile_memory=True``) on
    random ``(1, heads, n, d)`` float32 inputs, maximised over time. Add ``4 n d heads`` bytes of inputs and output
    to compare with the ``peak_bytes`` of :func:`gpu.approx.method_cost`.

    Parameters
    ----------
    method : str
        A name of :data:`gpu.approx.METHODS`, or ``"exact"`` for exact attention.
    n, d : int
        Sequence length and head dimension.
    budget : int
        The method's budget (``METHODS[method].budget_meaning``); ignored for ``"exact"``.
    heads : int, default 1
        Number of heads.
    causal : bool, default False
        Attend to keys ``j <= i`` only.
    seed : int, default 0
        Seed of the random inputs and of the method.
    **options
        The method's keyword options (``METHODS[method].options``).

    Returns
    -------
    int
        Peak bytes allocated during the call.

    Raises
    ------
    TypeError
        If ``method`` is not a string.
    ValueError
        If ``method`` is unknown, or as :func:`gpu.approx.approximate` for the other arguments.

    Examples
    --------
    >>> measured_peak_bytes("swa", 64, 8, 8) > 0
    True

    References
    ----------
    Serret et al. (2026). arXiv 2604.01757.
    """
    _check_method(method)
    q, k, v, options = _random_inputs(method, n, d, heads, causal, seed, options)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        _call(method, q, k, v, budget, seed, causal, options)
    events = []
    stack = list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        event = stack.pop()
        stack.extend(event.children)
        if hasattr(event.extra_fields, "alloc_size"):
            events.append((event.start_time_ns, event.extra_fields.alloc_size))
    current = peak = 0
    for _, size in sorted(events):
        current += size
        peak = max(peak, current)
    return int(peak)


def measured_flops(
    method: str, n: int, d: int, budget: int, heads: int = 1, causal: bool = False, seed: int = 0, **options
) -> int:
    """The matrix-product FLOPs torch counts in one call of the lab's ``method``.

    ``torch.utils.flop_counter.FlopCounterMode`` on random ``(1, heads, n, d)`` float32 inputs; decompositions
    (SVD, QR, ``eigh``, ``pinv``) are not counted by torch. Causal methods that need calibration get an
    independent random draw.

    Parameters
    ----------
    method : str
        A name of :data:`gpu.approx.METHODS`, or ``"exact"`` for :func:`gpu.approx.exact_attention`.
    n, d : int
        Sequence length and head dimension.
    budget : int
        The method's budget; ignored for ``"exact"``.
    heads : int, default 1
        Number of heads.
    causal : bool, default False
        Attend to keys ``j <= i`` only.
    seed : int, default 0
        Seed of the random inputs and of the method.
    **options
        The method's keyword options.

    Returns
    -------
    int
        Matrix-product FLOPs of the call.

    Raises
    ------
    TypeError
        If ``method`` is not a string.
    ValueError
        If ``method`` is unknown, or as :func:`gpu.approx.approximate` for the other arguments.

    Examples
    --------
    >>> measured_flops("exact", 16, 4, 16)  # q k^T and p v: 2 * (2 * 16 * 16 * 4)
    4096

    References
    ----------
    Serret et al. (2026). arXiv 2604.01757.
    """
    _check_method(method)
    q, k, v, options = _random_inputs(method, n, d, heads, causal, seed, options)
    with FlopCounterMode(display=False) as counter:
        _call(method, q, k, v, budget, seed, causal, options)
    return int(counter.get_total_flops())
