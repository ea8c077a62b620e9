"""Time the attention profile of a task's items against scoring one pattern on them with the harness.

    python benchmarks/bench_profile.py [--tasks hellaswag] [--items 20] [--patterns sa,swa+sink] [--budget 64]
        [--repeats 2] [--model PATH | --tiny] [--threads N] [--json PATH]

Five steps on the same items (the gold contexts for the profile, every request for the harness), timed in rotating
rounds (:func:`gpu.bench.timing.round_robin`, one untimed warm-up each): ``forward``, the profile's floor (one exact
forward per context over the shared prefix, recorded, no pattern); ``profile_scored``, the measures of every pattern of
``--patterns`` at the scored position alone (:func:`gpu.profile.measures.attention_profile` with ``positions="scored"``,
``kl=False``: the recall that ranks the grid best); ``profile``, the same at every position with the rollout;
``profile_kl``, that with the end-to-end KL (one forward per pattern and text more); and ``harness``,
:func:`gpu.harness.scoring.score_items` of the first pattern at ``--budget`` (both protocols, as the grid scores it).
Each step's ratio to the harness is taken in the same run; the goal of the profile is at most a tenth of the harness's
time, and ``forward`` says how low any profile from exact forwards can go.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from a checkout: import this checkout's packages
    sys.path.insert(0, str(ROOT))

from gpu.attention.generation_patterns import GENERATION_METHODS  # noqa: E402
from gpu.bench.timing import round_robin  # noqa: E402
from gpu.harness.scoring import EvalAttention, score_items  # noqa: E402
from gpu.harness.tasks import load_requests, load_task  # noqa: E402
from gpu.hf.checkpoints import add_model_option, model_path  # noqa: E402
from gpu.profile.cli import task_contexts  # noqa: E402
from gpu.profile.measures import ProfilePattern, attention_profile  # noqa: E402
from graphs.cli_common import run_command, write_atomic  # noqa: E402
from receptive.cli_parser import OneLineErrorParser, comma_names, output_file  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "olmes"


def measure(model, tokenizer, name: str, items, patterns: list, repeats: int) -> dict:
    """One task's row: the three steps timed together."""
    contexts = task_contexts(tokenizer, items)
    first = patterns[0]
    attentions = [EvalAttention(first.method, first.budget, decode=d) for d in ("sparse", "exact")]

    steps = {
        "forward": lambda: attention_profile(model, contexts, (), positions="scored", kl=False, progress=False),
        "profile_scored": lambda: attention_profile(
            model, contexts, patterns, positions="scored", kl=False, progress=False
        ),
        "profile": lambda: attention_profile(model, contexts, patterns, kl=False, progress=False),
        "profile_kl": lambda: attention_profile(model, contexts, patterns, progress=False),
        "harness": lambda: score_items(model, tokenizer, items, attentions, progress=False),
    }
    with torch.inference_mode():
        times = round_robin(steps, repeats)
    seconds = {label: statistics.median(t) for label, t in times.items()}
    return {
        "task": name,
        "items": len(items),
        "patterns": [p.label for p in patterns],
        "harness_pattern": attentions[0].label,
        "tokens_mean": statistics.mean(map(len, contexts)),
        **{f"{label}_seconds": s for label, s in seconds.items()},
        **{f"{label}_over_harness": s / seconds["harness"] for label, s in seconds.items() if label != "harness"},
    }


def main(argv=None) -> int:
    parser = OneLineErrorParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--tasks", default="hellaswag", help="comma-separated OLMES tasks [hellaswag]")
    parser.add_argument("--items", type=int, default=20, help="items per task [20]")
    parser.add_argument("--patterns", default="sa,swa+sink", help="comma-separated profiled methods [sa,swa+sink]")
    parser.add_argument("--budget", type=int, default=64, help="keys per query [64]")
    parser.add_argument("--repeats", type=int, default=2, help="timed rounds [2]")
    source = parser.add_mutually_exclusive_group()
    add_model_option(source)
    source.add_argument("--tiny", action="store_true", help="a random tiny Llama and the committed request fixtures")
    parser.add_argument("--threads", type=int, help="torch threads [torch's default]")
    parser.add_argument("--json", type=output_file("--json", suffixes=(".json",)), help="write the rows here")
    args = parser.parse_args(argv)
    for flag, value in (
        ("--items", args.items),
        ("--repeats", args.repeats),
        ("--budget", args.budget),
        ("--threads", args.threads),
    ):
        if value is not None and value < 1:
            parser.error(f"{flag}: expected an integer >= 1, got {value}")
    position = [m for m in GENERATION_METHODS if m != "exact"]
    try:
        methods = comma_names("--patterns", args.patterns, position)
    except ValueError as exc:
        parser.error(str(exc))
    patterns = [ProfilePattern(m, args.budget) for m in methods]
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.tiny:
        sys.path.insert(0, str(ROOT / "tests"))
        from hf_eval_models import tiny_llama, tiny_tokenizer

        model, tokenizer, label = tiny_llama(dtype=torch.float32), tiny_tokenizer(), "tiny random Llama"
        tasks = {"arc_easy (fixture)": load_requests(FIXTURES / "arc_easy_rc_5shot.jsonl")[: args.items]}
    else:
        from gpu.hf.models import load_causal_lm

        try:
            path = model_path(args.model)
        except ValueError as exc:
            parser.error(str(exc))
        try:
            tasks = {t: load_task(t, args.items) for t in args.tasks.split(",") if t}
        except (TypeError, ValueError) as exc:
            parser.error(str(exc).replace("task:", "--tasks:", 1))
        model, tokenizer = load_causal_lm(path)
        label = Path(path).name
    load_before = os.getloadavg()[0]
    rows = [measure(model, tokenizer, name, items, patterns, args.repeats) for name, items in tasks.items()]
    steps = ("forward", "profile_scored", "profile", "profile_kl")
    print(f"{'task':20} {'items':>5} {'harness s':>10} " + " ".join(f"{s + '/harness':>23}" for s in steps))
    for row in rows:
        print(
            f"{row['task']:20} {row['items']:5d} {row['harness_seconds']:10.2f} "
            + " ".join(f"{row[s + '_over_harness']:23.3f}" for s in steps)
        )
    if args.json:
        command = "python benchmarks/bench_profile.py " + " ".join(sys.argv[1:] if argv is None else argv)
        meta = {
            "command": command,
            "model": label,
            "threads": torch.get_num_threads(),
            "machine": platform.processor() or platform.machine(),
            "torch": torch.__version__,
            "load_average": [load_before, os.getloadavg()[0]],
        }
        write_atomic(args.json, json.dumps(meta | {"rows": rows}, indent=1) + "\n", option="--json")
    return 0


if __name__ == "__main__":
    run_command(main)
