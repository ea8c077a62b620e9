"""Causal L* vs n (log-log): SA, SA+SWA, the multi-scale / Kleinberg / dilated variants and SWA, measured points
(the result files of the bound sweep and of the causal study, given as arguments) on the predictions of
``receptive.theory``."""

from __future__ import annotations

import math

from receptive import theory

from .style import COLORS, WIDE, figure, load_results, save, shape_check, styled

KEYS = ("points",)  # what the figure reads of each of its four files
_POINT = {"pattern": str, "causal": bool, "w": int, "n": int}
_VARIANT = {**_POINT, "typical": (int, None), "method": str, "full_layers": [(int, None)], "deterministic?": bool}
#: what the figure reads of each file, by argument (checked before any drawing)
SHAPES = {
    "bound": {"points": [{**_POINT, "typical": (int, None)}]},
    "bound_22": {"points": [{**_POINT, "typical": (int, None)}]},
    "variants": {"points": [_VARIANT]},
    "pooled": {"points": [{**_POINT, "predicted": (int, None)}]},
}
#: what each file is, by argument, for the errors
SOURCES = {
    "bound": "the bound.json of `python -m receptive.bound --out DIR`",
    "bound_22": "the bound.json of `python -m receptive.bound --n 2^22 ... --out DIR`",
    "variants": "the variants.json of the causal study's measured variants",
    "pooled": "the JSON of the causal study's pooled evaluation",
}
VARIANT_STYLE = {
    "sa-ms+swa-eq": ("#ff7f0e", "s", "SA-MS+SWA (equal keys)"),
    "kleinberg+swa-eq": ("#9467bd", "^", "Kleinberg+SWA (equal keys)"),
    "dilated+swa-eq": ("#8c564b", "v", "dilated+SWA (equal keys)"),
}


def _variant_points(variants: dict, pattern: str, w: int, exact: bool) -> list[tuple[int, int, int, int]]:
    """(n, typical, min, max L* over seeds) of the causal ``pattern`` at window ``w`` in variants.json, the exact
    points (``exact``) or the sampled ones (a lower bound per seed, except for deterministic causal patterns, whose
    sampled L* is exact)."""
    out = []
    for p in variants["points"]:
        if p["pattern"] != pattern or not p["causal"] or p["w"] != w or p["typical"] is None:
            continue
        if (p["method"] == "exact" or p.get("deterministic", False)) != exact:
            continue
        reached = [x for x in p["full_layers"] if x is not None]
        out.append((p["n"], p["typical"], min(reached), max(reached)))
    return sorted(out)


def _causal_points(bound: dict, pattern: str, w: int) -> list[tuple[int, int]]:
    """(n, typical L*) of the causal measurements of ``pattern`` at window ``w`` in a bound.json document."""
    return sorted(
        (p["n"], p["typical"])
        for p in bound["points"]
        if p["pattern"] == pattern and p["causal"] and p["w"] == w and p["typical"] is not None
    )


def _interval_predictions(pooled: dict, w: int) -> list[tuple[int, int]]:
    """(n, predicted typical L*) of causal SA+SWA at window ``w`` in pooled.json (the interval model, each point's
    own method: sampled targets from n = 2^18)."""
    return sorted(
        (p["n"], p["predicted"])
        for p in pooled["points"]
        if p["pattern"] == "sa+swa" and p["causal"] and p["w"] == w and p["predicted"] is not None
    )


@styled
def make(out, quick: bool = False, *, bound, bound_22, variants, pooled):
    """Write ``out/causal.png`` and ``.pdf``: causal L* against n for SA+SWA and its variants at three windows,
    measured next to the interval model's predictions.

    Parameters
    ----------
    out : str or pathlib.Path
        The folder of the files (created if missing).
    quick : bool, default False
        Draw the predictions to n = 2^16 instead of 2^22.
    bound : str or pathlib.Path
        The ``bound.json`` of ``python -m receptive.bound --out DIR``.
    bound_22 : str or pathlib.Path
        The ``bound.json`` of the sweep at n = 2^22.
    variants : str or pathlib.Path
        The ``variants.json`` of the causal study's measured variants.
    pooled : str or pathlib.Path
        The JSON of the causal study's pooled evaluation.

    Returns
    -------
    list of pathlib.Path
        The PNG and the PDF.

    Raises
    ------
    FileNotFoundError
        If an input does not exist: one line naming the argument and what the file is.

    Examples
    --------
    Without its inputs it names what they are:

    >>> make("figures-out", bound="missing.json", bound_22="missing.json", variants="missing.json",
    ...      pooled="missing.json")
    Traceback (most recent call last):
    ...
    FileNotFoundError: bound: missing.json not found; expected the bound.json of `python -m receptive.bound --out DIR`
    """
    bound = load_results(bound, SOURCES["bound"], "bound", KEYS, shape_check(SHAPES["bound"]))
    extra = load_results(bound_22, SOURCES["bound_22"], "bound_22", KEYS, shape_check(SHAPES["bound_22"]))
    variants = load_results(variants, SOURCES["variants"], "variants", KEYS, shape_check(SHAPES["variants"]))
    pooled = load_results(pooled, SOURCES["pooled"], "pooled", KEYS, shape_check(SHAPES["pooled"]))
    ws = (8, 64, 256)
    fig, axes = figure(WIDE, 3.0, ncols=len(ws))
    top = 2**16 if quick else 2**22
    for ax, w in zip(axes[0], ws, strict=True):
        ns = [2**k for k in range(8, int(math.log2(top)) + 1, 2) if 2**k > w]
        measured = _causal_points(bound, "sa+swa", w) + _causal_points(extra, "sa+swa", w)
        ax.plot(*zip(*measured, strict=True), "o", color=COLORS["sa+swa"], label="SA+SWA measured")
        sharp = [
            (n, theory.predict_full_layer("sa+swa", n, w, True)[0]) for n in ns if n <= (2**16 if quick else 2**20)
        ]
        ax.plot(*zip(*sharp, strict=True), "-", color=COLORS["sa+swa"], lw=0.8, label="SA+SWA analytic model")
        interval = [pt for pt in _interval_predictions(pooled, w) if pt[0] <= top]
        if interval:
            ax.plot(*zip(*interval, strict=True), "x", color="k", ms=3.5, mew=0.7, label="SA+SWA interval model")
        law = [(n, theory.causal_swa_scaling_law(n, w)) for n in ns if w**3 < n]
        if law:
            ax.plot(*zip(*law, strict=True), "--", color=COLORS["sa+swa"], lw=0.8, label="(6 n ln)^(1/3)/(w-1)")
        sa = _causal_points(bound, "sa", w)
        if sa:
            ax.plot(*zip(*sa, strict=True), "o", color=COLORS["sa"], label="SA measured")
        ax.plot(
            ns,
            [theory.causal_sa_full_layer_estimate(n, w) for n in ns],
            "-",
            color=COLORS["sa"],
            lw=0.8,
            label="SA (n/w) ln n",
        )
        ax.plot(
            ns,
            [theory.swa_full_layer(n, w, causal=True) for n in ns],
            "--",
            color=COLORS["swa"],
            lw=0.8,
            label="SWA (exact)",
        )
        for name, (color, marker, label) in VARIANT_STYLE.items():
            for exact in (True, False):
                pts = [pt for pt in _variant_points(variants, name, w, exact) if pt[0] <= top]
                if not pts:
                    continue
                n_, typ, lo, hi = (list(x) for x in zip(*pts, strict=True))
                yerr = [[t - a for t, a in zip(typ, lo, strict=True)], [b - t for t, b in zip(typ, hi, strict=True)]]
                ax.errorbar(
                    n_,
                    typ,
                    yerr=yerr,
                    fmt=marker,
                    color=color,
                    ms=3.5,
                    lw=0.6,
                    capsize=1.5,
                    mfc=color if exact else "white",
                    label=label if exact else "_nolegend_",
                )
        ax.plot(ns, [math.ceil(theory.log_w_n(n, w) - 1e-9) for n in ns], ":", color="k", lw=0.8, label="ceil(log_w n)")
        ax.set(xscale="log", yscale="log", xlabel="sequence length n", title=f"causal, w = {w}")
        ax.set_ylim(0.8, 300)
        ax.minorticks_off()
    axes[0, 0].set_ylabel("layers to full coverage L*")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    handles.append(axes[0, 0].plot([], [], "o", color="0.4", mfc="white", ms=3.5)[0])
    labels.append("open: sampled targets; bars: seeds")
    fig.legend(handles, labels, loc="outside lower center", ncol=5, fontsize=6)
    return save(fig, out, "causal")
