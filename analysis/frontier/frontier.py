"""The cost-quality frontier of the paper-task grid (``python -m analysis.frontier.frontier``): each configuration's
accuracy on the informative tasks against the seconds the harness spent per item, and the Pareto front, per protocol.

Accuracy is the paper-task study's (:mod:`analysis.paper_tasks.summary`): OLMES's primary metric on each task's
fixed items (those full attention has; a randomized pattern's per-item score averaged over its seeds), averaged over
the informative tasks, the tasks where full attention's 95% interval lies above chance. A configuration is a method
(its exact layers part of it), its keys per query and its protocol (``sparse``: the pattern at every position;
``exact``: the pattern over the context and exact attention for the continuation); full attention belongs to both.

Seconds per item: a store row holds the wall-clock ``seconds`` the harness spent scoring a task's items under every
protocol of the row (one pass over the shared prefixes and the contexts, the continuations once per protocol), so

    seconds per item = row seconds / (items x protocols of the row),

the shared context pass split evenly between the protocols. One protocol run alone would cost between this and
``row seconds / items`` (``seconds_per_item_whole``, the row's cost per item for both protocols); the store cannot
tell where. Per task, the median over every row of the configuration (its seeds, and the items past the fixed ones
where the store has them); a configuration's seconds per item is the mean of those medians over the informative
tasks, each task weighted as in the accuracy. ``seconds_low`` and ``seconds_high`` are the same mean of each task's
fastest and slowest row.

The rows ran over days, one at a time, on a shared 2-core machine under different loads (one ran on a Dask worker)
and harness versions, so the seconds are noisy: differences of a few tens of percent between configurations are not
resolved. The front is computed under both conventions (``on_front``, ``on_front_whole``).

A configuration is on the Pareto front of its protocol when no other configuration of that protocol (full attention
included) is at least as accurate and at most as slow, and strictly better in one of the two.

References
----------
- Gu et al. (2024). OLMES. arXiv 2406.08446.
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from figures.style import check_shape
from graphs.cli_common import output_file, run_command, write_atomic
from receptive.cli_parser import OneLineErrorParser

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).parent / "results"
GRID = ROOT / "analysis" / "paper_tasks" / "results" / "grid"
DESIGN = ROOT / "analysis" / "attention_profile" / "results" / "design"
PROTOCOLS = ("sparse", "exact")
#: What a store row must hold for this study (the harness's row format, ``python -m gpu.harness``).
ROW_SHAPE = {
    "method": str,
    "budget": int,
    "seed": int,
    "decodes": [str, ...],
    "task": str,
    "kind": frozenset({"choice", "target"}),
    "seconds": (int, float),
    "runs": [
        {
            "attention": {"method": str, "budget": int, "decode": frozenset(PROTOCOLS), "exact_layers?": [int]},
            "records": [dict, ...],
        },
        ...,
    ],
}
#: What each record must hold (checked on the first of each run; a later one missing a field is refused when scored).
RECORD_SHAPE = {"doc_id": int, "label": int, "choices": [{"ll": (int, float)}, ...]}


def default_stores() -> list[Path]:
    """The grid's store, and the designed pattern's where it has been written.

    Returns
    -------
    list of pathlib.Path
    """
    return [GRID] + ([DESIGN] if (DESIGN / "tasks.jsonl").is_file() else [])


def read_store(folder) -> list[dict]:
    """The rows of a result store, checked to be the harness's (the last row per ``key``; a torn last line, the write
    of a killed run, skipped).

    Parameters
    ----------
    folder : str or pathlib.Path
        A folder holding ``tasks.jsonl``.

    Returns
    -------
    list of dict

    Raises
    ------
    ValueError
        One line naming the file and row: no ``tasks.jsonl``, a malformed line, a row of another shape, no rows.
    """
    path = Path(folder) / "tasks.jsonl"
    if not path.is_file():
        raise ValueError(f"no tasks.jsonl in {str(folder)!r} (a store of python -m gpu.harness)")
    try:
        lines = path.read_text().split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {path} ({exc})") from None
    torn = lines.pop()
    rows: dict[str, dict] = {}
    for number, line in enumerate([*lines, torn] if torn else lines, start=1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines) + 1:  # the torn last line
                continue
            raise ValueError(f"{path}:{number}: not a JSON row") from None
        try:
            check_shape(row, ROW_SHAPE | {"key": str}, "row")
            for run in row["runs"]:
                check_shape(run["records"][0], RECORD_SHAPE, "row's first record")
                if run["attention"]["method"] == "exact" or run["attention"]["decode"] in row["decodes"]:
                    continue
                raise ValueError(f"row's run {run['attention']['decode']!r} is not among its decodes")
            if not row["seconds"] > 0:
                raise ValueError(f"row's seconds is {row['seconds']}, expected > 0")
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: {exc}, so it is not a harness result row") from None
        rows[row["key"]] = row
    if not rows:
        raise ValueError(f"{path} holds no rows")
    return list(rows.values())


def configuration(attention: dict) -> tuple[str, str, int, str]:
    """``(label, method, budget, protocol)`` of a run's attention; full attention's protocol is ``"both"``.

    Parameters
    ----------
    attention : dict
        A run's ``attention`` (:meth:`gpu.harness.scoring.EvalAttention.to_dict`).

    Returns
    -------
    tuple

    Examples
    --------
    >>> configuration({"method": "swa+sink", "budget": 64, "decode": "exact", "exact_layers": [0, 6]})
    ('swa+sink-64, layers 0,6 exact', 'swa+sink, layers 0,6 exact', 64, 'exact')
    >>> configuration({"method": "exact", "budget": 0, "decode": "sparse"})
    ('full attention', 'exact', 0, 'both')
    """
    from analysis.paper_tasks.summary import method_name

    method, budget, layers = attention["method"], attention["budget"], attention.get("exact_layers") or []
    if method == "exact":
        return "full attention", "exact", 0, "both"
    label = (f"{method}-{budget}" if budget else method) + (
        f", layers {','.join(map(str, sorted(layers)))} exact" if layers else ""
    )
    return label, method_name(method, layers), budget, attention["decode"]


def pareto_front(seconds, accuracy) -> np.ndarray:
    """Which points no other point dominates (at least as accurate and at most as slow, strictly better in one).

    Parameters
    ----------
    seconds, accuracy : array_like
        One value per point.

    Returns
    -------
    numpy.ndarray
        Boolean, per point.

    Examples
    --------
    >>> pareto_front([1.0, 2.0, 2.0, 3.0], [0.5, 0.7, 0.6, 0.7]).tolist()
    [True, True, False, False]
    """
    seconds, accuracy = np.asarray(seconds, dtype=float), np.asarray(accuracy, dtype=float)
    on = np.zeros(len(seconds), dtype=bool)
    best = -np.inf  # the best accuracy among strictly faster points
    for value in np.unique(seconds):
        group = np.flatnonzero(seconds == value)
        top = accuracy[group].max()
        if top > best:
            on[group[accuracy[group] == top]] = True
            best = top
    return on


def _relative(path: Path) -> str:
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def informative_tasks(full: dict, chance: dict) -> dict[str, bool]:
    """Whether each task is informative: the lower end of the 95% bootstrap interval of full attention's score above
    the task's chance level (:func:`analysis.paper_tasks.summary.task_rows`'s rule, on the same resamples).

    Parameters
    ----------
    full : dict
        ``{task: {doc_id: {seed: score}}}`` of full attention.
    chance : dict
        ``{task: chance level}``.

    Returns
    -------
    dict of str to bool
    """
    from analysis.paper_tasks.summary import bootstrap

    out = {}
    for task, docs in sorted(full.items()):
        low, _ = bootstrap(np.array([np.mean(list(docs[d].values())) for d in sorted(docs)]))
        out[task] = bool(low > chance[task])
    return out


def frontier(stores) -> dict:
    """Every configuration of the stores with its accuracy per informative task and mean, its seconds per item,
    and whether it is on its protocol's front.

    Parameters
    ----------
    stores : sequence of str or pathlib.Path
        Result stores of the harness; the first that holds full attention's rows decides the informative tasks.

    Returns
    -------
    dict
        ``stores``, ``informative_tasks``, ``chance`` (their mean chance level), ``full_attention``,
        ``configurations`` (one per configuration and protocol: ``label``, ``method``, ``budget``, ``protocol``,
        ``store``, ``seeds``, ``items``, ``accuracy``, ``mean``, ``seconds_per_item``, ``seconds_low``,
        ``seconds_high``, ``seconds_per_item_whole``, ``rows``, ``on_front``, ``on_front_whole``), ``front`` and
        ``front_whole`` (per protocol, the labels on it by seconds), ``incomplete`` (configurations lacking an
        informative task).

    Raises
    ------
    ValueError
        If no store holds full attention's rows, a record cannot be scored, or a configuration's seed on a task is
        in two stores.
    """
    from analysis.paper_tasks.summary import PRIMARY
    from gpu.harness.scoring import item_scores

    stores = [Path(s) for s in stores]
    scores: dict = {}  # (label, method, budget, protocol) -> task -> doc -> seed -> score
    times: dict = {}  # (label, method, budget, protocol) -> task -> [(per item and protocol, per item)]
    origin: dict = {}  # (config, task, seed) -> store
    chance: dict = {}  # store -> task -> doc -> chance
    for store in stores:
        for row in read_store(store):
            task = row["task"].partition(":")[0]
            records = sum(len(run["records"]) for run in row["runs"])
            items = records / len(row["runs"])
            for run in row["runs"]:
                config = configuration(run["attention"])
                seen = origin.setdefault((config, task, row["seed"]), store)
                if seen != store:
                    raise ValueError(
                        f"{config[0]} ({config[3]}) seed {row['seed']} on {task} is in both "
                        f"{_relative(seen)} and {_relative(store)}"
                    )
                times.setdefault(config, {}).setdefault(task, []).append(
                    (row["seconds"] / records, row["seconds"] / items)
                )
                if row.get("first", 0):
                    continue  # items past the fixed ones: timed, not scored
                docs = scores.setdefault(config, {}).setdefault(task, {})
                levels = chance.setdefault(store, {}).setdefault(task, {})
                for record in run["records"]:
                    try:
                        score = item_scores(record, row["kind"])[PRIMARY.get(task, "acc")]
                        levels[record["doc_id"]] = 0.0 if row["kind"] == "target" else 1 / len(record["choices"])
                    except (KeyError, TypeError, IndexError, ZeroDivisionError) as exc:
                        raise ValueError(f"{_relative(store)}: a record of {row['key']} lacks {exc}") from None
                    docs.setdefault(record["doc_id"], {})[row["seed"]] = score
    full = next((c for c in scores if c[3] == "both"), None)
    if full is None:
        raise ValueError(
            "no store holds full attention's rows (method exact) on fixed items, which decide the informative tasks"
        )
    reference = origin[next(k for k in origin if k[0] == full)]
    levels = {task: float(np.mean(list(docs.values()))) for task, docs in chance[reference].items()}
    informative = [t for t, on in informative_tasks(scores[full], levels).items() if on]
    if not informative:
        raise ValueError(f"no task of {_relative(reference)} is informative (full attention above chance)")
    fixed = {task: set(scores[full][task]) for task in informative}
    configurations, incomplete = [], []
    for config in sorted(scores, key=lambda c: (c[1] != "exact", c[1], c[2], c[3])):
        label, method, budget, protocol = config
        if any(not fixed[t] & set(scores[config].get(t, {})) for t in informative):
            if any(t in scores[config] for t in informative):
                incomplete.append(label + ("" if protocol == "both" else f" ({protocol} decode)"))
            continue
        accuracy, items, seeds = {}, {}, set()
        for task in informative:
            docs = sorted(fixed[task] & set(scores[config][task]))
            accuracy[task] = float(np.mean([np.mean(list(scores[config][task][d].values())) for d in docs]))
            items[task] = len(docs)
            seeds |= {s for d in docs for s in scores[config][task][d]}
        split = [np.array([t[0] for t in times[config][task]]) for task in informative]
        whole = [np.array([t[1] for t in times[config][task]]) for task in informative]
        stored = sorted({_relative(origin[key]) for key in origin if key[0] == config and key[1] in informative})
        entry = {
            "label": label,
            "method": method,
            "budget": budget,
            "store": ", ".join(stored),
            "seeds": sorted(seeds),
            "items": items,
            "accuracy": accuracy,
            "mean": float(np.mean(list(accuracy.values()))),
            "seconds_per_item": float(np.mean([np.median(s) for s in split])),
            "seconds_low": float(np.mean([s.min() for s in split])),
            "seconds_high": float(np.mean([s.max() for s in split])),
            "seconds_per_item_whole": float(np.mean([np.median(s) for s in whole])),
            "rows": int(sum(len(s) for s in split)),
        }
        for p in PROTOCOLS if protocol == "both" else (protocol,):
            configurations.append({**entry, "protocol": p})
    front, front_whole = {}, {}
    for p in PROTOCOLS:
        points = [c for c in configurations if c["protocol"] == p]
        accuracy = [c["mean"] for c in points]
        for key, names, seconds in (
            ("on_front", front, "seconds_per_item"),
            ("on_front_whole", front_whole, "seconds_per_item_whole"),
        ):
            for c, on in zip(points, pareto_front([c[seconds] for c in points], accuracy), strict=True):
                c[key] = bool(on)
            names[p] = [c["label"] for c in sorted(points, key=lambda c: (c[seconds], -c["mean"])) if c[key]]
    configurations.sort(key=lambda c: (PROTOCOLS.index(c["protocol"]), c["seconds_per_item"], c["label"]))
    exact = next(c for c in configurations if c["method"] == "exact")
    return {
        "stores": [_relative(s) for s in stores],
        "informative_tasks": informative,
        "chance": float(np.mean([levels[t] for t in informative])),
        "full_attention": {"mean": exact["mean"], "seconds_per_item": exact["seconds_per_item"]},
        "configurations": configurations,
        "front": front,
        "front_whole": front_whole,
        "incomplete": incomplete,
    }


def main(argv=None) -> int:
    """Write the frontier of the result stores.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0.
    """
    stores = default_stores()
    parser = OneLineErrorParser(
        prog="python -m analysis.frontier.frontier",
        description=__doc__.split("\n\n")[0],
        epilog="example: python -m analysis.frontier.frontier --stores "
        "analysis/paper_tasks/results/grid analysis/attention_profile/results/design "
        "--out analysis/frontier/results/frontier.json",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--stores",
        nargs="+",
        default=[_relative(s) for s in stores],
        help="result stores of python -m gpu.harness (folders holding tasks.jsonl); the default "
        "is the grid's, and the designed pattern's where it exists",
    )
    parser.add_argument(
        "--out", required=True, type=output_file("--out", suffixes=(".json",)), help="the JSON to write"
    )
    args = parser.parse_args(argv)
    paths = [ROOT / s if not Path(s).exists() and (ROOT / s).exists() else Path(s) for s in args.stores]
    for path in paths:
        if not (path / "tasks.jsonl").is_file():
            parser.error(f"--stores: no tasks.jsonl in {str(path)!r} (a store of python -m gpu.harness)")
    if len({p.resolve() for p in paths}) < len(paths):
        parser.error("--stores: a store is named twice")
    try:
        result = frontier(paths)
    except ValueError as exc:
        parser.error(f"--stores: {exc}")
    out = _relative(Path(args.out))
    command = f"python -m analysis.frontier.frontier --stores {' '.join(result['stores'])} --out {out}"
    write_atomic(args.out, json.dumps({"command": command} | result, indent=1) + "\n", option="--out")
    for protocol in PROTOCOLS:
        print(f"{protocol} decode, on the front: {', '.join(result['front'][protocol])}")
    return 0


if __name__ == "__main__":
    run_command(main)
