"""``python -m figures NAME [NAME ...] --out DIR``: PNG and PDF of each figure.

The figures drawn from result files read them from the paths their flags give (``--bench``, ``--approx-json``,
``--decoder-json``, ``--layouts-json``, ``--training-dir``, and ``--bound-json``, ``--bound-22-json``,
``--variants-json``, ``--pooled-json`` for ``causal``); a named figure whose file is not given, or a file that is
missing or not what the figure reads, is refused before any figure is drawn, naming its flag and what the file is.
An input flag that none of the named figures reads, or ``--quick`` where every named figure only reads result files,
is refused, naming the flag and the figures. The other figures compute from the toolkit's public API.
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
  python -m figures cost_per_layer --bench bench.json --out /tmp/figures
"""

#: flag -> (what the file is; {figure: its keyword argument})
INPUTS = {
    "--bench": (cost.SOURCE, {"cost_per_layer": "bench", "cost_to_coverage": "bench"}),
    "--approx-json": (
        approx.REAL_SOURCE,
        {"approx_spectra": "results", "approx_methods": "results", "approx_kv_cache": "results"},
    ),
    "--decoder-json": (approx.DECODER_SOURCE, {"approx_kv_cache": "decoder"}),
    "--layouts-json": (layouts.SOURCE, {"layouts": "results"}),
    "--training-dir": (training.SOURCE, {"training": "results"}),
    "--bound-json": (causal.SOURCES["bound"], {"causal": "bound"}),
    "--bound-22-json": (causal.SOURCES["bound_22"], {"causal": "bound_22"}),
    "--variants-json": (causal.SOURCES["variants"], {"causal": "variants"}),
    "--pooled-json": (causal.SOURCES["pooled"], {"causal": "pooled"}),
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
READ_ONLY = (
    "cost_per_layer",
    "cost_to_coverage",
    "approx_spectra",
    "approx_methods",
    "approx_kv_cache",
    "training",
    "layouts",
)

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
    for flag, (source, figures) in INPUTS.items():
        metavar = "DIR" if flag.endswith("-dir") else "PATH"
        p.add_argument(
            flag,
            default=None,
            metavar=metavar,
            help=f"{source}; read by {', '.join(figures)} (needed when they are named)",
        )
    return p


def _inputs(args, names: list[str]) -> dict[str, dict[str, Path]]:
    """The keyword arguments of each named figure that reads result files, ``ValueError`` naming the flag (and what
    the file is) when one is not given, missing or not what the figure reads."""
    kwargs: dict[str, dict[str, Path]] = {}
    for flag, (source, figures) in INPUTS.items():
        used = [name for name in names if name in figures]
        given = getattr(args, flag.lstrip("-").replace("-", "_"))
        metavar = "DIR" if flag.endswith("-dir") else "PATH"
        if given is None:
            if used:
                raise ValueError(f"{flag}: needed by {', '.join(used)}; give {metavar}, {source}")
            continue
        path = Path(given)
        if flag.endswith("-dir"):
            found = path.is_dir() and any((path / f"{t}.json").exists() for t in ("retrieval", "counting", "lm"))
            what = f"no retrieval.json, counting.json or lm.json in {str(path)!r}"
        else:
            found, what = path.is_file(), f"{str(path)!r} not found"
        if not found:
            raise ValueError(f"{flag}: {what} (needed by {', '.join(used)}); give {metavar}, {source}")
        if not flag.endswith("-dir"):  # a file that is not what its figures read is refused before any drawing
            load_results(path, source, flag, KEYS[flag], CHECKS.get(flag))
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
    for flag, (_, figures) in INPUTS.items():
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
    for flag, (_, figures) in INPUTS.items():
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
        except (FileNotFoundError, ValueError) as exc:  # an input that is not what the figure reads
            p.error(_flag_of(name, str(exc)))
        print(f"{name}: {', '.join(map(str, paths))} ({time.perf_counter() - start:.1f} s)", flush=True)
    return 0


#: The command's entry point (``python -m figures`` and the console script ``receptive-figures``): :func:`main`, ended
#: by :func:`graphs.cli_common.run_command` (one line on an interrupt or a closed pipe).
run_cli = partial(run_command, main)
