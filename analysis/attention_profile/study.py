"""The attention profile of every configuration of the paper-task grid (``python -m analysis.attention_profile.study``).

For each informative task, the gold contexts of the first ``--items`` of the grid's fixed items (the harness's tokens,
the scored position the context's last token) run through SmolLM2-135M-Instruct once exactly, and every generation-form
configuration of the grid (method, keys per query, exact layers; seed 0) is measured on them
(:func:`gpu.profile.measures.attention_profile`): mass recall, output error and rollout overlap from the exact forward;
the end-to-end KL, which needs the pattern's own forward, on the first ``--kl-items``. The result keeps each measure per
configuration and item (for the bootstrap of ``predict.py``), where the exact mass goes per layer and head, what the
headline patterns' keys hold of it per layer and head, and the seconds each part took.

References
----------
- Abnar & Zuidema (2020). Quantifying attention flow in transformers. ACL, arXiv 2005.00928.
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from gpu.profile.measures import MEASURES
from graphs.cli_common import output_file, run_command, write_atomic
from receptive.cli_parser import OneLineErrorParser, add_progress_option

GRID = Path(__file__).parent.parent / "paper_tasks" / "results" / "grid"
TASKS = ("arc_easy", "hellaswag", "piqa", "lambada")
#: The configurations whose per-layer-and-head recall the findings page shows.
HEADLINE = (("swa", 64), ("swa+sink", 64), ("sa", 64), ("sa-ms", 64), ("top-k", 64), ("moba", 64))


def grid_patterns(store, seeds=(0,)) -> list:
    """Every generation-form configuration of the grid's store, one :class:`gpu.profile.ProfilePattern` per seed.

    Parameters
    ----------
    store : str or pathlib.Path
        The grid's result store (``tasks.jsonl``).
    seeds : collection of int or None, default (0,)
        The seeds to keep; ``None``: every seed the grid ran.

    Returns
    -------
    list of gpu.profile.measures.ProfilePattern
        Sorted by label.
    """
    from gpu.attention.generation_patterns import GENERATION_METHODS
    from gpu.profile.measures import ProfilePattern
    from receptive.sweep import ResultStore

    seen = set()
    for row in ResultStore(store, resume=True).results():
        if row["method"] in GENERATION_METHODS and (seeds is None or row["seed"] in seeds):
            seen.add((row["method"], row["budget"], row["seed"], tuple(row["exact_layers"])))
    return sorted({ProfilePattern(*config) for config in seen}, key=lambda p: p.label)


def run(store, items: int, kl_items: int, tasks=TASKS, progress: bool | None = None, checkpoint=None) -> dict:
    """Profile every configuration of the grid on each task's first items.

    Parameters
    ----------
    store : str or pathlib.Path
        The grid's result store.
    items : int
        Texts per task for the exact-forward measures.
    kl_items : int
        Texts per task (the first of them) for the KL.
    tasks : sequence of str, default :data:`TASKS`
        The tasks.
    progress : bool or None, default None
        Progress bars.
    checkpoint : callable, optional
        ``checkpoint(result)`` after each task (the result so far).

    Returns
    -------
    dict
        ``patterns`` (labels), per task ``items`` (doc ids), ``measures`` (per label and measure, per item),
        ``regions`` (layer x head x region), ``headline_recall`` (label -> layer x head), ``seconds``.
    """
    import torch

    from gpu.harness.tasks import load_task
    from gpu.hf.checkpoints import smollm2_gguf
    from gpu.hf.models import load_causal_lm
    from gpu.profile.cli import task_contexts
    from gpu.profile.measures import attention_profile

    patterns = grid_patterns(store)
    model, tokenizer = load_causal_lm(smollm2_gguf())
    result = {"patterns": [p.label for p in patterns], "tasks": {}, "threads": torch.get_num_threads()}
    headline = [p for p in patterns if (p.method, p.budget) in HEADLINE and p.seed == 0 and not p.exact_layers]
    for task in tasks:
        loaded = load_task(task, 200)[:items]
        ids = task_contexts(tokenizer, loaded)
        start = time.perf_counter()
        with_kl = ids[:kl_items] and attention_profile(model, ids[:kl_items], patterns, progress=progress)
        seconds_kl = time.perf_counter() - start
        start = time.perf_counter()
        rest = (
            attention_profile(model, ids[kl_items:], patterns, kl=False, progress=progress)
            if items > kl_items
            else None
        )
        seconds_rest = time.perf_counter() - start
        parts = [p for p in (with_kl, rest) if p]
        measures = {label: {m: [] for m in MEASURES} for label in result["patterns"]}
        for part in parts:
            for label, values in part.per_text().items():
                for m in MEASURES:
                    measures[label][m] += [round(x, 7) for x in values[m]] if m != "kl" or part is with_kl else []
        texts = [t for part in parts for t in part.texts]
        recall = np.mean([t.recall.mean(3) for t in texts], axis=0)
        result["tasks"][task] = {
            "items": [item.doc_id for item in loaded],
            "tokens": [len(x) for x in ids],
            "measures": measures,
            "regions": np.mean([t.regions.mean(2) for t in texts], axis=0).round(6).tolist(),
            "region_names": list(parts[0].regions),
            "headline_recall": {p.label: recall[patterns.index(p)].round(6).tolist() for p in headline},
            "seconds": {
                "exact_forward_measures": sum(p.seconds["forward"] for p in parts),
                "kl_only": with_kl.seconds["kl"] if with_kl else 0.0,
                "with_kl": seconds_kl,
                "without_kl": seconds_rest,
                "texts": len(ids),
                "kl_texts": len(ids[:kl_items]),
            },
        }
        if checkpoint is not None:
            checkpoint(result)
    return result


def main(argv=None) -> int:
    """Write the profile of the grid's configurations.

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
        prog="python -m analysis.attention_profile.study",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--store", default=str(GRID), help="the grid's result store")
    parser.add_argument("--items", type=int, default=8, help="texts per task for the exact-forward measures")
    parser.add_argument("--kl-items", type=int, default=4, help="texts per task for the KL (the first of them)")
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated tasks")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (one is faster on a shared machine)")
    parser.add_argument("--out", required=True, type=output_file("--out", suffixes=(".json",)), help="the JSON")
    add_progress_option(parser, "--quiet")
    args = parser.parse_args(argv)
    if not 1 <= args.items <= 200:
        parser.error(f"--items: expected an integer in [1, 200], got {args.items}")
    if not 0 <= args.kl_items <= args.items:
        parser.error(f"--kl-items: expected an integer in [0, --items = {args.items}], got {args.kl_items}")
    if args.threads < 1:
        parser.error(f"--threads: expected an integer >= 1, got {args.threads}")
    if not (Path(args.store) / "tasks.jsonl").is_file():
        parser.error(f"--store: no tasks.jsonl in {args.store!r} (python -m analysis.paper_tasks.study writes it)")
    tasks = [t for t in args.tasks.split(",") if t]
    unknown = sorted(set(tasks) - set(TASKS))
    if unknown or not tasks:
        parser.error(f"--tasks: expected names from {', '.join(TASKS)}, got {args.tasks!r}")
    from gpu.attention.threads import set_threads

    set_threads(args.threads)
    command = (
        f"python -m analysis.attention_profile.study --items {args.items} --kl-items {args.kl_items} "
        f"--tasks {','.join(tasks)} --out {args.out}"
    )

    def write(result):  # after every task: a stopped run keeps the tasks it finished
        text = json.dumps(result | {"command": command}, indent=None, separators=(",", ":")) + "\n"
        write_atomic(args.out, text, option="--out")

    result = run(
        args.store, args.items, args.kl_items, tasks, progress=False if args.no_progress else None, checkpoint=write
    )
    for task, data in result["tasks"].items():
        seconds = data["seconds"]
        print(
            f"{task:10} {seconds['texts']} texts: exact-forward measures {seconds['exact_forward_measures']:.0f} s, "
            f"KL of {seconds['kl_texts']} texts {seconds['kl_only']:.0f} s"
        )
    return 0


if __name__ == "__main__":
    run_command(main)
