"""Time one exact Stochastic Attention layer of the coverage engine against a memory floor and other kernels.

    python benchmarks/bench_sa_layer.py [--n 65536] [--w 64] [--repeats 5] [--json PATH]

The table is printed; ``--json PATH`` also writes the rows there (the committed ones are
``benchmarks/results/sa_layer.json``: pass that path to refresh them).

One layer of exact coverage maps a slab of ``n`` rows of ``W = ceil(n / 64)`` words (all ``n`` sources; 512 MiB at
n = 65536) through a sliding-window OR in permuted order: ``out[perm[p]] = OR bits[perm[x]], x = p-left .. p+right``.
Whatever the algorithm, a layer must read the ``n * W`` input words and write the ``n * W`` output words.

The floor is ``np.copyto(out, bits)``: it moves exactly those bytes (``n * W`` words read, ``n * W`` written) in
the cheapest way this machine offers (sequential, and glibc's ``memmove`` writes a slab this large with streaming
stores, so no written line is first read), with no arithmetic. No layer kernel can move its bytes faster, so
``engine / floor`` bounds how far the engine is from memory speed; the goal is ``<= 2``. A parallel numba
copy is timed as well, and the floor is the faster of the two. Rows, all timed in this same run on the same arrays:

* ``floor``: ``np.copyto`` and a parallel numba copy (cached stores: each written line is read first).
* ``permuted copy``: ``out[perm[p]] = bits[perm[p]]``, the random-row reads and writes of a permuted layer without
  any OR, with cached stores (numba), and with the engine's own row pass (prefetch of the next gathered row,
  streaming stores): the cost of the random row order alone.
* ``engine``: ``graphs.kernels.window_or`` as the engine calls it (``WindowOp.apply``): whole 8 KiB rows at
  n = 65536, w = 64 (a 512 KiB buffer, in L2); and the same kernel with column tiles of 64 and 256 words, whose
  ``m x tile`` buffer stays in L1 or L2 but whose every gathered row is read in several separate short pieces.
* ``reference van Herk``: a plain numba van Herk / Gil-Werman kernel over whole rows (block prefix and suffix
  arrays of the full slab, then one combining pass), the textbook algorithm.
* ``chunk-and-halo kernel``: chunks of rows with a halo buffer, prefix and suffix (no holes), the baseline of the
  ratio ``engine_over_chunk_halo``.

Every row is first called once and its output checked (the engine rows against ``WindowOp.apply``, the copies against
the input); then the rows are timed by :func:`gpu.bench.timing.round_robin`, the timing loop of ``gpu.bench.cli`` and
``benchmarks/bench_banded.py``: one untimed warm-up call of each, then ``--repeats`` rounds that call every row once,
round ``r`` starting at row ``r``, so a change in the load of a shared machine reaches all rows alike and each row moves
through the positions of a round (every one once per ``len(rows)`` rounds). Only the position rotates: each row runs
right after the same other row in every round but those where it runs first, so carry-over from the previous row (its
caches, buffers, garbage) is not balanced. Each row keeps its best round (``seconds``, the minimum of ``runs``, the
statistic of the committed ``sa_layer.json``); ``runs`` holds every round. Ratios compare timings of this run only. The
load average before and after is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

import numpy as np
from numba import njit, prange

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from a checkout: import this checkout's packages
    sys.path.insert(0, str(ROOT))

from gpu.bench.timing import round_robin  # noqa: E402
from graphs import kernels, streaming_window  # noqa: E402
from graphs.cli_common import run_command  # noqa: E402
from receptive import make_pattern  # noqa: E402

COMMITTED_JSON = Path("benchmarks") / "results" / "sa_layer.json"
#: column tiles narrow enough that the kernel's m x tile buffer stays in L1 (64 words, 32 KiB at w = 64) or L2
NARROW_TILES = (64, 256)
FLOOR = (
    "np.copyto(out, bits): reads the n * W input words and writes the n * W output words a layer must move, "
    "sequentially, with streaming stores (glibc's memmove at this size) and no arithmetic: no layer kernel can move "
    "its bytes faster; floor_seconds is the faster of np.copyto and a parallel numba copy"
)


@njit(parallel=True, cache=True)
def parallel_copy(src, dst):
    n, w = src.shape
    for i in prange(n):
        for b in range(w):
            dst[i, b] = src[i, b]


@njit(parallel=True, cache=True)
def permuted_copy(bits, out, perm):
    """out[perm[p]] = bits[perm[p]]: the random-row reads and writes a permuted layer cannot avoid."""
    n = perm.shape[0]
    for p in prange(n):
        src = bits[perm[p]]
        dst = out[perm[p]]
        for b in range(src.shape[0]):
            dst[b] = src[b]


@njit(parallel=True, cache=True)
def permuted_stream_copy(bits, out, perm, chunk_len):
    """out[perm[p]] = bits[perm[p]] through the engine's row pass: the next gathered row prefetched, streaming
    stores (``graphs.streaming_window._gather_row`` with an all-zero OR partner)."""
    n, n_words = perm.shape[0], bits.shape[1]
    for c in prange((n + chunk_len - 1) // chunk_len):
        row = np.empty(n_words, dtype=np.uint64)
        acc = np.empty(n_words, dtype=np.uint64)
        zero = np.zeros(n_words, dtype=np.uint64)
        for p in range(c * chunk_len, min(n, (c + 1) * chunk_len)):
            ahead = bits[perm[min(p + 1, n - 1)]]
            streaming_window._gather_row(
                bits[perm[p]], ahead, row, acc, True, zero, out[perm[p]], streaming_window._STREAM
            )
        streaming_window._store_fence()


@njit(cache=True)
def reference_rows(n, m):
    """Rows of the reference kernel's scratch: the virtual rows -left .. n-1+right, in whole blocks of m."""
    return (n + m - 1 + m - 1) // m * m


@njit(parallel=True, cache=True)
def reference_van_herk(bits, out, perm, left, right, g, h):
    """out[perm[p]] = OR bits[perm[x]], x in p-left..p+right (truncated): gathered block prefix and suffix arrays
    of the whole slab (``g``, ``h``: scratch of ``reference_rows`` rows, allocated once outside the timing), then
    one combining pass, whole rows as 1-d views."""
    n, w = bits.shape
    m = left + right + 1
    n_blocks = reference_rows(n, m) // m
    for blk in prange(n_blocks):
        s = blk * m
        for k in range(s, s + m):
            x = k - left
            gk, hk = g[k], h[k]
            if 0 <= x < n:
                src = bits[perm[x]]
                for b in range(w):
                    gk[b] = src[b]
                    hk[b] = src[b]
            else:
                gk[:] = 0
                hk[:] = 0
        for k in range(s + 1, s + m):
            gk, before = g[k], g[k - 1]
            for b in range(w):
                gk[b] |= before[b]
        for k in range(s + m - 2, s - 1, -1):
            hk, after = h[k], h[k + 1]
            for b in range(w):
                hk[b] |= after[b]
    for p in prange(n):
        dst, hp, gp = out[perm[p]], h[p], g[p + m - 1]
        for b in range(w):
            dst[b] = hp[b] | gp[b]


@njit(parallel=True, cache=True)
def chunk_halo_window_or(bits, out, perm, left, right, chunk_len, tile):
    """Sliding-window OR by chunks of rows with a halo buffer, prefix and suffix (no holes): the baseline row."""
    n_words = bits.shape[1]
    m = left + right + 1
    n = perm.shape[0]
    n_chunks = (n + chunk_len - 1) // chunk_len
    n_tiles = (n_words + tile - 1) // tile
    for task in prange(n_chunks * n_tiles):
        c = task // n_tiles
        w0 = (task % n_tiles) * tile
        t_words = min(n_words, w0 + tile) - w0
        q0 = c * chunk_len
        q1 = min(n, q0 + chunk_len)
        buf_len = (q1 - q0) + m - 1
        prefix = np.empty((buf_len, t_words), dtype=np.uint64)
        suffix = np.empty((buf_len, t_words), dtype=np.uint64)
        for k in range(buf_len):
            x = q0 - left + k
            if x < 0 or x >= n:
                for b in range(t_words):
                    prefix[k, b] = 0
            else:
                for b in range(t_words):
                    prefix[k, b] = bits[perm[x], w0 + b]
        for start in range(0, buf_len, m):
            end = min(start + m, buf_len)
            for b in range(t_words):
                suffix[end - 1, b] = prefix[end - 1, b]
            for k in range(end - 2, start - 1, -1):
                for b in range(t_words):
                    suffix[k, b] = suffix[k + 1, b] | prefix[k, b]
        for k in range(buf_len):
            if k % m != 0:
                for b in range(t_words):
                    prefix[k, b] |= prefix[k - 1, b]
        for t in range(q1 - q0):
            dst = perm[q0 + t]
            for b in range(t_words):
                out[dst, w0 + b] = suffix[t, b] | prefix[t + m - 1, b]


def checked_rounds(rows: dict, repeats: int, checks: dict) -> dict:
    """``{name: [seconds of round 0, 1, ...]}`` for every callable in ``rows``: first one call of each row followed
    by ``checks[name]()`` where given (it asserts that row's output, before the next row overwrites it), then
    :func:`gpu.bench.timing.round_robin` (one untimed warm-up call of each row, then ``repeats`` rotating rounds)."""
    for name, fn in rows.items():
        fn()
        if name in checks:
            checks[name]()
    return round_robin(rows, repeats)


def main(argv=None) -> int:
    from graphs.cli_common import write_atomic
    from receptive.cli_parser import OneLineErrorParser, output_file

    p = OneLineErrorParser(
        prog="python benchmarks/bench_sa_layer.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--n", type=int, default=65536, help="sequence length (default 65536)")
    p.add_argument("--w", type=int, default=64, help="window (default 64)")
    p.add_argument("--repeats", type=int, default=5, help="timed rounds, best kept per row (default 5)")
    p.add_argument(
        "--json",
        type=output_file("--json"),
        help=f"also write the rows here (default: print only; committed: {COMMITTED_JSON})",
    )
    args = p.parse_args(argv)
    if args.n < 2 or not 1 <= args.w <= args.n or args.repeats < 1:
        p.error("--n, --w, --repeats: expected n >= 2, 1 <= w <= n, repeats >= 1")

    op = make_pattern("sa", args.n, args.w, seed=0).layer_ops(1)[0]
    n, n_words = args.n, -(-args.n // 64)
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**64, size=(n, n_words), dtype=np.uint64)
    out = np.empty_like(bits)
    perm = op.perm
    chunk, tile = kernels.window_or_tiling(n, op.size, n_words)

    expect = out.copy()
    op.apply(bits, expect, False)
    scratch = [np.zeros((reference_rows(n, op.size), n_words), dtype=np.uint64) for _ in range(2)]
    halo_chunk = min(n, max(1024, 4 * op.size))
    halo_tile = max(1, min(n_words, 64 * 1024 // (2 * (halo_chunk + op.size - 1))))
    engine, stream_copy = "engine window_or", "permuted copy, engine's row pass"
    lr = (op.left, op.right)
    calls = {
        "floor: parallel numba copy": lambda: parallel_copy(bits, out),
        "floor: np.copyto": lambda: np.copyto(out, bits),
        "permuted copy (numba)": lambda: permuted_copy(bits, out, perm),
        stream_copy: lambda: permuted_stream_copy(bits, out, perm, chunk),
        engine: lambda: op.apply(bits, out, False),
        **{
            f"engine kernel, {t}-word tiles": (
                lambda t=t: kernels.window_or(bits, out, perm, *lr, False, False, chunk, t)
            )
            for t in NARROW_TILES
            if t < tile
        },
        "reference van Herk (numba)": lambda: reference_van_herk(bits, out, perm, op.left, op.right, *scratch),
        "chunk-and-halo kernel": lambda: chunk_halo_window_or(
            bits, out, perm, op.left, op.right, halo_chunk, halo_tile
        ),
    }

    def same_as_engine(name):
        def check():
            assert np.array_equal(out, expect), f"{name} disagrees with the engine"

        return check

    def copied():
        assert np.array_equal(out, bits), "the permuted copy is not a copy"

    checks = {name: same_as_engine(name) for name in calls if "engine" in name or "reference" in name}
    checks.update({name: copied for name in calls if "copy" in name})
    load_before = os.getloadavg()
    runs = checked_rounds(calls, args.repeats, checks)
    load_after = os.getloadavg()
    scratch.clear()
    rows = {name: min(times) for name, times in runs.items()}  # best round: the committed file's statistic

    floor = min(rows["floor: parallel numba copy"], rows["floor: np.copyto"])
    doc = {
        "command": "python benchmarks/bench_sa_layer.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "n": n,
        "w": args.w,
        "words_per_row": n_words,
        "slab_bytes": int(bits.nbytes),
        "engine_tiling": {"chunk_len": int(chunk), "tile": int(tile)},
        "threads": int(os.environ.get("NUMBA_NUM_THREADS", os.cpu_count() or 1)),
        "machine": f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} cores".strip(),
        "load_average_before": list(load_before),
        "load_average_after": list(load_after),
        "statistic": "seconds: the best (minimum) of each row's rounds in runs",
        "seconds": rows,
        "runs": runs,
        "floor": FLOOR,
        "floor_seconds": floor,
        "ratio_to_floor": {k: v / floor for k, v in rows.items()},
        "engine_over_floor": rows[engine] / floor,
        "engine_over_permuted_stream_copy": rows[engine] / rows[stream_copy],
        "engine_over_chunk_halo": rows[engine] / rows["chunk-and-halo kernel"],
        "engine_over_reference": rows[engine] / rows["reference van Herk (numba)"],
        "goal": "engine <= 2 x floor and engine <= 0.6 x chunk-and-halo kernel, in the same run",
        "goal_met": bool(rows[engine] <= 2 * floor and rows[engine] <= 0.6 * rows["chunk-and-halo kernel"]),
    }
    print(
        f"exact SA layer, n = {n}, w = {args.w}: {bits.nbytes / 2**20:.0f} MiB in, as much out (best of "
        f"{args.repeats} rounds)"
    )
    print(f"{'row':<34} {'seconds':>8} {'x floor':>8}")
    for name, sec in rows.items():
        print(f"{name:<34} {sec:>8.3f} {sec / floor:>8.2f}")
    print(
        f"engine / chunk-and-halo kernel: {doc['engine_over_chunk_halo']:.2f}; engine / reference: "
        f"{doc['engine_over_reference']:.2f}"
    )
    if args.json is not None:
        write_atomic(args.json, json.dumps(doc, indent=1) + "\n", option="--json")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    run_command(main)
