"""``python -m analysis.causal.pooled``: every committed run of ``python -m receptive.bound`` pooled per grid point
over all its seeds, and the sharp model (``receptive.theory``, evaluated live) set against the pooled typical L*.

Pooling: every ``tasks.jsonl`` under the given directories is read; a seed's L* is the latest of its slabs' (exact
runs; the slabs must tile ``[0, n)``) or its sample's (sampled runs). The same seed of the same point (pattern,
causal, circular, n, w, method, targets) found twice (a repeated row, or the seed in two runs) must agree, else the
pooling is refused. Exact and sampled measurements are different points (sampled L* only asks that ``K`` random
targets be fully covered).

Per point, with ``k`` seeds and the model's ``F(L) = P(full after L)`` (:func:`receptive.theory.full_probability`;
``K`` targets for sampled points):

- typical L* = the smallest layer at least half the seeds reach (``receptive.bound.analysis.typical_layer``);
- predicted L* = the first layer with ``F(L) >= 1/2``; *exact* if equal, the model *optimistic* if it predicts
  fewer layers than measured, *pessimistic* if more;
- per layer where the outcome is uncertain (some seeds full, or ``0.01 < F(L) < 0.99``): the two-sided binomial
  test of ``#(seeds full after L) ~ Bin(k, F(L))`` (``receptive.bound.analysis.binomial_checks``);
- the calibrated exact probability: if the model were the truth, the typical L* of ``k`` draws is the model's median
  with probability ``q = G(pred) - G(pred - 1)``, ``G(L) = P(Bin(k, F(L)) >= ceil(k/2))``. Summed over points, the
  exact count of a calibrated model is Poisson-binomial with mean ``sum q`` and variance ``sum q (1 - q)``
  (``docs/theory.md`` Sec. 5);
- the log-likelihood of the seeds' L* under the model's law and its mean and variance if the model were the truth
  (``receptive.bound.analysis.log_likelihood_check``); summed over the points with n >= 1024 into a z-score, a
  calibration test of the whole L* distribution that does not hinge on medians near a layer boundary.

The command line (arguments, table, CSV, JSON) is :func:`main`.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from graphs.cli_common import NUMBER, check_shape, output_file, run_command, write_atomic
from receptive import PATTERNS, __version__, theory
from receptive.bound.analysis import (
    binomial_checks,
    calibrated_exact_probability,
    log_likelihood_check,
    typical_layer,
)
from receptive.bound.models import MODELS, point_probabilities
from receptive.cli_parser import OneLineErrorParser, comma_names

__all__ = [
    "DEFAULT_DIRS",
    "MODELLED",
    "MODELS",
    "PooledPoint",
    "PooledResult",
    "calibrated_exact_probability",
    "evaluate_point",
    "find_task_files",
    "main",
    "pool_seeds",
    "pooled_evaluation",
    "summarise",
    "summary_line",
    "typical_layer",
]

#: what :func:`pool_seeds` reads of a row of ``python -m receptive.bound``'s ``tasks.jsonl``
TASK_ROW_SHAPE = {
    "task": {
        "pattern": str,
        "causal": bool,
        "circular": bool,
        "n": int,
        "w": int,
        "seed": int,
        "method": frozenset({"exact", "sampled"}),
        "max_layers": int,
        "targets": int,
        "start": int,
        "stop": int,
    },
    "full_layer": (int, None),
    "seconds?": (*NUMBER, None),
}
#: the committed runs, relative to the checkout root (``analysis/causal/results`` also holds the hold-out rounds,
#: which are scored apart)
DEFAULT_DIRS = ("analysis/bound/results", "analysis/causal/results/n2p22", "analysis/causal/results/seeds")
#: the committed interval model (``python -m analysis.causal.interval_model``)
DEFAULT_INTERVAL_FILE = "analysis/causal/results/interval_model.json"
MODELLED = ("sa", "sa+swa")


@dataclass
class PooledPoint:
    """One grid point over every pooled seed. ``full_layers[i]`` is the L* of ``seeds[i]`` (``None``: not full
    within ``max_layers``); ``incomplete``: seeds whose exact slabs do not yet tile ``[0, n)`` (left out);
    ``sources``: the ``tasks.jsonl`` files that hold its seeds. Model fields are ``None`` for patterns without a
    sharp model; ``probabilities[L-1] = P(full after L)``."""

    pattern: str
    causal: bool
    circular: bool
    n: int
    w: int
    method: str
    targets: int | None
    max_layers: int
    seeds: list[int]
    full_layers: list[int | None]
    incomplete: list[int] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    seconds: float = 0.0
    typical: int | None = None
    predicted: int | None = None
    exact: bool | None = None
    within_one: bool | None = None
    direction: str | None = None
    exact_probability: float | None = None
    probability_checks: list[dict] = field(default_factory=list)
    log_likelihood: dict | None = None
    probabilities: list[float] = field(default_factory=list, repr=False)

    @property
    def regime(self) -> str:
        return _regime(self.pattern, self.causal, self.circular)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class PooledResult:
    """The pooled points and, per regime (pattern, causal, circular), the summary of :func:`summarise`."""

    dirs: list[str]
    points: list[PooledPoint]
    summary: dict
    files: list[str]
    model: str = "analytic"

    def to_dict(self) -> dict:
        return {
            "version": __version__,
            "model": self.model,
            "dirs": self.dirs,
            "files": self.files,
            "summary": self.summary,
            "points": [p.to_dict() for p in self.points],
        }

    def __repr__(self) -> str:
        lines = [f"PooledResult({len(self.points)} points from {len(self.files)} tasks.jsonl under {self.dirs})"]
        for regime, s in self.summary.items():
            lines.append(f"  {regime}: {summary_line(s)}")
        return "\n".join(lines)


def _show(x) -> str:
    return "-" if x is None else str(x)


def _regime(pattern: str, causal: bool, circular: bool) -> str:
    return f"{pattern} {'causal' if causal else 'bidirectional'}{' circular' if circular else ''}"


def summary_line(s: dict) -> str:
    """One line of a regime's summary (:func:`summarise`): exact and calibrated counts, within one, checks, the
    log-likelihood z-score."""
    if s["exact_share_n_ge_1024"] is None:
        return f"{s['points']} points, {s['runs']} runs, no modelled points with n >= 1024"
    return (
        f"{s['points']} points, {s['runs']} runs; exact at {s['exact_n_ge_1024']}/{s['points_n_ge_1024']} with "
        f"n >= 1024 (a calibrated model expects {s['expected_exact_n_ge_1024']:.1f}, sd {s['expected_exact_sd']:.1f}); "
        f"within one layer at {s['within_one']}/{s['modelled_points']} (misses: {s['optimistic']} optimistic, "
        f"{s['pessimistic']} pessimistic); binomial checks rejected at 1%: "
        f"{s['probability_checks_rejected_at_1pct']}/{s['probability_checks']}; log-likelihood z "
        + ("n/a" if s["log_likelihood_z"] is None else f"{s['log_likelihood_z']:+.2f}")
        + (f" ({s['seeds_at_floor']} seeds scored at the floor)" if s["seeds_at_floor"] else "")
    )


def find_task_files(dirs) -> list[Path]:
    """Every ``tasks.jsonl`` under each of ``dirs`` (recursively), sorted; a ``ValueError`` if a directory is
    missing or none holds one."""
    if isinstance(dirs, (str, Path)) or not dirs:
        raise ValueError(f"dirs: expected a non-empty list of directories, got {dirs!r}")
    files = set()
    for d in map(Path, dirs):
        if not d.is_dir():
            raise ValueError(f"dirs: {str(d)!r} is not a directory")
        files.update(p for p in d.rglob("tasks.jsonl") if p.is_file())
    if not files:
        raise ValueError(f"dirs: no tasks.jsonl under {', '.join(map(str, dirs))}")
    return sorted(files)


def pool_seeds(files) -> dict[tuple, dict]:
    """``{(pattern, causal, circular, n, w, method, targets): {"seeds": {seed: (L*, max_layers, seconds, where)},
    "incomplete": seeds, "sources": files}}`` from the rows of ``files`` (``targets``: ``K`` if sampled, else None).

    Within one file a seed's slabs (``start .. stop``; one row for sampled runs) must tile ``[0, n)`` for the seed
    to count (a repeated slab must agree and counts once); across files the same seed must have the same L*.
    ``None`` (not full within the cap ``c``) agrees with any L* > ``c``. Disagreement is a ``ValueError``."""
    slabs: dict[tuple, dict[tuple, tuple]] = defaultdict(dict)  # (point, seed, file) -> {(start, stop): record}
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as fh:  # bytes that are not UTF-8 fail json.loads below
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    check_shape(row, TASK_ROW_SHAPE, "the row")
                except ValueError as exc:
                    problem = "not JSON" if isinstance(exc, json.JSONDecodeError) else str(exc)
                    raise ValueError(
                        f"files: {path}:{number}: {problem}; expected a receptive.bound task row"
                    ) from None
                t = row["task"]
                sampled = t["method"] == "sampled"
                point = (t["pattern"], t["causal"], t["circular"], t["n"], t["w"], t["method"])
                point += (t["targets"] if sampled else None,)
                span = (0, 0) if sampled else (t["start"], t["stop"])
                record = (row["full_layer"], t["max_layers"], float(row.get("seconds") or 0.0))
                seed = t["seed"]
                where = f"{path}:{number}"
                held = slabs[(point, seed, str(path))]
                what = f"{_name(point)} seed {seed} slab {span}"
                held[span] = _merge(held[span], (*record, where), what) if span in held else (*record, where)
    if not slabs:
        raise ValueError(f"files: no receptive.bound task rows in {', '.join(map(str, files)) or 'no file'}")
    pooled: dict[tuple, dict] = defaultdict(lambda: {"seeds": {}, "incomplete": set(), "sources": set()})
    for (point, seed, path), held in sorted(slabs.items(), key=lambda kv: (kv[0][0][:5], kv[0][1:])):
        entry = pooled[point]
        entry["sources"].add(path)
        spans = sorted(held)
        n = point[3]
        if point[5] == "exact" and not _tiles(spans, n):
            entry["incomplete"].add(seed)
            continue
        layers = [held[s][0] for s in spans]
        cap = min(held[s][1] for s in spans)
        full = None if any(x is None for x in layers) else max(layers)
        record = (full, cap, sum(held[s][2] for s in spans), held[spans[0]][3])
        held_seed = entry["seeds"].get(seed)
        entry["seeds"][seed] = record if held_seed is None else _merge(held_seed, record, f"{_name(point)} seed {seed}")
    for entry in pooled.values():
        entry["incomplete"] -= set(entry["seeds"])
    return dict(pooled)


def _name(point: tuple) -> str:
    pattern, causal, circular, n, w, method, targets = point
    return f"{_regime(pattern, causal, circular)} n={n} w={w} {method}" + (f" K={targets}" if targets else "")


def _tiles(spans: list[tuple], n: int) -> bool:
    """Whether the sorted half-open ``spans`` cover ``[0, n)`` exactly once."""
    at = 0
    for start, stop in spans:
        if start != at or stop <= start:
            return False
        at = stop
    return at == n


def _merge(old: tuple, new: tuple, what: str) -> tuple:
    """The more informative of two measurements ``(L*, cap, seconds, where)`` of the same thing; a ``ValueError`` if
    they disagree (``None`` under cap ``c`` agrees with any L* > ``c``)."""
    (a, cap_a, *_), (b, cap_b, *_) = old, new
    if a == b:
        return old if cap_a >= cap_b else new
    if a is None and b is not None and b > cap_a:
        return new
    if b is None and a is not None and a > cap_b:
        return old
    raise ValueError(f"files: {what} measured twice with different L* ({a} at {old[-1]}, {b} at {new[-1]})")


def evaluate_point(point: tuple, entry: dict, model: str = "analytic", interval_file=None) -> PooledPoint:
    """Typical and predicted L*, the binomial checks and the calibrated exact probability of one pooled point;
    ``model='interval'`` takes causal SA+SWA's probabilities from the interval model
    (:func:`receptive.bound.models.interval_probabilities`: from ``interval_file`` where it holds the point, else
    live), every other point keeps the analytic model."""
    if model not in MODELS:
        raise ValueError(f"model: expected one of {', '.join(MODELS)}, got {model!r}")
    pattern, causal, circular, n, w, method, targets = point
    seeds = sorted(entry["seeds"])
    cap = min(entry["seeds"][s][1] for s in seeds)
    full = [entry["seeds"][s][0] for s in seeds]
    full = [None if f is None or f > cap else f for f in full]
    res = PooledPoint(pattern, causal, circular, n, w, method, targets, cap, seeds, full)
    res.incomplete = sorted(entry["incomplete"])
    res.sources = sorted(entry["sources"])
    res.seconds = float(sum(entry["seeds"][s][2] for s in seeds))
    res.typical = typical_layer(full, cap)
    if pattern not in MODELLED:
        return res
    probs = point_probabilities(pattern, n, w, causal, circular, cap, targets, model, interval_file)
    res.probabilities = probs.tolist()
    res.predicted = theory.median_layer(probs)
    if res.predicted is not None and res.typical is not None:
        res.exact = res.predicted == res.typical
        res.within_one = abs(res.predicted - res.typical) <= 1
        res.direction = "exact" if res.exact else ("optimistic" if res.predicted < res.typical else "pessimistic")
    res.exact_probability = calibrated_exact_probability(probs, len(seeds))
    res.probability_checks = binomial_checks(full, probs)
    res.log_likelihood = log_likelihood_check(full, probs)
    return res


def summarise(points: list[PooledPoint]) -> dict:
    """Per regime: exact count and share at n >= 1024, within-one share everywhere, the calibrated expectation of the
    exact count (Poisson-binomial mean and sd of the points' ``exact_probability``), its z-score, the binomial
    checks rejected at 1%, the log-likelihood of the seeds at n >= 1024 with its calibrated mean, sd and z, the
    misses with their direction, and the runs pooled."""
    out = {}
    for regime in sorted({p.regime for p in points}):
        group = [p for p in points if p.regime == regime]
        scored = [p for p in group if p.exact is not None]
        big = [p for p in scored if p.n >= 1024]
        q = np.array([p.exact_probability for p in big])
        exact = sum(p.exact for p in big)
        checks = [c for p in group for c in p.probability_checks]
        mean, sd = float(q.sum()), float(np.sqrt(np.sum(q * (1 - q))))
        # every point with n >= 1024 and a law, also those whose typical L* is beyond the cap (not in `big`)
        scores = [p.log_likelihood for p in group if p.n >= 1024 and p.log_likelihood is not None]
        loglik = sum(s["log_likelihood"] for s in scores)
        loglik_mean = sum(s["expected"] for s in scores)
        loglik_sd = math.sqrt(sum(s["variance"] for s in scores))
        out[regime] = {
            "points": len(group),
            "runs": sum(len(p.seeds) for p in group),
            "seeds_min": min(len(p.seeds) for p in group),
            "seeds_max": max(len(p.seeds) for p in group),
            "seconds": sum(p.seconds for p in group),
            "modelled_points": len(scored),
            "points_n_ge_1024": len(big),
            "exact_n_ge_1024": int(exact),
            "exact_share_n_ge_1024": exact / len(big) if big else None,
            "within_one": int(sum(p.within_one for p in scored)),
            "within_one_share": float(np.mean([p.within_one for p in scored])) if scored else None,
            "expected_exact_n_ge_1024": mean,
            "expected_exact_sd": sd,
            "expected_share_n_ge_1024": mean / len(big) if big else None,
            "expected_share_sd": sd / len(big) if big else None,
            "exact_z": (exact - mean) / sd if sd > 0 else None,
            "probability_checks": len(checks),
            "probability_checks_rejected_at_1pct": sum(c["p_value"] < 0.01 for c in checks),
            "expected_rejections_at_1pct_upper": 0.01 * len(checks),
            "min_p_value": min((c["p_value"] for c in checks), default=None),
            "log_likelihood_n_ge_1024": loglik,
            "expected_log_likelihood_n_ge_1024": loglik_mean,
            "expected_log_likelihood_sd": loglik_sd,
            "log_likelihood_z": (loglik - loglik_mean) / loglik_sd if loglik_sd > 0 else None,
            "seeds_at_floor": sum(s["at_floor"] for s in scores),
            "optimistic": sum(p.direction == "optimistic" for p in scored),
            "pessimistic": sum(p.direction == "pessimistic" for p in scored),
            "misses": [
                {"n": p.n, "w": p.w, "method": p.method, "seeds": len(p.seeds), "typical": p.typical}
                | {"predicted": p.predicted, "direction": p.direction}
                for p in scored
                if not p.exact
            ],
        }
    return out


def pooled_evaluation(
    dirs=DEFAULT_DIRS, patterns=None, causal=(True, False), model: str = "analytic", interval_file=None
) -> PooledResult:
    """Pool every ``tasks.jsonl`` under ``dirs`` (:func:`pool_seeds`), keep the points of ``patterns`` (``None``:
    all) and ``causal`` modes, and evaluate each against the model (:func:`evaluate_point`): ``'analytic'``
    (:func:`receptive.theory.full_probability`, live) or ``'interval'`` (causal SA+SWA from the interval Monte Carlo,
    :func:`receptive.bound.models.interval_probabilities`, from ``interval_file`` where it holds the point, else
    live; the rest analytic)."""
    if model not in MODELS:
        raise ValueError(f"model: expected one of {', '.join(MODELS)}, got {model!r}")
    if interval_file is not None and model != "interval":
        raise ValueError(f"interval_file: only read with model='interval', got model={model!r}")
    if patterns is not None and (isinstance(patterns, str) or not patterns):
        raise ValueError(f"patterns: expected a non-empty list of pattern names or None, got {patterns!r}")
    if not causal or any(c not in (True, False) for c in causal):
        raise ValueError(f"causal: expected a non-empty subset of (True, False), got {causal!r}")
    files = find_task_files(dirs)
    pooled = pool_seeds(files)
    keep = [
        k
        for k in sorted(pooled, key=lambda k: (k[0], not k[1], k[2], k[3], k[4], k[5]))
        if (patterns is None or k[0] in patterns) and k[1] in causal and pooled[k]["seeds"]
    ]
    points = [evaluate_point(k, pooled[k], model, interval_file) for k in keep]
    return PooledResult([str(d) for d in dirs], points, summarise(points), [str(f) for f in files], model)


CAUSAL_CHOICES = {"yes": (True,), "no": (False,), "both": (True, False)}


CSV_COLUMNS = [
    "pattern",
    "causal",
    "circular",
    "n",
    "w",
    "method",
    "targets",
    "seeds",
    "full_layers",
    "typical",
    "predicted",
    "exact",
    "within_one",
    "direction",
    "exact_probability",
    "checks",
    "min_p_value",
]


def to_csv(result: PooledResult) -> str:
    """One row per point (seeds and full_layers ``;``-separated; ``checks``: binomial checks at the point)."""
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(CSV_COLUMNS)
    for p in result.points:
        d = p.to_dict()
        d["seeds"] = ";".join(map(str, p.seeds))
        d["full_layers"] = ";".join("-" if f is None else str(f) for f in p.full_layers)
        d["checks"] = len(p.probability_checks)
        d["min_p_value"] = min((c["p_value"] for c in p.probability_checks), default=None)
        out.writerow([d[c] for c in CSV_COLUMNS])
    return buf.getvalue()


def format_table(result: PooledResult) -> str:
    """Per point: regime, n, w, method, seeds, typical and predicted L*, direction and the calibrated exact
    probability ``q``; then one summary line per regime."""
    lines = [f"{'regime':<26} {'n':>8} {'w':>4} {'method':<8} {'seeds':>5} {'typ':>4} {'pred':>4}  {'':<11} q"]
    for p in result.points:
        lines.append(
            f"{p.regime:<26} {p.n:>8} {p.w:>4} {p.method:<8} {len(p.seeds):>5} {_show(p.typical):>4} "
            f"{_show(p.predicted):>4}  {_show(p.direction):<11} "
            + ("-" if p.exact_probability is None else f"{p.exact_probability:.2f}")
        )
    lines.append("")
    for regime, s in result.summary.items():
        lines.append(f"{regime}: {summary_line(s)}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser(
        prog="python -m analysis.causal.pooled",
        options={
            "interval_file": "--interval-file",
            "patterns": "--patterns",
            "model": "--sharp-model",
            "files": "dirs",
        },
        description=__doc__.split("\n\n", 1)[1].replace("``", "").replace(":func:", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples (from the checkout root):\n"
        "  python -m analysis.causal.pooled --out analysis/causal/results/pooled.json\n"
        "  python -m analysis.causal.pooled analysis/causal/results/seeds --patterns sa+swa --causal yes --csv\n",
    )
    p.add_argument(
        "dirs",
        nargs="*",
        default=list(DEFAULT_DIRS),
        help=f"directories searched (recursively) for tasks.jsonl (default: {' '.join(DEFAULT_DIRS)})",
    )
    p.add_argument("--patterns", help="comma-separated patterns to keep (default: all found)")
    p.add_argument("--causal", choices=sorted(CAUSAL_CHOICES), default="both", help="modes to keep (default both)")
    p.add_argument(
        "--sharp-model",
        dest="model",
        choices=MODELS,
        default="interval",
        help=f"causal SA+SWA's model: the interval Monte Carlo (default; read from --interval-file, "
        f"{DEFAULT_INTERVAL_FILE} unless given) or the analytic run-branching/profile model (receptive.theory)",
    )
    p.add_argument(
        "--interval-file",
        help=f"the interval model's result file (default {DEFAULT_INTERVAL_FILE} with --sharp-model interval; "
        "points it lacks are computed live; 'none': every point live)",
    )
    p.add_argument(
        "--out",
        type=output_file("--out", suffixes=(".json",)),
        help="write the JSON here and the CSV next to it (same name, .csv)",
    )
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    fmt.add_argument("--csv", action="store_true", help="print the CSV instead of the table")
    return p


def _check_interval_file(path: str) -> None:
    """``--interval-file`` as an interval-model result file (:func:`receptive.theory.load_interval_model`), else a
    ``ValueError`` naming the flag."""
    try:
        theory.load_interval_model(path)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"--interval-file: {str(exc).removeprefix('path: ')}") from None


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.out and args.out.suffix != ".json":
            raise ValueError(f"--out: expected a path ending in .json, got {str(args.out)!r}")
        patterns = None
        if args.patterns is not None:
            patterns = comma_names("--patterns", args.patterns, tuple(PATTERNS))
        interval_file = args.interval_file
        if interval_file is not None and args.model != "interval":
            raise ValueError(f"--interval-file: only read with --sharp-model interval, got --sharp-model {args.model}")
        if interval_file not in (None, "none"):  # a file given is read whole before any point is evaluated
            _check_interval_file(interval_file)
        if args.model == "interval" and interval_file is None:
            interval_file = DEFAULT_INTERVAL_FILE
        elif interval_file == "none":
            interval_file = None
        result = pooled_evaluation(args.dirs, patterns, CAUSAL_CHOICES[args.causal], args.model, interval_file)
        if args.out:
            out = args.out
            write_atomic(out, json.dumps(result.to_dict(), indent=1) + "\n", option="--out")
            write_atomic(out.with_suffix(".csv"), to_csv(result), option="--out")
    except ValueError as exc:
        parser.error(str(exc))
    if args.json:
        json.dump(result.to_dict(), sys.stdout)
        sys.stdout.write("\n")
    elif args.csv:
        sys.stdout.write(to_csv(result))
    else:
        print(format_table(result))
        if args.out:
            print(f"\nwrote {out}, {out.with_suffix('.csv')}")
    return 0


if __name__ == "__main__":
    run_command(main)
