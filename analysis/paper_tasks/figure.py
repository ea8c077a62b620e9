"""Each pattern's score on the informative tasks against its keys per query, both protocols, beside full attention
and chance (``python -m analysis.paper_tasks.figure --summary FILE --out PREFIX``: writes ``PREFIX.png`` and
``PREFIX.pdf``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from figures.style import NUMBER, load_results, shape_check
from graphs.cli_common import output_file, run_command, save_png_pdf
from receptive.cli_parser import OneLineErrorParser

COLOURS = {
    "swa": "tab:blue",
    "swa+sink": "tab:cyan",
    "sa": "tab:red",
    "sa+sink": "tab:pink",
    "sa+swa": "tab:brown",
    "sa+swa-union": "tab:orange",
    "swa+sink+sa": "tab:purple",
    "sa-ms": "tab:olive",
    "moba": "tab:green",
    "top-k": "tab:gray",
}
#: what :func:`plot` reads of a summary (checked before any drawing)
SUMMARY_SHAPE = {
    "tasks": [{"task": str, "metric": str, "informative": bool, "exact": NUMBER, "chance": NUMBER}, ...],
    "patterns": [{"method": str, "decode": str, "budget": int, "task": str, "score": NUMBER}, ...],
    "averages": [{"method": str, "decode": str, "budget": int, "informative_average": (*NUMBER, None)}],
}
SOURCE = "the JSON of `python -m analysis.paper_tasks.summary --out FILE`"


def plot(summary: dict, prefix: Path) -> list[str]:
    """Draw one panel per informative task and one for their average; return the written files.

    Parameters
    ----------
    summary : dict
        The output of ``python -m analysis.paper_tasks.summary``.
    prefix : pathlib.Path
        ``PREFIX`` of ``PREFIX.png`` and ``PREFIX.pdf``.

    Returns
    -------
    list of str
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [t for t in summary["tasks"] if t["informative"]]
    fig, axes = plt.subplots(1, len(tasks) + 1, figsize=(3.4 * (len(tasks) + 1), 3.6), sharey=False)
    panels = [(t["task"], t) for t in tasks] + [("average", None)]
    for ax, (name, task) in zip(axes, panels, strict=True):
        rows = summary["patterns"] if task else summary["averages"]
        for method, colour in COLOURS.items():
            for decode, style in (("exact", "-"), ("sparse", ":")):
                points = sorted(
                    (r["budget"], r["score"] if task else r["informative_average"])
                    for r in rows
                    if r["method"] == method
                    and r["decode"] == decode
                    and (not task or r["task"] == name)
                    and (task or r["informative_average"] is not None)
                )
                if points:
                    label = method if decode == "exact" else None
                    ax.plot(*zip(*points, strict=True), style, marker="o", ms=3, color=colour, label=label)
        exact = task["exact"] if task else sum(t["exact"] for t in tasks) / len(tasks)
        ax.axhline(exact, color="k", lw=1, ls="--")
        if task:
            ax.axhline(task["chance"], color="0.6", lw=1, ls="-.")
        ax.set_xscale("log", base=2)
        budgets = sorted({r["budget"] for r in summary["patterns"]})
        ax.set_xticks(budgets, [str(b) for b in budgets])
        ax.set_xlim(budgets[0] / 1.3, budgets[-1] * 1.3)
        ax.set_title(f"{name} ({task['metric']})" if task else "informative average")
        ax.set_xlabel("keys per query m")
    axes[0].set_ylabel("score (dashed: full attention; dash-dot: chance)")
    handles = {label: h for ax in axes for h, label in zip(*ax.get_legend_handles_labels(), strict=True)}
    fig.legend(
        handles.values(),
        handles.keys(),
        fontsize=8,
        loc="center right",
        title="solid: exact decode\ndotted: sparse",
        title_fontsize=8,
    )
    fig.tight_layout(rect=(0, 0, 0.9, 1))
    written = save_png_pdf(fig, prefix, option="--out")
    plt.close(fig)
    return written


def main(argv=None) -> int:
    """Draw the figure of a summary file.

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
        prog="python -m analysis.paper_tasks.figure",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--summary", required=True, help="python -m analysis.paper_tasks.summary's JSON")
    parser.add_argument("--out", required=True, type=output_file("--out"), help="PREFIX of PREFIX.png and PREFIX.pdf")
    args = parser.parse_args(argv)
    try:
        summary = load_results(args.summary, SOURCE, "--summary", tuple(SUMMARY_SHAPE), shape_check(SUMMARY_SHAPE))
    except (FileNotFoundError, ValueError) as exc:
        parser.error(str(exc))
    except OSError as exc:
        parser.error(f"--summary: cannot read {args.summary} ({exc.strerror or exc})")
    if not any(t.get("informative") for t in summary["tasks"]):
        parser.error("--summary: no informative task to draw")
    for path in plot(summary, Path(args.out)):
        print(path)
    return 0


if __name__ == "__main__":
    run_command(main)
