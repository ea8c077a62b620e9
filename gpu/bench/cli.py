"""``python -m gpu.bench``: what attention and coverage cost, for full, SWA, SA and SA+SWA, per backend.

Times the forward (and with ``--backward`` forward + backward) of each path at the same shapes and dtype, after a
warm-up, as the median of ``--repeats`` runs (CUDA events through ``triton.testing.do_bench`` on a GPU; on the CPU
the repeats go round-robin over the paths, so load from other processes reaches all of them alike), and reports
TFLOP/s on useful FLOPs (``4 d`` per allowed (query, key) pair, Dao et al. 2022), the speedup over full attention
next to the SA paper's (:data:`gpu.bench.plot.PAPER_SPEEDUP`, on an A100) and SA's overhead over SWA. Every windowed
path is timed once per backend (``torch``: the banded torch path; ``flex``: FlexAttention, compiled on CUDA;
``triton``: the fused kernel) as its own row, and each row names its peer in the same run: full attention is
``scaled_dot_product_attention`` (FlashAttention-2 on CUDA), a windowed row's peer is the FlexAttention row of the
same kind. ``--variants`` adds the causal variants as the layers run them (:mod:`gpu.attention.variants`):
multi-scale SA and dilated heads on every banded backend (per-head block permutations; a window per residue
class), Kleinberg keys through their gathered key table (``kleinberg gather``: no band runs them). Then it relates
coverage to cost: with L*(n, w) from ``receptive``, reaching full coverage costs L* x the
time of a layer. The rows go to ``--json`` and the figure to ``--plot`` only when they are given.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
from functools import partial
from pathlib import Path

import torch

import receptive
from gpu.attention.neighbour import resolved_method
from gpu.attention.variants import multiscale_permutations
from gpu.bench.memory import bench_bytes, device_memory, peak_memory
from gpu.bench.paths import GATHERED, TIMED_BACKENDS, _paths, _peer, kernel_runs, label
from gpu.bench.patterns import _layer_cap, _pairs, _pattern
from gpu.bench.plot import PAPER_SPEEDUP, check_bench_result, plot_cost
from gpu.bench.timing import _times
from gpu.validation import check_int
from graphs.cli_common import FIGURE_SUFFIXES, output_file, run_command, write_atomic
from graphs.cli_options import add_json_option, add_w_option, write_output
from graphs.memory import check_memory
from receptive import coverage_by_layer
from receptive.cli_parser import OneLineErrorParser, comma_ints, comma_names, given_options
from receptive.windows import max_window

__all__ = ["build_parser", "main", "run"]

EXAMPLES = """examples:
  python -m gpu.bench --n 256,512 --repeats 1                 # a quick look, printed only
  python -m gpu.bench --json bench.json --plot cost.png       # the full CPU (or GPU) run, saved
  python -m gpu.bench --backward --n 1024,4096 --json bw.json # forward + backward
  python -m gpu.bench --replot bench.json --plot cost.png     # redraw a saved run, no timing
"""


def run(args) -> dict:
    """Time every path of ``args`` and relate it to coverage.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed flags of :func:`main` (``n`` a list of lengths, ``backends`` a list of names).

    Returns
    -------
    dict
        ``{"version", "device", "torch", "parameters", "rows", "cost_to_full_coverage"}``: one row per (n, path)
        with its median seconds, TFLOP/s and ratios, and per row ``L*`` and ``L*`` times the seconds.

    Examples
    --------
    >>> import argparse, contextlib, io
    >>> args = argparse.Namespace(n=[64], w=8, heads=1, d=16, batch=1, dtype="float32", backward=False,
    ...                           repeats=1, backends=["torch"], json=None, plot=None)
    >>> with contextlib.redirect_stdout(io.StringIO()):  # it prints each row as it is timed
    ...     doc = run(args)
    >>> {c["path"]: c["full_coverage_layer"] for c in doc["cost_to_full_coverage"]}
    {'full': 1, 'swa': 21, 'sa': 4, 'sa+swa': 3}
    """
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    dtype = getattr(torch, args.dtype)
    backends = args.backends
    variants = getattr(args, "variants", False)  # callers that build the namespace by hand may leave it out
    rows = []
    for n in args.n:
        g = torch.Generator().manual_seed(n)
        shape = (args.batch, args.heads, n, args.d)
        q, k, v = (torch.randn(shape, generator=g).to(device, dtype) for _ in range(3))
        gate = torch.rand(args.batch, args.heads, n, 1, generator=g).to(device, dtype)
        perm = torch.randperm(n, generator=g).to(device)
        ms_perm = multiscale_permutations(n, args.heads, args.w, generator=g).to(device) if variants else None
        if args.backward:
            for t in (q, k, v):
                t.requires_grad_()
        timings = {}
        paths = _paths(q, k, v, args.w, gate, perm, backends, ms_perm, variants)
        steps = {
            name: (lambda fn=fn: fn().sum().backward()) if args.backward else fn for name, (_, _, fn) in paths.items()
        }
        with torch.no_grad() if not args.backward else torch.enable_grad():
            runs = _times(steps, args.repeats, cuda)
            peaks = {name: peak_memory(step) for name, step in steps.items()} if cuda else {}
        for name, (kind, backend, _) in paths.items():
            seconds, peak = statistics.median(runs[name]), peaks.get(name)
            flops = (
                4
                * args.d
                * _pairs(kind, n, args.w, args.heads)
                * args.batch
                * args.heads
                * (3.5 if args.backward else 1)
            )
            timings[name] = seconds
            rows.append(
                {
                    "n": n,
                    "path": name,
                    "kind": kind,
                    "backend": backend,
                    "seconds": seconds,
                    "tflops": flops / seconds / 1e12,
                    "peak_memory_bytes": peak,
                    "repeat_seconds": runs[name],
                }
            )
            print(f"n={n:>6} {name:<13} {seconds * 1e3:>10.2f} ms  {flops / seconds / 1e12:>7.3f} TFLOP/s", flush=True)
        for row in rows:
            if row["n"] != n:
                continue
            row["speedup_over_full"] = timings["full"] / row["seconds"]
            peer = _peer(row["kind"], backends)
            row["peer"] = peer
            row["time_over_peer"] = row["seconds"] / timings[peer] if peer else None
            if row["kind"] == "sa":
                row["sa_over_swa"] = row["seconds"] / timings[label("swa", row["backend"])]
            if row["kind"] in ("sa-ms", "dilated"):
                row["over_sa"] = row["seconds"] / timings[label("sa", row["backend"])]
            if row["kind"] in GATHERED:
                row["over_sa"] = row["seconds"] / timings[label("sa", backends[0])]
        how = resolved_method(n, args.w, kernel=kernel_runs(q))  # the Kleinberg row's path
        for b in backends:
            sa, swa = timings[label("sa", b)], timings[label("swa", b)]
            print(
                f"         {b}: SA speedup over full {timings['full'] / sa:.1f}x (paper "
                f"{PAPER_SPEEDUP.get(n, '-')}x on an A100), SA overhead over SWA {sa / swa:.2f}x, "
                f"SA+SWA / SWA {timings[label('sa+swa', b)] / swa:.2f}x"
                + (
                    f", multi-scale SA / SA {timings[label('sa-ms', b)] / sa:.2f}x, dilated / SA "
                    f"{timings[label('dilated', b)] / sa:.2f}x, kleinberg ({how}) / SA "
                    f"{timings[label('kleinberg', how)] / sa:.2f}x"
                    if variants
                    else ""
                ),
                flush=True,
            )
    cost = []
    stars = {}
    for row in rows:
        n, kind = row["n"], row["kind"]
        if (n, kind) not in stars:
            pattern = None if kind == "full" else _pattern(kind, n, args.w, args.heads)
            cap = _layer_cap(kind, n, args.w)
            stars[n, kind] = 1 if pattern is None else coverage_by_layer(pattern, max_layers=cap).full_coverage_layer
        star = stars[n, kind]
        total = None if star is None else star * row["seconds"]
        cost.append(
            {
                "n": n,
                "path": row["path"],
                "kind": kind,
                "backend": row["backend"],
                "full_coverage_layer": star,
                "seconds_to_full_coverage": total,
            }
        )
        shown = "-" if total is None else f"{total * 1e3:.1f} ms"
        print(f"cost to full coverage n={n:>6} {row['path']:<13} L* = {star}  {shown}", flush=True)
    return {
        "version": receptive.__version__,
        "device": torch.cuda.get_device_name() if cuda else f"CPU ({platform.processor() or platform.machine()})",
        "torch": torch.__version__,
        "parameters": {k: v for k, v in vars(args).items() if k not in ("json", "plot")},
        "rows": rows,
        "cost_to_full_coverage": cost,
    }


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m gpu.bench`` (defaults in its help; one-line errors naming the flag).

    Returns
    -------
    argparse.ArgumentParser
        The parser (:class:`receptive.cli_parser.OneLineErrorParser`); :func:`main` checks the values together.

    Examples
    --------
    >>> args = build_parser().parse_args(["--n", "256,512", "--json"])
    >>> args.n, args.w, args.json
    ('256,512', 64, '-')
    """
    p = OneLineErrorParser(prog="python -m gpu.bench", description=__doc__, epilog=EXAMPLES, formatter_class=_Formatter)
    p.add_argument("--n", default="1024,2048,4096,8192,16384,32768", help="sequence lengths, comma-separated")
    add_w_option(p, 64)
    p.add_argument("--heads", type=int, default=4, help="query heads")
    p.add_argument("--d", type=int, default=64, help="head dimension")
    p.add_argument("--batch", type=int, default=1, help="batch size")
    p.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], default="float32", help="dtype of q, k, v")
    p.add_argument("--backward", action="store_true", help="time forward + backward")
    p.add_argument("--repeats", type=int, default=3, help="timed runs per path (the median is kept)")
    p.add_argument(
        "--variants",
        action="store_true",
        help="also time the causal variants as the layers run them: multi-scale SA (per-head block permutations) "
        "and dilated heads (a window per residue class) on every backend, Kleinberg keys (gathered key table)",
    )
    p.add_argument(
        "--backends",
        default=None,
        help=f"windowed backends to time, from {', '.join(TIMED_BACKENDS)} (None: all three on CUDA, torch on "
        "the CPU, where FlexAttention runs eagerly with O(n^2) scores and the Triton kernel needs the interpreter)",
    )
    add_json_option(p)
    p.add_argument("--replot", default=None, metavar="JSON", help="only redraw --plot from a result JSON (no timing)")
    p.add_argument(
        "--plot",
        default=None,
        metavar="PATH",
        type=output_file("--plot", suffixes=FIGURE_SUFFIXES),
        help="draw the cost figure to PATH (.png or .pdf) as PNG and PDF",
    )
    return p


def _parse(p, argv):
    """The flags of ``argv``, checked together (one line naming the flag, exit status 2)."""
    args = p.parse_args(argv)
    given = given_options(p, argv)
    cuda = torch.cuda.is_available()
    try:
        args.n = comma_ints("--n", args.n, low=2)
        for name in ("w", "heads", "d", "batch", "repeats"):
            check_int(f"--{name}", getattr(args, name), 1)
        default = ",".join(TIMED_BACKENDS) if cuda else "torch"
        args.backends = comma_names("--backends", args.backends or default, TIMED_BACKENDS)
    except (TypeError, ValueError) as exc:
        p.error(str(exc))
    if args.replot is not None and args.plot is None:
        p.error("--replot: needs --plot, the figure to draw")
    if args.replot is not None:
        timed = ("n", "w", "heads", "d", "batch", "dtype", "backward", "repeats", "variants", "backends", "json")
        for name in timed:
            if name in given:
                p.error(f"--{name}: does not apply with --replot (it only redraws --plot; nothing is timed)")
        return args
    if args.w > max_window(min(args.n), False, False):
        p.error(f"--w: expected at most {max_window(min(args.n), False, False)} for n = {min(args.n)}, got {args.w}")
    if args.variants and args.w > min(args.n):
        p.error(f"--w: the variants (--variants) take at most n keys per query, got {args.w} for n = {min(args.n)}")
    if not cuda and "triton" in args.backends:
        p.error("--backends: triton needs a CUDA GPU (tests run the kernel on the interpreter instead)")
    if not cuda and "flex" in args.backends and args.backward:
        p.error("--backends: flex has no backward on the CPU; drop --backward or flex")
    element = torch.empty((), dtype=getattr(torch, args.dtype)).element_size()
    dense = not cuda and "flex" in args.backends
    where = "the GPU's memory" if cuda else "the machine's memory"
    try:  # before any tensor is drawn: a size that cannot fit is one line, not a failure inside the allocator
        n = max(args.n)
        needed = bench_bytes(n, args.w, args.heads, args.d, args.batch, element, args.backward, dense)
        what = f"the tensors of n = {n} x {args.heads} heads x {args.d} dims x batch {args.batch} ({args.dtype})"
        check_memory("--n", needed, what, device_memory(cuda), where)
    except MemoryError as exc:
        p.error(str(exc))
    return args


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults in the help (but ``None``, an option not given), the description and examples as written."""

    def _get_help_string(self, action):
        return action.help if action.default is None else super()._get_help_string(action)


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m gpu.bench`` with ``argv`` (default ``sys.argv[1:]``).

    Parameters
    ----------
    argv : list of str or None, default None
        The flags; ``--help`` lists them with their defaults.

    Returns
    -------
    int
        0 on success; a bad flag exits with status 2 and one line naming it.

    Examples
    --------
    >>> main(["--n", "64", "--w", "200"])
    Traceback (most recent call last):
    ...
    SystemExit: 2
    """
    p = build_parser()
    args = _parse(p, argv)
    if args.replot is not None:
        try:
            doc = check_bench_result(json.loads(Path(args.replot).read_text()))
        except (OSError, ValueError) as exc:  # unreadable, not JSON, or rows the figure cannot draw
            kind = "" if type(exc) is ValueError else f"{type(exc).__name__}: "
            p.error(f"--replot: cannot read a gpu.bench.cli result from {args.replot!r} ({kind}{exc})")
        print("wrote " + ", ".join(plot_cost(doc, args.plot)))
        return 0
    printing = args.json == "-"  # the JSON alone on stdout: the rows as they are timed go to stderr
    with contextlib.redirect_stdout(sys.stderr) if printing else contextlib.nullcontext():
        load_before = os.getloadavg()
        doc = run(args)
        doc["command"] = "python -m gpu.bench " + " ".join(sys.argv[1:] if argv is None else argv)
        doc["torch_threads"] = torch.get_num_threads()
        doc["load_average_before"], doc["load_average_after"] = list(load_before), list(os.getloadavg())
        written = []
        if args.json is not None and not printing:
            written.append(write_atomic(args.json, json.dumps(doc, indent=1) + "\n", option="--json"))
        if args.plot is not None:
            written += plot_cost(doc, args.plot)
        if written:
            print("wrote " + ", ".join(map(str, written)))
    if printing:
        write_output("-", json.dumps(doc, indent=1) + "\n", "--json")
    return 0


#: The command's entry point (``python -m gpu.bench`` and the console script ``receptive-bench``): :func:`main`, ended
#: by :func:`graphs.cli_common.run_command` (one line on an interrupt or a closed pipe).
run_cli = partial(run_command, main)
