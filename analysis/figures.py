"""The figures of the committed results: ``python -m analysis.figures NAME [NAME ...] --out DIR`` (or ``all``), run
from the checkout root, is ``python -m figures`` with every result file the named figures read given at the path
where the checkout keeps it (an input flag given on the command line wins). :data:`RESULTS` names each file and the
command that wrote it."""

from __future__ import annotations

import sys
from pathlib import Path

from figures import FIGURES
from figures.cli import INPUTS, build_parser
from figures.cli import main as figures_main
from graphs.cli_common import run_command

ROOT = Path(__file__).resolve().parent.parent

#: flag of ``python -m figures`` -> (the committed file, relative to the checkout root; the command that wrote it)
RESULTS = {
    "--bench": ("benchmarks/results/gpu_bench.json", "python -m gpu.bench --json FILE"),
    "--approx-json": (
        "analysis/numerical_methods/results/approx_minilm.json",
        "python -m analysis.numerical_methods.real --json FILE",
    ),
    "--decoder-json": (
        "analysis/numerical_methods/results/approx_decoder.json",
        "python -m analysis.numerical_methods.decoder --json FILE",
    ),
    "--layouts-json": ("analysis/layouts/results/layouts.json", "python -m receptive.layouts --n 131072 --json FILE"),
    "--training-dir": ("analysis/training/results", "python -m analysis.training all --out DIR"),
    "--bound-json": ("analysis/bound/results/bound.json", "python -m receptive.bound --out DIR"),
    "--bound-22-json": ("analysis/causal/results/n2p22/bound.json", "python -m receptive.bound --n 2^22 ... --out DIR"),
    "--variants-json": (
        "analysis/causal/results/variants/variants.json",
        "python -m analysis.causal.variants --out DIR",
    ),
    "--pooled-json": ("analysis/causal/results/pooled.json", "python -m analysis.causal.pooled --out FILE"),
}


def committed_inputs(argv: list[str]) -> list[str]:
    """The flags and committed paths of the result files the named figures read and ``argv`` does not give.

    Parameters
    ----------
    argv : list of str
        A ``python -m figures`` command line.

    Returns
    -------
    list of str
        ``[flag, path, ...]`` to append to ``argv``.

    Examples
    --------
    >>> [Path(a).name for a in committed_inputs(["layouts", "--out", "out"])]
    ['--layouts-json', 'layouts.json']
    >>> committed_inputs(["coverage_vs_layer", "--quick", "--out", "out"])
    []
    """
    args = build_parser().parse_args(argv)
    names = set(FIGURES) if args.names == ["all"] else set(args.names)
    extra = []
    for flag, (path, _) in RESULTS.items():
        if getattr(args, flag.lstrip("-").replace("-", "_")) is None and names & set(INPUTS[flag][1]):
            extra += [flag, str(ROOT / path)]
    return extra


def main(argv: list[str] | None = None) -> int:
    """``python -m figures`` on ``argv`` and the committed result files its figures read.

    Parameters
    ----------
    argv : list of str, optional
        ``NAME [NAME ...] --out DIR [--quick] [input flags]``; ``None``: ``sys.argv[1:]``.

    Returns
    -------
    int
        0 once every figure is drawn (a bad argument exits 2 with one line naming it).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if {"-h", "--help"} & set(argv):
        print(
            __doc__
            + "\n\n"
            + "\n".join(f"  {flag} {path}  (by {command})" for flag, (path, command) in RESULTS.items())
        )
        return 0
    return figures_main([*argv, *committed_inputs(argv)])


if __name__ == "__main__":
    run_command(main)
