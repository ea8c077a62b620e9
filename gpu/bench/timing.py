"""How ``python -m gpu.bench``, ``benchmarks/bench_banded.py`` and ``benchmarks/bench_sa_layer.py`` time their paths:
one round-robin loop on the CPU (:func:`round_robin`), CUDA events through ``triton.testing.do_bench`` on a GPU
(:func:`_cuda_timer`), and ``gpu.bench.cli``'s choice between them (:func:`_times`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from gpu.validation import check_int


def round_robin(
    steps: Mapping[str, Callable[[], object]],
    repeats: int,
    clock: Callable[[], float] = time.perf_counter,
    warmup: bool = True,
) -> dict[str, list[float]]:
    """``{name: [seconds of round 0, round 1, ...]}``: one untimed warm-up call of every step (in ``steps``' order; left
    out with ``warmup=False``, for a caller that warms its steps up on a smaller input), then ``repeats`` rounds that
    call every step once each; round ``r`` starts at step ``r mod len(steps)`` and goes on in ``steps``' order, wrapping
    around. Each call is timed alone: ``clock()`` after it minus ``clock()`` before it (``time.perf_counter``: wall
    seconds). The lists are returned whole; ``gpu.bench.cli`` and ``bench_banded`` keep their median as a step's time
    (``seconds`` in their rows, the statistic of their committed result files), ``bench_banded`` also their minimum
    (``best_seconds``); ``bench_sa_layer`` keeps the minimum (``seconds``, the statistic of its committed
    ``sa_layer.json``).

    Why rounds: a change in the load of the shared machine during the measurement reaches every step alike, so the
    ratios of steps timed together compare calls made side by side, not one step's quiet minute with another's busy
    one. What the rotation does: in a fixed order every step sits at the same place in every round, so whatever
    happens at the round boundary (the first call after the loop's bookkeeping, the last before it) falls on the
    same step each time; rotating the start moves each step through every position (once per ``len(steps)``
    rounds), which turns those position effects into spread among the rounds that the median resists. What it does
    not do: balance carry-over from the previous call. With ``m = len(steps)`` and steps numbered ``0 .. m - 1`` in
    ``steps``' order, step ``i`` runs right after step ``i - 1 (mod m)`` in every round except the rounds
    ``r >= 1`` with ``r = i (mod m)``, where it runs first and follows the last step of round ``r - 1``, step
    ``i - 2 (mod m)`` (5 steps, 20 rounds: step 1 follows step 0 in 16 of the 20). So whatever a step leaves behind
    (caches and the allocator's free lists filled with its buffers, garbage for the collector, a clock lowered by a
    heavy kernel) falls on the same next step in all but about one round in ``m``, and biases its time nearly as
    in a fixed order; no statistic over the rounds can see or remove that bias.

    Parameters
    ----------
    steps : Mapping of str to callable
        The steps to time, each called without arguments.
    repeats : int
        Rounds, at least 1.
    clock : callable, default time.perf_counter
        Returns seconds.
    warmup : bool, default True
        Call every step once, untimed, before the rounds.

    Returns
    -------
    dict of str to list of float
        Every step's seconds, one per round.

    Raises
    ------
    TypeError
        If ``steps`` is not a mapping of callables, ``repeats`` not an integer or ``clock`` not callable.
    ValueError
        If ``repeats`` is below 1.

    Examples
    --------
    >>> ticks = iter(range(100))
    >>> calls = []
    >>> runs = round_robin({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 2,
    ...                    clock=lambda: next(ticks))
    >>> calls  # warm-up a, b; round 0 a, b; round 1 b, a
    ['a', 'b', 'a', 'b', 'b', 'a']
    >>> runs
    {'a': [1, 1], 'b': [1, 1]}
    """
    if not isinstance(steps, Mapping) or not all(callable(step) for step in steps.values()):
        raise TypeError(f"steps: expected a mapping of names to callables, got {type(steps).__name__}")
    check_int("repeats", repeats, 1)
    if not callable(clock):
        raise TypeError(f"clock: expected a callable returning seconds, got {type(clock).__name__}")
    if not isinstance(warmup, bool):
        raise TypeError(f"warmup: expected True or False, got {type(warmup).__name__}")
    names = list(steps)
    for name in names if warmup else ():  # warm-up (compilation, caches, first allocations): not timed
        steps[name]()
    runs = {name: [] for name in names}
    for round_ in range(repeats):
        shift = round_ % len(names) if names else 0
        for name in names[shift:] + names[:shift]:  # round r starts at step r mod len(names)
            start = clock()
            steps[name]()
            runs[name].append(clock() - start)
    return runs


def _cuda_timer(fn, repeats: int) -> float:
    """Median seconds of ``fn`` on the GPU (CUDA events, ``triton.testing.do_bench``)."""
    from triton.testing import do_bench

    return do_bench(fn, warmup=5, rep=max(20, repeats), return_mode="median") / 1e3


def _times(steps: dict, repeats: int, cuda: bool) -> dict:
    """``{name: [seconds, ...]}`` for every step. CUDA: one median per step (``do_bench``). CPU: :func:`round_robin`
    (one warm-up run of each, then ``repeats`` rounds that run every step once, each round starting one step
    later), so a change in the machine's load during the measurement reaches every path alike (the ratios of one
    ``n`` compare runs made side by side)."""
    if cuda:
        return {name: [_cuda_timer(step, repeats)] for name, step in steps.items()}
    return round_robin(steps, repeats)
