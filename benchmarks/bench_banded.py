"""Time :func:`gpu.attention.banded.banded_attention` in cache-sized chunks against one shot and against one-head calls.

    nice -n 10 python benchmarks/bench_banded.py [--n 4096,16384,32768] [--w 64] [--heads 4] [--d 64]
        [--repeats 5] [--chunk-exponents 16,17,18,19,20,21] [--json PATH]

The tables are printed; ``--json PATH`` also writes the rows there (the committed ones are
``benchmarks/results/banded.json``: pass that path to refresh them).

A sliding window of ``w`` keys (non-causal, ``left, right = receptive.windows.window_offsets(w)``), float32,
batch 1, on one torch thread. Rows, all timed in this same run on the same tensors:

* ``chunked``: the default (``chunk_scores=None``: :data:`gpu.attention.banded.CHUNK_SCORES` score elements per chunk
  on the CPU).
* ``one shot``: ``chunk_scores`` larger than the whole call (the CUDA default): scores
  and probabilities of shape ``(batch, heads, nb, bq, span)`` for the whole sequence at once.
* ``1-head calls, chunked`` / ``1-head calls, one shot``: ``heads`` calls of one head each (what the dilated heads
  and other per-head variants run), the outputs concatenated.
* ``unfold one shot``: the same band with the key spans taken by ``unfold`` (whose backward is slow on the CPU)
  instead of joined blocks, one shot, no extra mask: the baseline of the chunked layout.
* with ``--chunk-exponents``: ``chunked 2^e`` for each exponent ``e`` (the measurement behind ``CHUNK_SCORES``).

Each row is timed forward (``torch.no_grad``) and forward + backward (``out.backward(g)`` with a fixed ``g``, the
gradients of q, k, v). Rows are timed in interleaved rounds (one call of every row per round after one warm-up call
of each; round ``r`` starts at row ``r``: :func:`gpu.bench.timing.round_robin`) so that a change in the load of the
shared machine reaches them alike; each row keeps its median (``seconds``) and its best round (``best_seconds``); ratios
compare timings of this run only.
The load average before and after is recorded.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from a checkout: import this checkout's packages
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from gpu.attention.banded import CHUNK_SCORES, _block_size, banded_attention  # noqa: E402
from gpu.attention.threads import torch_threads  # noqa: E402
from gpu.bench.timing import round_robin  # noqa: E402
from graphs.cli_common import run_command, write_atomic  # noqa: E402
from receptive.cli_parser import OneLineErrorParser, comma_ints, output_file  # noqa: E402
from receptive.validation import check_int  # noqa: E402
from receptive.windows import window_offsets  # noqa: E402

COMMITTED_JSON = Path("benchmarks") / "results" / "banded.json"
ONE_SHOT = 1 << 62


def unfold_banded(q, k, v, left, right):
    """Banded attention with the key spans taken by ``unfold`` (no extra mask): scores and probabilities of the
    whole sequence at once, ``probs * valid``; the baseline row ``unfold one shot``."""
    b, h, n, d = q.shape
    scale = 1.0 / math.sqrt(d)
    bq = _block_size(n, left, right)
    nb = -(-n // bq)
    padded = nb * bq
    span = bq + left + right
    kp = F.pad(k, (0, 0, left, padded - n + right))
    vp = F.pad(v, (0, 0, left, padded - n + right))
    k_spans = kp.unfold(2, span, bq).transpose(-1, -2)
    v_spans = vp.unfold(2, span, bq).transpose(-1, -2)
    qb = F.pad(q, (0, 0, 0, padded - n)).view(b, h, nb, bq, d)
    scores = torch.einsum("bhnqd,bhnkd->bhnqk", qb, k_spans) * scale
    qpos = torch.arange(padded).view(nb, bq)
    kpos = torch.arange(nb)[:, None] * bq - left + torch.arange(span)[None, :]
    rel = kpos[:, None, :] - qpos[:, :, None]
    valid = (rel >= -left) & (rel <= right) & ((kpos >= 0) & (kpos < n))[:, None, :]
    scores = scores.masked_fill(~valid, torch.finfo(scores.dtype).min)
    probs = torch.softmax(scores, dim=-1) * valid
    out = torch.einsum("bhnqk,bhnkd->bhnqd", probs, v_spans)
    return out.reshape(b, h, padded, d)[:, :, :n]


def _paths(left: int, right: int, heads: int, exponents: list[int]) -> dict:
    def whole(chunk_scores):
        return lambda q, k, v: banded_attention(q, k, v, left, right, chunk_scores=chunk_scores)

    def per_head(chunk_scores):
        def run(q, k, v):
            outs = [
                banded_attention(
                    q[:, i : i + 1], k[:, i : i + 1], v[:, i : i + 1], left, right, chunk_scores=chunk_scores
                )
                for i in range(heads)
            ]
            return torch.cat(outs, dim=1)

        return run

    paths = {
        "chunked": whole(None),
        "one shot": whole(ONE_SHOT),
        "1-head calls, chunked": per_head(None),
        "1-head calls, one shot": per_head(ONE_SHOT),
        "unfold one shot": lambda q, k, v: unfold_banded(q, k, v, left, right),
    }
    for e in exponents:
        paths[f"chunked 2^{e}"] = whole(1 << e)
    return paths


def _step(fn, q, k, v, g, backward: bool):
    if not backward:

        def forward():
            with torch.no_grad():
                fn(q, k, v)

        return forward

    def both():
        for t in (q, k, v):
            t.grad = None
        fn(q, k, v).backward(g)

    return both


def measure(n: int, w: int, heads: int, d: int, repeats: int, exponents: list[int], seed: int = 0) -> list[dict]:
    """Median seconds of every path, forward and forward + backward, at one ``n`` (rounds interleaved)."""
    left, right = window_offsets(w, False)
    gen = torch.Generator().manual_seed(seed)
    q, k, v, g = (torch.randn(1, heads, n, d, generator=gen) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_(True)
    paths = _paths(left, right, heads, exponents)
    reference = banded_attention(q, k, v, left, right, chunk_scores=ONE_SHOT).detach()
    rows = []
    for backward in (False, True):
        runs = round_robin({name: _step(fn, q, k, v, g, backward) for name, fn in paths.items()}, repeats)
        for name, times in runs.items():
            with torch.no_grad():
                diff = float((paths[name](q, k, v) - reference).abs().max())
            rows.append(
                {
                    "n": n,
                    "w": w,
                    "heads": heads,
                    "d": d,
                    "path": name,
                    "pass": "forward+backward" if backward else "forward",
                    "seconds": statistics.median(times),
                    "best_seconds": min(times),
                    "runs": times,
                    "max_abs_diff_vs_one_shot": diff,
                }
            )
    for row in rows:
        base = next(r for r in rows if r["pass"] == row["pass"] and r["path"] == "one shot")
        heads_row = next(r for r in rows if r["pass"] == row["pass"] and r["path"] == "1-head calls, chunked")
        row["ratio_to_one_shot"] = row["seconds"] / base["seconds"]
        row["ratio_to_1_head_calls_chunked"] = row["seconds"] / heads_row["seconds"]
        row["best_ratio_to_one_shot"] = row["best_seconds"] / base["best_seconds"]
    return rows


def _table(rows: list[dict]) -> str:
    head = f"{'n':>6} {'pass':<17} {'path':<24} {'median ms':>10} {'/one shot':>10} {'/1-head chunked':>16}"
    lines = [head + f" {'best ms':>9} {'/one shot':>10}"]
    for r in rows:
        lines.append(
            f"{r['n']:>6} {r['pass']:<17} {r['path']:<24} {1e3 * r['seconds']:>10.1f} {r['ratio_to_one_shot']:>10.2f}"
            f" {r['ratio_to_1_head_calls_chunked']:>16.2f} {1e3 * r['best_seconds']:>9.1f}"
            f" {r['best_ratio_to_one_shot']:>10.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = OneLineErrorParser(
        prog="python benchmarks/bench_banded.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        options={k: f"--{k}" for k in ("w", "heads", "d", "repeats", "threads")},
    )
    p.add_argument("--n", default="4096,16384,32768", help="comma-separated sequence lengths")
    p.add_argument("--w", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--chunk-exponents", default="", help="comma-separated exponents e: also time chunk_scores = 2^e")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument(
        "--json",
        type=output_file("--json"),
        help=f"also write the rows here (default: print only; committed: {COMMITTED_JSON})",
    )
    args = p.parse_args(argv)
    try:
        ns = comma_ints("--n", args.n)
        exponents = comma_ints("--chunk-exponents", args.chunk_exponents) if args.chunk_exponents else []
        if max(exponents, default=1) > 62:
            raise ValueError(f"--chunk-exponents: expected exponents in 1..62, got {args.chunk_exponents!r}")
        w, heads, d = check_int("w", args.w, 1), check_int("heads", args.heads, 1), check_int("d", args.d, 1)
        repeats, threads = check_int("repeats", args.repeats, 1), check_int("threads", args.threads, 1)
    except ValueError as err:
        p.error(str(err))
    load_before = os.getloadavg()
    rows = []
    with torch_threads(threads):
        for n in ns:
            rows += measure(n, min(w, 2 * n - 1), heads, d, repeats, exponents)
            print(_table([r for r in rows if r["n"] == n]), flush=True)
    doc = {
        "command": "python benchmarks/bench_banded.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "device": f"CPU ({platform.machine()})",
        "torch": torch.__version__,
        "torch_threads": threads,
        "chunk_scores": CHUNK_SCORES,
        "parameters": {
            "n": ns,
            "w": w,
            "heads": heads,
            "d": d,
            "batch": 1,
            "dtype": "float32",
            "repeats": repeats,
            "chunk_exponents": exponents,
        },
        "load_average_before": list(load_before),
        "load_average_after": list(os.getloadavg()),
        "rows": rows,
    }
    print(f"load average before {load_before[0]:.1f}, after {doc['load_average_after'][0]:.1f}")
    if args.json is not None:
        write_atomic(args.json, json.dumps(doc, indent=1) + "\n", option="--json")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    run_command(main)
