"""``python -m gpu.bench``: what attention and coverage cost, for full, SWA, SA and SA+SWA.

Times the forward (and with ``--backward`` forward + backward) of each path at the same shapes and dtype, after a
warm-up, as the median of ``--repeats`` runs (CUDA events through ``triton.testing.do_bench`` on a GPU), and reports
TFLOP/s on useful FLOPs (``4 d`` per allowed (query, key) pair, Dao et al. 2022), the speedup over full attention
next to the SA paper's (1.5x at 2k, 6.6x at 8k, 28x at 32k on an A100) and SA's overhead over SWA. Then it relates
coverage to cost: with L*(n, w) from ``receptive``, reaching full coverage costs L* x the time of a layer.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

import receptive
from receptive import coverage, make_pattern
from receptive.cli_parser import OneLineErrorParser
from receptive.plotting import save_png_pdf

from .attention import full_attention, sa_attention, swa_attention

PAPER_SPEEDUP = {2048: 1.5, 8192: 6.6, 32768: 28.0}


def _timer(fn, repeats: int, cuda: bool) -> float:
    if cuda:
        from triton.testing import do_bench

        return do_bench(fn, warmup=5, rep=max(20, repeats), return_mode="median") / 1e3
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _paths(q, k, v, w, gate, fused: bool):
    n = q.shape[2]
    perm = torch.randperm(n, device=q.device)
    paths = {
        "full": lambda: full_attention(q, k, v),
        "swa": lambda: swa_attention(q, k, v, w),
        "sa": lambda: sa_attention(q, k, v, w, perm=perm),
        "sa+swa": lambda: gate * sa_attention(q, k, v, w, perm=perm) + (1 - gate) * swa_attention(q, k, v, w),
    }
    if fused:
        from .triton_sa import triton_sa_attention

        paths["sa fused"] = lambda: triton_sa_attention(q, k, v, w, perm=perm)
    return paths


def _pairs(name: str, n: int, w: int) -> int:
    """Allowed (query, key) pairs: every pair for full attention, the band for the windowed paths."""
    if name == "full":
        return n * n
    left, right = receptive.window_offsets(w, False)
    i = np.arange(n)
    band = int((np.minimum(n - 1, i + right) - np.maximum(0, i - left) + 1).sum())
    return 2 * band if name == "sa+swa" else band


def run(args) -> dict:
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    dtype = getattr(torch, args.dtype)
    rows = []
    for n in args.n:
        g = torch.Generator().manual_seed(n)
        shape = (args.batch, args.heads, n, args.dim)
        q, k, v = (torch.randn(shape, generator=g).to(device, dtype) for _ in range(3))
        gate = torch.rand(args.batch, args.heads, n, 1, generator=g).to(device, dtype)
        if args.backward:
            for t in (q, k, v):
                t.requires_grad_()
        timings = {}
        for name, fn in _paths(q, k, v, args.w, gate, fused=cuda and not args.backward).items():
            step = (lambda fn=fn: fn().sum().backward()) if args.backward else fn
            with torch.no_grad() if not args.backward else torch.enable_grad():
                if cuda:
                    torch.cuda.reset_peak_memory_stats()
                seconds = _timer(step, args.repeats, cuda)
            flops = 4 * args.dim * _pairs(name, n, args.w) * args.batch * args.heads * (3.5 if args.backward else 1)
            timings[name] = seconds
            rows.append({
                "n": n, "path": name, "seconds": seconds, "tflops": flops / seconds / 1e12,
                "peak_memory_bytes": torch.cuda.max_memory_allocated() if cuda else None,
            })  # fmt: skip
            print(f"n={n:>6} {name:<9} {seconds * 1e3:>10.2f} ms  {flops / seconds / 1e12:>7.3f} TFLOP/s", flush=True)
        for row in rows:
            if row["n"] == n:
                row["speedup_over_full"] = timings["full"] / row["seconds"]
        print(
            f"         SA speedup over full {timings['full'] / timings['sa']:.1f}x (paper "
            f"{PAPER_SPEEDUP.get(n, '-')}x on an A100), SA overhead over SWA {timings['sa'] / timings['swa']:.2f}x, "
            f"SA+SWA / SWA {timings['sa+swa'] / timings['swa']:.2f}x",
            flush=True,
        )
    cost = []
    for n in args.n:
        per_layer = {r["path"]: r["seconds"] for r in rows if r["n"] == n}
        for name in ("swa", "sa", "sa+swa", "full"):
            star = 1 if name == "full" else coverage(make_pattern(name, n, args.w, seed=0)).full_coverage_layer
            total = None if star is None else star * per_layer[name]
            cost.append({"n": n, "path": name, "full_coverage_layer": star, "seconds_to_full_coverage": total})
            shown = "-" if total is None else f"{total * 1e3:.1f} ms"
            print(f"cost to full coverage n={n:>6} {name:<7} L* = {star}  {shown}", flush=True)
    return {
        "version": receptive.__version__,
        "device": torch.cuda.get_device_name() if cuda else f"CPU ({platform.processor() or platform.machine()})",
        "torch": torch.__version__,
        "parameters": {k: v for k, v in vars(args).items() if k not in ("json", "plot")},
        "rows": rows,
        "cost_to_full_coverage": cost,
    }


def plot_cost(doc: dict, path: str) -> list[str]:
    """Time per layer and time to full coverage vs n for every path (log-log), saved as PNG and PDF."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(7, 3), constrained_layout=True)
    for name in ("full", "swa", "sa", "sa+swa", "sa fused"):
        layer = [(r["n"], r["seconds"]) for r in doc["rows"] if r["path"] == name]
        total = [
            (c["n"], c["seconds_to_full_coverage"])
            for c in doc["cost_to_full_coverage"]
            if c["path"] == name and c["seconds_to_full_coverage"] is not None
        ]
        for ax, points in ((axes[0], layer), (axes[1], total)):
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", ms=3, label=name)
    for ax, title in zip(axes, ("one layer", "to full coverage (L* layers)"), strict=True):
        ax.set(xscale="log", yscale="log", xlabel="sequence length n", ylabel="time [s]", title=title)
        ax.legend(fontsize=7)
    fig.suptitle(f"{doc['device']}, w = {doc['parameters']['w']}", fontsize=9)
    return save_png_pdf(fig, path)


def main(argv: list[str] | None = None) -> int:
    p = OneLineErrorParser(
        prog="python -m gpu.bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--n", default="1024,2048,4096,8192,16384,32768", help="sequence lengths")
    p.add_argument("--w", type=int, default=64, help="window (keys per query, default 64)")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dim", type=int, default=64, help="head dimension")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], default="float32")
    p.add_argument("--backward", action="store_true", help="time forward + backward")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default="benchmarks/results/gpu_bench.json")
    p.add_argument("--plot", default="benchmarks/results/cost_to_coverage.png", help="figure (PNG and PDF)")
    args = p.parse_args(argv)
    try:
        args.n = [int(x) for x in args.n.split(",")]
    except ValueError:
        p.error(f"--n: expected comma-separated integers, got {args.n!r}")
    for name in ("w", "heads", "dim", "batch", "repeats"):
        if getattr(args, name) < 1:
            p.error(f"--{name}: expected a positive integer, got {getattr(args, name)}")
    if min(args.n) < 2 or args.w > 2 * min(args.n) - 1:
        p.error(f"--n/--w: every n must be >= 2 and w <= 2n - 1 (got n {args.n}, w {args.w})")
    doc = run(args)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.json}, " + ", ".join(plot_cost(doc, args.plot)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
