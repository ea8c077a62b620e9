"""Figures 5 and 6: time per layer and time to full coverage vs n, from the benchmark JSON of ``python -m
gpu.bench`` (``benchmarks/results/gpu_bench.json`` by default)."""

from __future__ import annotations

from pathlib import Path

from .style import COLORS, COLUMN, LABELS, figure, load_results, save

DEFAULT_JSON = Path("benchmarks/results/gpu_bench.json")


def make_per_layer(out, quick: bool = False, bench=DEFAULT_JSON):
    """Time per layer, and the speedup over full attention next to the SA paper's (A100)."""
    from gpu.bench import PAPER_SPEEDUP

    doc = load_results(bench, "python -m gpu.bench")
    fig, axes = figure(2 * COLUMN, 2.4, ncols=2)
    for name in ("full", "swa", "sa", "sa+swa", "sa fused"):
        rows = [r for r in doc["rows"] if r["path"] == name]
        if not rows:
            continue
        n = [r["n"] for r in rows]
        axes[0, 0].plot(n, [r["seconds"] * 1e3 for r in rows], "o-", color=COLORS[name], label=LABELS[name])
        if name != "full":
            axes[0, 1].plot(n, [r["speedup_over_full"] for r in rows], "o-", color=COLORS[name], label=LABELS[name])
    axes[0, 1].plot(list(PAPER_SPEEDUP), list(PAPER_SPEEDUP.values()), "k*", ms=7, label="SA paper (A100)")
    axes[0, 0].set(xscale="log", yscale="log", xlabel="sequence length n", ylabel="time per layer [ms]",
                   title=f"{doc['device']}, w = {doc['parameters']['w']}")  # fmt: skip
    axes[0, 1].set(xscale="log", yscale="log", xlabel="sequence length n", ylabel="speedup over full attention")
    for ax in axes[0]:
        ax.legend()
    return save(fig, out, "cost_per_layer")


def make_to_coverage(out, quick: bool = False, bench=DEFAULT_JSON):
    doc = load_results(bench, "python -m gpu.bench")
    fig, axes = figure(COLUMN, 2.4)
    ax = axes[0, 0]
    for name in ("full", "swa", "sa", "sa+swa"):
        rows = [(c["n"], c["seconds_to_full_coverage"]) for c in doc["cost_to_full_coverage"]
                if c["path"] == name and c["seconds_to_full_coverage"] is not None]  # fmt: skip
        if rows:
            ax.plot(*zip(*rows, strict=True), "o-", color=COLORS[name], label=LABELS[name])
    ax.set(xscale="log", yscale="log", xlabel="sequence length n", ylabel="time to full coverage [s]",
           title="L* layers x time per layer")  # fmt: skip
    ax.legend()
    return save(fig, out, "cost_to_coverage")
