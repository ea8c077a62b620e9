"""``python -m analysis.training {retrieval,counting,lm,all}``: small trained models where receptive-field coverage
decides.

Experiments (one tiny pre-norm transformer per attention kind full / SWA / SA / gated SA+SWA, same width, heads
and window w):

  retrieval  a key-value pair at a random position, the query at the end (causal); accuracy per (n, w, L) next to
             receptive's coverage, L* and the share of answers reachable through the layers' receptive fields
  counting   count the marked tokens (0..3) anywhere in the sequence: needs every token
  lm         character-level LM on CPython's stdlib sources: validation perplexity and a long-context probe (loss
             on characters a copy from beyond SWA's receptive field L (w - 1) + 1 predicts), against the SA
             paper's WikiText ordering (Full 51.3, SA+SWA 52.0, SWA 57.1, SA 75.8)

  variants   causal retrieval at n = 256, w = 16, L = 3 for full, SWA, SA, SA+SWA and the causal
             variants (sa-ms, kleinberg, dilated; each +swa and -eq; dilated+swa is dilated's pattern and is not
             run twice), seeds 0, 1, 2, 1500 steps each; mean and [min, max] over seeds per kind. Not part of
             `all`: 45 runs (about 4 CPU-hours: 14,333 s of training in the committed file), in parallel, e.g.
             python -m analysis.training variants --jobs 12 --out analysis/training/results/variants
  long_n     causal retrieval at n = 1024, w = 8, L = 4 for SA, SA+SWA, sa-ms-eq and sa-ms+swa-eq, seeds
             0, 1, 2, 3000 steps (cosine ending at step 3000, so --extend-to continues it). Defined, not run:
             about 8 CPU-hours (python -m analysis.training.step_time); python -m analysis.training.reach_grid says
             why this
             configuration and how little it can separate

--quick runs a one-minute version; the full one took 78 minutes of training on one thread per run (the
committed train_seconds_total: 2056 + 2071 + 572 s), so about 40 minutes on two free CPU cores, and writes
analysis/training/results/NAME.json. Runs checkpoint every few steps: after a kill, rerun with --resume (a
folder with results or checkpoints of the experiment is refused without it; a checkpoint of another configuration
is refused with it).
--jobs N trains N runs at a time in worker processes (one torch thread each unless --threads).
--extend-to STEPS trains every run of the experiment in --out on to STEPS steps, on the schedule it was trained
with (the cosine still ends where it did, lr / 10 after it), from each run's final checkpoint, or replayed from step
0 where none was kept; each row notes what it was before under "continued".
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from graphs.cli_common import output_folder, run_command
from receptive.cli_parser import OneLineErrorParser

from .configs import ALL_EXPERIMENTS, EXPERIMENTS, preset
from .runner import run_experiment
from .summary import aggregate_table

DEFAULT_OUT = "analysis/training/results"
DEFAULT_QUICK_OUT = "benchmarks/out/training-quick"


def _table(summary: dict) -> str:
    rows = summary["runs"]
    if summary["experiment"] == "lm":
        lines = [f"{'kind':7s} {'params':>7s} {'val ppl':>8s} {'far loss':>9s} {'near loss':>9s} {'coverage':>8s}"]
        for r in rows:
            far, near = r["probe"]["far"]["loss"], r["probe"]["near"]["loss"]
            lines.append(
                f"{r['kind']:7s} {r['parameters']['total']:7d} {r['val_perplexity']:8.3f} "
                f"{far if far is not None else float('nan'):9.3f} "
                f"{near if near is not None else float('nan'):9.3f} {r['coverage_mean']:8.3f}"
            )
        paper = summary["paper"]
        lines.append(f"ours: {' < '.join(paper['our_order'])}; paper (WikiText): {' < '.join(paper['paper_order'])}")
        return "\n".join(lines)
    lines = [
        f"{'kind':16s} {'n':>5s} {'w':>3s} {'L':>2s} {'s':>2s} {'acc':>6s} {'reach':>6s} {'pred':>6s} "
        f"{'cov':>6s} {'L*':>4s}"
    ]
    for r in rows:
        lstar = r.get("lstar_readout", r["lstar"])
        lines.append(
            f"{r['kind']:16s} {r['n']:5d} {r['w']:3d} {r['layers']:2d} {r.get('seed', 0):2d} "
            f"{r['accuracy']:6.3f} {r['reachable']:6.3f} {r['predicted_accuracy']:6.3f} "
            f"{r.get('readout_coverage', r['coverage_mean']):6.3f} {lstar if lstar else '-':>4}"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    p = OneLineErrorParser(
        prog="python -m analysis.training",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        options={"out": "--out", "extend_to": "--extend-to", "jobs": "--jobs", "threads": "--threads"},
    )
    p.add_argument(
        "experiment",
        choices=[*ALL_EXPERIMENTS, "all"],
        help="which experiment (all: retrieval, counting and lm in turn)",
    )
    p.add_argument("--quick", action="store_true", help="the one-minute configuration the tests run")
    p.add_argument(
        "--out",
        type=output_folder("--out"),
        default=None,
        help=f"output folder (default {DEFAULT_OUT}; --quick: {DEFAULT_QUICK_OUT})",
    )
    p.add_argument("--resume", action="store_true", help="skip finished runs, continue others from checkpoints")
    p.add_argument("--json", action="store_true", help="print the summaries as JSON instead of tables")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default 1: tiny models on shared cores)")
    p.add_argument("--jobs", type=int, default=1, help="runs trained at a time, in worker processes (default 1)")
    p.add_argument(
        "--extend-to",
        type=int,
        default=None,
        metavar="STEPS",
        help="train the runs in --out on to STEPS steps (same schedule; implies --resume)",
    )
    args = p.parse_args(argv)
    if args.threads is not None and args.threads < 1:
        p.error(f"--threads: expected a positive integer, got {args.threads}")
    if not 1 <= args.jobs <= 1024:
        p.error(f"--jobs: expected an integer in [1, 1024], got {args.jobs}")
    if args.extend_to is not None and args.extend_to < 1:
        p.error(f"--extend-to: expected a positive number of steps, got {args.extend_to}")
    try:
        out = args.out or output_folder("--out")(DEFAULT_QUICK_OUT if args.quick else DEFAULT_OUT)
    except argparse.ArgumentTypeError as exc:
        p.error(f"--out: {exc}")
    configs = preset(args.quick)
    names = list(EXPERIMENTS) if args.experiment == "all" else [args.experiment]
    summaries = []
    for name in names:
        start = time.perf_counter()
        try:
            summary = run_experiment(
                getattr(configs, name),
                out,
                resume=args.resume,
                threads=args.threads,
                jobs=args.jobs,
                extend_to=args.extend_to,
            )
        except FileExistsError as exc:
            p.error(str(exc))
        except ValueError as exc:  # e.g. --extend-to below the recorded steps, or a folder of another configuration
            p.error(str(exc))
        except OSError as exc:  # e.g. the disk filled up or the folder vanished mid-run
            p.error(f"--out: cannot write to {str(out)!r} ({exc.strerror or type(exc).__name__})")
        except KeyboardInterrupt:
            print(f"\n{name}: interrupted; rerun with --resume to continue from the last checkpoint", file=sys.stderr)
            return 130
        summaries.append(summary)
        if not args.json:
            print(f"== {name} ({time.perf_counter() - start:.0f} s, {out}/{name}.json)")
            print(_table(summary), flush=True)
            if summary["experiment"] != "lm" and len(summary["config"]["seeds"]) > 1:
                print("mean [min, max] over seeds:\n" + aggregate_table(summary["aggregate"]), flush=True)
    if args.json:
        print(json.dumps(summaries if len(summaries) > 1 else summaries[0], indent=1))
    return 0


if __name__ == "__main__":
    run_command(main)
