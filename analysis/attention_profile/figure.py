"""Where SmolLM2's attention mass goes per layer, and the chosen profile measure against accuracy for every
configuration (``python -m analysis.attention_profile.figure --out PREFIX``: writes ``PREFIX.png`` and
``PREFIX.pdf``)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from graphs.cli_common import output_file, run_command, save_png_pdf
from receptive.cli_parser import OneLineErrorParser

from ..paper_tasks.figure import COLOURS
from .predict import PROFILE_MEASURES, profile_values, read_result

RESULTS = Path(__file__).parent / "results"


def plot(heads: dict, predict: dict, profile: dict, prefix: Path) -> list[str]:
    """Draw the mass per layer and, per protocol, the chosen measure against accuracy on the held-out tasks.

    Parameters
    ----------
    heads : dict
        ``results/heads.json``.
    predict : dict
        ``results/predict.json``.
    profile : dict
        ``results/profile.json``.
    prefix : pathlib.Path
        ``PREFIX`` of ``PREFIX.png`` and ``PREFIX.pdf``.

    Returns
    -------
    list of str
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    layers: dict = {}
    for row in heads["per_head"]:
        layers.setdefault(row["layer"], []).append(row)
    x = sorted(layers)
    bottom = np.zeros(len(x))
    for name, colour in (("sink", "tab:gray"), ("window", "tab:blue"), ("far", "tab:red")):
        share = np.array([np.mean([h[name] for h in layers[layer]]) for layer in x])
        label = {"sink": "key 0", "window": f"distance < {heads['budget']}", "far": f"distance >= {heads['budget']}"}
        axes[0].bar(x, share, bottom=bottom, color=colour, label=label[name])
        bottom += share
    axes[0].set(xlabel="layer", ylabel="exact attention mass", title="where the mass goes")
    axes[0].legend(fontsize=7)
    values = profile_values(profile)
    by = {(r["decode"], r["task"], r["measure"]): r for r in predict["correlations"] if r["subset"] == "all"}
    for ax, decode in zip(axes[1:], ("exact", "sparse"), strict=True):
        measure = predict["chosen"]["profile"][decode]
        sign = PROFILE_MEASURES[measure]
        for task, marker in (("hellaswag", "o"), ("lambada", "^")):
            accuracy = {tuple(c[:2]): c[2] for c in predict["accuracy"][decode][task]}
            for config, score in accuracy.items():
                if config in values and task in values[config]:
                    m = sign * values[config][task][measure].mean()
                    ax.scatter(m, 100 * score, marker=marker, s=14, color=COLOURS.get(config[0], "black"))
            row = by.get((decode, task, measure))
            if row and row["rho"] is not None:
                ax.scatter([], [], marker=marker, color="black", label=f"{task}: rho {row['rho']:+.2f}")
        ax.set(
            xlabel=measure + (" (negated)" if sign < 0 else ""),
            ylabel="accuracy (%)",
            title=f"decode {decode}: held-out tasks",
        )
        if decode == "sparse":
            for method in sorted({c[0] for c in values}):
                ax.scatter([], [], s=14, color=COLOURS.get(method.split(",")[0], "black"), label=method)
        ax.legend(fontsize=6, ncol=2 if decode == "sparse" else 1)
    fig.tight_layout()
    written = save_png_pdf(fig, prefix)
    plt.close(fig)
    return [str(p) for p in written]


def main(argv=None) -> int:
    """Write the figure.

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
        prog="python -m analysis.attention_profile.figure",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--results", default=str(RESULTS), help="the folder of profile.json, predict.json, heads.json")
    parser.add_argument("--out", required=True, type=output_file("--out", suffixes=("",)), help="PREFIX")
    args = parser.parse_args(argv)
    docs = {
        name: read_result(parser, "--results", Path(args.results) / f"{name}.json", key)
        for name, key in (("profile", "tasks"), ("predict", "correlations"), ("heads", "per_head"))
    }
    for path in plot(docs["heads"], docs["predict"], docs["profile"], Path(args.out)):
        print(path)
    return 0


if __name__ == "__main__":
    run_command(main)
