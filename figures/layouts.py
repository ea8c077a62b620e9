"""Figure 7: coverage through depth for the attention layouts of real models, and what it costs.

Left: mean coverage ``|RF_L(i)| / |A(i)|`` vs layer for every layout of ``python -m receptive.layouts`` (at the
``n`` it was run with). Right: attended pairs per layer (relative to full attention) against the layers to full
coverage, each layout next to SA and SA+SWA stacks of the same depth at matched pairs per layer; open markers
are layouts that do not reach full coverage within their depth (plotted at the depth).
"""

from __future__ import annotations

import matplotlib

from .style import COLORS, COLUMN, figure, load_results, save

SOURCE = "the JSON of `python -m receptive.layouts --n 131072 --json FILE`"
KEYS = ("layouts",)  # what the figure reads


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_summary(summary, where: str) -> None:
    if not isinstance(summary, dict):
        raise ValueError(f"{where}: expected an object, got {type(summary).__name__}")
    star = summary.get("full_coverage_layer")
    if not _number(summary.get("mean_pairs_relative")) or not _number(summary.get("depth")):
        raise ValueError(f"{where}: expected numbers 'mean_pairs_relative' and 'depth'")
    if star is not None and not _number(star):
        raise ValueError(f"{where}: 'full_coverage_layer' must be a number or null, got {star!r}")


def check(doc: dict) -> dict:
    """Check that a ``python -m receptive.layouts --json`` document holds what :func:`make` reads.

    Parameters
    ----------
    doc : dict
        The parsed document: ``n`` and a non-empty list ``layouts`` of ``{"layout": {...}, "matched": {"sa": ...,
        "sa+swa": ...}}`` entries.

    Returns
    -------
    dict
        ``doc``.

    Raises
    ------
    ValueError
        One line naming the first entry that is missing or of the wrong kind.

    Examples
    --------
    >>> check({"n": 64, "layouts": "nope"})
    Traceback (most recent call last):
    ...
    ValueError: layouts: expected a non-empty list of layouts, got str
    """
    layouts = doc.get("layouts")
    if not isinstance(layouts, list) or not layouts:
        got = "an empty list" if isinstance(layouts, list) else type(layouts).__name__
        raise ValueError(f"layouts: expected a non-empty list of layouts, got {got}")
    if not _number(doc.get("n")):
        raise ValueError(f"n: expected a number, got {doc.get('n')!r}")
    for i, entry in enumerate(layouts):
        where = f"layouts[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("layout"), dict):
            raise ValueError(f"{where}: expected an object with a 'layout' object")
        lay = entry["layout"]
        _check_summary(lay, f"{where}.layout")
        if not isinstance(lay.get("name"), str) or not isinstance(lay.get("causal"), bool):
            raise ValueError(f"{where}.layout: expected a string 'name' and a boolean 'causal'")
        coverage = lay.get("mean_coverage")
        if not isinstance(coverage, list) or not coverage or not all(_number(c) for c in coverage):
            raise ValueError(f"{where}.layout: 'mean_coverage' must be a non-empty list of numbers")
        matched = entry.get("matched")
        if not isinstance(matched, dict):
            raise ValueError(f"{where}: expected a 'matched' object with 'sa' and 'sa+swa'")
        for kind in ("sa", "sa+swa"):
            _check_summary(matched.get(kind), f"{where}.matched.{kind}")
    return doc


def _star(summary: dict) -> tuple[float, bool]:
    star = summary["full_coverage_layer"]
    return (float(star), True) if star is not None else (float(summary["depth"]), False)


def make(out, quick: bool = False, *, results):
    """Write ``out/layouts.png`` and ``.pdf``: coverage through depth of real models' attention layouts, and
    their pairs per layer against the layers to full coverage next to SA and SA+SWA stacks.

    Parameters
    ----------
    out : str or pathlib.Path
        The folder of the files (created if missing).
    quick : bool, default False
        Unused: the figure only reads its inputs.
    results : str or pathlib.Path
        The JSON of ``python -m receptive.layouts --json FILE``.

    Returns
    -------
    list of pathlib.Path
        The PNG and the PDF.

    Raises
    ------
    FileNotFoundError
        If an input does not exist: one line naming the argument and what the file is.
    ValueError
        If an input is not what it should be (:func:`check`): one line naming the argument.

    Examples
    --------
    Without its input it names what the input is:

    >>> make("figures-out", results="missing.json")
    Traceback (most recent call last):
    ...
    FileNotFoundError: results: missing.json not found; expected the JSON of `python -m receptive.layouts ...`
    """
    doc = load_results(results, SOURCE, "results", KEYS, check)
    fig, axes = figure(2 * COLUMN, 2.8, ncols=2)
    left, right = axes[0, 0], axes[0, 1]
    for k, entry in enumerate(doc["layouts"]):
        lay = entry["layout"]
        style = "-" if lay["causal"] else "--"
        layers = range(1, len(lay["mean_coverage"]) + 1)
        colour = matplotlib.colormaps["tab20"](k % 20)
        (line,) = left.plot(layers, lay["mean_coverage"], style, marker=".", label=lay["name"], color=colour)
        colour = line.get_color()
        x, reached = _star(lay)
        right.scatter(
            lay["mean_pairs_relative"], x, s=18, color=colour, facecolors=colour if reached else "none", zorder=3
        )
        for kind, marker in (("sa", "v"), ("sa+swa", "^")):
            twin = entry["matched"][kind]
            tx, treached = _star(twin)
            right.scatter(
                twin["mean_pairs_relative"],
                tx,
                s=14,
                marker=marker,
                color=COLORS[kind],
                facecolors=COLORS[kind] if treached else "none",
                zorder=2,
            )
            right.plot([lay["mean_pairs_relative"], twin["mean_pairs_relative"]], [x, tx], color=colour, lw=0.5)
    left.set_xlabel("layer L")
    left.set_ylabel("mean coverage")
    left.set_xscale("log")
    left.set_ylim(-0.02, 1.02)
    left.set_title(f"n = {doc['n']} (solid causal, dashed bidirectional)")
    left.legend(fontsize=5, ncol=2, loc="lower right")
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("pairs per layer / full attention")
    right.set_ylabel("layers to full coverage L*")
    right.set_ylim(top=120)  # room for the legend above the points
    right.scatter([], [], marker="v", color=COLORS["sa"], label="SA, matched pairs")
    right.scatter([], [], marker="^", color=COLORS["sa+swa"], label="SA+SWA, matched pairs")
    right.scatter([], [], color="grey", label="layout (open: not full)")
    right.legend(fontsize=6, loc="upper right")
    return save(fig, out, "layouts")
