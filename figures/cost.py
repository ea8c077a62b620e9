"""Figures 5 and 6: time per layer and time to full coverage vs n, from the benchmark JSON of ``python -m
gpu.bench`` (``benchmarks/results/gpu_bench.json`` by default). Drawn by the same functions as ``gpu.bench
--plot`` (:func:`gpu.bench_plot.draw_per_layer`, :func:`gpu.bench_plot.draw_speedup`,
:func:`gpu.bench_plot.draw_to_coverage`), in this package's colours and labels: one plotting path."""

from __future__ import annotations

from pathlib import Path

from .style import COLORS, COLUMN, LABELS, figure, load_results, save

DEFAULT_JSON = Path("benchmarks/results/gpu_bench.json")


def make_per_layer(out, quick: bool = False, bench=DEFAULT_JSON):
    """Time per layer, and the speedup over full attention next to the SA paper's (A100)."""
    from gpu.bench_plot import draw_per_layer, draw_speedup

    doc = load_results(bench, "python -m gpu.bench")
    fig, axes = figure(2 * COLUMN, 2.4, ncols=2)
    draw_per_layer(axes[0, 0], doc, COLORS, LABELS)
    draw_speedup(axes[0, 1], doc, COLORS, LABELS)
    return save(fig, out, "cost_per_layer")


def make_to_coverage(out, quick: bool = False, bench=DEFAULT_JSON):
    from gpu.bench_plot import draw_to_coverage

    doc = load_results(bench, "python -m gpu.bench")
    fig, axes = figure(COLUMN, 2.4)
    draw_to_coverage(axes[0, 0], doc, COLORS, LABELS)
    return save(fig, out, "cost_to_coverage")
