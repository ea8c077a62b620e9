"""The ``--refresh-keys`` path of ``python -m receptive.bound.variants`` (see that module's docstring): recount
``keys_per_query`` of every row of ``OUT/variants.jsonl`` at the row's own n from its pattern, without measuring L*,
and recompute ``OUT/variants.json``. Moved here unchanged from :mod:`receptive.bound.variants`, which re-exports
:func:`refresh_keys`, :func:`run_refresh`, ``GRID_OPTIONS`` and ``_peak_rss``."""

from __future__ import annotations

import gc
import json
import sys
import time
from pathlib import Path

from graphs.cli_common import write_atomic

from .. import __version__
from ..patterns import make_pattern
from .variants import row_keys, summarise


def refresh_keys(rows: list[dict], progress=None) -> tuple[list[dict], list[dict]]:
    """``rows`` with ``keys_per_query`` recounted by :func:`row_keys` on each row's pattern (``make_pattern(pattern,
    n, w, causal, seed=seed)``) and every other field as it was, plus one record per changed row (index, point,
    old and new keys). A row whose non-empty ``config`` differs from the rebuilt pattern's ``describe()`` raises
    ``ValueError``: its L* was measured on another pattern (remeasure it with ``--resume --redo``)."""
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
        del pat
        gc.collect()  # patterns hold reference cycles: without this, each 2^20 Kleinberg pattern stays (~1 GB)
        if keys != r["keys_per_query"]:
            point = {k: r[k] for k in ("pattern", "causal", "n", "w", "seed")}
            changed.append({"row": index, **point, "old": r["keys_per_query"], "new": keys})
        fresh.append(dict(r, keys_per_query=keys))
        if progress is not None:
            progress(index, r, keys)
    return fresh, changed


GRID_OPTIONS = ("patterns", "n", "w", "causal", "seeds", "max_layers", "exact_max", "targets", "resume", "redo")


def run_refresh(args, argv: list[str], parser) -> int:
    """``--refresh-keys``: :func:`refresh_keys` on ``OUT/variants.jsonl``; rewrites the log and ``variants.json``
    (points from :func:`summarise`, the previous ``parameters`` and ``runs`` plus this refresh) only when a row or
    a point changed, so that a second refresh leaves both files as they are."""
    out = Path(args.out)
    log = out / "variants.jsonl"
    try:
        defaults = {name: parser.get_default(name) for name in GRID_OPTIONS}
        given = [f"--{name.replace('_', '-')}" for name, value in defaults.items() if getattr(args, name) != value]
        if given:
            raise ValueError(f"--refresh-keys: refreshes every row of OUT/variants.jsonl; drop {', '.join(given)}")
        if not log.is_file():
            raise ValueError(f"--out: expected an existing {log} to refresh")
        rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
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
        parser.error(str(exc).replace("rows:", "--refresh-keys:", 1))
    summary = out / "variants.json"
    previous = json.loads(summary.read_text()) if summary.exists() else {}
    points = summarise(fresh)
    report = {"rows": len(rows), "rows_changed": len(changed), "changes": changed}
    if changed or points != previous.get("points"):
        old_points = {_point_key(p): p["keys_per_query"] for p in summarise(rows)}  # the log before the refresh
        moved = [p for p in points if old_points.get(_point_key(p)) != p["keys_per_query"]]
        record = {
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "refresh_keys": True,
            "out": args.out,
            "command": " ".join(["python -m receptive.bound.variants", *argv]),
            "note": "keys_per_query of every row recounted at the row's own n from its pattern (same name, n, w, "
            "causal, seed; rows with n > 2^14 had been counted at n = 2^14); L* and every other field unchanged",
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
            "parameters": previous.get("parameters", vars(args)),
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
