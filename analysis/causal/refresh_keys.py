"""``python -m analysis.causal.refresh_keys --out OUT``: recount ``keys_per_query`` of every row of
``OUT/variants.jsonl`` (written by ``python -m analysis.causal.variants``) at the row's own n from its pattern, without
measuring L*, and recompute ``OUT/variants.json``.

Each row's pattern is rebuilt (same name, n, w, causal, seed); a row whose recorded ``config`` differs from the
rebuilt pattern's is refused: its L* belongs to another pattern. Changed rows are rewritten in place (every other
field and the row order kept), ``OUT/variants.json``'s points are recomputed from the log as a measuring run does,
and the refresh (command, rows and points changed) is appended to its ``runs``. A second refresh changes nothing.

    python -m analysis.causal.refresh_keys --out analysis/causal/results/variants
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from graphs.cli_common import run_command, write_atomic
from receptive import __version__
from receptive.cli_parser import OneLineErrorParser
from receptive.patterns import make_pattern

from .variants import read_log, read_summary, row_keys, summarise


def refresh_keys(rows: list[dict], progress=None) -> tuple[list[dict], list[dict]]:
    """``rows`` with ``keys_per_query`` recounted by :func:`row_keys` on each row's pattern (``make_pattern(pattern,
    n, w, causal, seed=seed)``) and every other field as it was, plus one record per changed row (index, point,
    old and new keys). A row whose non-empty ``config`` differs from the rebuilt pattern's ``describe()`` raises
    ``ValueError``: its L* was measured on another pattern (remeasure it with ``python -m analysis.causal.variants
    --resume --redo``)."""
    fresh, changed = [], []
    for index, r in enumerate(rows):
        missing = {"pattern", "causal", "n", "w", "seed", "keys_per_query"} - set(r)
        if missing:
            raise ValueError(f"rows: row {index} lacks {', '.join(sorted(missing))}")
        pat = make_pattern(r["pattern"], r["n"], r["w"], r["causal"], seed=r["seed"])
        if r.get("config") and pat.describe() != r["config"]:
            raise ValueError(
                f"rows: row {index} ({r['pattern']} n={r['n']} w={r['w']} causal={r['causal']} seed={r['seed']}) "
                f"was measured on {r['config']!r}, the pattern now builds {pat.describe()!r}; remeasure it"
            )
        keys = row_keys(pat)
        del pat  # freed here: patterns hold no reference cycles
        if keys != r["keys_per_query"]:
            point = {k: r[k] for k in ("pattern", "causal", "n", "w", "seed")}
            changed.append({"row": index, **point, "old": r["keys_per_query"], "new": keys})
        fresh.append(dict(r, keys_per_query=keys))
        if progress is not None:
            progress(index, r, keys)
    return fresh, changed


def build_parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser(
        prog="python -m analysis.causal.refresh_keys",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", required=True, help="the directory holding variants.jsonl (and variants.json)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def main(argv: list[str] | None = None) -> int:
    """Refresh ``OUT/variants.jsonl`` (:func:`refresh_keys`); rewrites the log and ``variants.json`` (points from
    :func:`analysis.causal.variants.summarise`, the previous ``parameters`` and ``runs`` plus this refresh) only when
    a row or a point changed, so that a second refresh leaves both files as they are."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    out = Path(args.out)
    log = out / "variants.jsonl"
    try:
        if not log.is_file():
            raise ValueError(f"--out: expected an existing {log} to refresh")
        rows = read_log(log)
        if not rows:
            raise ValueError(f"--out: {log} holds no rows of analysis.causal.variants to refresh")
        previous = read_summary(out / "variants.json")
    except (ValueError, OSError) as exc:
        parser.error(str(exc))

    def progress(index, r, keys):
        if r["n"] > 2**14 or index % 100 == 0:
            print(
                f"[{index + 1}/{len(rows)}] {r['pattern']} causal={r['causal']} n={r['n']} w={r['w']} seed={r['seed']}"
                f": {r['keys_per_query']:.4f} -> {keys:.4f} (peak {(_peak_rss() or 0) / 2**30:.2f} GiB)",
                file=sys.stderr,
                flush=True,
            )

    began = time.perf_counter()
    try:
        fresh, changed = refresh_keys(rows, progress=progress)
    except ValueError as exc:
        parser.error(str(exc).replace("rows:", "--out:", 1))
    summary = out / "variants.json"
    points = summarise(fresh)
    report = {"rows": len(rows), "rows_changed": len(changed), "changes": changed}
    if changed or points != previous.get("points"):
        old_points = {_point_key(p): p["keys_per_query"] for p in summarise(rows)}  # the log before the refresh
        moved = [p for p in points if old_points.get(_point_key(p)) != p["keys_per_query"]]
        record = {
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "refresh_keys": True,
            "out": args.out,
            "command": " ".join(["python -m analysis.causal.refresh_keys", *argv]),
            "note": "keys_per_query of every row recounted at the row's own n from its pattern (same name, n, w, "
            "causal, seed); L* and every other field unchanged",
            "rows": len(rows),
            "rows_changed": len(changed),
            "points_changed": len(moved),
            "largest_change": max((abs(c["new"] - c["old"]) for c in changed), default=0.0),
            "seconds": time.perf_counter() - began,
            "peak_rss_bytes": _peak_rss(),
        }
        if changed:
            write_atomic(log, "".join(json.dumps(r) + "\n" for r in fresh), option="--out")
        doc = {
            "version": __version__,
            "parameters": previous.get("parameters", {}),
            "runs": [*previous.get("runs", []), record],
            "points": points,
        }
        write_atomic(summary, json.dumps(doc, indent=1) + "\n", option="--out")
        report["points_changed"] = len(moved)
    else:
        report["points_changed"] = 0
    if args.json:
        json.dump(report, sys.stdout)
        sys.stdout.write("\n")
    else:
        for c in changed:
            print(
                f"{c['pattern']:<18} {'causal' if c['causal'] else 'bidir':<6} n={c['n']:<8} w={c['w']:<4} "
                f"seed {c['seed']}  keys/query {c['old']:8.4f} -> {c['new']:8.4f}"
            )
        print(f"{len(changed)} of {len(rows)} rows changed, {report['points_changed']} points")
    return 0


def _peak_rss() -> int | None:
    """Peak resident memory of this process in bytes (``ru_maxrss``: kilobytes on Linux), ``None`` where unknown."""
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * (1 if sys.platform == "darwin" else 1024)


def _point_key(p: dict) -> tuple:
    return p["pattern"], p["causal"], p["n"], p["w"]


if __name__ == "__main__":
    run_command(main)
