"""Figure 7: trained models next to what coverage predicts, from the results of the training study
(``{retrieval,counting,lm}.json`` in one folder; ``python -m figures`` reads ``--training-dir``).

Left: retrieval accuracy against depth at the longest sequence, each kind's measured accuracy (solid) over the
accuracy a model that uses its whole receptive field would reach, ``reach + (1 - reach) / 16`` (dotted), with
``reach`` the share of evaluation answers inside the readout's receptive field. Middle: measured against predicted
accuracy for every synthetic run. Right: the character-level LM's validation perplexity and its loss on the
long-context probe (characters a copy from beyond SWA's field predicts).
"""

from __future__ import annotations

from pathlib import Path

from .style import COLORS, LABELS, NUMBER, WIDE, figure, load_results, save, shape_check, styled

KINDS = ("full", "swa", "sa", "sa+swa")
SOURCE = "the results of the training study (retrieval.json, counting.json, lm.json)"
_RUN = {"kind": frozenset(KINDS), "n": int, "w": int, "layers": int}
_LM_RUN = {
    **_RUN,
    "val_loss": NUMBER,
    "val_perplexity": NUMBER,
    "swa_field": int,
    "probe": {"far": {"loss": (*NUMBER, None)}},
}
_SYNTHETIC = {"runs": [{**_RUN, "accuracy": NUMBER, "predicted_accuracy": NUMBER, "chance": NUMBER}, ...]}
#: what the figure reads of each file of the folder (checked before any drawing)
SHAPES = {
    "retrieval": _SYNTHETIC,
    "counting": _SYNTHETIC,
    "lm": {"runs": [_LM_RUN, ...]},
}


def load(results) -> dict:
    """The ``{"retrieval", "counting", "lm"}`` summaries present in the folder ``results``, each checked against
    :data:`SHAPES`.

    Parameters
    ----------
    results : str or pathlib.Path
        The folder of the training study's results.

    Returns
    -------
    dict
        Task name -> its parsed summary.

    Raises
    ------
    FileNotFoundError
        If the folder holds none of them (one line naming ``results`` and what they are).
    ValueError
        If one is not what the study writes (one line naming ``results``, the file and its first bad entry).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     load(folder)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileNotFoundError: results: no training results in ...; expected the results of the training study (...)
    """
    results = Path(results)
    docs = {}
    for name in ("retrieval", "counting", "lm"):
        path = results / f"{name}.json"
        if path.exists():
            docs[name] = load_results(path, SOURCE, "results", ("runs",), shape_check(SHAPES[name]))
    if not docs:
        raise FileNotFoundError(f"results: no training results in {results}; expected {SOURCE}")
    return docs


@styled
def make(out, quick: bool = False, *, results):
    """Write ``out/training.png`` and ``.pdf``: the trained models' accuracy next to what their receptive fields
    predict, and the character-level LM's perplexity and long-context loss.

    Parameters
    ----------
    out : str or pathlib.Path
        The folder of the files (created if missing).
    quick : bool, default False
        Unused: the figure only reads its inputs.
    results : str or pathlib.Path
        The folder of the training study's results (``retrieval.json``,
        ``counting.json``, ``lm.json``; those present are drawn).

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

    >>> make("figures-out", results="no-such-folder")
    Traceback (most recent call last):
    ...
    FileNotFoundError: results: no training results in no-such-folder; expected the results of the training study ...
    """
    docs = load(results)
    fig, axes = figure(WIDE, 2.4, ncols=3)
    left, middle, right = axes[0]
    if "retrieval" in docs:
        rows = docs["retrieval"]["runs"]
        n = max(r["n"] for r in rows)
        longest = [r for r in rows if r["n"] == n]
        for kind in KINDS:
            mine = sorted((r for r in longest if r["kind"] == kind), key=lambda r: r["layers"])
            if not mine:
                continue
            layers = [r["layers"] for r in mine]
            left.plot(layers, [r["accuracy"] for r in mine], "o-", color=COLORS[kind], label=LABELS[kind])
            left.plot(layers, [r["predicted_accuracy"] for r in mine], ":", color=COLORS[kind])
        left.axhline(longest[0]["chance"], color="0.6", lw=0.8, ls="--")
        left.set(
            xlabel="layers L",
            ylabel="accuracy",
            ylim=(0, 1.05),
            title=f"retrieval, n = {n}, w = {longest[0]['w']} (dotted: reachable)",
        )
        left.legend()
    markers = {"retrieval": "o", "counting": "s"}
    for task, marker in markers.items():
        for r in docs.get(task, {}).get("runs", []):
            middle.plot(r["predicted_accuracy"], r["accuracy"], marker, color=COLORS[r["kind"]], mfc="none")
    middle.plot([0, 1], [0, 1], color="0.6", lw=0.8)
    middle.set(
        xlabel="predicted: reach + (1 - reach) chance",
        ylabel="measured accuracy",
        xlim=(0, 1.02),
        ylim=(0, 1.02),
        title="o retrieval, □ counting",
    )
    if "lm" in docs:
        rows = {r["kind"]: r for r in docs["lm"]["runs"]}
        kinds = [k for k in KINDS if k in rows]
        x = range(len(kinds))
        right.bar(
            [i - 0.2 for i in x],
            [rows[k]["val_loss"] for k in kinds],
            0.4,
            color=[COLORS[k] for k in kinds],
            label="all characters",
        )
        far = [rows[k]["probe"]["far"]["loss"] or 0.0 for k in kinds]
        right.bar(
            [i + 0.2 for i in x],
            far,
            0.4,
            color=[COLORS[k] for k in kinds],
            alpha=0.45,
            hatch="//",
            label=f"far copies (beyond {rows[kinds[0]]['swa_field']} tokens)",
        )
        for i, k in enumerate(kinds):
            right.annotate(
                f"{rows[k]['val_perplexity']:.2f}", (i - 0.2, rows[k]["val_loss"]), ha="center", va="bottom", fontsize=6
            )
        right.set_xticks(list(x), [LABELS[k] for k in kinds])
        top = max(max(far), max(rows[k]["val_loss"] for k in kinds))
        right.set(
            ylabel="validation loss [nats/char]", title="char LM, stdlib (labels: perplexity)", ylim=(0, 1.45 * top)
        )
        right.legend(loc="upper center", ncol=1)
    return save(fig, out, "training")
