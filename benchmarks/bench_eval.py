"""Time the benchmark-task harness against lm-evaluation-harness's ``HFLM`` on the same requests, at equal scores.

    python benchmarks/bench_eval.py [--tasks arc_easy,hellaswag] [--items 20] [--repeats 2]
        [--warmup-items 8] [--hflm-batch 8] [--model PATH | --tiny] [--json PATH]

Both score every (context, continuation) request of the first ``--items`` items of each task (OLMES 5-shot rc) with full
attention: ``HFLM.loglikelihood`` (lm-eval 0.4, ``batch_size=--hflm-batch``, the whole context with each choice) and
:func:`gpu.harness.scoring.score_items` (the task's shared few-shot prefix once per call, each item's own context once,
its choices batched). Each first scores the first ``--warmup-items`` items untimed; then the two are timed in rotating
rounds (:func:`gpu.bench.timing.round_robin`), the shared prefix included in every harness call; ``items_per_second`` is
items over the median round and ``speedup`` the harness's rate over HFLM's in the same run. ``max_abs_ll_difference`` is
the largest difference of any request's log-likelihood and ``same_accuracy`` whether both give every item the same
answer (``acc``), so the speed is measured at equal scores. The floor of the harness is the prefix: an item still costs
its question and answers.
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

from gpu.bench.timing import round_robin  # noqa: E402
from gpu.harness.scoring import item_scores, score_items  # noqa: E402
from gpu.harness.tasks import load_requests, load_task  # noqa: E402
from gpu.hf.checkpoints import add_model_option, model_path  # noqa: E402
from graphs.cli_common import run_command, write_atomic  # noqa: E402
from receptive.cli_parser import OneLineErrorParser, output_file  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "olmes"


def hflm_scorer(model, tokenizer, batch: int):
    """``score(items) -> per-request log-likelihoods`` through lm-eval's ``HFLM.loglikelihood``."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=model, tokenizer=tokenizer, device="cpu", batch_size=batch)

    def score(items):
        requests = [
            Instance("loglikelihood", {}, (r.context, r.continuation), i)
            for item in items
            for i, r in enumerate(item.requests)
        ]
        return [ll for ll, _ in lm.loglikelihood(requests, disable_tqdm=True)]

    return score


def measure(model, tokenizer, name: str, items, repeats: int, batch: int, warmup_items: int) -> dict:
    """One task's row: both scorers warmed up on the first ``warmup_items`` items, then timed together on all of
    them; their log-likelihoods compared."""
    hflm = hflm_scorer(model, tokenizer, batch)
    results = {}

    def run(label, scorer):
        def call():
            results[label] = scorer(items)

        return call

    def ours(batch_items):
        return [c["ll"] for r in score_items(model, tokenizer, batch_items, progress=False) for c in r["choices"]]

    with torch.inference_mode():
        hflm(items[:warmup_items]), ours(items[:warmup_items])
        times = round_robin({"hflm": run("hflm", hflm), "harness": run("harness", ours)}, repeats, warmup=False)
    seconds = {label: statistics.median(t) for label, t in times.items()}
    sizes = [len(item.requests) for item in items]

    def answers(lls):
        out, at = [], 0
        for item, size in zip(items, sizes, strict=True):
            choices = [{"ll": ll, "tokens": 1, "chars": 1, "bytes": 1, "greedy": False} for ll in lls[at : at + size]]
            out.append(item_scores({"label": item.label, "choices": choices})["acc"])
            at += size
        return out

    difference = max(abs(a - b) for a, b in zip(results["hflm"], results["harness"], strict=True))
    return {
        "task": name,
        "items": len(items),
        "requests": sum(sizes),
        "hflm_seconds": seconds["hflm"],
        "harness_seconds": seconds["harness"],
        "hflm_items_per_second": len(items) / seconds["hflm"],
        "harness_items_per_second": len(items) / seconds["harness"],
        "speedup": seconds["hflm"] / seconds["harness"],
        "max_abs_ll_difference": difference,
        "same_accuracy": answers(results["hflm"]) == answers(results["harness"]),
        "accuracy": statistics.mean(answers(results["harness"])),
    }


def main(argv=None) -> int:
    parser = OneLineErrorParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--tasks", default="arc_easy,hellaswag", help="comma-separated OLMES tasks [arc_easy,hellaswag]"
    )
    parser.add_argument("--items", type=int, default=20, help="items per task [20]")
    parser.add_argument("--repeats", type=int, default=2, help="timed rounds [2]")
    parser.add_argument("--warmup-items", type=int, default=8, help="items each scorer runs untimed first [8]")
    parser.add_argument("--hflm-batch", type=int, default=8, help="HFLM's batch size [8]")
    source = parser.add_mutually_exclusive_group()
    add_model_option(source)
    source.add_argument("--tiny", action="store_true", help="a random tiny Llama and the committed request fixtures")
    parser.add_argument("--threads", type=int, help="torch threads [torch's default]")
    parser.add_argument("--json", type=output_file("--json"), help="write the rows here (nothing is written without)")
    args = parser.parse_args(argv)
    for flag, value in (
        ("--items", args.items),
        ("--repeats", args.repeats),
        ("--warmup-items", args.warmup_items),
        ("--hflm-batch", args.hflm_batch),
        ("--threads", args.threads),
    ):
        if value is not None and value < 1:
            parser.error(f"{flag}: expected an integer >= 1, got {value}")
    try:
        import lm_eval  # noqa: F401
    except ImportError:
        parser.error("lm-eval is not installed: pip install 'lm-eval>=0.4,<0.5'")
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
    rows = [
        measure(model, tokenizer, name, items, args.repeats, args.hflm_batch, args.warmup_items)
        for name, items in tasks.items()
    ]
    print(f"{'task':20} {'items':>5} {'HFLM items/s':>13} {'harness items/s':>16} {'speedup':>8} {'max |dll|':>10}")
    for row in rows:
        rates = f"{row['hflm_items_per_second']:13.3f} {row['harness_items_per_second']:16.3f}"
        print(f"{row['task']:20} {row['items']:5d} {rates} {row['speedup']:8.2f} {row['max_abs_ll_difference']:10.2e}")
    if args.json:
        command = "python benchmarks/bench_eval.py " + " ".join(sys.argv[1:] if argv is None else argv)
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
