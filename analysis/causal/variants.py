"""``python -m analysis.causal.variants``: L* of the causal SA variants next to SA, SA+SWA and SWA.

For every (pattern, causal, n, w, seed) it measures L* with the engine: exact (every receptive field, forward from
all slabs) while ``n <= --exact-max``, else on ``--targets`` random queries, each exact (backward search from a
guess: then L* means "no sampled target uncovered"). Each row states the method, the pattern's configuration
(``config``: ``Pattern.describe()``, e.g. the dilated heads' ``head_w``) and the distinct keys per query of layer 1
at the row's own n (:func:`row_keys`: ``|union of the layer's key sets of query i|`` averaged over the n queries,
``nnz(A_1) / n``; counted in O(n) memory by :func:`receptive.bound.keys.mean_distinct_keys`, the dilated heads in
closed form, ``DilatedHeads.mean_keys``), so that every comparison says what each pattern pays. Rows are appended to
``OUT/variants.jsonl`` as they finish (``--resume`` skips done ones; ``--redo`` first drops every row of the
invocation's grid, all seeds, from the log, rewriting it whole, and measures those points again: how stale rows are
replaced after a pattern changes, never kept twice); ``OUT/variants.json`` holds the summary per point (L* per
seed, typical = the L* most seeds reach) and every invocation's parameters (``runs``). Recounting the keys of an
existing log without measuring L* is ``python -m analysis.causal.refresh_keys``.

Deterministic patterns (SWA and the dilated heads: no random draw, the seed is ignored) are measured with seed 0
only: one run is exact for every seed. Their points say so (``deterministic``); causal, they are also
offset-invariant (key ``j`` is a neighbour of query ``i`` iff ``i - j`` is in a fixed set and ``j >= 0``), a causal
path from ``j`` to ``i`` stays in ``[j, i]``, so reaching ``j`` from ``i`` depends on ``i - j`` only and the last
position ``n - 1`` (always among the sampled targets) is the hardest: their sampled L* is exact too.

    python -m analysis.causal.variants --out analysis/causal/results/variants --resume
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from graphs import backward_full_layer, forward_counts
from graphs.cli_common import NUMBER, check_shape, output_folder, run_command, write_atomic
from graphs.memory import check_memory, slab_bytes
from receptive import __version__
from receptive.bound.analysis import typical_layer
from receptive.bound.cli import parse_sizes
from receptive.bound.keys import mean_distinct_keys
from receptive.cli_parser import OneLineErrorParser, add_seeds_option, comma_names
from receptive.coverage.compute import target_positions
from receptive.patterns import PATTERNS, make_pattern
from receptive.patterns.causal_variants import DilatedHeads
from receptive.patterns.local import SlidingWindow

DEFAULT_PATTERNS = "sa,sa+swa,sa-ms-eq,sa-ms+swa-eq,kleinberg-eq,kleinberg+swa-eq,dilated-eq,dilated+swa-eq"


@dataclass
class Row:
    """One measurement: L* of one seed (``None``: not full within ``max_layers``)."""

    pattern: str
    causal: bool
    n: int
    w: int
    seed: int
    method: str
    full_layer: int | None
    keys_per_query: float
    seconds: float
    config: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def measure(
    name: str,
    n: int,
    w: int,
    causal: bool,
    seed: int,
    *,
    max_layers: int,
    exact_max: int,
    targets: int,
    guess: int | None = None,
) -> Row:
    """L* of one pattern instance (exact or sampled, see the module docstring) and its keys per query."""
    began = time.perf_counter()
    pat = make_pattern(name, n, w, causal, seed=seed)
    if n <= exact_max:
        counts = forward_counts(pat.layer_ops, n, max_layers=max_layers, causal=causal)
        full = counts.full_layer
        method = "exact"
    else:
        picked = target_positions(targets, n, seed)
        full, _ = backward_full_layer(
            pat.layer_ops,
            n,
            picked,
            guess=guess or max(2, math.ceil(math.log(n) / math.log(w))),
            max_layers=max_layers,
            causal=causal,
        )
        method = f"sampled {picked.size}"
    keys = row_keys(pat)
    return Row(name, causal, n, w, seed, method, full, keys, time.perf_counter() - began, pat.describe())


def row_keys(pattern) -> float:
    """Distinct keys per query of layer 1 at the pattern's own n, ``nnz(A_1) / n``: the dilated heads' closed form
    ``DilatedHeads.mean_keys`` (non-circular), else counted by :func:`receptive.bound.keys.mean_distinct_keys`
    (``O(n)`` scratch, every query's key sets united; equal to ``causal_variants.keys_per_query``)."""
    if isinstance(pattern, DilatedHeads) and not pattern.circular:
        return pattern.mean_keys()  # exact at any n
    return mean_distinct_keys(pattern, 1)


def deterministic(name: str, w: int, causal: bool) -> bool:
    """Whether the registered pattern ``name`` draws nothing at random (SWA, the dilated heads): then every seed
    gives the same pattern and one run is exact for all of them."""
    return isinstance(make_pattern(name, 64, min(w, 32), causal, seed=0), SlidingWindow | DilatedHeads)


def initial_guess(done: list[dict], name: str, causal: bool, n: int, w: int) -> int | None:
    """A starting layer for the sampled search: the largest L* already measured at this point, else at the largest
    smaller n with the same pattern, mode and w (``None``: none yet)."""
    same = [r for r in done if (r["pattern"], r["causal"], r["w"]) == (name, causal, w) and r["n"] <= n]
    reached = [r for r in same if r["full_layer"] is not None]
    if not reached:
        return None
    top = max(r["n"] for r in reached)
    return max(r["full_layer"] for r in reached if r["n"] == top)


def drop_points(rows: list[dict], names, modes, ns, ws) -> list[dict]:
    """``rows`` without those of the grid ``names x modes x ns x ws`` (every seed): what ``--redo`` keeps."""
    grid = {(name, causal, n, w) for name in names for causal in modes for n in ns for w in ws}
    return [r for r in rows if (r["pattern"], r["causal"], r["n"], r["w"]) not in grid]


def summarise(rows: list[dict]) -> list[dict]:
    """Per (pattern, causal, n, w): L* per seed, the typical L* (the smallest layer at least half the seeds reach:
    :func:`receptive.bound.analysis.typical_layer`), the method, keys per query and the first row's ``config`` (empty
    where a row does not record it)."""
    points: dict[tuple, list[dict]] = {}
    for r in rows:
        points.setdefault((r["pattern"], r["causal"], r["n"], r["w"]), []).append(r)
    out = []
    for (pattern, causal, n, w), rs in sorted(points.items()):
        rs = sorted(rs, key=lambda r: r["seed"])
        layers = [r["full_layer"] for r in rs]
        typical = typical_layer(layers)
        fixed = deterministic(pattern, w, causal)
        sampled = rs[0]["method"] != "exact"
        if fixed and not sampled:
            note = "deterministic: one exact run is exact for every seed"
        elif fixed and causal:
            note = "deterministic, causal and offset-invariant: the sampled L* (target n - 1 included) is exact"
        elif fixed:
            note = "deterministic (one pattern for every seed); sampled targets: a lower bound on L*"
        else:
            note = "exact per seed" if not sampled else "sampled targets: a lower bound on L* per seed"
        out.append(
            {
                "pattern": pattern,
                "causal": causal,
                "n": n,
                "w": w,
                "method": rs[0]["method"],
                "seeds": [r["seed"] for r in rs],
                "full_layers": layers,
                "typical": typical,
                "keys_per_query": float(np.mean([r["keys_per_query"] for r in rs])),
                "seconds": float(sum(r["seconds"] for r in rs)),
                "deterministic": fixed,
                "note": note,
                "config": rs[0].get("config", ""),
            }
        )
    return out


#: the fields of a row of ``variants.jsonl`` and their types (:func:`graphs.cli_common.check_shape`)
ROW_SHAPE = {
    "pattern": str,
    "causal": bool,
    "n": int,
    "w": int,
    "seed": int,
    "method": str,
    "full_layer": (int, None),
    "keys_per_query": NUMBER,
    "seconds": NUMBER,
}
#: what a resume reads of each run recorded in ``variants.json`` (a refresh of the keys records none of them)
RUN_SHAPE = {"max_layers?": int, "exact_max?": (int, str), "targets?": int}
#: what a resume and a refresh of the keys read of ``variants.json``
SUMMARY_SHAPE = {"parameters?": dict, "runs?": [RUN_SHAPE], "points?": list}
_WRITER = "python -m analysis.causal.variants"


def read_log(log: Path) -> list[dict]:
    """The rows of ``log`` (``variants.jsonl``), each checked against :data:`ROW_SHAPE`; a ``ValueError`` naming
    ``--out`` and the first line that is not a row of this script."""
    try:
        lines = log.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--out: cannot read {log} ({getattr(exc, 'strerror', None) or 'not text'})") from None
    rows = []
    for number, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except ValueError:
            raise ValueError(f"--out: {log} line {number} is not JSON; expected a row of {_WRITER}") from None
        try:
            check_shape(row, ROW_SHAPE, "row")
        except ValueError as exc:
            raise ValueError(f"--out: {log} line {number}: {exc}; expected a row of {_WRITER}") from None
        rows.append(row)
    return rows


def read_summary(path: Path) -> dict:
    """An earlier ``variants.json`` (``{}`` if none), checked against :data:`SUMMARY_SHAPE`, else a ``ValueError``
    naming ``--out``."""
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        raise ValueError(f"--out: {path} is not JSON; expected the summary of {_WRITER}") from None
    try:
        check_shape(doc, SUMMARY_SHAPE)
    except ValueError as exc:
        raise ValueError(f"--out: {path}: {exc}; expected the summary of {_WRITER}") from None
    return doc


def read_runs(path: Path) -> list:
    """The ``runs`` of an earlier ``variants.json`` (``[]`` if none; :func:`read_summary`)."""
    return read_summary(path).get("runs", [])


def build_parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser(
        prog="python -m analysis.causal.variants",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--patterns", default=DEFAULT_PATTERNS, help=f"registered names (default {DEFAULT_PATTERNS})")
    p.add_argument("--n", default="2^10,2^12,2^14", help="sequence lengths (default 2^10,2^12,2^14)")
    p.add_argument("--w", default="8,32,128", help="windows (default 8,32,128)")
    p.add_argument("--causal", choices=["no", "yes", "both"], default="both", help="default both")
    add_seeds_option(p, 5)
    p.add_argument("--max-layers", type=int, default=64, help="layer cap (default 64)")
    p.add_argument("--exact-max", default="2^14", help="exact while n <= this (default 2^14), else sampled")
    p.add_argument("--targets", type=int, default=1024, help="sampled targets (default 1024)")
    p.add_argument(
        "--out",
        type=output_folder("--out"),
        default=Path("variants-results"),
        help="directory for variants.jsonl and variants.json (default variants-results)",
    )
    p.add_argument("--resume", action="store_true", help="skip the rows already in OUT/variants.jsonl")
    p.add_argument(
        "--redo",
        action="store_true",
        help="with --resume: drop the rows of this grid (every seed) from OUT/variants.jsonl and measure them again",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return p


def check_same_measurement(stored: dict, max_layers: int, exact_max: int, targets: int, log) -> None:
    """Refuse, in one line naming the flag, a resume whose layer cap, exact limit or sampled targets differ from those
    the log's last run measured its rows with.

    Parameters
    ----------
    stored : dict
        The parameters of the last run that measured rows (in ``variants.json``'s ``runs``).
    max_layers, exact_max, targets : int
        The values given now.
    log : str or pathlib.Path
        The log, for the message.

    Raises
    ------
    ValueError
        On the first difference.

    Examples
    --------
    >>> check_same_measurement({"max_layers": 64, "exact_max": "2^14", "targets": 1024}, 32, 2**14, 1024, "v.jsonl")
    Traceback (most recent call last):
    ...
    ValueError: --max-layers: the rows in v.jsonl were measured with 64, given 32; resume with the stored value ...
    """
    given = {"max_layers": max_layers, "exact_max": exact_max, "targets": targets}
    for key, value in given.items():
        old = stored.get(key)
        if old is None:
            continue
        old = parse_sizes(str(old), "--exact-max")[0] if key == "exact_max" else old
        if old != value:
            flag = "--" + key.replace("_", "-")
            raise ValueError(
                f"{flag}: the rows in {log} were measured with {old}, given {value}; resume with the "
                "stored value or choose another --out"
            )


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    try:
        names = comma_names("--patterns", args.patterns, tuple(n for n, kind in PATTERNS.items() if kind.windowed))
        ns, ws = parse_sizes(args.n, "--n"), parse_sizes(args.w, "--w")
        exact_max = parse_sizes(args.exact_max, "--exact-max")[0]
        for option, value, low in (
            ("--max-layers", args.max_layers, 1),
            ("--targets", args.targets, 1),
        ):
            if value < low:
                raise ValueError(f"{option}: expected an integer >= {low}, got {value}")
        if ns[0] < 16 or ws[0] < 2:
            raise ValueError("--n/--w: expected n >= 16 and w >= 2")
        for n in ns:  # before any work: a 64-seed slab of the engine and the per-layer sizes of the targets
            sampled = n > exact_max
            if sampled and args.targets > n:
                raise ValueError(f"--targets: expected at most n = {n} (sampled above --exact-max), got {args.targets}")
            kept = args.targets if sampled else n
            what = f"n = {n}: one 64-seed slab and {args.max_layers} layers x {kept} positions of coverage"
            check_memory("--n", slab_bytes(n, 1) + args.max_layers * kept * 8, what)
        out = args.out
        log = out / "variants.jsonl"
        if log.exists() and not args.resume:
            raise ValueError(f"--out: {log} exists; pass --resume to continue it or choose another --out")
        if args.redo and not args.resume:
            raise ValueError("--redo: expected together with --resume (it replaces rows of an existing log)")
        done = read_log(log) if log.exists() else []
        runs = read_runs(out / "variants.json") if args.resume else []
        # the last run that measured (a refresh of the keys measures nothing): a resume with other values mixes rows
        measured = [run for run in runs if "max_layers" in run]
        if done and measured:
            check_same_measurement(measured[-1], args.max_layers, exact_max, args.targets, log)
        out.mkdir(parents=True, exist_ok=True)
    except (ValueError, OSError, MemoryError) as exc:
        parser.error(str(exc))
    modes = {"no": [False], "yes": [True], "both": [False, True]}[args.causal]
    if args.redo:
        done = drop_points(done, names, modes, ns, ws)
        write_atomic(log, "".join(json.dumps(r) + "\n" for r in done), option="--out")
    seen = {(r["pattern"], r["causal"], r["n"], r["w"], r["seed"]) for r in done}
    with log.open("a") as fh:
        for causal in modes:
            for name in names:
                seeds = [0] if deterministic(name, ws[0], causal) else list(range(args.seed, args.seed + args.seeds))
                for w in ws:
                    for n in ns:
                        if w >= n:
                            continue
                        for seed in seeds:
                            if (name, causal, n, w, seed) in seen:
                                continue
                            guess = initial_guess(done, name, causal, n, w)
                            row = measure(
                                name,
                                n,
                                w,
                                causal,
                                seed,
                                max_layers=args.max_layers,
                                exact_max=exact_max,
                                targets=args.targets,
                                guess=guess,
                            )
                            done.append(row.to_dict())
                            fh.write(json.dumps(row.to_dict()) + "\n")
                            fh.flush()
    parameters = vars(args) | {"out": str(args.out)}
    runs.append({"finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **parameters})
    doc = {"version": __version__, "parameters": parameters, "runs": runs, "points": summarise(done)}
    write_atomic(out / "variants.json", json.dumps(doc, indent=1) + "\n", option="--out")
    if args.json:
        json.dump(doc, sys.stdout)
        sys.stdout.write("\n")
    else:
        for p in doc["points"]:
            seeds = ",".join("-" if x is None else str(x) for x in p["full_layers"])
            print(
                f"{p['pattern']:<18} {'causal' if p['causal'] else 'bidir':<6} n={p['n']:<8} w={p['w']:<4} "
                f"keys/query {p['keys_per_query']:6.2f}  L* {seeds:<16} typical {p['typical']}  {p['method']}"
            )
    return 0


if __name__ == "__main__":
    run_command(main)
