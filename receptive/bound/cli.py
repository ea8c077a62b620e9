"""``python -m receptive.bound``: is SA's full coverage O(log_w n), and does the theory predict L* exactly?"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import sys
import warnings
from functools import partial
from numbers import Integral, Real
from pathlib import Path

from graphs.cli_common import atomic_write, run_command, write_atomic
from graphs.memory import parse_bytes, slab_bytes

from .. import __version__, theory
from ..cli_parser import (
    OneLineErrorParser,
    add_json_option,
    add_out_option,
    add_progress_option,
    add_seeds_option,
    comma_names,
    write_output,
)
from ..sweep import (
    ResultStore,
    check_scheduler,
    first_difference,
    read_json_object,
    run_dask,
    run_local,
    tasks_for,
    torn_last_line,
)
from ..theory import load_interval_model
from .analysis import analyse_point, deviations, fit_log_law, group_results

__all__ = ["MAX_LAYERS", "MAX_RUNS", "build_parser", "format_table", "main", "parse_sizes", "task_bytes_at_least"]

DEFAULT_N = "2^8,2^10,2^12,2^14,2^16,2^18,2^20"
DEFAULT_W = "4,8,16,32,64,128,256,512"
QUICK_N, QUICK_W = "2^8,2^10,2^12", "4,16,64"

#: The largest --max-layers: the sharp model's prediction costs time per layer (seconds per point at 10^4 layers).
MAX_LAYERS = 10_000
#: The most (grid point, seed) runs one sweep plans: planning makes each run's pattern (about a second per seed on
#: the default grid) and the work grows with them; a larger sweep is split over several runs (--seed, --seeds).
MAX_RUNS = 100_000
#: The header beside OUT/tasks.jsonl: what the rows depend on, checked by --resume (module :func:`main`).
HEADER = "store.json"
#: The header's entries a resume must keep (they change the rows), and the flags that set them.
ROW_FLAGS = {
    "version": "receptive version",
    "rows.circular": "--circular",
    "rows.max_layers": "--max-layers",
    "rows.exact_limit_words": "--exact-limit",
    "rows.targets": "--targets",
    "rows.max_memory": "--max-memory",
    "rows.slab_size": "--slab-size",
}

DESCRIPTION = """\
Measure L*, the first layer at which every token sees every (admissible) token, over a grid of sequence lengths
n, windows w, patterns (sa, sa+swa), causal and bidirectional, and seeds, and set it against the theory:
ceil(log_w n), the coupon-collector estimate ceil(log_w(2 n ln n)), n/w, the union bound with delta = 0.05 and
the sharp model of receptive.theory, which predicts P(full after L) per layer and L* as the first layer where
that probability reaches 1/2 (the L* most seeds reach); for causal SA+SWA, --sharp-model interval uses the interval
Monte Carlo model instead of the analytic one (docs/theory.md Sec. 5; computed live, seconds to minutes per point,
unless --interval-file names a result file that holds the point).

L* is exact (every receptive field) while n * n/64 <= --exact-limit words, else measured on --targets sampled
target positions (then L* means "no sampled target uncovered"). Points whose predicted L* exceeds --max-layers
(pure causal SA needs about (n/w) ln n layers; the analytic model's prediction, whatever --sharp-model) are skipped and
listed with the prediction.

Each (grid point, seed, slab) is an independent task. Tasks run here (numba uses every core) or on Dask
(--dask for a LocalCluster, --scheduler tcp://host:8786 for a running one); each result is appended to
OUT/tasks.jsonl when it finishes, so --resume continues an interrupted sweep, and failed tasks are retried
(--retries) and then reported, never dropped. The summary goes to OUT/bound.csv and OUT/bound.json.

OUT/store.json records what the rows depend on (--circular, --max-layers, --exact-limit, --targets, --max-memory,
--slab-size and the receptive version; a store without it: those of its bound.json). --resume refuses another value
of any of them; another grid (--n, --w, --patterns, --causal, --seed, --seeds) extends the store with the runs it
lacks, and the summary holds exactly the grid asked for; --sharp-model and --interval-file only change the predictions.
A last row torn by a killed write is dropped and computed again, with a note.
"""

EPILOG = """\
examples:
  python -m receptive.bound --quick
  python -m receptive.bound --out bound-results --seeds 10
  python -m receptive.bound --n 2^20 --w 64 --patterns sa --causal no --exact-limit 2^34 --max-memory 1GiB \\
      --scheduler tcp://scheduler:8786 --out exact-2^20
"""


def parse_sizes(text: str, name: str) -> list[int]:
    """The sizes a flag such as ``--n`` lists: comma-separated integers or powers ``2^k``, sorted, without repeats.

    Parameters
    ----------
    text : str
        The flag's value, e.g. ``"2^8,1000,2^20"``.
    name : str
        The flag, named in the error.

    Returns
    -------
    list of int
        The sizes in increasing order.

    Raises
    ------
    ValueError
        If a part is neither an integer nor ``2^k`` (the message starts with ``name``).

    Examples
    --------
    >>> parse_sizes("2^8,1000,2^20,2^8", "--n")
    [256, 1000, 1048576]
    >>> parse_sizes("2^x", "--w")
    Traceback (most recent call last):
    ...
    ValueError: --w: expected comma-separated integers or powers 2^k, got '2^x'
    """
    values = []
    for part in text.split(","):
        part = part.strip()
        try:
            value = 2 ** int(part[2:]) if part.startswith("2^") else int(part)
        except ValueError:
            raise ValueError(f"{name}: expected comma-separated integers or powers 2^k, got {part!r}") from None
        values.append(value)
    if not values:
        raise ValueError(f"{name}: expected at least one value")
    return sorted(set(values))


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m receptive.bound`` (one-line errors naming the flag).

    Returns
    -------
    argparse.ArgumentParser
        The parser (:class:`receptive.cli_parser.OneLineErrorParser`).

    Examples
    --------
    >>> args = build_parser().parse_args(["--quick", "--causal", "no"])
    >>> args.quick, args.causal, args.seeds, args.max_memory
    (True, 'no', 5, '3GiB')
    """
    p = OneLineErrorParser(
        prog="python -m receptive.bound",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        options={"max_memory": "--max-memory", "slab_size": "--slab-size", "max_layers": "--max-layers"},
    )
    p.add_argument("--n", default=DEFAULT_N, help=f"sequence lengths (default {DEFAULT_N})")
    p.add_argument("--w", default=DEFAULT_W, help=f"windows, keys per query incl. self (default {DEFAULT_W})")
    p.add_argument("--patterns", default="sa,sa+swa", help="comma-separated from sa, sa+swa (default both)")
    p.add_argument(
        "--causal",
        choices=["no", "yes", "both"],
        default="both",
        help="causal attention: no, yes or both (default both)",
    )
    p.add_argument("--circular", action="store_true", help="windows wrap around (the paper's theory)")
    add_seeds_option(p, 5)
    p.add_argument("--max-layers", type=int, default=64, help="layer cap per run (default 64)")
    p.add_argument(
        "--exact-limit",
        default="2^26",
        help="exact coverage while n * ceil(n/64) <= this many words (default 2^26: n <= 65536)",
    )
    p.add_argument("--targets", type=int, default=1024, help="sampled targets beyond the exact limit (default 1024)")
    p.add_argument(
        "--sharp-model",
        dest="model",
        choices=theory.CAUSAL_SA_SWA_MODELS,
        default="analytic",
        help="causal SA+SWA's sharp model in the table (default analytic; interval: the interval Monte Carlo, "
        "computed live unless --interval-file holds the point); other patterns: analytic",
    )
    p.add_argument(
        "--interval-file",
        metavar="PATH",
        help="with --sharp-model interval: an interval-model result file to read the points it holds from "
        "(default: none, every point computed live)",
    )
    p.add_argument("--max-memory", default="3GiB", help="memory per task (slabs are sized to fit; default 3GiB)")
    p.add_argument("--slab-size", type=int, help="sources per slab (default: as many as --max-memory allows)")
    add_out_option(p, "tasks.jsonl, bound.csv, bound.json", default="bound-results")
    p.add_argument("--resume", action="store_true", help="continue the sweep already in --out (it must hold one)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--dask", action="store_true", help="run the tasks on a Dask LocalCluster")
    where.add_argument("--scheduler", metavar="ADDRESS", help="run the tasks on the Dask scheduler at ADDRESS")
    p.add_argument("--workers", type=int, help="LocalCluster workers (default: one per core)")
    p.add_argument("--retries", type=int, default=2, help="retries of a failing task before it is reported")
    p.add_argument("--quick", action="store_true", help=f"a small grid (n {QUICK_N}, w {QUICK_W}) in seconds")
    add_json_option(p)  # the summary, as OUT/bound.json
    add_progress_option(p)
    return p


def task_bytes_at_least(n: int) -> int:
    """The fewest bytes one task at ``n`` positions needs, whatever its method: what ``--max-memory`` must allow.

    Parameters
    ----------
    n : int
        Sequence length.

    Returns
    -------
    int
        One 64-seed (or 64-target) slab, two ``n``-row bitsets of one word and a row of counts
        (:func:`graphs.memory.slab_bytes`), plus one int64 permutation of the positions.

    Examples
    --------
    >>> task_bytes_at_least(2**20) < 2**30 < task_bytes_at_least(2**26)
    True
    """
    return slab_bytes(n, 1) + 8 * n


def _plan(args) -> tuple[list, list[dict], dict]:
    """The tasks of the sweep, the points skipped (with why) and the parameters, validated before any work."""
    ns = parse_sizes(QUICK_N if args.quick and args.n == DEFAULT_N else args.n, "--n")
    ws = parse_sizes(QUICK_W if args.quick and args.w == DEFAULT_W else args.w, "--w")
    if ns[0] < 2:
        raise ValueError(f"--n: every n must be >= 2, got {ns[0]}")
    if ws[0] < 1:
        raise ValueError(f"--w: every w must be >= 1, got {ws[0]}")
    if ws[-1] >= ns[-1]:  # a window no n admits: no task would measure it
        shown = f"--n {ns[0]}" if len(ns) == 1 else f"the largest --n {ns[-1]}"
        raise ValueError(f"--w: must be in 1..{ns[-1] - 1} for {shown}, got {ws[-1]}")
    patterns = comma_names("--patterns", args.patterns, ("sa", "sa+swa"))
    for name, value, low in (
        ("--max-layers", args.max_layers, 1),
        ("--targets", args.targets, 1),
        ("--retries", args.retries, 0),
    ):
        if value < low:
            raise ValueError(f"{name}: expected an integer >= {low}, got {value}")
    if args.max_layers > MAX_LAYERS:
        raise ValueError(
            f"--max-layers: expected 1..{MAX_LAYERS} (the sharp model's prediction costs time per layer), "
            f"got {args.max_layers}"
        )
    most = 4 * (os.cpu_count() or 1)
    if args.workers is not None and not 1 <= args.workers <= most:
        raise ValueError(f"--workers: expected 1..{most} (four per core of this machine), got {args.workers}")
    if args.workers is not None and not args.dask:
        raise ValueError("--workers: only with --dask (the workers of the local cluster)")
    if args.slab_size is not None and args.slab_size < 1:
        raise ValueError(f"--slab-size: expected a number of sources >= 1, got {args.slab_size}")
    if args.interval_file is not None and args.model != "interval":
        raise ValueError(f"--interval-file: only read with --sharp-model interval, got --sharp-model {args.model}")
    if args.interval_file is not None:
        _check_interval_file(args.interval_file)
    exact_limit = parse_sizes(args.exact_limit, "--exact-limit")[0]
    max_memory = parse_bytes(args.max_memory, "--max-memory")
    need = task_bytes_at_least(ns[-1])
    if need > max_memory:
        raise ValueError(
            f"--n: a task at n = {ns[-1]} needs at least {_bytes(need)} (two bitset rows and a permutation), more "
            f"than --max-memory {_bytes(max_memory)}; lower --n or raise --max-memory"
        )
    modes = {"no": [False], "yes": [True], "both": [False, True]}[args.causal]
    points = len(modes) * len(patterns) * sum(w < n for n in ns for w in ws)
    if points * args.seeds > MAX_RUNS:
        raise ValueError(
            f"--seeds: {args.seeds} seeds x {points} grid points = {points * args.seeds} runs, more than the "
            f"{MAX_RUNS} one sweep plans; split it over several runs with --seed and --seeds"
        )
    tasks, skipped = [], []
    for causal in modes:
        for name in patterns:
            for n in ns:
                for w in ws:
                    if w >= n:
                        continue
                    exact = n * math.ceil(n / 64) <= exact_limit
                    sampled = None if exact else min(args.targets, n)
                    why = _skip_reason(name, n, w, causal, args.circular, args.max_layers, sampled)
                    if why:
                        skipped.append({"pattern": name, "n": n, "w": w, "causal": causal, "reason": why})
                        continue
                    for seed in range(args.seed, args.seed + args.seeds):
                        tasks += tasks_for(
                            name,
                            n,
                            w,
                            causal,
                            args.circular,
                            seed,
                            exact=exact,
                            max_layers=args.max_layers,
                            targets=args.targets,
                            max_memory=max_memory,
                            slab_size=args.slab_size,
                        )
    params = {
        "n": ns,
        "w": ws,
        "patterns": patterns,
        "causal": modes,
        "circular": args.circular,
        "seeds": list(range(args.seed, args.seed + args.seeds)),
        "max_layers": args.max_layers,
        "exact_limit_words": exact_limit,
        "targets": args.targets,
        "max_memory": max_memory,
        "model": args.model,
    }
    if args.interval_file is not None:
        params["interval_file"] = args.interval_file
    return tasks, skipped, params


_INTERVAL_FILE = (
    "an interval-model result file (a JSON object with events, seed, max_cost and points, each point's n, w, "
    "targets, its layer count and full_probability, one probability in [0, 1] per layer)"
)


def _check_interval_file(path: str) -> None:
    """``ValueError`` naming ``--interval-file`` unless ``path`` is an interval-model result file whose every point
    is well formed (checked before the sweep: the file is read only when the summary is made)."""
    if not Path(path).is_file():
        raise ValueError(f"--interval-file: no such file: {path}")
    try:
        table, settings = load_interval_model(path)
    except (ValueError, OSError) as exc:
        reason = str(exc).removeprefix("path: ").removeprefix(f"{path} is not an interval-model result file ")
        reason = reason.removeprefix("(").removesuffix(")")
        raise ValueError(f"--interval-file: expected {_INTERVAL_FILE}; {path}: {reason}") from None

    def integer(value, low) -> bool:
        return isinstance(value, Integral) and not isinstance(value, bool) and value >= low

    bad = [f"{k} is {settings[k]!r}" for k, low in (("events", 1), ("seed", 0)) if not integer(settings[k], low)]
    if not isinstance(settings["max_cost"], Real) or isinstance(settings["max_cost"], bool):
        bad.append(f"max_cost is {settings['max_cost']!r}")
    for (n, w, targets, layers), probs in table.items():
        point = f"the point n={n!r}, w={w!r}"
        if not (integer(n, 2) and integer(w, 1) and integer(layers, 1) and (targets is None or integer(targets, 1))):
            bad.append(f"{point} has a bad n, w, targets or layer count")
        elif not isinstance(probs, list) or len(probs) != layers:
            bad.append(f"{point} does not have {layers} probabilities, one per layer")
        elif not all(isinstance(x, Real) and not isinstance(x, bool) and 0 <= x <= 1 for x in probs):
            bad.append(f"{point} has a probability outside [0, 1]")
        if bad:
            break
    if bad:
        raise ValueError(f"--interval-file: expected {_INTERVAL_FILE}; in {path} {bad[0]}")


def _identity(params: dict, slab_size: int | None) -> dict:
    """The header of the store: the receptive version and the parameters the rows depend on (compared by a
    resume), the grid asked for and the summary's model (recorded only)."""
    rows = {k: params[k] for k in ("circular", "max_layers", "exact_limit_words", "targets", "max_memory")}
    grid = {k: params[k] for k in ("n", "w", "patterns", "causal", "seeds")}
    summary = {"model": params["model"], "interval_file": params.get("interval_file")}
    return {
        "command": "python -m receptive.bound",
        "version": __version__,
        "rows": rows | {"slab_size": slab_size},
        "grid": grid,
        "summary": summary,
    }


def _stored_identity(out: Path) -> dict:
    """The header of the store in ``out``; for a store without one, what its ``bound.json`` (the parameters of the
    last finished run) records, else nothing (its rows' keys still keep them apart: the summary reads only the keys
    of the runs asked for)."""
    header = read_json_object(out / HEADER, "--out")
    if header is not None:
        return header
    doc = read_json_object(out / "bound.json", "--out") or {}
    params = doc.get("parameters") if isinstance(doc.get("parameters"), dict) else {}
    keys = ("circular", "max_layers", "exact_limit_words", "targets", "max_memory")
    stored = {"rows": {k: params[k] for k in keys if k in params}}
    if "version" in doc:
        stored["version"] = doc["version"]
    return stored


def _check_resume(out: Path, identity: dict) -> None:
    """``ValueError`` (one line: the flag, the stored and the given value) if the store in ``out`` was written with
    another value of a parameter its rows depend on."""
    stored = _stored_identity(out)
    given = {"version": identity["version"], "rows": identity["rows"]}
    difference = first_difference(stored, given, ROW_FLAGS, where=f"the sweep in {out}")
    if difference:
        raise ValueError(f"{difference}; resume with the stored value or choose another --out")


def _write_header(out: Path, identity: dict) -> None:
    """Write the header, its grid the union of the stored one's and ``identity``'s."""
    try:
        stored = read_json_object(out / HEADER, "--out") or {}
    except ValueError:  # a header no resume could read (the rows were checked against it, if any): replaced
        stored = {}
    grid = dict(identity["grid"])
    stored_grid = stored.get("grid") if isinstance(stored.get("grid"), dict) else {}
    for key, values in stored_grid.items():
        if isinstance(values, list) and key in grid:
            with contextlib.suppress(TypeError):  # values a header of another shape holds: this run's alone
                grid[key] = sorted(set(values) | set(grid[key]))
    write_atomic(out / HEADER, json.dumps(identity | {"grid": grid}, indent=1) + "\n", option="--out")


def _bytes(count: int) -> str:
    """``count`` bytes in the largest binary unit that keeps at least 1 (``3.0 GiB``)."""
    for unit, size in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"


def _skip_reason(name, n, w, causal, circular, max_layers, targets=None) -> str:
    """Why a point is not simulated: its predicted L* (for ``targets`` sampled targets, if sampled) is beyond the
    layer cap (or it never mixes, w = 1)."""
    if causal and name == "sa":
        median = theory.causal_sa_full_layer_estimate(n, w, circular)
        if median is None or median > max_layers:
            shown = "never" if median is None else f"{median:.0f}"
            return f"pure causal SA: predicted median L* = {shown} > --max-layers (bottleneck: edges i-1 -> i)"
        return ""
    predicted, _ = theory.predict_full_layer(name, n, w, causal, circular, max_layers, targets)
    return f"predicted L* > --max-layers = {max_layers}" if predicted is None else ""


def _summarise(store: ResultStore, params: dict, skipped: list[dict], failed: list[str], keys: set[str]) -> dict:
    """The JSON document of a sweep: every grid point analysed, the log-law fits and the deviations.

    Parameters
    ----------
    store : ResultStore
        The task results; only the rows of ``keys`` are read (a resumed store may hold other runs).
    params : dict
        The sweep's parameters, as ``_plan`` returns them.
    skipped : list of dict
        Points not simulated, with why.
    failed : list of str
        Tasks that failed.
    keys : set of str
        The keys of the sweep's tasks.

    Returns
    -------
    dict
        ``version``, ``parameters``, ``points`` (:meth:`~receptive.bound.analysis.PointResult.to_dict`), ``fits``
        (:func:`~receptive.bound.analysis.fit_log_law` per pattern and mode), ``deviations``, ``skipped`` and
        ``failed_tasks``.
    """
    grouped = group_results([row for row in store.results() if row["key"] in keys])
    wanted = set(params["seeds"])
    points = [
        analyse_point(
            key,
            {s: v for s, v in seeds.items() if s in wanted},
            params["max_layers"],
            params.get("model", "analytic"),
            params.get("interval_file"),
        )
        for key, seeds in sorted(grouped.items())
        if wanted & set(seeds)
    ]
    fits = {}
    for causal in params["causal"]:
        for name in params["patterns"]:
            fit = fit_log_law([p for p in points if p.pattern == name and p.causal == causal])
            if fit:
                fits[f"{name} {'causal' if causal else 'bidirectional'}"] = fit
    return {
        "version": __version__,
        "parameters": params,
        "points": [p.to_dict() for p in points],
        "fits": fits,
        "deviations": deviations(points),
        "skipped": skipped,
        "failed_tasks": failed,
    }


def format_table(doc: dict) -> str:
    """The table ``python -m receptive.bound`` prints, from the JSON document it writes (``OUT/bound.json``).

    Parameters
    ----------
    doc : dict
        The document.

    Returns
    -------
    str
        One line per grid point, then the fits and deviations.

    Examples
    --------
    >>> import contextlib, io, json, pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
    ...     status = main(["--n", "64", "--w", "4", "--patterns", "sa", "--causal", "no", "--seeds", "2",
    ...                    "--out", out, "--no-progress"])
    ...     doc = json.loads((pathlib.Path(out) / "bound.json").read_text())
    >>> print(format_table(doc).splitlines()[1])  # doctest: +ELLIPSIS
    sa      bidir        64    4 exact ...
    """
    head = (
        f"{'pattern':<7} {'mode':<6} {'n':>8} {'w':>4} {'method':<7} {'L* seeds':<22} {'typ':>3} "
        f"{'logw':>5} {'cc':>3} {'sharp':>5} {'n/w':>8} {'bound':>5} {'ok':>3}  P(full) at uncertain layers"
    )
    lines = [head]
    for p in doc["points"]:
        seeds = ",".join("-" if x is None else str(x) for x in p["full_layers"])
        checks = " ".join(f"L{c['layer']}:{c['measured']:.2f}/{c['predicted']:.2f}" for c in p["probability_checks"])
        ok = "" if p["bound_holds"] is None else ("yes" if p["bound_holds"] else "NO")
        lines.append(
            f"{p['pattern']:<7} {'causal' if p['causal'] else 'bidir':<6} {p['n']:>8} {p['w']:>4} {p['method']:<7} "
            f"{seeds[:22]:<22} {_show(p['typical']):>3} {p['log_w_n']:>5.2f} {_show(p['coupon_collector']):>3} "
            f"{_show(p['predicted']):>5} {p['n_over_w']:>8.1f} {_show(p['bound']):>5} {ok:>3}  {checks}"
        )
    dev = doc["deviations"]
    lines.append("")
    lines.append("typ = L* most seeds reach; cc = ceil(log_w(2 n ln n)); sharp = receptive.theory.predict_full_layer;")
    lines.append("bound = union bound (delta 0.05), ok = every seed within it; P(full) = measured/predicted.")
    for key, fit in doc["fits"].items():
        lines.append(
            f"fit {key}: L*_mean = {fit['a']:.3f} log_w n + {fit['b']:.3f}  (R^2 {fit['r2']:.3f}, "
            f"max |residual| {fit['max_abs_residual']:.2f})"
        )
    for name in ("ceil_log_w_n", "coupon_collector", "predicted"):
        lines.append(f"max |{name} - typical L*| = {dev[name]['max_abs_deviation']} over {dev[name]['points']} points")
    lines.append(
        f"sharp model exact at {_pct(dev['sharp_exact_share_n_ge_1024'])} of points with n >= 1024 "
        f"(goal >= 95%), within one layer at {_pct(dev['sharp_within_one_share'])} (goal 100%)"
    )
    for regime, share in dev["by_regime"].items():
        lines.append(
            f"  {regime}: exact at {_pct(share['sharp_exact_share_n_ge_1024'])} of {share['points_n_ge_1024']} "
            f"points with n >= 1024, within one layer at {_pct(share['sharp_within_one_share'])}"
        )
    lines.append(
        f"probability checks: {dev['probability_checks_rejected_at_1pct']} of {dev['probability_checks']} "
        "rejected by a two-sided binomial test at 1%"
    )
    for s in doc["skipped"]:
        lines.append(
            f"skipped {s['pattern']} {'causal' if s['causal'] else 'bidir'} n={s['n']} w={s['w']}: {s['reason']}"
        )
    if doc["failed_tasks"]:
        lines.append(f"FAILED tasks ({len(doc['failed_tasks'])}): " + ", ".join(doc["failed_tasks"]))
    return "\n".join(lines)


def _show(x) -> str:
    return "-" if x is None else str(x)


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _write_csv(doc: dict, path: Path) -> None:
    """Write one CSV row per grid point of ``doc`` to ``path`` (atomically; errors name ``--out``).

    Parameters
    ----------
    doc : dict
        The sweep's document.
    path : pathlib.Path
        The CSV file.
    """
    cols = [
        "pattern",
        "causal",
        "circular",
        "n",
        "w",
        "method",
        "full_layers",
        "L_mean",
        "L_min",
        "L_max",
        "typical",
        "log_w_n",
        "ceil_log_w_n",
        "coupon_collector",
        "predicted",
        "n_over_w",
        "bound",
        "bound_holds",
        "note",
    ]
    with atomic_write(path, "--out", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(cols)
        for p in doc["points"]:
            out.writerow([";".join(map(str, p[c])) if c == "full_layers" else p[c] for c in cols])


def main(argv: list[str] | None = None) -> int:
    """Run the sweep: plan, simulate (locally or with Dask), write ``bound.json`` and ``bound.csv``, print the table.

    Parameters
    ----------
    argv : list of str or None, optional
        The arguments; ``None``: ``sys.argv[1:]``.

    Returns
    -------
    int
        0, or 1 if a task failed (bad input exits 2 with one line on stderr).

    Examples
    --------
    >>> import contextlib, io, json, tempfile
    >>> out = io.StringIO()
    >>> with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(out):
    ...     status = main(["--n", "256", "--w", "16", "--patterns", "sa", "--causal", "no", "--seeds", "3",
    ...                    "--out", folder, "--json", "--no-progress"])
    >>> point = json.loads(out.getvalue())["points"][0]
    >>> status, point["n"], point["w"], len(point["full_layers"])
    (0, 256, 16, 3)
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    out = Path(args.out)
    try:
        if args.scheduler:
            check_scheduler(args.scheduler)
        if args.resume:
            held = out / "tasks.jsonl"
            if not held.is_file() or held.stat().st_size == 0:
                raise ValueError(f"--resume: nothing to resume in {args.out} (no tasks.jsonl with results)")
        tasks, skipped, params = _plan(args)
        identity = _identity(params, args.slab_size)
        if args.resume:
            _check_resume(out, identity)
        torn = torn_last_line(out / "tasks.jsonl") if args.resume else None
        with warnings.catch_warnings():  # the torn row is reported once, below
            warnings.filterwarnings("ignore", message=".*torn last line", category=UserWarning)
            store = ResultStore(args.out, resume=args.resume)
    except (ValueError, MemoryError, FileExistsError) as exc:
        parser.error(str(exc))
    if torn is not None:
        print(
            f"note: {out / 'tasks.jsonl'}:{torn}: dropped a last row torn by an interrupted write; its task runs again",
            file=sys.stderr,
        )
    _write_header(out, identity)
    progress = False if args.no_progress else None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*torn last line", category=UserWarning)
        if args.dask or args.scheduler:
            failed = run_dask(
                tasks,
                store,
                scheduler=args.scheduler or "local",
                retries=args.retries,
                progress=progress,
                workers=args.workers,
            )
        else:
            failed = run_local(tasks, store, retries=args.retries, progress=progress)
    doc = _summarise(store, params, skipped, failed, {t.key for t in tasks})
    write_atomic(out / "bound.json", json.dumps(doc, indent=1) + "\n", option="--out")
    _write_csv(doc, out / "bound.csv")
    if args.json != "-":
        print(format_table(doc))
        written = [p for p in (out / "tasks.jsonl", out / "bound.csv", out / "bound.json") if p.is_file()]
        print(f"\nwrote {', '.join(map(str, written))}")
    write_output(args.json, json.dumps(doc, indent=1) + "\n", "--json")
    return 1 if failed else 0


#: The command's entry point (``python -m receptive.bound`` and the console script ``receptive-bound``): :func:`main`,
#: ended by :func:`graphs.cli_common.run_command` (one line on an interrupt or a closed pipe).
run_cli = partial(run_command, main)
