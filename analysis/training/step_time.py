"""Seconds per training step of the retrieval models, per kind, at one (n, w, L): what a training comparison costs.

``python -m analysis.training.step_time --n 1024 --w 8 --layers 4 --out FILE.json`` builds each kind's model exactly as
:func:`analysis.training.runner.train` does (preset ``variants``' width, heads, batch, learning rate; seed 0), takes
``--warmup`` untimed steps, then times ``--steps`` optimiser steps (a fresh batch, forward, loss, backward, gradient
clipping, AdamW) with ``time.perf_counter`` (wall) and ``time.process_time`` (CPU of this process), on one torch
thread unless ``--threads``. Per kind: the median and [min, max] wall and CPU seconds per step. ``estimate`` gives
the CPU cost of ``runs x steps`` from the median CPU seconds per step (training only; evaluation and coverage add
well under a step's worth per run at these sizes). On shared cores the wall time grows with the load; the CPU time
much less, and it is what a one-core budget counts.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import numpy as np
import torch

from graphs.cli_common import output_file, run_command, write_atomic
from receptive.cli_parser import OneLineErrorParser

from .configs import FULL
from .reach_grid import GRID_KINDS
from .runner import training_threads, versions
from .step import RunData, build_model, train_step


def step_seconds(config, spec: dict, steps: int, warmup: int) -> dict:
    """Wall and CPU seconds of each of ``steps`` training steps after ``warmup`` untimed ones."""
    for name, value, low in (("steps", steps, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 10_000:
            raise ValueError(f"{name}: expected an integer in [{low}, 10000], got {value!r}")
    torch.manual_seed(spec["seed"])
    model = build_model(config, spec)
    data = RunData(config, spec, None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    model.train()
    wall, cpu = [], []
    for step in range(warmup + steps):
        t0, c0 = time.perf_counter(), time.process_time()
        train_step(model, optimizer, data, config, step)
        if step >= warmup:
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    return {
        "wall_median": float(np.median(wall)),
        "wall_min": min(wall),
        "wall_max": max(wall),
        "cpu_median": float(np.median(cpu)),
        "cpu_min": min(cpu),
        "cpu_max": max(cpu),
        "steps_timed": steps,
    }


def main(argv=None) -> int:
    p = OneLineErrorParser(
        prog="python -m analysis.training.step_time",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--n", type=int, default=1024)
    p.add_argument("--w", type=int, default=8)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--kinds", nargs="+", default=list(GRID_KINDS))
    p.add_argument("--steps", type=int, default=5, help="timed steps per kind (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps first (default 1)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--estimate-runs", type=int, default=12, help="runs in the estimate (default 12: 4 kinds x 3 seeds)")
    p.add_argument("--estimate-steps", type=int, nargs="+", default=[1500, 3000], help="steps per run to estimate")
    p.add_argument("--estimate-kinds", nargs="+", default=["sa", "sa+swa", "sa-ms-eq", "sa-ms+swa-eq"])
    p.add_argument(
        "--out", type=output_file("--out", parents=True, suffixes=(".json",)), required=True, help="JSON file to write"
    )
    args = p.parse_args(argv)
    if not 1 <= args.threads <= 256:
        p.error(f"--threads: expected an integer in [1, 256], got {args.threads}")
    for flag, values, low in (
        ("--steps", [args.steps], 1),
        ("--warmup", [args.warmup], 0),
        ("--estimate-runs", [args.estimate_runs], 1),
        ("--estimate-steps", args.estimate_steps, 1),
    ):
        if min(values) < low:
            p.error(f"{flag}: expected integers >= {low}, got {' '.join(map(str, values))}")
    if not set(args.estimate_kinds) <= set(args.kinds):
        p.error(f"--estimate-kinds: expected kinds among --kinds, got {args.estimate_kinds}")
    try:
        config = dataclasses.replace(
            FULL.variants,
            kinds=tuple(args.kinds),
            ns=(args.n,),
            ws=(args.w,),
            layers=(args.layers,),
            seeds=(0,),
            name="step_time",
        )
    except ValueError as exc:
        p.error(f"--{exc}")
    rows = []
    load = os.getloadavg()[0]
    with training_threads(args.threads):
        for kind in args.kinds:
            spec = {"kind": kind, "n": args.n, "w": args.w, "layers": args.layers, "seed": 0}
            try:
                row = {"kind": kind, **step_seconds(config, spec, args.steps, args.warmup)}
            except ValueError as exc:
                p.error(f"--{exc}")
            rows.append(row)
            print(f"{kind:17s} wall {row['wall_median']:7.3f} s/step  cpu {row['cpu_median']:7.3f} s/step", flush=True)
    per_step = float(np.mean([r["cpu_median"] for r in rows if r["kind"] in args.estimate_kinds]))
    estimate = [
        {
            "kinds": args.estimate_kinds,
            "runs": args.estimate_runs,
            "steps": s,
            "cpu_seconds_per_step": per_step,
            "cpu_minutes": round(per_step * args.estimate_runs * s / 60, 1),
        }
        for s in args.estimate_steps
    ]
    doc = {
        "command": "python -m analysis.training.step_time " + " ".join(argv if argv is not None else sys.argv[1:]),
        "config": {**config.to_dict(), "threads": args.threads},
        "load_average_1min_before": load,
        "load_average_1min_after": os.getloadavg()[0],
        "versions": versions(),
        "rows": rows,
        "estimate": estimate,
    }
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n", option="--out", mkdir=True)
    for e in estimate:
        print(f"{e['runs']} runs x {e['steps']} steps ({', '.join(e['kinds'])}): {e['cpu_minutes']} CPU-minutes")
    return 0


if __name__ == "__main__":
    run_command(main)
