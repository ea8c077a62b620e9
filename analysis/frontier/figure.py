"""Accuracy on the informative tasks against seconds per item for every configuration, one panel per protocol, the
Pareto front drawn and labelled (``python -m analysis.frontier.figure --frontier FILE --out PREFIX``: writes
``PREFIX.png`` and ``PREFIX.pdf``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from figures.style import WIDE, check_shape, figure, load_results, styled
from graphs.cli_common import output_file, run_command, save_png_pdf
from receptive.cli_parser import OneLineErrorParser

from ..paper_tasks.figure import COLOURS
from .frontier import PROTOCOLS, RESULTS

SOURCE = "the JSON of `python -m analysis.frontier.frontier --out FILE`"
#: What the figure reads of a frontier file.
SHAPE = {
    "chance": float,
    "informative_tasks": [str, ...],
    "configurations": [
        {
            "label": str,
            "method": str,
            "budget": int,
            "protocol": frozenset(PROTOCOLS),
            "mean": float,
            "seconds_per_item": float,
            "seconds_low": float,
            "seconds_high": float,
            "on_front": bool,
        },
        ...,
    ],
}


def _style(method: str) -> tuple[str, str]:
    """The colour and marker of a method: its base pattern's colour; a square with exact layers, a triangle for
    ``sa-band`` (the paper's causal SA), a diamond for a designed plan, a star for full attention."""
    if method == "exact":
        return "k", "*"
    if method.startswith("plan-"):
        return "k", "D"
    base = method.partition(",")[0]
    marker = "v" if base == "sa-band" else "s" if "," in method else "o"
    return COLOURS.get(base.removesuffix("-band"), "0.5"), marker


def short(label: str) -> str:
    """A configuration's label with its interleaved full layers shortened.

    Examples
    --------
    >>> short("swa+sink-64, layers 0,6,12,18,24 exact")
    'swa+sink-64 +5 full layers'
    """
    head, _, layers = label.partition(", layers ")
    return f"{head} +{len(layers.split(','))} full layers" if layers else label


@styled
def plot(result: dict, prefix: Path) -> list[str]:
    """Draw one panel per protocol; return the written files.

    Parameters
    ----------
    result : dict
        The output of ``python -m analysis.frontier.frontier``.
    prefix : pathlib.Path
        ``PREFIX`` of ``PREFIX.png`` and ``PREFIX.pdf``.

    Returns
    -------
    list of str
    """
    from matplotlib.ticker import FixedLocator, FormatStrFormatter, NullFormatter

    fig, axes = figure(WIDE, 4.0, ncols=2)
    full = next(c for c in result["configurations"] if c["method"] == "exact")
    for ax, protocol in zip(axes[0], PROTOCOLS, strict=True):
        points = [c for c in result["configurations"] if c["protocol"] == protocol]
        for c in points:
            colour, marker = _style(c["method"])
            size = 3 + (c["budget"].bit_length() - 4 if c["budget"] else 3)
            ax.plot([c["seconds_low"], c["seconds_high"]], [c["mean"]] * 2, color=colour, lw=0.5, alpha=0.35)
            ax.plot(
                c["seconds_per_item"],
                c["mean"],
                marker,
                color=colour,
                ms=size + (3 if marker == "*" else 0),
                mec="k" if c["on_front"] else colour,
                mew=0.8 if c["on_front"] else 0.3,
                zorder=3,
            )
        front = sorted((c for c in points if c["on_front"]), key=lambda c: c["seconds_per_item"])
        ax.step(
            [c["seconds_per_item"] for c in front], [c["mean"] for c in front], "k-", where="post", lw=0.8, zorder=2
        )
        lines = []
        for k, c in enumerate(front, start=1):
            ax.annotate(
                str(k),
                (c["seconds_per_item"], c["mean"]),
                xytext=(-4, 1),
                textcoords="offset points",
                ha="right",
                fontsize=6,
            )
            lines.append(f"{k}  {short(c['label'])}: {c['mean']:.3f}, {c['seconds_per_item']:.3f} s")
        ax.text(
            0.98,
            0.05,
            "on the front:\n" + "\n".join(lines),
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize=6,
        )
        ax.axhline(full["mean"], color="k", lw=0.8, ls="--")
        ax.axhline(result["chance"], color="0.6", lw=0.8, ls="-.")
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(FixedLocator([0.1, 0.15, 0.2, 0.3, 0.4, 0.6, 1, 1.5, 2, 3, 4, 6, 10]))
        ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("seconds per item and protocol")
        ax.set_title(f"{protocol} decode" + (" (the pattern in the prefill only)" if protocol == "exact" else ""))
    axes[0][0].set_ylabel("mean accuracy, informative tasks\n(dashed: full attention; dash-dot: chance)")
    handles = []
    for method in ("exact", *COLOURS, "swa+sink, exact layers", "sa-band", "plan-"):
        if any(c["method"].startswith(method.partition(",")[0]) for c in result["configurations"]):
            colour, marker = _style(method if method != "swa+sink, exact layers" else "swa+sink, l")
            name = {
                "exact": "full attention",
                "plan-": "designed plan",
                "sa-band": "causal SA (band 2m)",
                "swa+sink, exact layers": "square: 5 full layers",
            }.get(method, method)
            handles.append(axes[0][1].plot([], [], marker, color=colour, label=name)[0])
    fig.legend(
        handles=handles,
        fontsize=6,
        loc="outside lower center",
        ncols=7,
        title="marker size: keys per query (16 to 128); black edge: on the front; seconds: median over a task's "
        "rows, mean over the tasks; bars: fastest to slowest row",
        title_fontsize=6,
    )
    return save_png_pdf(fig, prefix, dpi=200, option="--out")


def main(argv=None) -> int:
    """Draw the figure of a frontier file.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0.
    """
    parser = OneLineErrorParser(
        prog="python -m analysis.frontier.figure",
        description=__doc__.split("\n\n")[0],
        epilog="example: python -m analysis.frontier.figure --frontier "
        "analysis/frontier/results/frontier.json "
        "--out analysis/frontier/results/frontier",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--frontier", default=str(RESULTS / "frontier.json"), help="python -m analysis.frontier.frontier's JSON"
    )
    parser.add_argument("--out", required=True, type=output_file("--out"), help="PREFIX of PREFIX.png and PREFIX.pdf")
    args = parser.parse_args(argv)
    try:
        result = load_results(args.frontier, SOURCE, "--frontier", keys=tuple(SHAPE))
        check_shape(result, SHAPE)
    except (OSError, ValueError) as exc:
        message = str(exc)
        parser.error(message if message.startswith("--frontier:") else f"--frontier: {message}")
    if not any(c["method"] == "exact" for c in result["configurations"]):
        parser.error("--frontier: no full-attention configuration to draw against")
    for path in plot(result, Path(args.out)):
        print(path)
    return 0


if __name__ == "__main__":
    run_command(main)
