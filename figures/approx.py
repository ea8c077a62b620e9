"""Figures 7-9, the numerical-methods lab, from result JSON: the spectra of all-MiniLM-L6-v2's attention as in the
survey (Serret et al. 2026, arXiv 2604.01757) and every method's error, embedding drift and retrieval ranking against
its budget (the MiniLM study's JSON, :data:`REAL_KEYS`; ``python -m figures`` reads ``--approx-json``); error and
perplexity against KV-cache bytes per token, on MiniLM and on the causal decoder study (:data:`DECODER_KEYS`;
``--decoder-json``)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .style import COLORS, NUMBER, WIDE, check_shape, load_results, save, styled

REAL_SOURCE = "the JSON of the numerical-methods study on all-MiniLM-L6-v2"
DECODER_SOURCE = "the JSON of the numerical-methods study's causal decoder"
#: the parts of the decoder study's and of the real-model study's documents the figures read
DECODER_KEYS = ("parameters", "config", "rows")
REAL_KEYS = ("parameters", "structure", "errors", "substitution", "costs")
MATRICES = ("Q", "K", "V", "QK^T", "A", "softmax")
TITLES = {"QK^T": "$QK^T/\\sqrt{d}$", "A": "$A = \\exp(QK^T/\\sqrt{d})$", "softmax": "softmax (row-normalised A)"}
_ROW = {"method": str, "budget": int}
#: what the figures read of the MiniLM study's JSON (checked before any drawing)
REAL_SHAPE = {
    "parameters": {
        "budgets": [int, ...],
        "methods": [str, ...],
        "n": int,
        "document_tokens": int,
        "substitution_budgets?": [int, ...],
    },
    "structure": {"n": int, "rank_eps": NUMBER, "mean_spectra": {name: [[NUMBER]] for name in MATRICES}},
    "errors": [{**_ROW, "mean": NUMBER}, ...],
    "substitution": [{**_ROW, "document_cosine_mean": NUMBER, "spearman_mean": NUMBER, "recall_at_1": NUMBER}, ...],
    "costs": [{**_ROW, "kv_cache_bytes_per_token": NUMBER}, ...],
}
#: what the figures read of the causal decoder study's JSON
DECODER_SHAPE = {
    "parameters": {"methods": [str, ...]},
    "config": {"layers": int, "n": int},
    "rows": [{**_ROW, "ppl": NUMBER, "kv_cache_bytes_per_token": NUMBER}, ...],
}


def _check_real(doc: dict) -> None:
    """:data:`REAL_SHAPE`, and a row of full attention among the costs (the figures' reference)."""
    check_shape(doc, REAL_SHAPE)
    if not any(r["method"] == "full" for r in doc["costs"]):
        raise ValueError("costs has no row of method 'full'")


def _check_decoder(doc: dict) -> None:
    """:data:`DECODER_SHAPE`, and a row of full attention (the figure's reference)."""
    check_shape(doc, DECODER_SHAPE)
    if not any(r["method"] == "full" for r in doc["rows"]):
        raise ValueError("rows has no row of method 'full'")


STYLE = {
    "swa": ("-", "o"),
    "sa": ("-", "s"),
    "sa+swa": ("-", "^"),
    "swa+sink": ("--", "o"),
    "sa+sink": ("--", "s"),
    "reformer": (":", "v"),
    "moba": (":", "D"),
    "linformer": ("-.", "<"),
    "nystromformer": ("-.", ">"),
    "performer": ("-.", "x"),
    "top-k": ("--", "*"),
    "svd": ("--", "+"),
    "routing": (":", "p"),
    "hyperattention": (":", "h"),
    "kdeformer": (":", "H"),
    "linformer-jl": ("-.", "<"),
    "skyformer": ("-.", "d"),
    "cholesky": ("-.", "1"),
    "loki": (":", "2"),
    "polysketch": ("-.", "3"),
    "levattention": ("-.", "4"),
    "mla": ("-", "P"),
    "transmla": ("-", "X"),
    "tpa": ("-", "8"),
}
EXTRA_COLORS = {
    "swa+sink": COLORS["swa"],
    "sa+sink": COLORS["sa"],
    "reformer": "#8c564b",
    "moba": "#e377c2",
    "linformer": "#17becf",
    "nystromformer": "#bcbd22",
    "performer": "#7f7f7f",
    "top-k": "#000000",
    "svd": "#9467bd",
    "routing": "#aec7e8",
    "hyperattention": "#ffbb78",
    "kdeformer": "#98df8a",
    "linformer-jl": "#17becf",
    "skyformer": "#c5b0d5",
    "cholesky": "#c49c94",
    "loki": "#f7b6d2",
    "polysketch": "#c7c7c7",
    "levattention": "#dbdb8d",
    "mla": "#ff7f0e",
    "transmla": "#d6616b",
    "tpa": "#393b79",
}


def _kw(name: str) -> dict:
    """Line style, marker and colour of a method; the causal ``sa-band`` forms draw as their bidirectional SA."""
    base = name.replace("sa-band", "sa")
    style, marker = STYLE.get(base, ("-", "o"))
    return {"ls": style, "marker": marker, "color": COLORS.get(base, EXTRA_COLORS.get(base)), "label": name}


def _per_budget(rows, name, field="mean"):
    """``(budgets, mean of field over the rows of that budget)`` of one method, budgets ascending."""
    budgets = sorted({r["budget"] for r in rows if r["method"] == name})
    return budgets, [np.mean([r[field] for r in rows if r["method"] == name and r["budget"] == b]) for b in budgets]


@styled
def make_spectra(out, quick: bool = False, *, results):
    """Write ``out/approx_spectra.png`` and ``.pdf``: the normalised singular values of Q, K, V, QK^T, A and the
    softmax of all-MiniLM-L6-v2's attention, one line per layer (mean over heads and windows).

    Parameters
    ----------
    out : str or pathlib.Path
        The folder of the files (created if missing).
    quick : bool, default False
        Unused: the figure only reads its inputs.
    results : str or pathlib.Path
        The JSON of the numerical-methods study on all-MiniLM-L6-v2 (:data:`REAL_KEYS`).

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
    Without its input it names what the input is:

    >>> make_spectra("figures-out", results="missing.json")
    Traceback (most recent call last):
    ...
    FileNotFoundError: results: missing.json not found; expected the JSON of the numerical-methods study on ...
    """
    doc = load_results(results, REAL_SOURCE, "results", REAL_KEYS, _check_real)
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
def make_methods(out, quick: bool = False, *, results):
    """Write ``out/approx_methods.png`` and ``.pdf``: every method's relative error on one attention, embedding
    cosine and retrieval rank correlation with every layer replaced, against the budget (keys per query).

    Parameters
    ----------
    out : str or pathlib.Path
        The folder of the files (created if missing).
    quick : bool, default False
        Unused: the figure only reads its inputs.
    results : str or pathlib.Path
        The JSON of the numerical-methods study on all-MiniLM-L6-v2 (:data:`REAL_KEYS`).

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
    Without its input it names what the input is:

    >>> make_methods("figures-out", results="missing.json")
    Traceback (most recent call last):
    ...
    FileNotFoundError: results: missing.json not found; expected the JSON of the numerical-methods study on ...
    """
    doc = load_results(results, REAL_SOURCE, "results", REAL_KEYS, _check_real)
    fig, axes = plt.subplots(1, 3, figsize=(WIDE, 3.4), constrained_layout=True)
    budgets = doc["parameters"]["budgets"]
    sub_budgets = doc["parameters"].get("substitution_budgets", budgets)
    for name in doc["parameters"]["methods"]:
        axes[0].plot(*_per_budget(doc["errors"], name), **_kw(name))
    axes[0].set(
        xscale="log",
        yscale="log",
        xlabel="budget m (keys per query, or rank)",
        ylabel="relative error",
        title="one attention (layer, head mean)",
    )
    axes[0].set_xticks(budgets, [str(b) for b in budgets])
    axes[0].minorticks_off()
    full = doc["substitution"][0]
    fields = (
        (
            "document_cosine_mean",
            "cosine to the model's embedding",
            f"all layers, n = {doc['parameters']['document_tokens']}",
        ),
        ("spearman_mean", "Spearman rho of retrieval scores", f"ranking (full R@1 {full['recall_at_1']:.2f})"),
    )
    if len(sub_budgets) == 1:  # one budget: the methods side by side, sorted, bars = min-max over the draws
        m = sub_budgets[0]
        rows = [r for r in doc["substitution"][1:] if r["budget"] == m]
        rows += [
            max((r for r in doc["substitution"] if r["method"] == name), key=lambda r: r["budget"])
            for name in doc["parameters"]["methods"]
            if name not in {r["method"] for r in rows}
        ]
        rows.sort(key=lambda r: r["document_cosine_mean"])
        labels = [r["method"] + ("" if r["budget"] == m else f" (r={r['budget']})") for r in rows]
        for ax, (field, label, title) in zip(axes[1:], fields, strict=True):
            values = [r[field] for r in rows]
            low = [r[field] - r.get(f"{field}_min", r[field]) for r in rows]
            high = [r.get(f"{field}_max", r[field]) - r[field] for r in rows]
            ax.barh(range(len(rows)), values, xerr=[low, high], color=[_kw(r["method"])["color"] for r in rows])
            ax.set_yticks(range(len(rows)), labels, fontsize=5)
            ax.set(xlabel=label, title=f"{title} (m = {m})", xlim=(min(0.0, min(values)), 1.0))
    else:
        for name in doc["parameters"]["methods"]:
            kw = _kw(name)
            sub = [r for r in doc["substitution"] if r["method"] == name]
            for ax, (field, label, title) in zip(axes[1:], fields, strict=True):
                ax.plot([r["budget"] for r in sub], [r[field] for r in sub], **kw)
                if sub and f"{field}_min" in sub[0]:  # the spread over the draws of a randomized method
                    ax.vlines(
                        [r["budget"] for r in sub],
                        [r[f"{field}_min"] for r in sub],
                        [r[f"{field}_max"] for r in sub],
                        color=kw["color"],
                        lw=0.8,
                    )
                ax.set(xscale="log", xlabel="budget m", ylabel=label, title=title)
                ax.set_xticks(sub_budgets, [str(b) for b in sub_budgets])
                ax.minorticks_off()
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=8, fontsize=5)
    return save(fig, out, "approx_methods")


@styled
def make_kv_cache(out, quick: bool = False, *, results, decoder):
    """Write ``out/approx_kv_cache.png`` and ``.pdf``: error against KV-cache bytes per token (whole model,
    float32): MiniLM's one-attention relative error, and the causal decoder's perplexity against budget and
    against KV-cache bytes (every layer replaced; bars: min-max over the draws of a randomized method).

    Parameters
    ----------
    out : str or pathlib.Path
        The folder of the files (created if missing).
    quick : bool, default False
        Unused: the figure only reads its inputs.
    results : str or pathlib.Path
        The JSON of the numerical-methods study on all-MiniLM-L6-v2 (:data:`REAL_KEYS`).
    decoder : str or pathlib.Path
        The JSON of the numerical-methods study's causal decoder (:data:`DECODER_KEYS`).

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
    Without its input it names what the input is:

    >>> make_kv_cache("figures-out", results="missing.json", decoder="missing.json")
    Traceback (most recent call last):
    ...
    FileNotFoundError: results: missing.json not found; expected the JSON of the numerical-methods study on ...
    """
    doc = load_results(results, REAL_SOURCE, "results", REAL_KEYS, _check_real)
    dec = load_results(decoder, DECODER_SOURCE, "decoder", DECODER_KEYS, _check_decoder)
    fig, axes = plt.subplots(1, 3, figsize=(WIDE, 3.6), constrained_layout=True)
    kv = {(r["method"], r["budget"]): r["kv_cache_bytes_per_token"] for r in doc["costs"]}
    full_kv = next(r["kv_cache_bytes_per_token"] for r in doc["costs"] if r["method"] == "full")
    for name in doc["parameters"]["methods"]:
        budgets, err = _per_budget(doc["errors"], name)
        axes[0].plot([kv[name, b] for b in budgets], err, **_kw(name))
    axes[0].axvline(full_kv, color="0.5", lw=0.6, ls=":")
    axes[0].set(
        xscale="log",
        yscale="log",
        xlabel="KV-cache bytes per token",
        ylabel="relative error",
        title=f"MiniLM, one attention (n = {doc['parameters']['n']})",
    )
    full = next(r for r in dec["rows"] if r["method"] == "full")
    for name in dec["parameters"]["methods"]:
        rows = sorted((r for r in dec["rows"] if r["method"] == name), key=lambda r: r["budget"])
        kw = _kw(name)
        for ax, x in ((axes[1], "budget"), (axes[2], "kv_cache_bytes_per_token")):
            ax.plot([r[x] for r in rows], [r["ppl"] for r in rows], **kw)
            if rows and "ppl_min" in rows[0]:
                ax.vlines(
                    [r[x] for r in rows],
                    [r["ppl_min"] for r in rows],
                    [r["ppl_max"] for r in rows],
                    color=kw["color"],
                    lw=0.8,
                )
    for ax, x in ((axes[1], full["budget"]), (axes[2], full["kv_cache_bytes_per_token"])):
        ax.axhline(full["ppl"], color=COLORS["full"], lw=0.8, ls="--", label=f"full ({full['ppl']:.2f})")
        ax.plot([x], [full["ppl"]], "*", color=COLORS["full"], ms=7)
        ax.set(xscale="log", yscale="log", ylabel="validation perplexity")
    c = dec["config"]
    axes[1].set(
        xlabel="budget m (keys per query, or rank)", title=f"decoder ({c['layers']} layers, n = {c['n']}), all replaced"
    )
    axes[2].set(xlabel="KV-cache bytes per token", title="decoder: against the cache")
    handles = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncol=8, fontsize=5)
    return save(fig, out, "approx_kv_cache")
