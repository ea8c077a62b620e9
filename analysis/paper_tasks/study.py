"""The SA paper's own tasks on SmolLM2-135M-Instruct (``python -m analysis.paper_tasks.study``): the grid of
attention patterns x keys per query x protocols x OLMES tasks, run through :mod:`gpu.harness.scoring` in tiers, most
important first, into one resumable result store.

Tiers (each a run of ``python -m gpu.harness`` on the same ``--out``; an interrupted study resumes where it
stopped), every sparse row under both protocols (the pattern everywhere; the pattern over the context and exact
attention for the continuation) and at m = 64 and 32 keys per query unless said otherwise:

1. ``exact``: full attention (SDPA), each task's reference;
2. ``headline``: swa, sa, swa+sink, moba, sa+swa-union (seed 0);
3. ``search``: the pre-registered search for an SA-based pattern that beats SWA + sink and MoBA, on the search
   tasks (ARC-Easy, PIQA) only: sa+sink and swa+sink+sa (sa+swa-union comes from ``headline``);
4. ``winner``: the search's winner (:func:`search_winner`, chosen on seed 0) on the other informative tasks, seeds
   0-2;
5. ``interleaved``: the adaptation recipe's full layers interleaved (Yu et al. 2025): swa+sink and sa+sink with
   every sixth layer exact (layers 0, 6, 12, 18, 24);
6. ``seeds``: seeds 1 and 2 of the randomized headline patterns;
7. ``convention``: SA at the paper's other budget convention, ``sa-band`` at 2m: the band of 2m slots around each
   query in a permutation of the whole context, masked to the keys before it (the paper's causal SA, reading about
   m + 1/2 keys per query on average and every slot at the context's last token), exact decode only;
8. ``uninformative``: the headline rows on the tasks where full attention is not above chance;
9. ``grid``: the rest: m in {16, 32, 64, 128}, every generation-form pattern, seeds 0-2;
10. ``more``: the headline rows and full attention (seed 0) on the items after the first ``--limit``, up to
    :data:`MORE_ITEMS` per task (``--first``; MMLU keeps its 4 items per subject).

After the first tier the sparse tiers run on the *informative* tasks only (full attention's 95% interval above
chance, :func:`analysis.paper_tasks.summary.task_rows`): on the others a pattern has nothing to lose.

Tasks: ARC-Easy, ARC-Challenge, BoolQ, HellaSwag, PIQA, WinoGrande (OLMES rc, 5-shot), MMLU (OLMES rc, 5-shot from
``dev``, 4 test items per subject), LAMBADA (0-shot): the first ``--limit`` items of each OLMES file.

References
----------
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
- Yu et al. (2025). Sliding window attention adaptation. arXiv 2512.10411.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpu.harness.cli import DEFAULT_TASKS
from gpu.harness.cli import main as hf_eval
from gpu.harness.tasks import load_task
from graphs.cli_common import output_folder, run_command
from receptive.cli_parser import OneLineErrorParser, comma_ints, comma_names
from receptive.sweep import check_scheduler

from .summary import SEARCH_TASKS, search_winner, task_rows

#: tier -> (methods, budgets, (first seed, seeds), exact layers)
TIERS = {
    "exact": ("exact", "64", (0, 1), ""),
    "headline": ("swa,sa,swa+sink,moba,sa+swa-union", "64,32", (0, 1), ""),
    "search": ("sa+sink,swa+sink+sa", "64,32", (0, 1), ""),
    "winner": ("", "64,32", (0, 3), ""),
    "interleaved": ("swa+sink,sa+sink", "64,32", (0, 1), "0,6,12,18,24"),
    "seeds": ("sa,sa+swa-union", "64,32", (1, 2), ""),
    "convention": ("sa-band", "64,32", (0, 3), ""),
    "uninformative": ("swa,swa+sink,sa,sa+swa-union,moba", "64,32", (0, 1), ""),
    "grid": ("swa,swa+sink,sa,sa+sink,sa+swa,sa+swa-union,sa-ms,moba,top-k", "16,32,64,128", (0, 3), ""),
    "more": ("exact,swa,sa,swa+sink,moba,sa+swa-union", "64,32", (0, 1), ""),
}
#: Items per task of the ``more`` tier (it adds those after ``--limit``).
MORE_ITEMS = 500

#: tiers whose budgets m run at 2m (the other budget convention)
DOUBLED = {"convention"}


def tier_arguments(
    tier: str,
    out: str,
    limit: int,
    tasks: str,
    workers: int = 1,
    methods: str | None = None,
    budgets: str | None = None,
    scheduler: str | None = None,
):
    """The ``python -m gpu.harness`` arguments of one tier.

    Parameters
    ----------
    tier : str
        A key of :data:`TIERS`.
    out : str
        The result store.
    limit : int
        Items per task.
    tasks : str
        Comma-separated tasks.
    workers : int, default 1
        Processes of one torch thread each on a Dask LocalCluster (1: this process, two threads).
    methods : str, optional
        The methods, where the tier's come from the results (``winner``).
    budgets : str, optional
        Comma-separated keys per query in place of the tier's.
    scheduler : str, optional
        A running Dask scheduler's address (``tcp://host:8786``): the grid tasks run on its workers, each on as
        many torch threads as the worker has (``dask worker --nthreads``); ``workers`` is then not used.

    Returns
    -------
    list of str

    Examples
    --------
    >>> tier_arguments("exact", "runs", 200, "boolq")[:4]
    ['--tasks', 'boolq', '--limit', '200']
    >>> tier_arguments("convention", "runs", 200, "boolq")[4:8]  # m = 64 and 32 at the convention of 2m
    ['--attention', 'sa-band', '--budgets', '128,64']
    >>> tier_arguments("more", "runs", 200, "boolq")[:6]
    ['--tasks', 'boolq', '--limit', '500', '--first', '200']
    >>> tier_arguments("exact", "runs", 200, "boolq", workers=2)[-5:]
    ['--dask', '--workers', '2', '--threads', '1']
    >>> tier_arguments("exact", "runs", 200, "boolq", scheduler="tcp://127.0.0.1:8786")[-2:]
    ['--scheduler', 'tcp://127.0.0.1:8786']
    """
    default, default_budgets, seeds, layers = TIERS[tier]
    budgets = budgets or default_budgets
    if tier in DOUBLED:
        budgets = ",".join(str(2 * int(m)) for m in budgets.split(","))
    items = ["--limit", str(MORE_ITEMS), "--first", str(limit)] if tier == "more" else ["--limit", str(limit)]
    arguments = [
        "--tasks",
        tasks,
        *items,
        "--attention",
        methods or default,
        "--budgets",
        budgets,
        "--seed",
        str(seeds[0]),
        "--seeds",
        str(seeds[1]),
        "--decode",
        "sparse,exact",
        "--out",
        out,
        "--resume",
    ]
    arguments += ["--exact-layers", layers] if layers else []
    if scheduler:
        return [*arguments, "--threads", "2", "--scheduler", scheduler]
    return arguments + (["--dask", "--workers", str(workers), "--threads", "1"] if workers > 1 else ["--threads", "2"])


def main(argv=None) -> int:
    """Run the tiers in order.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0, or the first failing tier's status.

    Examples
    --------
    >>> main(["--out", "runs", "--tiers", "nope"])  # doctest: +SKIP
    python -m analysis.paper_tasks.study: error: --tiers: ... (see --help)
    """
    parser = OneLineErrorParser(
        prog="python -m analysis.paper_tasks.study",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--out", required=True, type=output_folder("--out"), help="the result store (resumed)")
    parser.add_argument("--tiers", default=",".join(TIERS), help="comma-separated tiers, in order")
    parser.add_argument("--limit", type=int, default=200, help="items per task")
    parser.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="comma-separated tasks")
    parser.add_argument("--budgets", help="comma-separated keys per query in place of each tier's (to run one first)")
    parser.add_argument(
        "--workers", type=int, default=1, help="processes of one torch thread (a Dask LocalCluster when above 1)"
    )
    parser.add_argument(
        "--scheduler",
        help="run on the workers of the Dask scheduler at this address "
        "(tcp://host:8786), each task on its worker's threads",
    )
    parser.add_argument("--dry-run", action="store_true", help="print each tier's CPU estimate, run nothing")
    args = parser.parse_args(argv)
    args.out = str(args.out)
    try:
        tiers = comma_names("--tiers", args.tiers, TIERS)
        for flag, value in (("--limit", args.limit), ("--workers", args.workers)):
            if value < 1:
                raise ValueError(f"{flag}: expected an integer >= 1, got {value}")
        if args.budgets:
            comma_ints("--budgets", args.budgets, 1)
        if args.scheduler and args.workers > 1:
            raise ValueError("--workers: not with --scheduler (the scheduler's workers run the grid)")
        if args.scheduler:
            check_scheduler(args.scheduler)
        for task in args.tasks.split(","):
            load_task(task, limit=1)
    except ValueError as exc:
        parser.error(str(exc).replace("task: ", "--tasks: ", 1))
    for tier in tiers:
        tasks, methods = args.tasks.split(","), None
        stored = (Path(args.out) / "tasks.jsonl").is_file()
        if tier != "exact" and not stored:
            if not args.dry_run:
                parser.error(f"--tiers: {tier} needs the exact tier's results in --out first")
            print(
                f"tier {tier}: its tasks (and the winner's method) follow from the exact tier's results; "
                "estimate it once they are in --out",
                file=sys.stderr,
            )
            continue
        if tier != "exact":
            split = {row["task"]: row["informative"] for row in task_rows(args.out)}
            tasks = [t for t in tasks if split.get(t.partition(":")[0], True) == (tier != "uninformative")]
            if tier == "more":
                tasks = [t for t in tasks if not t.startswith("mmlu")] if args.limit < MORE_ITEMS else []
            if tier == "search":
                tasks = [t for t in tasks if t in SEARCH_TASKS]
            if tier == "winner":
                tasks = [t for t in tasks if t not in SEARCH_TASKS]
                try:
                    methods = search_winner(args.out)
                except ValueError as exc:
                    if not args.dry_run:
                        parser.error(str(exc))
                    print(f"tier winner: not estimated yet: {exc}", file=sys.stderr)
                    continue
        if not tasks:
            continue
        print(f"tier {tier}: {methods or TIERS[tier][0]} on {','.join(tasks)}", file=sys.stderr)
        arguments = tier_arguments(
            tier, args.out, args.limit, ",".join(tasks), args.workers, methods, args.budgets, args.scheduler
        )
        status = hf_eval(arguments + (["--dry-run"] if args.dry_run else []))
        if status:
            return status
    return 0


if __name__ == "__main__":
    run_command(main)
