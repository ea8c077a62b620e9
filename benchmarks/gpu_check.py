"""The first run on a GPU, in one command (under 10 minutes on one H100/H200-class GPU):

    python benchmarks/gpu_check.py --out benchmarks/results/gpu_check.json [--budget 480]
    python benchmarks/gpu_check.py --dry-run --out FILE  # CPU, Triton interpreter, tiny sizes: the same code paths

1. Correctness: every backend (full: SDPA, FlexAttention, fused Triton; SWA and SA, shared and per-head
   permutations: torch, FlexAttention, fused Triton), causal and bidirectional, GQA, in fp32 against a float64 dense
   oracle whose masks come from ``receptive``'s pattern definitions (the ones the coverage engine analyses), at n up
   to 8192; gradients against float64 autograd at n up to 2048; each backend once more in the timing dtype; and on
   CUDA that a drawn-permutation SA call never synchronises (``torch.cuda.set_sync_debug_mode("error")``).
2. Cost: forward and forward + backward times (``triton.testing.do_bench`` median, CUDA events) for n = 2k .. 128k
   of full (SDPA), SWA (torch, FlexAttention compiled, fused), SA (torch, Flex, fused) and SA+SWA, with the peak
   memory of one call beyond its inputs (``torch.cuda.max_memory_allocated``), the speedup over full, each row's
   time over its peer (SDPA for full, FlexAttention for the windowed kinds) and the SA overhead over SWA per
   backend.

Sizes that do not fit in memory are recorded with a note instead of a time. Time guards: correctness checks not
started within 270 s are listed as skipped (compiling FlexAttention for every mask and shape dominates), timings not
started within ``--budget`` seconds (480; both scale with it) are recorded as skipped. Writes one JSON document;
exit status 1 when a correctness check fails (after writing it), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: where the committed result lives: pass it as --out to refresh it (nothing is written without --out)
COMMITTED_OUT = "benchmarks/results/gpu_check.json"
# gpu.attention.oracle.BACKENDS (not imported here: the interpreter is chosen first)
BACKENDS = ("torch", "flex", "triton")
#: (label, kind, backend) of every timed path; full attention is SDPA (FlashAttention-2 on CUDA)
TIMED = [("full", "full", "sdpa")] + [
    (kind + {"torch": "", "flex": " flex", "triton": " fused"}[b], kind, b)
    for kind in ("swa", "sa", "sa+swa")
    for b in BACKENDS
]


@dataclass
class Sizes:
    check_n: list[int]
    grad_n: list[int]
    time_n: list[int]
    check_heads: tuple[int, int]  # (query heads, kv heads): GQA in every correctness case
    check_d: int
    check_w: int
    heads: int
    d: int
    w: int
    dtype: str
    check_budget_s: float  # correctness checks not started by then are listed as skipped
    budget_s: float  # timings not started by then are recorded as skipped


GPU_SIZES = Sizes(
    [1000, 8192], [1000, 2048], [2048 << i for i in range(7)], (4, 2), 64, 256, 16, 64, 256, "bfloat16", 270.0, 480.0
)
DRY_SIZES = Sizes([33], [33], [48], (2, 1), 16, 9, 2, 16, 16, "float32", 40.0, 60.0)


@dataclass
class Timing:
    n: int
    path: str
    kind: str
    backend: str
    direction: str
    seconds: float | None = None
    tflops: float | None = None
    peak_memory_bytes: int | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)


def _setup(dry_run: bool):
    """The interpreter must be chosen before triton compiles anything; the repository must be importable."""
    if dry_run:
        os.environ["TRITON_INTERPRET"] = "1"
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


# ---------------------------------------------------------------- correctness


def correctness(s: Sizes, device: str, log, deadline: float = float("inf")):
    """:func:`gpu.attention.oracle.check_backends` at the sizes of ``s``: ``(checks, skipped)``."""
    from gpu.attention.oracle import check_backends

    h, hkv = s.check_heads
    return check_backends(s.check_n, s.grad_n, h, hkv, s.check_d, s.check_w, s.dtype, device, log, deadline)


def sync_free(s: Sizes, device: str) -> dict:
    """Whether an SA call with a drawn or seeded permutation synchronises with the GPU (after a warm-up call), with
    ``check_finite=False`` (the finiteness check reads one boolean back per tensor by design)."""
    import torch

    from gpu import sa_attention

    if device != "cuda":
        return {"note": "checked on CUDA only (tests/test_gpu_attention.py checks the same on the meta device)"}
    n = max(s.check_n)
    q = torch.randn(1, s.heads, n, s.d, device=device, dtype=getattr(torch, s.dtype))
    result = {}
    for backend in BACKENDS:
        for how, kwargs in (("drawn", {}), ("seeded", {"seed": 1})):
            sa_attention(q, q, q, s.w, backend=backend, check_finite=False, **kwargs)  # compile, autotune, cache
            torch.cuda.synchronize()
            try:
                torch.cuda.set_sync_debug_mode("error")
                sa_attention(q, q, q, s.w, backend=backend, check_finite=False, **kwargs)
                result[f"{backend} {how}"] = "no sync"
            except RuntimeError as exc:
                result[f"{backend} {how}"] = f"synchronises: {str(exc).splitlines()[0]}"
            finally:
                torch.cuda.set_sync_debug_mode("default")
    return result


# ---------------------------------------------------------------- cost


def _timer(fn, cuda: bool, grads=None) -> float:
    if cuda:
        from triton.testing import do_bench

        return do_bench(fn, warmup=10, rep=50, grad_to_none=grads, return_mode="median") / 1e3
    start = time.perf_counter()  # the dry run: one call, the code path and not the time is what counts
    fn()
    return time.perf_counter() - start


def estimated_bytes(kind: str, backend: str, n: int, w: int, heads: int, d: int, elem: int, backward: bool) -> int:
    """A generous estimate of what one call allocates beyond its inputs (batch 1), to skip what cannot fit: the
    torch path holds four ``(heads, n, bq + w - 1)`` score-sized tensors per band (scores, masked scores,
    probabilities, masked probabilities; twice with the backward, :mod:`gpu.attention.banded`); every path holds about
    eight ``(heads, n, d)`` tensors (output, permuted copies, saved tensors, gradients). SA+SWA runs two bands."""
    from gpu.attention.banded import _block_size

    linear = 8 * heads * n * d * elem
    band = 0
    if backend == "torch" and kind != "full":
        left, right = w // 2, (w - 1) // 2
        bq = _block_size(n, left, right)
        band = 4 * heads * (-(-n // bq)) * bq * (bq + left + right) * elem * (2 if backward else 1)
    return (band + linear) * (2 if kind == "sa+swa" else 1)


def free_memory(device: str) -> int | None:
    """Free bytes on the GPU (``torch.cuda.mem_get_info``); ``None`` on the CPU (nothing is skipped there)."""
    import torch

    return torch.cuda.mem_get_info()[0] if device == "cuda" else None


def _flops(kind: str, n: int, w: int, heads: int, d: int, backward: bool) -> float:
    """Useful FLOPs: 4 d per allowed (query, key) pair (Dao et al. 2022), x 3.5 with the backward."""
    import numpy as np

    if kind == "full":
        pairs = n * n
    else:
        left, right = w // 2, (w - 1) // 2
        i = np.arange(n)
        pairs = int((np.minimum(n - 1, i + right) - np.maximum(0, i - left) + 1).sum()) * (2 if kind == "sa+swa" else 1)
    return 4 * d * pairs * heads * (3.5 if backward else 1)


def timings(s: Sizes, device: str, deadline: float, log, save=None) -> list[Timing]:
    """Every row of :data:`TIMED` at every ``s.time_n``, forward and backward; ``save(rows)`` after each row (so a
    run killed at its time limit leaves the rows it finished)."""
    import torch

    from gpu import full_attention, sa_attention, swa_attention
    from gpu.bench.memory import peak_memory

    cuda = device == "cuda"
    dtype = getattr(torch, s.dtype)
    rows = []
    for n in s.time_n:
        w = min(s.w, n)
        g = torch.Generator().manual_seed(n)
        q, k, v = (torch.randn(1, s.heads, n, s.d, generator=g).to(device, dtype) for _ in range(3))
        gate = torch.rand(1, s.heads, n, 1, generator=g).to(device, dtype)
        perm = torch.randperm(n, generator=g).to(device)

        def attend(kind, backend, q, k, v, w=w, gate=gate, perm=perm):
            if kind == "full":
                return full_attention(q, k, v, backend="torch", check_finite=False)
            if kind == "swa":
                return swa_attention(q, k, v, w, backend=backend, check_finite=False)
            sa = sa_attention(q, k, v, w, perm=perm, backend=backend, validate=False, check_finite=False)
            swa = 0 if kind == "sa" else swa_attention(q, k, v, w, backend=backend, check_finite=False)
            return sa if kind == "sa" else gate * sa + (1 - gate) * swa

        for label, kind, backend in TIMED:
            for direction in ("forward", "backward"):
                if save is not None and rows:
                    save(rows)
                row = Timing(n, label, kind, backend, direction)
                rows.append(row)
                if time.perf_counter() > deadline:
                    row.note = "skipped: time budget spent"
                    continue
                if backend == "flex" and direction == "backward" and not cuda:
                    row.note = "skipped: FlexAttention has no CPU backward"
                    continue
                backward = direction == "backward"
                need = estimated_bytes(kind, backend, n, w, s.heads, s.d, q.element_size(), backward)
                free = free_memory(device)
                if free is not None and need > 0.9 * free:
                    row.note = f"skipped: needs about {need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free"
                    log(f"n={n:>6} {label:<12} {direction:<8} {row.note}")
                    continue
                leaves = [t.detach().requires_grad_(backward) for t in (q, k, v)]
                upstream = torch.ones_like(q)

                def step(kind=kind, backend=backend, leaves=leaves, backward=backward, upstream=upstream):
                    out = attend(kind, backend, *leaves)
                    if backward:
                        out.backward(upstream)

                try:
                    with torch.enable_grad() if backward else torch.no_grad():
                        row.seconds = _timer(step, cuda, leaves if backward else None)
                        row.peak_memory_bytes = peak_memory(step) if cuda else None
                    row.tflops = _flops(kind, n, w, s.heads, s.d, backward) / row.seconds / 1e12
                except torch.OutOfMemoryError:
                    row.note = "skipped: out of memory"
                except Exception as exc:  # a backend that fails at this size: recorded, the run goes on
                    row.note = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                finally:
                    for t in leaves:
                        t.grad = None
                    if cuda:
                        torch.cuda.empty_cache()
                shown = f"{row.seconds * 1e3:10.3f} ms" if row.seconds is not None else row.note
                log(f"n={n:>6} {label:<12} {direction:<8} {shown}")
        del q, k, v, gate, perm
    if save is not None:
        save(rows)
    _relate(rows)
    return rows


def _relate(rows: list[Timing]) -> None:
    """Per row: speedup over full, time over its peer (SDPA for full, the FlexAttention row of the same kind),
    and for SA rows the overhead over SWA on the same backend."""
    by = {(r.n, r.path, r.direction): r.seconds for r in rows}
    for r in rows:
        if r.seconds is None:
            continue
        full = by.get((r.n, "full", r.direction))
        peer = "full" if r.kind == "full" else r.kind + " flex"
        r.extra["speedup_over_full"] = full / r.seconds if full else None
        r.extra["peer"] = peer
        r.extra["time_over_peer"] = (
            r.seconds / by[(r.n, peer, r.direction)] if by.get((r.n, peer, r.direction)) else None
        )
        if r.kind == "sa":
            swa = by.get((r.n, r.path.replace("sa", "swa", 1), r.direction))
            r.extra["sa_over_swa"] = r.seconds / swa if swa else None


# ---------------------------------------------------------------- driver


def _environment(device: str) -> dict:
    import torch

    env = {"python": platform.python_version(), "torch": torch.__version__, "device": device}
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    if device == "cuda":
        env["gpu"] = torch.cuda.get_device_name()
        env["capability"] = list(torch.cuda.get_device_capability())
        env["memory_bytes"] = torch.cuda.get_device_properties(0).total_memory
    else:
        env["cpu"] = platform.processor() or platform.machine()
    return env


def run(dry_run: bool, budget_s: float | None = None, log=print, save=None, grad_only: bool = False) -> dict:
    """The whole check; ``save(doc)`` gets the document so far after the correctness pass and after every timing
    row (``"complete": False`` until the end). ``grad_only``: the gradient pass alone (after fp32 forward checks at
    the smallest ``check_n``), all of ``budget_s`` for it, no timings."""
    import torch

    start = time.perf_counter()
    s = DRY_SIZES if dry_run else GPU_SIZES
    if budget_s is not None:  # the checks get the same share of it as by default
        s = replace(s, budget_s=budget_s, check_budget_s=budget_s * s.check_budget_s / s.budget_s)
    if grad_only:
        s = replace(s, check_n=[min(s.check_n)], dtype="float32", check_budget_s=s.budget_s, time_n=[])
    device = "cpu" if dry_run else "cuda"
    torch.backends.cuda.matmul.allow_tf32 = False  # the fp32 oracle comparisons are about fp32, not TF32
    import torch._dynamo

    for name in ("recompile_limit", "cache_size_limit"):  # one compiled FlexAttention per shape and mask family
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 64)
    doc = {
        "command": "python benchmarks/gpu_check.py"
        + (" --dry-run" if dry_run else "")
        + (" --grad-only" if grad_only else ""),
        "dry_run": dry_run,
        "complete": False,
        "environment": _environment(device),
        "sizes": asdict(s),
    }
    save = save or (lambda doc: None)
    checks, skipped = correctness(s, device, log, start + s.check_budget_s)
    failed = [c.case for c in checks if not c.ok]
    doc["correctness"] = {
        "ok": not failed,
        "failed": failed,
        "skipped": skipped,
        "checks": [c.to_dict() for c in checks],
    }
    doc["seconds"] = time.perf_counter() - start
    if grad_only:
        doc["complete"] = True
        return doc
    save(doc)
    try:
        doc["sync_free"] = sync_free(s, device)
    except Exception as exc:  # recorded; the timings still run
        doc["sync_free"] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}

    def save_rows(rows):
        doc["timings"] = [asdict(r) for r in rows]
        doc["seconds"] = time.perf_counter() - start
        save(doc)

    rows = timings(s, device, start + s.budget_s, log, save_rows)
    doc["timings"] = [asdict(r) for r in rows]
    doc["complete"] = True
    doc["seconds"] = time.perf_counter() - start
    return doc


def main(argv=None) -> int:
    _setup("--dry-run" in (sys.argv[1:] if argv is None else argv))
    from gpu.validation import writable_folder
    from receptive.cli_parser import OneLineErrorParser

    p = OneLineErrorParser(
        prog="python benchmarks/gpu_check.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--dry-run", action="store_true", help="CPU, Triton interpreter, tiny sizes (what the tests run)")
    p.add_argument("--out", required=True, help=f"the JSON result (the committed one: {COMMITTED_OUT})")
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds after which timings are skipped (default "
        f"{GPU_SIZES.budget_s:.0f}; --dry-run {DRY_SIZES.budget_s:.0f})",
    )
    p.add_argument(
        "--grad-only",
        action="store_true",
        help="only the gradient checks (and the fp32 forward at "
        "the smallest n), with the whole --budget for them; no timings",
    )
    p.add_argument("--json", action="store_true", help="print the result document instead of progress lines")
    args = p.parse_args(argv)
    if args.budget is not None and not args.budget > 0:
        p.error(f"--budget: expected a positive number of seconds, got {args.budget}")
    import torch

    if not args.dry_run and not torch.cuda.is_available():
        p.error("--dry-run: no CUDA GPU here; pass --dry-run to run the same code paths on the CPU")
    out = Path(args.out)
    try:
        writable_folder("--out", out.parent)
    except ValueError as exc:
        p.error(str(exc))
    log = (lambda line: None) if args.json else (lambda line: print(line, flush=True))

    def save(doc):
        partial = out.with_name(out.name + ".partial")
        partial.write_text(json.dumps(doc, indent=1) + "\n")
        partial.replace(out)

    doc = run(args.dry_run, args.budget, log, save, args.grad_only)
    save(doc)
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        c = doc["correctness"]
        print(
            f"correctness: {len(c['checks']) - len(c['failed'])}/{len(c['checks'])} checks pass, "
            f"{len(c['skipped'])} skipped (time guard); wrote {out} ({doc['seconds']:.0f} s)"
        )
    return 0 if doc["correctness"]["ok"] else 1


if __name__ == "__main__":
    _setup(False)  # the checkout importable; the interpreter is chosen in main
    from graphs.cli_common import run_command

    run_command(main)
