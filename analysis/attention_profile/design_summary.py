"""The designed plan's scores beside SWA + sink and full attention on the same items
(``python -m analysis.attention_profile.design_summary``).

Per protocol and informative task: the plan's primary score (each item's score averaged over the plan's seeds), the
grid's ``swa+sink`` at the plan's budget and full attention on the same fixed items, and the paired differences with
95% bootstrap intervals over items; the informative average with an interval from resampling each task's items.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from analysis.attention_profile.design import GRID, REFERENCE, TASKS
from analysis.paper_tasks.summary import BOOTSTRAP, PRIMARY, bootstrap, item_table, store_rows
from graphs.cli_common import output_file, run_command, write_atomic
from receptive.cli_parser import OneLineErrorParser

DECODES = ("sparse", "exact")


def plan_table(store) -> dict:
    """``{decode: {task: {doc_id: [per-seed primary scores]}}}`` from the design's store.

    Parameters
    ----------
    store : str or pathlib.Path
        The folder of ``tasks.jsonl`` written by :func:`analysis.attention_profile.design.score`.

    Returns
    -------
    dict
    """
    from gpu.harness.scoring import item_scores
    from receptive.sweep import ResultStore

    table: dict = {}
    for row in ResultStore(store, resume=True).results():
        if not {"runs", "task", "kind"} <= row.keys():
            raise ValueError(f"--store: {store} holds a row that is not a scored task (no runs, task, kind)")
        for run in row["runs"]:
            decode = run["attention"]["decode"]
            for record in run["records"]:
                value = item_scores(record, row["kind"])[PRIMARY.get(row["task"], "acc")]
                table.setdefault(decode, {}).setdefault(row["task"], {}).setdefault(record["doc_id"], []).append(value)
    return table


def _scores(items: dict, docs) -> np.ndarray:
    return np.array([np.mean(items[d]) for d in docs])


def average_interval(pairs: list[tuple[np.ndarray, np.ndarray]], seed: int = 0) -> tuple[float, float]:
    """95% interval of the mean over tasks of each task's paired mean difference, each task's items resampled.

    Parameters
    ----------
    pairs : list of (numpy.ndarray, numpy.ndarray)
        Per task, the two scores on the same items.
    seed : int, default 0

    Returns
    -------
    tuple of float

    Examples
    --------
    >>> low, high = average_interval([(np.ones(50), np.zeros(50)), (np.zeros(50), np.zeros(50))])
    >>> low == high == 0.5
    True
    """
    rng = np.random.default_rng(seed)
    draws = np.zeros(BOOTSTRAP)
    for mine, theirs in pairs:
        diff = mine - theirs
        draws += diff[rng.integers(0, len(diff), (BOOTSTRAP, len(diff)))].mean(1)
    draws /= len(pairs)
    return float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))


def summary(store, budget: int, grid=GRID, tasks=TASKS) -> dict:
    """Per protocol, per task and averaged: the plan against ``swa+sink`` at ``budget`` and full attention.

    Parameters
    ----------
    store : str or pathlib.Path
        The design's store.
    budget : int
        The reference's keys per query.
    grid : str or pathlib.Path, default :data:`GRID`
    tasks : sequence of str, default :data:`TASKS`

    Returns
    -------
    dict
        ``rows`` (per protocol and task, and ``average``), ``seeds``.
    """
    plan = plan_table(store)
    table = item_table(grid)
    exact = table[("exact", 0, "sparse")]
    rows = []
    for decode in DECODES:
        if decode not in plan:
            continue
        reference = table.get((REFERENCE, budget, decode), {})
        pairs = {"reference": [], "exact": []}
        means = {"plan": [], "reference": [], "exact": []}
        for task in tasks:
            mine = plan[decode].get(task)
            if not mine or task not in reference or task not in exact:
                continue
            docs = sorted(set(mine) & set(reference[task]) & set(exact[task]))
            scores = {
                "plan": _scores(mine, docs),
                "reference": _scores(reference[task], docs),
                "exact": _scores(exact[task], docs),
            }
            row = {"decode": decode, "task": task, "items": len(docs), "seeds": min(len(mine[d]) for d in docs)}
            for name, values in scores.items():
                row[name] = float(values.mean())
                means[name].append(float(values.mean()))
            for other in ("reference", "exact"):
                low, high = bootstrap(scores["plan"] - scores[other])
                row |= {
                    f"minus_{other}": row["plan"] - row[other],
                    f"minus_{other}_low": low,
                    f"minus_{other}_high": high,
                }
                pairs[other].append((scores["plan"], scores[other]))
            rows.append(row)
        if len(means["plan"]) == len(tasks):
            row = {"decode": decode, "task": "average"} | {k: float(np.mean(v)) for k, v in means.items()}
            for other in ("reference", "exact"):
                low, high = average_interval(pairs[other])
                row |= {
                    f"minus_{other}": row["plan"] - row[other],
                    f"minus_{other}_low": low,
                    f"minus_{other}_high": high,
                }
            rows.append(row)
    return {"budget": budget, "reference": REFERENCE, "rows": rows}


def sa_against_window(plan_data: dict) -> list[dict]:
    """Per SA candidate: in how many heads its keys hold more of the scored position's mass than the window with
    the sink at the same keys per query, and both means, from the design's calibration recall.

    Parameters
    ----------
    plan_data : dict
        The design's ``plan_<budget>.json`` (its ``recall``: candidate label -> layers x heads).

    Returns
    -------
    list of dict

    Examples
    --------
    >>> recall = {"sa+sink-8": [[0.5, 0.9]], "swa+sink-8": [[0.6, 0.8]]}
    >>> sa_against_window({"recall": recall})[0]["heads_above"]
    1
    """
    recall = {k: np.asarray(v) for k, v in plan_data["recall"].items()}
    rows = []
    for label, values in recall.items():
        method, _, budget = label.rpartition("-")
        window = recall.get(f"{REFERENCE}-{budget}")
        if "sa" not in method.split("+") or window is None:
            continue
        rows.append(
            {
                "candidate": label,
                "window": f"{REFERENCE}-{budget}",
                "heads": int(values.size),
                "heads_above": int((values > window).sum()),
                "recall": float(values.mean()),
                "window_recall": float(window.mean()),
            }
        )
    return rows


def main(argv=None) -> int:
    """Write the summary JSON and print its table.

    Parameters
    ----------
    argv : list of str, optional

    Returns
    -------
    int
        0.
    """
    parser = OneLineErrorParser(
        prog="python -m analysis.attention_profile.design_summary",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--store", required=True, help="the design's folder (tasks.jsonl)")
    parser.add_argument("--budget", type=int, default=64, help="the reference's keys per query")
    parser.add_argument("--grid", default=str(GRID), help="the grid's store")
    parser.add_argument("--plan", default=None, help="the design's plan_<budget>.json (default: in --store)")
    parser.add_argument("--out", required=True, type=output_file("--out", suffixes=(".json",)), help="the JSON")
    args = parser.parse_args(argv)
    for flag, folder in (("--store", args.store), ("--grid", args.grid)):
        if not (Path(folder) / "tasks.jsonl").is_file():
            parser.error(f"{flag}: no tasks.jsonl in {folder!r}")
    try:
        store_rows(args.grid, option="--grid")
    except ValueError as exc:
        parser.error(str(exc))
    if not 1 <= args.budget <= 4096:
        parser.error(f"--budget: expected an integer in [1, 4096], got {args.budget}")
    plan_path = Path(args.plan or Path(args.store) / f"plan_{args.budget}.json")
    try:
        plan_data = json.loads(plan_path.read_text())
        if not isinstance(plan_data, dict) or not {"recall", "keys", "choices", "plan"} <= plan_data.keys():
            raise ValueError("not a design's plan file (recall, keys, choices, plan)")
    except (OSError, ValueError) as exc:
        parser.error(f"--plan: {plan_path}: {getattr(exc, 'strerror', None) or exc}")
    try:
        result = summary(args.store, args.budget, args.grid)
    except ValueError as exc:
        parser.error(str(exc))
    result |= {
        "plan": plan_data["label"],
        "keys": plan_data["keys"],
        "choices": plan_data["choices"],
        "sa_against_window": sa_against_window(plan_data),
    }
    command = (
        f"python -m analysis.attention_profile.design_summary --store {args.store} --budget {args.budget} "
        f"--out {args.out}"
    )
    write_atomic(args.out, json.dumps(result | {"command": command}, indent=1) + "\n", option="--out")
    print(f"{'protocol':8} {'task':10} {'plan':>6} {REFERENCE:>9} {'exact':>6}  plan - ref [95%]        plan - exact")
    for r in result["rows"]:
        print(
            f"{r['decode']:8} {r['task']:10} {100 * r['plan']:6.1f} {100 * r['reference']:9.1f} "
            f"{100 * r['exact']:6.1f}  {100 * r['minus_reference']:+5.1f} [{100 * r['minus_reference_low']:+.1f}, "
            f"{100 * r['minus_reference_high']:+.1f}]  {100 * r['minus_exact']:+5.1f} "
            f"[{100 * r['minus_exact_low']:+.1f}, {100 * r['minus_exact_high']:+.1f}]"
        )
    return 0


if __name__ == "__main__":
    run_command(main)
