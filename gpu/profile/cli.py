"""Profile where a causal LM's attention goes and what each pattern keeps of it (``python -m gpu.profile``).

For each task (the items' gold contexts, tokenised as the harness tokenises them, the scored position the context's
last token, whose output predicts the answer's first token) or a file of texts, one exact forward per text and the
measures of :func:`gpu.profile.measures.attention_profile` for every pattern: mass recall (mean and at the scored
position), output error, rollout overlap and the end-to-end KL; then a table with each pattern's predicted rank.

Examples::

    python -m gpu.profile --tasks arc_easy --items 20 --patterns swa,swa+sink,sa --budgets 64
    python -m gpu.profile --texts my_texts.txt --patterns sa,sa-ms --budgets 32,64 --seeds 2 --json p.json
    python -m gpu.profile --tasks lambada --patterns top-k,moba --rank-by recall_scored --csv p.csv
    python -m gpu.profile --tasks hellaswag --items 200 --positions scored --no-kl   # the fast profile

``--positions scored --no-kl`` measures what ranks the grid best (the mass recall at the scored position) at about
the cost of one exact forward per text.

``--texts`` is a UTF-8 file with one text per line (blank lines skipped).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from functools import partial
from pathlib import Path

from gpu.hf.checkpoints import add_model_option, model_path
from graphs.cli_common import run_command
from receptive.cli_parser import (
    OneLineErrorParser,
    add_budget_option,
    add_csv_option,
    add_json_option,
    add_progress_option,
    add_seeds_option,
    comma_ints,
    comma_names,
    stdout_output,
    write_output,
)

__all__ = ["build_parser", "main", "task_contexts"]

DEFAULT_PATTERNS = "swa,swa+sink,sa"
COLUMNS = ("recall", "recall_scored", "error", "error_scored", "overlap", "kl")


def task_contexts(tokenizer, items) -> list[list[int]]:
    """The token ids of each item's gold context, as the harness tokenises it (:func:`gpu.harness.scoring.encode_pair`).

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
        The model's tokenizer.
    items : sequence of gpu.harness.tasks.EvalItem
        The items.

    Returns
    -------
    list of list of int

    Examples
    --------
    >>> from gpu.harness.tasks import EvalItem, EvalRequest
    >>> class Chars:
    ...     eos_token_id = 0
    ...     def __call__(self, text, add_special_tokens=False):
    ...         return {"input_ids": [ord(c) for c in text]}
    >>> item = EvalItem("t", 0, 1, (EvalRequest(0, "Q: ", "a"), EvalRequest(1, "Q: ", "b")), "t")
    >>> task_contexts(Chars(), [item])
    [[81, 58]]
    """
    from gpu.harness.scoring import encode_pair

    contexts = []
    for item in items:
        request = item.requests[item.label if 0 <= item.label < len(item.requests) else 0]
        contexts.append(encode_pair(tokenizer, request.context, request.continuation)[0])
    return contexts


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m gpu.profile`` (defaults in its help; one-line errors naming the flag).

    Returns
    -------
    argparse.ArgumentParser
        The parser (:class:`receptive.cli_parser.OneLineErrorParser`); :func:`main` checks the values together.

    Examples
    --------
    >>> args = build_parser().parse_args(["--tasks", "arc_easy", "--budgets", "32,64", "--csv"])
    >>> args.tasks, args.budgets, args.csv, args.no_progress
    ('arc_easy', '32,64', '-', False)
    """
    from gpu.attention.generation_patterns import GENERATION_METHODS
    from gpu.profile.measures import MEASURES

    parser = OneLineErrorParser(
        prog="python -m gpu.profile",
        description=__doc__.split("\n\n")[0],
        epilog="examples:\n" + __doc__.split("Examples::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        options={
            "budget": "--budgets",
            "seed": "--seed",
            "exact_layers": "--exact-layers",
            "sink": "--sink",
            "max_memory": "--max-memory",
            "path": "--model",
        },
    )
    add = parser.add_argument
    add_model_option(parser)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--tasks", help="comma-separated task specs of gpu.harness.tasks (default arc_easy)")
    source.add_argument("--texts", help="a UTF-8 file of texts, one per line")
    add("--items", type=int, default=20, help="items per task, the first in doc-id order (default 20)")
    add(
        "--patterns",
        default=DEFAULT_PATTERNS,
        help=f"comma-separated methods of {', '.join(GENERATION_METHODS)} [{DEFAULT_PATTERNS}]",
    )
    add_budget_option(parser, "64")
    add_seeds_option(parser, 1)  # of the randomized methods
    add("--exact-layers", default="", help="comma-separated layers every pattern reads whole (default: none)")
    add("--sink", type=int, default=1, help="sink tokens of the mass regions (default 1)")
    add(
        "--positions",
        default="all",
        choices=("all", "scored"),
        help="the query positions of the per-position "
        "measures: every one (with the rollout) or the scored one alone (default all)",
    )
    add("--no-kl", action="store_true", help="skip the patterns' forwards (the end-to-end KL)")
    add(
        "--rank-by",
        choices=list(MEASURES),
        help="the measure of the predicted rank (default kl; recall_scored with --no-kl)",
    )
    add("--max-memory", type=float, default=8.0, help="GiB one text may take (default 8)")
    add("--threads", type=int, help="torch threads (default: torch's)")
    add_json_option(parser)  # the profile summary
    add_csv_option(parser)  # the table
    add_progress_option(parser, "--quiet")
    return parser


def _texts(parser, path: str) -> list[str]:
    file = Path(path)
    if not file.is_file():
        parser.error(f"--texts: no such file {path!r}")
    try:
        lines = [line for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
    except UnicodeDecodeError:
        parser.error(f"--texts: {path!r} is not UTF-8 text (expected one text per line)")
    if not lines:
        parser.error(f"--texts: {path!r} holds no text (expected one text per line)")
    return lines


def _patterns(parser, args) -> list:
    from gpu.attention.generation_patterns import GENERATION_METHODS
    from gpu.profile.measures import ProfilePattern

    try:
        methods = comma_names("--patterns", args.patterns, GENERATION_METHODS)
        budgets = comma_ints("--budgets", args.budgets, 1)
        layers = tuple(comma_ints("--exact-layers", args.exact_layers, 0)) if args.exact_layers else ()
    except ValueError as error:
        parser.error(str(error))
    out = []
    for method in methods:
        for budget in [0] if method == "exact" else budgets:
            for seed in range(args.seed, args.seed + args.seeds) if GENERATION_METHODS[method].randomized else [0]:
                out.append(ProfilePattern(method, budget, seed, () if method == "exact" else layers))
    return list(dict.fromkeys(out))


def _rows(profiles: dict, rank_by: str) -> list[dict]:
    rows = []
    for source, profile in profiles.items():
        ranks = profile.predicted_rank(rank_by)
        for row in profile.summary():
            rows.append({"source": source, **row, "rank": ranks[row["label"]], "texts": len(profile.texts)})
    return rows


def _print(rows: list[dict], rank_by: str) -> None:
    head = f"{'source':12} {'pattern':22} " + " ".join(f"{c:>13}" for c in COLUMNS) + f" {'rank':>5}"
    print(head + f"   (rank by {rank_by}; 1 = closest to exact attention)")
    for row in sorted(rows, key=lambda r: (r["source"], r["rank"])):
        values = " ".join(f"{row[c]:13.4f}" for c in COLUMNS)
        print(f"{row['source']:12} {row['label']:22} {values} {row['rank']:5d}")


def _csv_text(rows: list[dict]) -> str:
    fields = ["source", "label", "method", "budget", "seed", *COLUMNS, "rank", "texts"]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def main(argv=None) -> int:
    """Run the command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0.

    Examples
    --------
    >>> main(["--items", "0"])
    Traceback (most recent call last):
    ...
    SystemExit: 2
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        printing = stdout_output({"--json": args.json, "--csv": args.csv})
    except ValueError as error:
        parser.error(str(error))
    if args.items < 1:
        parser.error(f"--items: expected an integer >= 1, got {args.items}")
    if not 0 <= args.sink <= 64:
        parser.error(f"--sink: expected an integer in [0, 64], got {args.sink}")
    if not 0 < args.max_memory <= 1 << 20:
        parser.error(f"--max-memory: expected GiB in (0, 1048576], got {args.max_memory}")
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads: expected an integer >= 1, got {args.threads}")
    if args.texts and args.items != 20:
        parser.error("--items: applies to --tasks, not to --texts (every line of the file is profiled)")
    args.rank_by = args.rank_by or ("recall_scored" if args.no_kl else "kl")
    if args.rank_by == "kl" and args.no_kl:
        parser.error("--rank-by: kl needs the patterns' forwards, which --no-kl skips")
    if args.positions == "scored" and args.rank_by in ("recall", "error", "overlap"):
        parser.error(f"--rank-by: {args.rank_by} needs every position, which --positions scored skips")
    patterns = _patterns(parser, args)
    texts = _texts(parser, args.texts) if args.texts else None
    tasks = [] if texts else [t.strip() for t in (args.tasks or "arc_easy").split(",") if t.strip()]
    if not texts and not tasks:
        parser.error("--tasks: expected comma-separated task specs")

    from gpu.harness.tasks import load_task
    from gpu.hf.models import load_causal_lm
    from gpu.profile.measures import attention_profile

    try:
        path = model_path(args.model)
    except ValueError as error:
        parser.error(str(error))
    sources = {}
    try:
        for task in tasks:
            sources[task] = load_task(task, None if task.startswith("mmlu") else args.items)[: args.items]
    except ValueError as error:
        parser.error(f"--tasks: {error}")
    if args.threads:
        from gpu.attention.threads import set_threads

        set_threads(args.threads)
    try:
        model, tokenizer = load_causal_lm(path)
    except ValueError as error:
        parser.error(f"--model: {str(error).removeprefix('path: ')}")
    inputs = (
        {"texts": [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]}
        if texts
        else {task: task_contexts(tokenizer, items) for task, items in sources.items()}
    )
    profiles = {}
    for source, ids in inputs.items():
        try:
            profiles[source] = attention_profile(
                model,
                ids,
                patterns,
                positions=args.positions,
                sink=args.sink,
                kl=not args.no_kl,
                max_memory=int(args.max_memory * 2**30),
                progress=False if args.no_progress else None,
            )
        except ValueError as error:
            parser.error(str(error))
    rows = _rows(profiles, args.rank_by)
    if not printing:
        _print(rows, args.rank_by)
    if args.json:
        result = {
            "command": "python -m gpu.profile " + " ".join(sys.argv[1:] if argv is None else argv),
            "model": str(args.model),
            "rank_by": args.rank_by,
            "rows": rows,
            "profiles": {source: p.to_dict() for source, p in profiles.items()},
        }
        write_output(args.json, json.dumps(result, indent=1) + "\n", "--json")
    write_output(args.csv, _csv_text(rows), "--csv")
    return 0


#: The command's entry point (``python -m gpu.profile`` and the console script ``receptive-profile``): :func:`main`,
#: ended by :func:`graphs.cli_common.run_command` (one line on an interrupt or a closed pipe).
run_cli = partial(run_command, main)
