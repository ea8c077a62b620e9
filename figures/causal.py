"""Causal L* vs n (log-log): SA, SA+SWA, the multi-scale / Kleinberg / dilated variants and SWA, measured points
(committed results in ``results/``) on the predictions of ``receptive.theory`` (issue 13)."""

from __future__ import annotations

import math
from pathlib import Path

from receptive import theory

from .style import COLORS, WIDE, figure, load_results, save, styled

ROOT = Path(__file__).resolve().parent.parent
BOUND = ROOT / "results" / "bound" / "bound.json"
BOUND_22 = ROOT / "results" / "causal" / "n2^22" / "bound.json"
VARIANTS = ROOT / "results" / "causal" / "variants" / "variants.json"
POOLED = ROOT / "results" / "causal" / "pooled.json"
VARIANT_STYLE = {
    "sa-ms+swa-eq": ("#ff7f0e", "s", "SA-MS+SWA (equal keys)"),
    "kleinberg+swa-eq": ("#9467bd", "^", "Kleinberg+SWA (equal keys)"),
    "dilated+swa-eq": ("#8c564b", "v", "dilated+SWA (equal keys)"),
}


def variant_points(variants: dict, pattern: str, w: int, exact: bool) -> list[tuple[int, int, int, int]]:
    """(n, typical, min, max L* over seeds) of the causal ``pattern`` at window ``w`` in variants.json, the exact
    points (``exact``) or the sampled ones (a lower bound per seed, except for deterministic causal patterns, whose
    sampled L* is exact: ``receptive.bound.variants``)."""
    out = []
    for p in variants["points"]:
        if p["pattern"] != pattern or not p["causal"] or p["w"] != w or p["typical"] is None:
            continue
        if (p["method"] == "exact" or p.get("deterministic", False)) != exact:
            continue
        reached = [x for x in p["full_layers"] if x is not None]
        out.append((p["n"], p["typical"], min(reached), max(reached)))
    return sorted(out)


def causal_points(bound: dict, pattern: str, w: int) -> list[tuple[int, int]]:
    """(n, typical L*) of the causal measurements of ``pattern`` at window ``w`` in a bound.json document."""
    return sorted(
        (p["n"], p["typical"])
        for p in bound["points"]
        if p["pattern"] == pattern and p["causal"] and p["w"] == w and p["typical"] is not None
    )


def interval_predictions(pooled: dict, w: int) -> list[tuple[int, int]]:
    """(n, predicted typical L*) of causal SA+SWA at window ``w`` in pooled.json (the interval model, each point's
    own method: sampled targets from n = 2^18)."""
    return sorted(
        (p["n"], p["predicted"])
        for p in pooled["points"]
        if p["pattern"] == "sa+swa" and p["causal"] and p["w"] == w and p["predicted"] is not None
    )


@styled
def make(out, quick: bool = False):
    bound = load_results(BOUND, "python -m receptive.bound --out results/bound")
    extra = load_results(BOUND_22, "python -m receptive.bound --n 2^22 ... --out results/causal/n2^22")
    variants = load_results(VARIANTS, "python -m receptive.bound.variants --out results/causal/variants")
    pooled = load_results(POOLED, "python -m receptive.bound.pooled --out results/causal/pooled.json")
    ws = (8, 64, 256)
    fig, axes = figure(WIDE, 3.0, ncols=len(ws))
    top = 2**16 if quick else 2**22
    for ax, w in zip(axes[0], ws, strict=True):
        ns = [2**k for k in range(8, int(math.log2(top)) + 1, 2) if 2**k > w]
        measured = causal_points(bound, "sa+swa", w) + causal_points(extra, "sa+swa", w)
        ax.plot(*zip(*measured, strict=True), "o", color=COLORS["sa+swa"], label="SA+SWA measured")
        sharp = [
            (n, theory.predict_full_layer("sa+swa", n, w, True)[0]) for n in ns if n <= (2**16 if quick else 2**20)
        ]
        ax.plot(*zip(*sharp, strict=True), "-", color=COLORS["sa+swa"], lw=0.8, label="SA+SWA analytic model")
        interval = [pt for pt in interval_predictions(pooled, w) if pt[0] <= top]
        if interval:
            ax.plot(*zip(*interval, strict=True), "x", color="k", ms=3.5, mew=0.7, label="SA+SWA interval model")
        law = [(n, theory.causal_swa_scaling_law(n, w)) for n in ns if w**3 < n]
        if law:
            ax.plot(*zip(*law, strict=True), "--", color=COLORS["sa+swa"], lw=0.8, label="(6 n ln)^(1/3)/(w-1)")
        sa = causal_points(bound, "sa", w)
        if sa:
            ax.plot(*zip(*sa, strict=True), "o", color=COLORS["sa"], label="SA measured")
        ax.plot(ns, [theory.causal_sa_full_layer_estimate(n, w) for n in ns], "-", color=COLORS["sa"], lw=0.8,
                label="SA (n/w) ln n")  # fmt: skip
        ax.plot(ns, [theory.swa_full_layer(n, w, causal=True) for n in ns], "--", color=COLORS["swa"], lw=0.8,
                label="SWA (exact)")  # fmt: skip
        for name, (color, marker, label) in VARIANT_STYLE.items():
            for exact in (True, False):
                pts = [pt for pt in variant_points(variants, name, w, exact) if pt[0] <= top]
                if not pts:
                    continue
                n_, typ, lo, hi = (list(x) for x in zip(*pts, strict=True))
                yerr = [[t - a for t, a in zip(typ, lo, strict=True)], [b - t for t, b in zip(typ, hi, strict=True)]]
                ax.errorbar(n_, typ, yerr=yerr, fmt=marker, color=color, ms=3.5, lw=0.6, capsize=1.5,
                            mfc=color if exact else "white",
                            label=label if exact else "_nolegend_")  # fmt: skip
        ax.plot(ns, [math.ceil(theory.log_w_n(n, w) - 1e-9) for n in ns], ":", color="k", lw=0.8,
                label="ceil(log_w n)")  # fmt: skip
        ax.set(xscale="log", yscale="log", xlabel="sequence length n", title=f"causal, w = {w}")
        ax.set_ylim(0.8, 300)
        ax.minorticks_off()
    axes[0, 0].set_ylabel("layers to full coverage L*")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    handles.append(axes[0, 0].plot([], [], "o", color="0.4", mfc="white", ms=3.5)[0])
    labels.append("open: sampled targets; bars: seeds")
    fig.legend(handles, labels, loc="outside lower center", ncol=5, fontsize=6)
    return save(fig, out, "causal")
