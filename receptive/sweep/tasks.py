"""Independent units of a coverage sweep: one (grid point, seed, slab) each.

A task measures, for one pattern instance (pattern, n, w, causal, circular, seed), either one slab of sources
exactly (forward) or a sample of targets exactly (backward). An exact task reports the layer at which its slab
became fully covered and the per-layer sum of coverages ``sum_i |RF_L(i) & slab| / |A(i)|``, so the results of
a point's slabs add up to its mean coverage and the latest slab gives its L*. A sampled task finds the first
layer at which every sampled target is fully covered, by a search started at the sharp model's prediction.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from graphs import admissible_sizes, backward_full_layer, slab_counts
from graphs.memory import DEFAULT_MAX_MEMORY
from graphs.reachability import plan_slabs

from ..coverage.compute import target_positions
from ..patterns import make_pattern
from ..theory import predict_full_layer

__all__ = ["Task", "run_task", "tasks_for"]


@dataclass(frozen=True)
class Task:
    """One unit of work. ``method`` is ``exact`` (sources ``start..stop-1``) or ``sampled`` (``targets`` random
    targets drawn from ``seed``).

    Attributes
    ----------
    pattern : str
        A name of :func:`receptive.make_pattern`.
    n, w : int
        Sequence length and window.
    causal, circular : bool
        The pattern's mask and boundary.
    seed : int
        The pattern's seed (and the sampled targets').
    method : str
        ``"exact"`` or ``"sampled"``.
    max_layers : int
        Layers to compute at most.
    start, stop : int, default 0
        The exact task's sources ``start..stop-1``.
    targets : int, default 0
        The sampled task's number of targets.

    Examples
    --------
    >>> task = Task("sa", 64, 8, False, False, 0, "exact", 8, start=0, stop=64)
    >>> task.key, task.point
    ('sa|n64|w8|bidir|s0|exact|0-64|L8', ('sa', 64, 8, False, False, 0))
    """

    pattern: str
    n: int
    w: int
    causal: bool
    circular: bool
    seed: int
    method: str
    max_layers: int
    start: int = 0
    stop: int = 0
    targets: int = 0

    @property
    def key(self) -> str:
        where = f"{self.start}-{self.stop}" if self.method == "exact" else f"k{self.targets}"
        mode = ("causal" if self.causal else "bidir") + ("-circ" if self.circular else "")
        return f"{self.pattern}|n{self.n}|w{self.w}|{mode}|s{self.seed}|{self.method}|{where}|L{self.max_layers}"

    @property
    def point(self) -> tuple:
        """The grid point and seed this task belongs to."""
        return (self.pattern, self.n, self.w, self.causal, self.circular, self.seed)

    def to_dict(self) -> dict:
        return asdict(self)


def tasks_for(
    pattern: str,
    n: int,
    w: int,
    causal: bool,
    circular: bool,
    seed: int,
    *,
    exact: bool,
    max_layers: int,
    targets: int = 1024,
    max_memory: int = DEFAULT_MAX_MEMORY,
    slab_size: int | None = None,
) -> list[Task]:
    """The tasks of one (grid point, seed): one per slab (exact) or one sampled task.

    Parameters
    ----------
    pattern : str
        A name of :func:`receptive.make_pattern`.
    n, w : int
        Sequence length and window.
    causal, circular : bool
        The pattern's mask and boundary.
    seed : int
        The pattern's seed.
    exact : bool
        Exact slabs of sources, or one sampled task.
    max_layers : int
        Layers to compute at most.
    targets : int, default 1024
        Targets of the sampled task (at most ``n``).
    max_memory : int, default graphs.memory.DEFAULT_MAX_MEMORY
        Bytes per slab (:func:`graphs.reachability.plan_slabs`).
    slab_size : int or None, default None
        Sources per slab instead of the memory plan.

    Returns
    -------
    list of Task

    Raises
    ------
    TypeError, ValueError
        If the pattern refuses its arguments (:func:`receptive.make_pattern`).

    Examples
    --------
    >>> [t.key for t in tasks_for("sa", 128, 8, False, False, 0, exact=True, max_layers=8, slab_size=64)]
    ['sa|n128|w8|bidir|s0|exact|0-64|L8', 'sa|n128|w8|bidir|s0|exact|64-128|L8']
    >>> tasks_for("sa", 64, 8, False, False, 0, exact=False, max_layers=8, targets=16)[0].key
    'sa|n64|w8|bidir|s0|sampled|k16|L8'
    """
    common = dict(pattern=pattern, n=n, w=w, causal=causal, circular=circular, seed=seed, max_layers=max_layers)
    if not exact:
        return [Task(method="sampled", targets=min(targets, n), **common)]
    pat = make_pattern(pattern, n, w, causal, circular, seed)
    return [
        Task(method="exact", start=a, stop=b, **common) for a, b in plan_slabs(pat.layer_ops, n, max_memory, slab_size)
    ]


def run_task(task: Task) -> dict:
    """Compute one task (pure: the same task gives the same result, wherever it runs).

    Parameters
    ----------
    task : Task
        The unit of work.

    Returns
    -------
    dict
        ``{"key", "task", "full_layer", "coverage_sum", "positions", "seconds"}``: the layer at which the slab (or
        every sampled target) was full, ``None`` if not within ``max_layers``; the per-layer sum of coverages over
        the slab's sources (exact tasks; ``None`` for sampled ones); the sources or targets covered; the time taken.

    Examples
    --------
    >>> row = run_task(Task("sa", 64, 8, False, False, 0, "exact", 8, start=0, stop=64))
    >>> row["full_layer"], row["positions"], len(row["coverage_sum"])
    (4, 64, 4)
    """
    began = time.perf_counter()
    pat = make_pattern(task.pattern, task.n, task.w, task.causal, task.circular, task.seed)
    if task.method == "exact":
        slab = slab_counts(pat.layer_ops, task.n, task.start, task.stop, max_layers=task.max_layers, causal=task.causal)
        admissible = admissible_sizes(np.arange(task.n), task.n, task.causal)
        coverage_sum = (slab.counts / admissible[None, :]).sum(axis=1)
        full_layer = slab.counts.shape[0] if slab.full else None
        positions = task.stop - task.start
    else:
        targets = target_positions(task.targets, task.n, task.seed)
        guess, _ = predict_full_layer(
            task.pattern, task.n, task.w, task.causal, task.circular, task.max_layers, targets=targets.size
        )
        full_layer, _ = backward_full_layer(
            pat.layer_ops,
            task.n,
            targets,
            guess=guess or task.max_layers,
            max_layers=task.max_layers,
            causal=task.causal,
        )
        coverage_sum = None  # the search visits a few layers only; L* is what a sampled task measures
        positions = targets.size
    return {
        "key": task.key,
        "task": task.to_dict(),
        "full_layer": full_layer,
        "coverage_sum": None if coverage_sum is None else [float(x) for x in coverage_sum],
        "positions": positions,
        "seconds": time.perf_counter() - began,
    }
