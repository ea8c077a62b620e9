"""Does coverage predict accuracy? (``python -m analysis.paper_tasks.reach``)

For every position-only configuration of the grid (method, keys per query, seed, exact layers) and a fixed sample of
each task's items, the graph measures of the same 30-layer stack at that item's context length
(:func:`analysis.paper_tasks.stack_reach.stack_reach`: 9 heads, SA's permutations over 8192 positions, the seeds the
model used), for the scored position (the context's last token, whose output predicts the answer's first token):

* ``full_layer``: the first layer after which it has heard from every context token (31: not within 30);
* ``reach_h``: the share of the context it hears from through at most h = 1, 2, 3 attention edges;
* ``reach_all``: the share it hears from after all 30 layers;
* ``mean_hops``: the mean least number of edges from a context token that reaches it.

Then, per protocol and informative task, the Spearman rank correlation across configurations between each measure
(signed so that more reach is larger) and the configuration's accuracy, with a 95% interval from resampling the
items (accuracies recomputed on each resample; the measures held). Pre-registered use: the measure that ranks best
on the search tasks (ARC-Easy, PIQA) is reported on the other tasks. MoBA and top-k choose keys by content: they have
no position-only stack and are left out; so is ``sa-band``, whose permutation is drawn over each context (its rows
have the exact decode only). An exact layer is a layer of every key, so a stack whose layer 0 is exact has heard
from the whole context after one layer.

References
----------
- Spearman (1904). The proof and measurement of association between two things. Am. J. Psychol. 15:72.
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
"""

from __future__ import annotations

import argparse
import json
import warnings
from functools import cache

import numpy as np
from scipy.stats import spearmanr

from graphs.cli_common import output_file, run_command, write_atomic
from receptive.cli_parser import OneLineErrorParser

from .summary import BOOTSTRAP, RESULTS, SEARCH_TASKS, item_lengths, item_table, method_name, store_rows, task_rows

#: measure -> sign that makes "more reach" larger
MEASURES = {"full_layer": -1, "reach_1": 1, "reach_2": 1, "reach_3": 1, "reach_all": 1, "mean_hops": -1}
LAYERS, HEADS, MAX_LENGTH = 30, 9, 8192


@cache
def _measures(method: str, budget: int, seed: int, n: int, exact_layers: tuple = ()) -> dict[str, float]:
    from analysis.paper_tasks.stack_reach import stack_reach

    if method == "exact":
        return {"full_layer": 1, "reach_1": 1.0, "reach_2": 1.0, "reach_3": 1.0, "reach_all": 1.0, "mean_hops": 1.0}
    name = "sa+swa-union" if method == "sa+swa" else method
    r = stack_reach(
        name, budget, n, layers=LAYERS, heads=HEADS, seed=seed, max_length=MAX_LENGTH, exact_layers=exact_layers
    )
    return {
        "full_layer": r.full_layer or LAYERS + 1,
        "reach_1": r.reach_share[1],
        "reach_2": r.reach_share[2],
        "reach_3": r.reach_share[3],
        "reach_all": r.reach_share_all,
        "mean_hops": r.mean_hops if r.mean_hops is not None else float(LAYERS + 1),
    }


def lengths(store, sample: int) -> dict[str, dict[int, int]]:
    """Per task, the context length of its first ``sample`` items (``{doc_id: tokens}``).

    Parameters
    ----------
    store : str or pathlib.Path
        The grid's result store.
    sample : int
        Items per task.

    Returns
    -------
    dict
    """
    return {
        task: {doc: tokens[0] for doc, tokens in sorted(items.items())[:sample]}
        for task, items in item_lengths(store).items()
    }


def measure_rows(store, sample: int = 25) -> list[dict]:
    """The stack measures per (method, budget, seed, task), averaged over the task's sampled items.

    Parameters
    ----------
    store : str or pathlib.Path
        The grid's result store.
    sample : int, default 25
        Items per task.

    Returns
    -------
    list of dict
    """
    from analysis.paper_tasks.stack_reach import STACK_METHODS

    configs = set()
    for row in store_rows(store):
        if row["method"] in STACK_METHODS or row["method"] == "sa+swa":
            configs.add((row["method"], row["budget"], row["seed"], tuple(row["exact_layers"])))
    rows = []
    for task, items in sorted(lengths(store, sample).items()):
        for method, budget, seed, layers in sorted(configs):
            values = [_measures(method, budget, seed, n, layers) for n in items.values()]
            means = {m: float(np.mean([v[m] for v in values])) for m in MEASURES}
            rows.append(
                {
                    "method": method_name(method, layers),
                    "budget": budget,
                    "seed": seed,
                    "task": task,
                    "items": len(values),
                }
                | means
            )
    return rows


def correlations(store, measures: list[dict]) -> list[dict]:
    """Per (protocol, informative task, measure): Spearman's rho across configurations and its 95% interval.

    Parameters
    ----------
    store : str or pathlib.Path
        The grid's result store.
    measures : list of dict
        :func:`measure_rows`.

    Returns
    -------
    list of dict
    """
    table = item_table(store)
    informative = [t["task"] for t in task_rows(store) if t["informative"]]
    by_config: dict = {}
    for row in measures:  # seeds pooled, as the accuracies are
        by_config.setdefault((row["method"], row["budget"], row["task"]), []).append(row)
    rng = np.random.default_rng(0)
    out = []
    for decode in ("sparse", "exact"):
        for task in informative:
            configs = [
                (m, b)
                for (m, b, t) in by_config
                if t == task and (m, b, decode) in table and task in table[m, b, decode]
            ]
            configs += [("exact", 0)] if ("exact", 0, "sparse") in table else []
            if len(configs) < 4:
                continue
            docs = sorted(set.intersection(*(set(table[_key(m, b, decode)][task]) for m, b in configs)))
            scores = np.array([[np.mean(table[_key(m, b, decode)][task][d]) for d in docs] for m, b in configs])
            resamples = rng.integers(0, len(docs), (BOOTSTRAP, len(docs)))
            for name, sign in MEASURES.items():
                x = np.array([sign * _pooled(by_config, m, b, task, name) for m, b in configs])
                row = {
                    "decode": decode,
                    "task": task,
                    "measure": name,
                    "configurations": len(configs),
                    "items": len(docs),
                    "role": "search" if task in SEARCH_TASKS else "test",
                }
                if np.ptp(x) == 0:  # the measure does not tell these configurations apart
                    out.append(row | {"rho": None, "rho_low": None, "rho_high": None})
                    continue
                with warnings.catch_warnings():  # a resample whose accuracies tie everywhere has no rank order
                    warnings.simplefilter("ignore")
                    rho = float(spearmanr(x, scores.mean(1)).statistic)
                    boot = [spearmanr(x, scores[:, r].mean(1)).statistic for r in resamples]
                    low, high = np.nanpercentile(boot, [2.5, 97.5])
                out.append(row | {"rho": rho, "rho_low": float(low), "rho_high": float(high)})
    return out


def _key(method, budget, decode):
    return ("exact", 0, "sparse") if method == "exact" else (method, budget, decode)


def _pooled(by_config, method, budget, task, name):
    if method == "exact":
        return _measures("exact", 0, 0, 2)[name]
    return float(np.mean([row[name] for row in by_config[method, budget, task]]))


def chosen_measure(rows: list[dict]) -> dict[str, str]:
    """Per protocol, the measure with the highest mean rho over the search tasks (the pre-registered choice).

    Parameters
    ----------
    rows : list of dict
        :func:`correlations`.

    Returns
    -------
    dict of str to str

    Examples
    --------
    >>> chosen_measure([{"decode": "exact", "role": "search", "measure": "reach_1", "rho": 0.5},
    ...                 {"decode": "exact", "role": "search", "measure": "reach_2", "rho": 0.7}])
    {'exact': 'reach_2'}
    """
    means: dict = {}
    for row in rows:
        if row["role"] == "search" and row["rho"] is not None and np.isfinite(row["rho"]):
            means.setdefault(row["decode"], {}).setdefault(row["measure"], []).append(row["rho"])
    return {decode: max(m, key=lambda k: np.mean(m[k])) for decode, m in means.items()}


def main(argv=None) -> int:
    """Write the measures and their rank correlations with accuracy.

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
        prog="python -m analysis.paper_tasks.reach",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--store", default=str(RESULTS / "grid"), help="the grid's result store")
    parser.add_argument("--sample", type=int, default=25, help="items per task whose lengths the measures use")
    parser.add_argument("--out", required=True, type=output_file("--out"), help="the JSON to write")
    args = parser.parse_args(argv)
    if args.sample < 1:
        parser.error(f"--sample: expected an integer >= 1, got {args.sample}")
    try:  # the whole store checked before any work
        store_rows(args.store, more=True, option="--store")
    except ValueError as exc:
        parser.error(str(exc))
    measures = measure_rows(args.store, args.sample)
    rows = correlations(args.store, measures)
    chosen = chosen_measure(rows)
    result = {
        "command": f"python -m analysis.paper_tasks.reach --sample {args.sample} --out {args.out}",
        "measures": measures,
        "correlations": rows,
        "chosen": chosen,
    }
    write_atomic(args.out, json.dumps(result, indent=1) + "\n", option="--out")
    for row in rows:
        if row["measure"] == chosen.get(row["decode"]) and row["rho"] is not None:
            interval = f"[{row['rho_low']:+.2f}, {row['rho_high']:+.2f}]"
            print(
                f"{row['decode']:6} {row['task']:10} {row['role']:6} {row['measure']:10} rho {row['rho']:+.2f} "
                f"{interval} over {row['configurations']} configurations"
            )
    return 0


if __name__ == "__main__":
    run_command(main)
