"""Figures 7 and 8, the numerical-methods lab on all-MiniLM-L6-v2, from the JSON of ``python -m gpu.approx.real``
(``benchmarks/results/approx_minilm.json`` by default): the spectra of real attention as in the survey (Serret et
al. 2026, arXiv 2604.01757), and every method's error, embedding drift and retrieval ranking against its budget."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from .style import COLORS, WIDE, load_results, save, styled

DEFAULT_JSON = Path("benchmarks/results/approx_minilm.json")
MATRICES = ("Q", "K", "V", "QK^T", "A", "softmax")
TITLES = {"QK^T": "$QK^T/\\sqrt{d}$", "A": "$A = \\exp(QK^T/\\sqrt{d})$", "softmax": "softmax (row-normalised A)"}
STYLE = {
    "swa": ("-", "o"), "sa": ("-", "s"), "sa+swa": ("-", "^"), "swa+sink": ("--", "o"), "sa+sink": ("--", "s"),
    "reformer": (":", "v"), "moba": (":", "D"), "linformer": ("-.", "<"), "nystromformer": ("-.", ">"),
    "performer": ("-.", "x"), "top-k": ("--", "*"), "svd": ("--", "+"),
}  # fmt: skip
EXTRA_COLORS = {"swa+sink": COLORS["swa"], "sa+sink": COLORS["sa"], "reformer": "#8c564b", "moba": "#e377c2",
                "linformer": "#17becf", "nystromformer": "#bcbd22", "performer": "#7f7f7f", "top-k": "#000000",
                "svd": "#9467bd"}  # fmt: skip


@styled
def make_spectra(out, quick: bool = False, results=DEFAULT_JSON):
    """Normalised singular values of each matrix, one line per layer (mean over heads and windows)."""
    doc = load_results(results, f"python -m gpu.approx.real --json {results}")
    structure = doc["structure"]
    fig, axes = plt.subplots(2, 3, figsize=(WIDE, 3.8), constrained_layout=True)
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(structure["mean_spectra"]["Q"])))
    for ax, name in zip(axes.flat, MATRICES, strict=True):
        for layer, (spectrum, color) in enumerate(zip(structure["mean_spectra"][name], colors, strict=True), 1):
            ax.plot(np.arange(1, len(spectrum) + 1), spectrum, color=color, label=f"layer {layer}")
        ax.axhline(structure["rank_eps"], color="0.6", lw=0.6, ls=":")
        ax.set(yscale="log", title=TITLES.get(name, name), xlabel="index i", ylabel="$\\sigma_i / \\sigma_1$")
        ax.set_ylim(bottom=max(ax.get_ylim()[0], 1e-8))  # QK^T has rank d: the rest is rounding
    axes[0, 0].legend(ncol=2)
    fig.suptitle(f"all-MiniLM-L6-v2 on CPython's help topics, n = {structure['n']}", fontsize=8)
    return save(fig, out, "approx_spectra")


@styled
def make_methods(out, quick: bool = False, results=DEFAULT_JSON):
    """Relative error of one attention, embedding cosine and retrieval rank correlation with every layer replaced,
    against the budget (keys per query)."""
    doc = load_results(results, f"python -m gpu.approx.real --json {results}")
    fig, axes = plt.subplots(1, 3, figsize=(WIDE, 2.6), constrained_layout=True)
    budgets = doc["parameters"]["budgets"]
    for name in doc["parameters"]["methods"]:
        style, marker = STYLE.get(name, ("-", "o"))
        kw = {"ls": style, "marker": marker, "color": COLORS.get(name, EXTRA_COLORS.get(name)), "label": name}
        err = [np.mean([r["mean"] for r in doc["errors"] if r["method"] == name and r["budget"] == b]) for b in budgets]
        axes[0].plot(budgets, err, **kw)
        sub = [r for r in doc["substitution"] if r["method"] == name]
        axes[1].plot([r["budget"] for r in sub], [r["document_cosine_mean"] for r in sub], **kw)
        axes[2].plot([r["budget"] for r in sub], [r["spearman_mean"] for r in sub], **kw)
    full = doc["substitution"][0]
    axes[0].set(xscale="log", yscale="log", xlabel="budget m (keys per query)", ylabel="relative error",
                title="one attention (layer, head mean)")  # fmt: skip
    axes[1].set(xscale="log", xlabel="budget m", ylabel="cosine to the model's embedding",
                title=f"all layers replaced, n = {doc['parameters']['document_tokens']}")  # fmt: skip
    axes[2].set(xscale="log", xlabel="budget m", ylabel="Spearman rho of retrieval scores",
                title=f"ranking kept (full: R@1 {full['recall_at_1']:.2f})")  # fmt: skip
    for ax in axes:
        ax.set_xticks(budgets, [str(b) for b in budgets])
        ax.minorticks_off()
    axes[0].legend(ncol=2, fontsize=6)
    return save(fig, out, "approx_methods")
