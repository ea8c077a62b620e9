"""Whether the attention profile ranks the grid's configurations by accuracy (the predict command).

The pre-registered test of the study's README: per protocol and informative task, Spearman's rho across the grid's
configurations between each measure (the profile's, from ``results/profile.json``, and the committed reach
measures, from ``analysis/paper_tasks/results/reach.json``; each signed so that larger is closer to exact attention)
and the configuration's accuracy on the task's fixed items; 95% intervals from bootstrap resamples of the
configurations, the accuracy's items and the profile's items together. The measure with the highest mean rho over the
search tasks (ARC-Easy, PIQA) is chosen per protocol and reported on the held-out tasks (HellaSwag, LAMBADA).

Seeds are pooled as the grid pools them: a configuration's measure is its seeds' mean per item, its accuracy the
seeds' mean per item. Each measure is ranked over the configurations it has (the reach measures have no MoBA and
top-k rows); the profile's measures are also ranked over the reach measures' configurations (``subset: "reach"``),
so the two families can be compared on the same rows.

References
----------
- Spearman (1904). The proof and measurement of association between two things. Am. J. Psychol. 15:72.
- Efron & Tibshirani (1993). An introduction to the bootstrap. Chapman & Hall.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from analysis.paper_tasks.reach import MEASURES as REACH_MEASURES
from analysis.paper_tasks.summary import BOOTSTRAP, SEARCH_TASKS, configuration, item_table, store_rows
from graphs.cli_common import output_file, run_command, write_atomic
from receptive.cli_parser import OneLineErrorParser

RESULTS = Path(__file__).parent / "results"
PAPER_RESULTS = Path(__file__).parent.parent / "paper_tasks" / "results"
#: The profile's measures, signed so that larger is closer to exact attention.
PROFILE_MEASURES = {"recall": 1, "recall_scored": 1, "error": -1, "error_scored": -1, "overlap": 1, "kl": -1}
HELD_OUT = ("hellaswag", "lambada")


def profile_values(profile: dict) -> dict:
    """``{(method, budget): {task: {measure: (seeds x items) array}}}`` from the study's result.

    Parameters
    ----------
    profile : dict
        ``results/profile.json``.

    Returns
    -------
    dict
    """
    out: dict = {}
    for task, data in profile["tasks"].items():
        for label, measures in data["measures"].items():
            method, budget, _ = configuration(label)
            per = out.setdefault((method, budget), {}).setdefault(task, {})
            for name, values in measures.items():
                per.setdefault(name, []).append(values)
    return {c: {t: {m: np.array(v) for m, v in ms.items()} for t, ms in tasks.items()} for c, tasks in out.items()}


def reach_values(reach: dict) -> dict:
    """``{(method, budget): {task: {measure: value}}}``, seeds pooled, from the committed ``reach.json``.

    Parameters
    ----------
    reach : dict
        ``analysis/paper_tasks/results/reach.json``.

    Returns
    -------
    dict
    """
    pooled: dict = {}
    for row in reach["measures"]:
        per = pooled.setdefault((row["method"], row["budget"]), {}).setdefault(row["task"], {})
        for name in REACH_MEASURES:
            per.setdefault(name, []).append(row[name])
    return {c: {t: {m: float(np.mean(v)) for m, v in ms.items()} for t, ms in ts.items()} for c, ts in pooled.items()}


def _key(config, decode):
    return ("exact", 0, "sparse") if config[0] == "exact" else (*config, decode)


def _rho(x, y) -> float:
    with warnings.catch_warnings():  # a resample whose values tie everywhere has no rank order
        warnings.simplefilter("ignore")
        return float(spearmanr(x, y).statistic)


def correlations(table: dict, profile: dict, reach: dict, tasks, seed: int = 0) -> list[dict]:
    """Per (protocol, task, measure, configuration set): rho and its 95% bootstrap interval.

    Parameters
    ----------
    table : dict
        :func:`analysis.paper_tasks.summary.item_table` of the grid.
    profile : dict
        :func:`profile_values`.
    reach : dict
        :func:`reach_values`.
    tasks : sequence of str
        The informative tasks.
    seed : int, default 0
        The bootstrap's seed.

    Returns
    -------
    list of dict
    """
    rng = np.random.default_rng(seed)
    rows = []
    for decode in ("sparse", "exact"):
        for task in tasks:
            have = [
                c for c in profile if task in profile[c] and _key(c, decode) in table and task in table[_key(c, decode)]
            ]
            docs = sorted(set.intersection(*(set(table[_key(c, decode)][task]) for c in have)))
            accuracy = np.array([[np.mean(table[_key(c, decode)][task][d]) for d in docs] for c in have])
            reach_set = [c for c in have if c in reach and task in reach[c]]
            families = [(name, sign, "all", have) for name, sign in PROFILE_MEASURES.items()]
            families += [(name, sign, "reach", reach_set) for name, sign in PROFILE_MEASURES.items()]
            families += [(name, sign, "reach", reach_set) for name, sign in REACH_MEASURES.items()]
            draws = BOOTSTRAP
            item_draws = rng.integers(0, len(docs), (draws, len(docs)))
            config_draws = {
                len(have): rng.integers(0, len(have), (draws, len(have))),
                len(reach_set): rng.integers(0, len(reach_set), (draws, len(reach_set))),
            }
            for name, sign, subset, configs in families:
                rows_of = [have.index(c) for c in configs]
                y = accuracy[rows_of]
                if name in PROFILE_MEASURES:
                    per_item = np.array([sign * profile[c][task][name].mean(0) for c in configs])  # (configs, items)
                    profile_draws = rng.integers(0, per_item.shape[1], (draws, per_item.shape[1]))
                    x = per_item.mean(1)
                    boot_x = [per_item[:, p].mean(1) for p in profile_draws]
                else:
                    x = np.array([sign * reach[c][task][name] for c in configs])
                    boot_x = [x] * draws
                row = {
                    "decode": decode,
                    "task": task,
                    "measure": name,
                    "subset": subset,
                    "family": "profile" if name in PROFILE_MEASURES else "reach",
                    "configurations": len(configs),
                    "items": len(docs),
                    "role": "search" if task in SEARCH_TASKS else "test",
                }
                if np.ptp(x) == 0:
                    rows.append(row | {"rho": None, "rho_low": None, "rho_high": None})
                    continue
                boot = []
                for r in range(draws):
                    pick = config_draws[len(configs)][r]
                    boot.append(_rho(boot_x[r][pick], y[pick][:, item_draws[r]].mean(1)))
                low, high = np.nanpercentile(boot, [2.5, 97.5])
                rows.append(row | {"rho": _rho(x, y.mean(1)), "rho_low": float(low), "rho_high": float(high)})
    return rows


def accuracies(table: dict, configs, tasks) -> dict:
    """``{decode: {task: [[method, budget, accuracy], ...]}}``: each configuration's accuracy, seeds pooled.

    Parameters
    ----------
    table : dict
        :func:`analysis.paper_tasks.summary.item_table` of the grid.
    configs : iterable of tuple
        ``(method, budget)`` configurations.
    tasks : sequence of str
        The tasks.

    Returns
    -------
    dict
    """
    out: dict = {}
    for decode in ("sparse", "exact"):
        for task in tasks:
            rows = out.setdefault(decode, {}).setdefault(task, [])
            for config in sorted(configs):
                items = table.get(_key(config, decode), {}).get(task)
                if items:
                    rows.append([*config, float(np.mean([np.mean(v) for v in items.values()]))])
    return out


def chosen(rows: list[dict], family: str | None = None) -> dict[str, str]:
    """Per protocol, the measure (over all its configurations) with the highest mean rho on the search tasks.

    Parameters
    ----------
    rows : list of dict
        :func:`correlations`.
    family : {"profile", "reach"} or None, default None
        Choose within one family only; ``None``: among every measure.

    Returns
    -------
    dict of str to str

    Examples
    --------
    >>> rows = [{"decode": "exact", "role": "search", "measure": m, "rho": r, "subset": "all", "family": "profile"}
    ...         for m, r in (("recall", 0.5), ("kl", 0.7))]
    >>> chosen(rows)
    {'exact': 'kl'}
    """
    means: dict = {}
    for row in rows:
        own_set = row["subset"] == "all" or row["family"] == "reach"
        if row["role"] == "search" and own_set and row["rho"] is not None and (family in (None, row["family"])):
            means.setdefault(row["decode"], {}).setdefault(row["measure"], []).append(row["rho"])
    return {decode: max(m, key=lambda k: np.mean(m[k])) for decode, m in means.items()}


def costs(profile: dict) -> dict[str, float]:
    """Seconds per text: every exact-forward measure together, and the KL of every configuration.

    Parameters
    ----------
    profile : dict
        ``results/profile.json``.

    Returns
    -------
    dict of str to float
    """
    seconds = [t["seconds"] for t in profile["tasks"].values()]
    patterns = len(profile["patterns"])
    exact = sum(s["exact_forward_measures"] for s in seconds) / sum(s["texts"] for s in seconds)
    kl = sum(s["kl_only"] for s in seconds) / max(1, sum(s["kl_texts"] for s in seconds))
    return {
        "exact_forward_measures_per_text": exact,
        "kl_per_text": kl,
        "kl_per_text_and_configuration": kl / patterns,
        "configurations": patterns,
    }


def read_result(parser, flag: str, path, key: str) -> dict:
    """A result file's JSON, or a one-line refusal naming ``flag`` when it is unreadable or lacks ``key``.

    Parameters
    ----------
    parser : receptive.cli_parser.OneLineErrorParser
        The command's parser (its ``error`` exits with status 2).
    flag : str
        The flag that named the file.
    path : str or pathlib.Path
        The file.
    key : str
        A key the file's command always writes.

    Returns
    -------
    dict

    Examples
    --------
    >>> parser = OneLineErrorParser(prog="demo")
    >>> read_result(parser, "--profile", "/no/such.json", "tasks")
    Traceback (most recent call last):
    ...
    SystemExit: 2
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        parser.error(f"{flag}: cannot read {str(path)!r} as JSON ({type(error).__name__})")
    if not isinstance(data, dict) or key not in data:
        parser.error(f"{flag}: {str(path)!r} has no {key!r} (expected the file its command writes)")
    return data


def main(argv=None) -> int:
    """Write the rank correlations, the choice and the held-out report.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0.
    """
    parser = OneLineErrorParser(
        prog="python -m analysis.attention_profile.predict",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--profile", default=str(RESULTS / "profile.json"), help="the study's profile")
    parser.add_argument("--store", default=str(PAPER_RESULTS / "grid"), help="the grid's result store")
    parser.add_argument("--reach", default=str(PAPER_RESULTS / "reach.json"), help="the committed reach measures")
    parser.add_argument("--out", required=True, type=output_file("--out", suffixes=(".json",)), help="the JSON")
    args = parser.parse_args(argv)
    loaded = {
        flag: read_result(parser, flag, path, key)
        for flag, path, key in (("--profile", args.profile, "tasks"), ("--reach", args.reach, "measures"))
    }
    if not (Path(args.store) / "tasks.jsonl").is_file():
        parser.error(f"--store: no tasks.jsonl in {args.store!r}")
    profile = loaded["--profile"]
    try:
        store_rows(args.store, option="--store")
    except ValueError as exc:
        parser.error(str(exc))
    table = item_table(args.store)
    tasks = [t for t in profile["tasks"] if t in {"arc_easy", "piqa", *HELD_OUT}]
    values = profile_values(profile)
    rows = correlations(table, values, reach_values(loaded["--reach"]), tasks)
    choice = {"any": chosen(rows), "profile": chosen(rows, "profile"), "reach": chosen(rows, "reach")}
    report = [
        row
        for row in rows
        if row["task"] in HELD_OUT and any(row["measure"] == c.get(row["decode"]) for c in choice.values())
    ]
    result = {
        "command": f"python -m analysis.attention_profile.predict --out {args.out}",
        "correlations": rows,
        "chosen": choice,
        "held_out": report,
        "seconds": costs(profile),
        "accuracy": accuracies(table, values, tasks),
    }
    write_atomic(args.out, json.dumps(result, indent=1) + "\n", option="--out")
    for row in report:
        if (row["subset"] == "all" or row["family"] == "reach") and row["rho"] is not None:
            print(
                f"{row['decode']:6} {row['task']:10} {row['measure']:14} ({row['family']}) rho {row['rho']:+.2f} "
                f"[{row['rho_low']:+.2f}, {row['rho_high']:+.2f}] over {row['configurations']} configurations"
            )
    return 0


if __name__ == "__main__":
    run_command(main)
