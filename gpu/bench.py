"""``python -m gpu.bench``: what attention and coverage cost, for full, SWA, SA and SA+SWA, per backend.

Times the forward (and with ``--backward`` forward + backward) of each path at the same shapes and dtype, after a
warm-up, as the median of ``--repeats`` runs (CUDA events through ``triton.testing.do_bench`` on a GPU; on the CPU
the repeats go round-robin over the paths, so load from other processes reaches all of them alike), and reports
TFLOP/s on useful FLOPs (``4 d`` per allowed (query, key) pair, Dao et al. 2022), the speedup over full attention
next to the SA paper's (1.5x at 2k, 6.6x at 8k, 28x at 32k on an A100) and SA's overhead over SWA. Every windowed
path is timed once per backend (``torch``: the banded torch path; ``flex``: FlexAttention, compiled on CUDA;
``triton``: the fused kernel) as its own row, and each row names its peer in the same run: full attention is
``scaled_dot_product_attention`` (FlashAttention-2 on CUDA), a windowed row's peer is the FlexAttention row of the
same kind. ``--variants`` adds the causal variants of issue 13 as the modules run them (:mod:`gpu.variants`):
multi-scale SA and dilated heads on every banded backend (per-head block permutations; a window per residue
class), Kleinberg keys through their gathered key table (``kleinberg gather``: no band runs them). Then it relates
coverage to cost: with L*(n, w) from ``receptive``, reaching full coverage costs L* x the
time of a layer.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

import receptive
from receptive import coverage, make_pattern
from receptive.cli_parser import OneLineErrorParser, comma_ints, comma_names
from receptive.coverage.compute import DEFAULT_MAX_LAYERS
from receptive.patterns.causal_variants import DilatedHeads
from receptive.plotting import save_png_pdf
from receptive.validation import check_int
from receptive.windows import max_window

from .attention import full_attention, sa_attention, swa_attention
from .memory import peak_memory
from .modules import multiscale_permutations
from .neighbour_attention import resolved_method
from .validation import writable_folder
from .variants import head_dilations, kleinberg_keys, variant_attention

PAPER_SPEEDUP = {2048: 1.5, 8192: 6.6, 32768: 28.0}
KINDS = ("full", "swa", "sa", "sa+swa")
TIMED_BACKENDS = ("torch", "flex", "triton")
#: the name a backend carries in a row's label (``sa fused``); the torch path keeps the bare kind (``sa``)
SUFFIX = {"torch": "", "sdpa": "", "flex": " flex", "triton": " fused", "gather": " gather", "dense": " dense"}
#: the causal variant without a band (issue 13), timed through its gathered key table (``gpu.neighbour_attention``)
GATHERED = ("kleinberg",)
#: colours per kind, shared with ``figures.style.COLORS`` (a test keeps them equal); line style per backend
KIND_COLORS = {"full": "#444444", "swa": "#1f77b4", "sa": "#d62728", "sa+swa": "#2ca02c", "sa-ms": "#8c564b",
               "kleinberg": "#e377c2", "dilated": "#17becf"}  # fmt: skip
KIND_LABELS = {"full": "full", "swa": "SWA", "sa": "SA", "sa+swa": "SA+SWA", "sa-ms": "multi-scale SA",
               "kleinberg": "Kleinberg keys", "dilated": "dilated heads"}  # fmt: skip
BACKEND_LINES = {"torch": "-", "sdpa": "-", "flex": "--", "triton": ":", "gather": "-.", "dense": (0, (5, 1, 1, 1))}
BACKEND_NAMES = {"torch": "", "sdpa": "", "flex": " (Flex)", "triton": " (fused)", "gather": " (gathered lists)",
                 "dense": " (lists as a dense mask)"}  # fmt: skip


def label(kind: str, backend: str) -> str:
    return kind + SUFFIX[backend]


def kind_and_backend(row: dict) -> tuple[str, str]:
    """A row's (kind, backend); rows written before backends were recorded are the torch path (``sa fused``: the
    Triton kernel)."""
    if "kind" in row:
        return row["kind"], row["backend"]
    name = row["path"]
    if name.endswith(" fused"):
        return name[: -len(" fused")], "triton"
    return name, "sdpa" if name == "full" else "torch"


def _cuda_timer(fn, repeats: int) -> float:
    """Median seconds of ``fn`` on the GPU (CUDA events, ``triton.testing.do_bench``)."""
    from triton.testing import do_bench

    return do_bench(fn, warmup=5, rep=max(20, repeats), return_mode="median") / 1e3


def _times(steps: dict, repeats: int, cuda: bool) -> dict:
    """``{name: [seconds, ...]}`` for every step. CUDA: one median per step (``do_bench``). CPU: one warm-up run of
    each, then ``repeats`` rounds that run every step once in turn, so a change in the machine's load during the
    measurement reaches every path alike (the ratios of one ``n`` compare runs made side by side)."""
    if cuda:
        return {name: [_cuda_timer(step, repeats)] for name, step in steps.items()}
    for step in steps.values():
        step()
    runs = {name: [] for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            runs[name].append(time.perf_counter() - start)
    return runs


def _paths(q, k, v, w, gate, perm, backends, ms_perm=None, variants=False) -> dict:
    """``{label: (kind, backend, fn)}``: full through SDPA, each windowed kind through every backend asked for;
    with ``ms_perm`` (per-head block permutations, ``(heads, n)``) also multi-scale SA, and with ``variants`` dilated
    heads on every backend and Kleinberg keys (gathered), both through :func:`gpu.variants.variant_attention` with
    the seeded (eval-mode) keys of seed 0, layer 1, as ``StochasticAttention(variant=...)`` runs them (issue 13)."""
    paths = {"full": ("full", "sdpa", lambda: full_attention(q, k, v, backend="torch"))}
    for b in backends:

        def swa(b=b):
            return swa_attention(q, k, v, w, backend=b)

        def sa(b=b):
            return sa_attention(q, k, v, w, perm=perm, backend=b, validate=False)

        paths[label("swa", b)] = ("swa", b, swa)
        paths[label("sa", b)] = ("sa", b, sa)
        paths[label("sa+swa", b)] = ("sa+swa", b, lambda sa=sa, swa=swa: gate * sa() + (1 - gate) * swa())
        if ms_perm is not None:

            def sa_ms(b=b):
                return sa_attention(q, k, v, w, perm=ms_perm, backend=b, validate=False)

            paths[label("sa-ms", b)] = ("sa-ms", b, sa_ms)
        if variants:

            def dilated(b=b):
                return variant_attention(q, k, v, w, "dilated", backend=b)

            paths[label("dilated", b)] = ("dilated", b, dilated)
    if variants:  # the module's path: neighbour_attention's "auto" gathers unless n <= 32 w (then a dense mask)
        how = resolved_method(q.shape[2], w)
        paths[label("kleinberg", how)] = ("kleinberg", how, lambda: variant_attention(q, k, v, w, "kleinberg", seed=0))
    return paths


def _band_pairs(n: int, left: int, right: int) -> int:
    """Pairs of the truncated band ``-left <= key - query <= right`` on ``0..n-1``."""
    i = np.arange(n)
    return int((np.minimum(n - 1, i + right) - np.maximum(0, i - left) + 1).sum())


def _pairs(kind: str, n: int, w: int, heads: int = 1) -> float:
    """Allowed (query, key) pairs per head: every pair for full attention, the distinct listed keys for Kleinberg
    (seed 0), the band for the windowed paths, and for the dilated heads the window per residue class, averaged
    over the heads (:func:`gpu.variants.head_dilations`)."""
    if kind == "full":
        return n * n
    if kind == "kleinberg":
        return int((kleinberg_keys(n, w, seed=0) >= 0).sum())
    left, right = receptive.window_offsets(w, False)
    if kind == "dilated":
        total = 0
        for r in head_dilations(n, heads, w):  # classes c < n mod r hold ceil(n / r) positions, the others floor
            long_rows, length = n % r, -(-n // r)
            total += long_rows * _band_pairs(length, left, right)
            total += (r - long_rows) * _band_pairs(n // r, left, right)
        return total / heads
    band = _band_pairs(n, left, right)
    return 2 * band if kind == "sa+swa" else band


def _peer(kind: str, backends) -> str | None:
    """The row a row of ``kind`` is compared with: SDPA for full, the FlexAttention row of the same kind."""
    if kind == "full":
        return "full"
    if kind in GATHERED:
        return label("sa", backends[0])
    return label(kind, "flex") if "flex" in backends else None


def _pattern(kind: str, n: int, w: int, heads: int):
    """The coverage pattern of a row: ``make_pattern``'s, and for dilated heads the dilations the heads run (fewer
    heads than dilations drop the largest)."""
    if kind == "dilated":
        return DilatedHeads(n, w, dilations=sorted(set(head_dilations(n, heads, w))))
    return make_pattern(kind, n, w, seed=0)


def _layer_cap(kind: str, n: int, w: int) -> int:
    """Layers to compute L* within: SWA's L* is ``ceil((n-1)/h)`` with ``h = floor((w-1)/2)`` its shorter side (the
    last position must reach the first), which coverage's default of 64 layers cuts off from n = 2048 at w = 64."""
    if kind == "swa":
        return max(DEFAULT_MAX_LAYERS, -(-(n - 1) // max((w - 1) // 2, 1)) + 1)
    return DEFAULT_MAX_LAYERS


def run(args) -> dict:
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    dtype = getattr(torch, args.dtype)
    backends = args.backends
    variants = getattr(args, "variants", False)  # callers that build the namespace by hand may leave it out
    rows = []
    for n in args.n:
        g = torch.Generator().manual_seed(n)
        shape = (args.batch, args.heads, n, args.dim)
        q, k, v = (torch.randn(shape, generator=g).to(device, dtype) for _ in range(3))
        gate = torch.rand(args.batch, args.heads, n, 1, generator=g).to(device, dtype)
        perm = torch.randperm(n, generator=g).to(device)
        ms_perm = multiscale_permutations(n, args.heads, args.w, generator=g).to(device) if variants else None
        if args.backward:
            for t in (q, k, v):
                t.requires_grad_()
        timings = {}
        paths = _paths(q, k, v, args.w, gate, perm, backends, ms_perm, variants)
        steps = {name: (lambda fn=fn: fn().sum().backward()) if args.backward else fn
                 for name, (_, _, fn) in paths.items()}  # fmt: skip
        with torch.no_grad() if not args.backward else torch.enable_grad():
            runs = _times(steps, args.repeats, cuda)
            peaks = {name: peak_memory(step) for name, step in steps.items()} if cuda else {}
        for name, (kind, backend, _) in paths.items():
            seconds, peak = statistics.median(runs[name]), peaks.get(name)
            flops = (
                4
                * args.dim
                * _pairs(kind, n, args.w, args.heads)
                * args.batch
                * args.heads
                * (3.5 if args.backward else 1)
            )
            timings[name] = seconds
            rows.append({
                "n": n, "path": name, "kind": kind, "backend": backend, "seconds": seconds,
                "tflops": flops / seconds / 1e12,
                "peak_memory_bytes": peak, "repeat_seconds": runs[name],
            })  # fmt: skip
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
        for b in backends:
            sa, swa = timings[label("sa", b)], timings[label("swa", b)]
            print(
                f"         {b}: SA speedup over full {timings['full'] / sa:.1f}x (paper "
                f"{PAPER_SPEEDUP.get(n, '-')}x on an A100), SA overhead over SWA {sa / swa:.2f}x, "
                f"SA+SWA / SWA {timings[label('sa+swa', b)] / swa:.2f}x"
                + (
                    f", multi-scale SA / SA {timings[label('sa-ms', b)] / sa:.2f}x, dilated / SA "
                    f"{timings[label('dilated', b)] / sa:.2f}x, kleinberg ({resolved_method(n, args.w)}) / SA "
                    f"{timings[label('kleinberg', resolved_method(n, args.w))] / sa:.2f}x"
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
            stars[n, kind] = 1 if pattern is None else coverage(pattern, max_layers=cap).full_coverage_layer
        star = stars[n, kind]
        total = None if star is None else star * row["seconds"]
        cost.append({"n": n, "path": row["path"], "kind": kind, "backend": row["backend"], "full_coverage_layer": star,
                     "seconds_to_full_coverage": total})  # fmt: skip
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


def _curves(records, value, skip_full: bool = False):
    """``{(kind, backend): [(n, value), ...]}`` in the order kinds and backends first appear."""
    curves = {}
    for r in records:
        kind, backend = kind_and_backend(r)
        if (skip_full and kind == "full") or r.get(value) is None:
            continue
        curves.setdefault((kind, backend), []).append((r["n"], r[value]))
    return curves


def _draw(ax, curves, colors, labels, scale=1.0):
    for (kind, backend), points in curves.items():
        n, y = zip(*points, strict=True)
        ax.plot(n, [t * scale for t in y], marker="o", ms=3, color=colors[kind], ls=BACKEND_LINES[backend],
                label=labels[kind] + BACKEND_NAMES[backend])  # fmt: skip
    ax.set(xscale="log", yscale="log", xlabel="sequence length n")
    ax.legend(fontsize=7)


def draw_per_layer(ax, doc: dict, colors=KIND_COLORS, labels=KIND_LABELS) -> None:
    """Time per layer [ms] vs n, one line per (kind, backend): colour by kind, line style by backend."""
    _draw(ax, _curves(doc["rows"], "seconds"), colors, labels, scale=1e3)
    ax.set(ylabel="time per layer [ms]", title=f"{doc['device']}, w = {doc['parameters']['w']}")


def draw_speedup(ax, doc: dict, colors=KIND_COLORS, labels=KIND_LABELS) -> None:
    """Speedup over full attention vs n, next to the SA paper's (A100)."""
    _draw(ax, _curves(doc["rows"], "speedup_over_full", skip_full=True), colors, labels)
    ax.plot(list(PAPER_SPEEDUP), list(PAPER_SPEEDUP.values()), "k*", ms=7, label="SA paper (A100)")
    ax.set(ylabel="speedup over full attention")
    ax.legend(fontsize=7)


def draw_to_coverage(ax, doc: dict, colors=KIND_COLORS, labels=KIND_LABELS) -> None:
    """Time to full coverage (L* layers x time per layer) vs n."""
    _draw(ax, _curves(doc["cost_to_full_coverage"], "seconds_to_full_coverage"), colors, labels)
    ax.set(ylabel="time to full coverage [s]", title="L* layers x time per layer")


def plot_cost(doc: dict, path: str) -> list[str]:
    """Time per layer and time to full coverage vs n for every path (log-log), saved as PNG and PDF; the same
    drawing functions ``figures.cost`` uses."""
    from matplotlib.figure import Figure  # no pyplot: the caller's backend stays as it is

    fig = Figure(figsize=(7, 3), layout="constrained")
    axes = fig.subplots(1, 2)
    draw_per_layer(axes[0], doc)
    draw_to_coverage(axes[1], doc)
    return save_png_pdf(fig, path)


def _parse(p, argv):
    p.add_argument("--n", default="1024,2048,4096,8192,16384,32768", help="sequence lengths")
    p.add_argument("--w", type=int, default=64, help="window (keys per query, default 64)")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dim", type=int, default=64, help="head dimension")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], default="float32")
    p.add_argument("--backward", action="store_true", help="time forward + backward")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--variants",
        action="store_true",
        help="also time the causal variants as the modules run them: multi-scale SA (per-head block permutations) "
        "and dilated heads (a window per residue class) on every backend, Kleinberg keys (gathered key table)",
    )
    p.add_argument(
        "--backends",
        default=None,
        help=f"windowed backends to time, from {', '.join(TIMED_BACKENDS)} (default: all three on CUDA, torch on "
        "the CPU, where FlexAttention runs eagerly with O(n^2) scores and the Triton kernel needs the interpreter)",
    )
    p.add_argument("--json", default="benchmarks/results/gpu_bench.json")
    p.add_argument("--replot", default=None, metavar="JSON", help="only redraw --plot from a result JSON (no timing)")
    p.add_argument("--plot", default="benchmarks/results/cost_to_coverage.png", help="figure (PNG and PDF)")
    args = p.parse_args(argv)
    cuda = torch.cuda.is_available()
    try:
        args.n = comma_ints("--n", args.n, low=2)
        for name in ("w", "heads", "dim", "batch", "repeats"):
            check_int(f"--{name}", getattr(args, name), 1)
        default = ",".join(TIMED_BACKENDS) if cuda else "torch"
        args.backends = comma_names("--backends", args.backends or default, TIMED_BACKENDS)
    except ValueError as exc:
        p.error(str(exc))
    if args.w > max_window(min(args.n), False, False):
        p.error(f"--w: expected at most {max_window(min(args.n), False, False)} for n = {min(args.n)}, got {args.w}")
    if args.variants and args.w > min(args.n):
        p.error(f"--w: the variants (--variants) take at most n keys per query, got {args.w} for n = {min(args.n)}")
    if not cuda and "triton" in args.backends:
        p.error("--backends: triton needs a CUDA GPU (tests run the kernel on the interpreter instead)")
    if not cuda and "flex" in args.backends and args.backward:
        p.error("--backends: flex has no backward on the CPU; drop --backward or flex")
    try:  # before minutes of timing, not after
        writable_folder("--json", Path(args.json).parent)
        writable_folder("--plot", Path(args.plot).parent)
    except ValueError as exc:
        p.error(str(exc))
    return args


def main(argv: list[str] | None = None) -> int:
    p = OneLineErrorParser(
        prog="python -m gpu.bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    args = _parse(p, argv)
    if args.replot is not None:
        try:
            doc = json.loads(Path(args.replot).read_text())
            missing = [key for key in ("device", "parameters", "rows", "cost_to_full_coverage") if key not in doc]
            if missing:
                raise KeyError(", ".join(missing))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            p.error(f"--replot: cannot read a gpu.bench result from {args.replot!r} ({type(exc).__name__}: {exc})")
        print("wrote " + ", ".join(plot_cost(doc, args.plot)))
        return 0
    load_before = os.getloadavg()
    doc = run(args)
    doc["command"] = "python -m gpu.bench " + " ".join(sys.argv[1:] if argv is None else argv)
    doc["torch_threads"] = torch.get_num_threads()
    doc["load_average_before"], doc["load_average_after"] = list(load_before), list(os.getloadavg())
    Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.json}, " + ", ".join(plot_cost(doc, args.plot)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
