"""Time one exact Stochastic Attention layer of the coverage engine against a memory floor and two other kernels.

    python benchmarks/bench_sa_layer.py [--n 65536] [--w 64] [--repeats 3] [--json PATH]

One layer of exact coverage maps a slab of ``n`` rows of ``ceil(n / 64)`` words (all ``n`` sources; 512 MiB at
n = 65536) through a sliding-window OR in permuted order. Rows, all timed in this same run on the same arrays:

* ``floor``: copying the bytes one layer must read and write (``n * W`` words in, ``n * W`` out), by a parallel
  numba loop and by ``np.copyto``; the faster is the floor.
* ``permuted copy``: ``out[perm[p]] = bits[perm[p]]``, the random-row reads and writes of a permuted layer
  without any OR (cached stores: each written line is first read, which ``np.copyto``'s streaming stores avoid).
* ``engine``: ``graphs.kernels.window_or`` with the tiling the engine uses (``WindowOp.apply``).
* ``reference van Herk``: a plain numba van Herk / Gil-Werman kernel over whole rows (block prefix and suffix
  arrays of the full slab, then one combining pass), the 60-line kernel of issue 14.
* ``previous engine kernel``: the chunk-and-halo kernel this repository used before (kept here for the ratio).

Times are the best of ``--repeats`` after a warm-up call; ratios compare timings of this run only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit, prange

from graphs import kernels
from receptive import make_pattern

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "sa_layer.json"


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
def previous_window_or(bits, out, perm, left, right, chunk_len, tile):
    """The engine's kernel before this benchmark (truncated, no holes): chunk + halo buffer, prefix and suffix."""
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


def best_of(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> int:
    from receptive.cli_parser import OneLineErrorParser

    p = OneLineErrorParser(prog="python benchmarks/bench_sa_layer.py", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--n", type=int, default=65536, help="sequence length (default 65536)")
    p.add_argument("--w", type=int, default=64, help="window (default 64)")
    p.add_argument("--repeats", type=int, default=3, help="timed repeats per row, best kept (default 3)")
    p.add_argument("--json", default=str(DEFAULT_JSON), help=f"result file (default {DEFAULT_JSON})")
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

    rows = {}
    rows["floor: parallel numba copy"] = best_of(lambda: parallel_copy(bits, out), args.repeats)
    rows["floor: np.copyto"] = best_of(lambda: np.copyto(out, bits), args.repeats)
    rows["permuted copy (numba)"] = best_of(lambda: permuted_copy(bits, out, perm), args.repeats)
    rows["engine window_or"] = best_of(lambda: op.apply(bits, out, False), args.repeats)
    engine = out.copy()
    scratch = [np.zeros((reference_rows(n, op.size), n_words), dtype=np.uint64) for _ in range(2)]
    rows["reference van Herk (numba)"] = best_of(
        lambda: reference_van_herk(bits, out, perm, op.left, op.right, *scratch), args.repeats
    )
    scratch.clear()
    assert np.array_equal(out, engine), "the reference kernel disagrees with the engine"
    old_chunk = min(n, max(1024, 4 * op.size))
    old_tile = max(1, min(n_words, 64 * 1024 // (2 * (old_chunk + op.size - 1))))
    rows["previous engine kernel"] = best_of(
        lambda: previous_window_or(bits, out, perm, op.left, op.right, old_chunk, old_tile), args.repeats
    )
    assert np.array_equal(out, engine), "the previous kernel disagrees with the engine"

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
        "seconds": rows,
        "floor_seconds": floor,
        "ratio_to_floor": {k: v / floor for k, v in rows.items()},
        "engine_over_previous": rows["engine window_or"] / rows["previous engine kernel"],
        "engine_over_reference": rows["engine window_or"] / rows["reference van Herk (numba)"],
    }
    print(f"exact SA layer, n = {n}, w = {args.w}: {bits.nbytes / 2**20:.0f} MiB in, as much out (best of "
          f"{args.repeats})")  # fmt: skip
    print(f"{'row':<30} {'seconds':>8} {'x floor':>8}")
    for name, sec in rows.items():
        print(f"{name:<30} {sec:>8.3f} {sec / floor:>8.2f}")
    print(f"engine / previous kernel: {doc['engine_over_previous']:.2f}; engine / reference: "
          f"{doc['engine_over_reference']:.2f}")  # fmt: skip
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
