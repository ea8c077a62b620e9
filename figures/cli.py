"""``python -m figures all --out DIR`` or ``python -m figures NAME [NAME ...] --out DIR``: PNG and PDF of each figure.

The figures drawn from result files read them from the paths their flags give (``--bench``, ``--approx-json``,
``--decoder-json``, ``--layouts-json``, ``--training-dir``, and ``--bound-json``, ``--bound-22-json``,
``--variants-json``, ``--pooled-json`` for ``causal``); the defaults are where the checkout keeps them,
relative to the current folder, and a missing file is refused before any figure is drawn, naming its flag and the
command that writes it. An input flag that none of the named figures reads, or ``--quick`` where every named figure
only reads result files, is refused, naming the flag and the figures. The other figures compute from the toolkit's
public API.
"""

from __future__ import annotations

import argparse
import os
import time
from functools import partial
from pathlib import Path

from graphs.cli_common import run_command
from receptive.cli_parser import OneLineErrorParser, add_out_option

from . import FIGURES, approx, causal, cost, layouts, training
from .style import load_results, shape_check

__all__ = ["build_parser", "main", "run_cli"]

EPILOG = """\
examples:
  python -m figures coverage_vs_layer --quick --out /tmp/figures
  python -m figures all --out /tmp/figures                      # from the checkout root
  python -m figures cost_per_layer --bench bench.json --out /tmp/figures
"""

#: flag -> (default, relative to the current folder; the command that writes it, ``{path}`` and ``{parent}`` filled
#: in; {figure: its keyword argument})
INPUTS = {
    "--bench": (
        "benchmarks/results/gpu_bench.json",
        "python -m gpu.bench --json {path}",
        {"cost_per_layer": "bench", "cost_to_coverage": "bench"},
    ),
    "--approx-json": (
        "analysis/numerical_methods/results/approx_minilm.json",
        "python -m analysis.numerical_methods.real --json {path}",
        {"approx_spectra": "results", "approx_methods": "results", "approx_kv_cache": "results"},
    ),
    "--decoder-json": (
        "analysis/numerical_methods/results/approx_decoder.json",
        "python -m analysis.numerical_methods.decoder --json {path}",
        {"approx_kv_cache": "decoder"},
    ),
    "--layouts-json": (
        "analysis/layouts/results/layouts.json",
        "python -m receptive.layouts --n 131072 --json {path}",
        {"layouts": "results"},
    ),
    "--training-dir": (
        "analysis/training/results",
        "python -m analysis.training all --out {path}",
        {"training": "results"},
    ),
    "--bound-json": (
        "analysis/bound/results/bound.json",
        "python -m receptive.bound --out {parent}",
        {"causal": "bound"},
    ),
    "--bound-22-json": (
        "analysis/causal/results/n2p22/bound.json",
        "python -m receptive.bound --n 2^22 ... --out {parent}",
        {"causal": "bound_22"},
    ),
    "--variants-json": (
        "analysis/causal/results/variants/variants.json",
        "python -m analysis.causal.variants --out {parent}",
        {"causal": "variants"},
    ),
    "--pooled-json": (
        "analysis/causal/results/pooled.json",
        "python -m analysis.causal.pooled --out {path}",
        {"causal": "pooled"},
    ),
}

#: flag -> the top-level keys its figures read, checked before any figure is drawn
KEYS = {
    "--bench": cost.KEYS,
    "--approx-json": approx.REAL_KEYS,
    "--decoder-json": approx.DECODER_KEYS,
    "--layouts-json": layouts.KEYS,
    "--bound-json": causal.KEYS,
    "--bound-22-json": causal.KEYS,
    "--variants-json": causal.KEYS,
    "--pooled-json": causal.KEYS,
}


#: the figures that only read result files (``--quick`` changes nothing in them)
READ_ONLY = ("cost_per_layer", "cost_to_coverage", "approx_spectra", "approx_methods", "approx_kv_cache", "training",
             "layouts")  # fmt: skip

#: flag -> the check of the contents its figures read (one line naming the first bad entry), before any drawing
CHECKS = {
    "--bench": cost.check,
    "--layouts-json": layouts.check,
    "--approx-json": approx._check_real,
    "--decoder-json": approx._check_decoder,
    "--bound-json": shape_check(causal.SHAPES["bound"]),
    "--bound-22-json": shape_check(causal.SHAPES["bound_22"]),
    "--variants-json": shape_check(causal.SHAPES["variants"]),
    "--pooled-json": shape_check(causal.SHAPES["pooled"]),
}


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m figures``: figure names, ``--out`` (required), ``--quick`` and the result files the
    figures read.

    Returns
    -------
    argparse.ArgumentParser
        The parser (:class:`receptive.cli_parser.OneLineErrorParser`); :func:`main` checks the names and files.

    Examples
    --------
    >>> args = build_parser().parse_args(["coverage_vs_layer", "--quick", "--out", "figures_out"])
    >>> args.names, args.quick, str(args.out)
    (['coverage_vs_layer'], True, 'figures_out')
    """
    p = OneLineErrorParser(
        prog="python -m figures",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("names", nargs="+", help=f"all, or from {', '.join(FIGURES)}")
    add_out_option(p, "a PNG and a PDF per figure", required=True)
    p.add_argument("--quick", action="store_true", help="smaller sizes, seconds instead of minutes (default: off)")
    for flag, (default, command, figures) in INPUTS.items():
        metavar = "DIR" if flag.endswith("-dir") else "PATH"
        p.add_argument(  # None: not given (the default path is read only by the figures that need it)
            flag,
            default=None,
            metavar=metavar,
            help=f"read by {', '.join(figures)}; written by `{command.format(path=metavar, parent='DIR')}` "
            f"(default: {default})",
        )
    return p


def _inputs(args, names: list[str]) -> dict[str, dict[str, Path]]:
    """The keyword arguments of each named figure that reads result files, ``ValueError`` naming the flag (and the
    command that writes the file) when one is missing or not what that command writes."""
    kwargs: dict[str, dict[str, Path]] = {}
    for flag, (default, command, figures) in INPUTS.items():
        used = [name for name in names if name in figures]
        given = getattr(args, flag.lstrip("-").replace("-", "_"))
        if not used and given is None:
            continue
        path = Path(default if given is None else given)
        if flag.endswith("-dir"):
            found = path.is_dir() and any((path / f"{t}.json").exists() for t in ("retrieval", "counting", "lm"))
            what = f"no retrieval.json, counting.json or lm.json in {str(path)!r}"
        else:
            found, what = path.is_file(), f"{str(path)!r} not found"
        if not found:
            needed = f" (needed by {', '.join(used)})" if used else ""
            raise ValueError(
                f"{flag}: {what}{needed}; run `{command.format(path=path, parent=path.parent)}` first, or give "
                f"{flag} {'DIR' if flag.endswith('-dir') else 'PATH'}"
            )
        if not flag.endswith("-dir"):  # a file that is not what its command writes is refused before any drawing
            load_results(path, command.format(path=path, parent=path.parent), flag, KEYS[flag], CHECKS.get(flag))
        else:  # each results file of the folder, as the figure reads it
            try:
                training.load(path)
            except (FileNotFoundError, ValueError) as exc:
                raise ValueError(flag + str(exc).removeprefix("results")) from None
        for name in used:
            kwargs.setdefault(name, {})[figures[name]] = path
    return kwargs


def _flag_of(figure: str, message: str) -> str:
    """A figure's error, ``"results: ..."``, named by the flag that gave that argument (``"--layouts-json: ..."``)."""
    argument, sep, rest = message.partition(":")
    for flag, (_, _, figures) in INPUTS.items():
        if figures.get(figure) == argument:
            return flag + sep + rest
    return message


def output_dir(text: str) -> Path:
    """``--out`` as a folder that exists and is writable (created if missing), else a ``ValueError`` naming it."""
    path = Path(text)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--out: cannot create the folder {text!r} ({exc.strerror or exc})") from None
    if not path.is_dir() or not os.access(path, os.W_OK):
        raise ValueError(f"--out: {text!r} is not a writable folder")
    return path


def main(argv=None) -> int:
    """Draw the named figures into ``--out``, each as PNG and PDF.

    Parameters
    ----------
    argv : list of str or None, optional
        The command line without the program name; ``None``: ``sys.argv[1:]``.

    Returns
    -------
    int
        0 once every figure is drawn (a bad argument exits 2 with one line on stderr naming it).

    Examples
    --------
    >>> main(["no_such_figure", "--out", "figures_out"])
    Traceback (most recent call last):
    ...
    SystemExit: 2
    """
    p = build_parser()
    args = p.parse_args(argv)
    names = list(FIGURES) if args.names == ["all"] else args.names
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        p.error(f"names: unknown figure(s) {', '.join(unknown)}; choose all or from {', '.join(FIGURES)}")
    for flag, (_, _, figures) in INPUTS.items():
        if getattr(args, flag.lstrip("-").replace("-", "_")) is not None and not set(names) & set(figures):
            p.error(f"{flag}: does not apply to {', '.join(names)} (it is read by {', '.join(figures)})")
    if args.quick and set(names) <= set(READ_ONLY):
        p.error(f"--quick: does not apply to {', '.join(names)} (they only read result files)")
    try:
        inputs = _inputs(args, names)
        out = output_dir(str(args.out))
    except ValueError as exc:
        p.error(str(exc))
    for name in names:
        start = time.perf_counter()
        try:
            paths = FIGURES[name](out, quick=args.quick, **inputs.get(name, {}))
        except (FileNotFoundError, ValueError) as exc:  # an input that is not what its command writes
            p.error(_flag_of(name, str(exc)))
        print(f"{name}: {', '.join(map(str, paths))} ({time.perf_counter() - start:.1f} s)", flush=True)
    return 0


#: The command's entry point (``python -m figures`` and the console script ``receptive-figures``): :func:`main`, ended
#: by :func:`graphs.cli_common.run_command` (one line on an interrupt or a closed pipe).
run_cli = partial(run_command, main)
