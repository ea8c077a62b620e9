"""Figure 7: coverage through depth for the attention layouts of real models, and what it costs.

Left: mean coverage ``|RF_L(i)| / |A(i)|`` vs layer for every layout of ``python -m receptive.layouts`` (at the
``n`` it was run with). Right: attended pairs per layer (relative to full attention) against the layers to full
coverage, each layout next to SA and SA+SWA stacks of the same depth at matched pairs per layer; open markers
are layouts that do not reach full coverage within their depth (plotted at the depth).
"""

from __future__ import annotations

import matplotlib

from .style import COLORS, COLUMN, figure, load_results, save

COMMAND = "python -m receptive.layouts --n 131072 --json {}"
KEYS = ("layouts",)  # what the figure reads


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
        If an input does not exist: one line naming the argument and the command that writes the file.

    Examples
    --------
    ``python -m figures`` draws it from the committed results; without them it names the command that writes them:

    >>> make("figures-out", results="missing.json")
    Traceback (most recent call last):
    ...
    FileNotFoundError: results: missing.json not found; run `python -m receptive.layouts ...` first
    """
    doc = load_results(results, COMMAND.format(results), "results", KEYS)
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
