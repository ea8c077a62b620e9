"""Train every run of an experiment, checkpointing so a killed sweep resumes where it stopped.

Layout of ``out``: ``NAME.jsonl`` (one line per finished run, appended as runs finish; ``--resume`` skips them),
``NAME.config.json`` (the configuration the lines belong to), ``checkpoints/NAME/RUN.pt`` (model, optimiser, step,
loss history, both random generators and the run's configuration, every ``checkpoint_every`` steps and at the end of
the run; the final one is kept so the run can be continued; ``checkpoints/.gitignore`` keeps them out of git; a
checkpoint of another configuration is refused, and a fresh run refuses a folder holding checkpoints of its
experiment: :mod:`analysis.training.extend`) and ``NAME.json``, the
summary written when every run is done (config, versions, one row per run in grid order; ``session_seconds`` is the
wall time of the last call, ``train_seconds_total`` the training time of all runs; a ``run_notes`` entry added to an
earlier ``NAME.json`` by hand is kept).

Continuing (``extend_to``, ``python -m analysis.training ... --extend-to STEPS``): every run of the grid is trained
on to
``STEPS`` with the configuration :func:`analysis.training.configs.extended` gives (same schedule, ``decay_steps``
fixed at
the first training's horizon), from its final checkpoint when there is one, else replayed from step 0 with the same
seed (the committed runs trained before final checkpoints were kept have none); the row records the steps before
and the results then under ``continued`` (for a replay also ``replay_curve_max_abs_diff``, the largest difference
between the recorded loss curve and the replayed one over those steps: 0 on the machine and thread count that
trained it).

Determinism: run ``r`` seeds torch's global generator (initial weights, SA's training permutations, the variants'
training pattern seeds) and its own data generator with its seed ``spec["seed"]`` (one of ``config.seeds``);
restoring both states from a checkpoint continues the exact stream, so an
interrupted and resumed run ends bit for bit where an uninterrupted one does (on the same machine and thread
count). ``jobs > 1`` trains the runs in that many worker processes (spawned, torch and numba on one thread each);
only the parent appends to ``NAME.jsonl`` (a line per finished run), and ``NAME.json`` is written once at the end
from those lines, so a kill leaves every finished run recorded and ``--resume`` continues the rest.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib.metadata
import json
import multiprocessing
import os
import platform
import sys
import time
from pathlib import Path

import numba
import numpy as np
import torch
from tqdm.auto import tqdm

import receptive
from gpu.validation import writable_folder

from . import tasks
from .configs import LMConfig, SyntheticConfig, extended
from .evaluate import _evaluate_lm, _evaluate_synthetic
from .extend import (
    _check_checkpoint,
    _check_extension,
    _check_folder,
    _checkpoint_step,
    _continued,
    _read_lines,
    _run_config,
)
from .models import parameter_counts
from .step import RunData, build_model, train_step
from .summary import aggregate, compare_with_paper, deviations, loss_curve


class Interrupted(RuntimeError):
    """Raised by ``stop_after``: stands for a run killed mid-way (tests of resuming)."""


def versions() -> dict:
    try:
        package = importlib.metadata.version("receptive")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - source checkout without install
        package = receptive.__version__
    return {
        "receptive": package,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def run_id(config, spec: dict) -> str:
    direction = "causal" if getattr(config, "causal", True) else "bidir"
    return f"{config.name}-{direction}-{spec['kind']}-n{spec['n']}-w{spec['w']}-L{spec['layers']}-s{spec['seed']}"


def _save(path: Path, state: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)  # atomic: a kill never leaves half a checkpoint


def train(config, spec: dict, checkpoint: Path, corpus=None, bar=None, budget: list | None = None) -> dict:
    """Train one run to ``config.steps`` (from its checkpoint if there is one), save the final checkpoint and
    evaluate it.

    ``budget``: a one-element list of optimiser steps this call may still take; at zero :class:`Interrupted` is
    raised (without a checkpoint), as if the process had been killed.
    """
    lm = isinstance(config, LMConfig)
    torch.manual_seed(spec["seed"])
    model = build_model(config, spec)
    data = RunData(config, spec, corpus)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    step, losses, seconds, record = 0, [], 0.0, _run_config(config, spec)
    if checkpoint.exists():
        state = torch.load(checkpoint, weights_only=False)
        _check_checkpoint(state, config, spec, checkpoint)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step, losses, seconds = state["step"], state["losses"], state["seconds"]
        if step > config.steps:
            raise ValueError(f"steps: {checkpoint} holds step {step}, beyond the {config.steps} steps asked for")
        torch.set_rng_state(state["torch_rng"])
        data.generator.set_state(state["data_rng"])
    if bar is not None:
        bar.update(step)
    model.train()
    start = time.perf_counter()
    while step < config.steps:
        losses.append(train_step(model, optimizer, data, config, step))
        step += 1
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
        if step % config.checkpoint_every == 0 and step < config.steps:
            elapsed = seconds + time.perf_counter() - start
            _save(checkpoint, _state(model, optimizer, step, losses, elapsed, data, record))
        if budget is not None:
            budget[0] -= 1
            if budget[0] <= 0 and step < config.steps:
                raise Interrupted(f"stopped after step {step} of {spec}")
    seconds += time.perf_counter() - start
    _save(checkpoint, _state(model, optimizer, step, losses, seconds, data, record))  # the final state: continuable
    model.eval()
    with torch.no_grad():
        result = _evaluate_lm(model, config, spec, corpus) if lm else _evaluate_synthetic(model, config, spec, data)
    counts = parameter_counts(model)
    curve = loss_curve(losses)
    return {
        **spec,
        "run": checkpoint.stem,
        "steps": step,
        "parameters": counts,
        "train_loss_first": curve[0],
        "train_loss_last": curve[-1],
        "loss_curve": curve,
        "train_seconds": round(seconds, 2),
        **result,
    }


def _state(model, optimizer, step, losses, seconds, data, record) -> dict:
    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "step": step,
        "losses": losses,
        "seconds": seconds,
        "torch_rng": torch.get_rng_state(),
        "data_rng": data.generator.get_state(),
        "config": record,
    }


def run_experiment(
    config,
    out,
    resume: bool = False,
    progress: bool | None = None,
    stop_after: int | None = None,
    threads: int | None = None,
    jobs: int = 1,
    extend_to: int | None = None,
) -> dict:
    """Train every run of ``config`` into ``out`` and return (and write) the summary ``NAME.json``.

    ``resume``: continue the runs recorded in ``out`` (finished ones are skipped, a checkpointed one continues);
    without it an existing ``NAME.jsonl`` is an error. ``progress``: a tqdm bar (``None``: only on a terminal).
    ``stop_after``: raise :class:`Interrupted` after that many optimiser steps (simulates a kill). ``threads``:
    ``torch.set_num_threads`` (default 1: these models are too small to gain from more, and
    on shared cores extra threads spin-wait; measured 25x slower with 2 threads under load). ``jobs``: worker
    processes training runs side by side (each with ``threads`` torch threads; spawned, so a script calling this with
    ``jobs > 1`` runs its work only under a ``__name__ == "__main__"`` test); ``stop_after`` needs ``jobs = 1``.
    ``extend_to``: continue the runs ``config`` trained into ``out`` (a previous extension of them included) to
    ``extend_to`` steps on the same schedule (module doc; implies ``resume``); ``out`` must hold ``config``'s header.
    """
    if not isinstance(config, SyntheticConfig | LMConfig):
        raise ValueError(f"config: expected a SyntheticConfig or LMConfig, got {type(config).__name__}")
    if stop_after is not None and (isinstance(stop_after, bool) or not isinstance(stop_after, int) or stop_after < 1):
        raise ValueError(f"stop_after: expected a positive integer, got {stop_after!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= 1024:
        raise ValueError(f"jobs: expected an integer in [1, 1024], got {jobs!r}")
    if jobs > 1 and stop_after is not None:
        raise ValueError("stop_after: only with jobs = 1 (it counts the steps of one process)")
    target = extended(config, extend_to) if extend_to is not None else None
    with training_threads(threads if threads is not None else 1):
        if target is not None:
            _check_extension(config, target, Path(out))  # before any folder is created
            return _run(
                target,
                out,
                True,
                progress,
                stop_after,
                jobs,
                threads if threads is not None else 1,
                extending=config.horizon,
            )
        return _run(config, out, resume, progress, stop_after, jobs, threads if threads is not None else 1)


@contextlib.contextmanager
def training_threads(threads: int):
    """``with training_threads(t):`` torch on ``t`` threads and numba on one thread while training, restored
    afterwards. Once numba's OpenMP pool has run with two threads its workers keep spinning and steal the core torch
    trains on (measured: a 150-step run took 41 s of CPU instead of 0.8 s); at these sizes one thread computes
    coverage in milliseconds."""
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 1024:
        raise ValueError(f"threads: expected an integer in [1, 1024], got {threads!r}")
    before = torch.get_num_threads(), numba.get_num_threads()
    torch.set_num_threads(threads)
    numba.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before[0])
        numba.set_num_threads(before[1])


def prepare_out(out) -> Path:
    """``out`` as a folder this process can write, created if missing; else a ``ValueError`` naming ``out`` (and no
    folders left behind: :func:`gpu.validation.writable_folder`)."""
    return writable_folder("out", out)


def _worker_init(threads: int) -> None:
    torch.set_num_threads(threads)
    numba.set_num_threads(1)


def _train_in_worker(config, spec: dict, checkpoint: Path) -> dict:
    corpus = tasks.load_corpus(config.max_chars) if isinstance(config, LMConfig) else None
    return train(config, spec, checkpoint, corpus)


def _train_parallel(config, todo, paths, resumed, lines, done, jobs, threads, bar, finish) -> None:
    """Train ``todo`` in ``jobs`` spawned processes; the parent records each run as it finishes."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(
        jobs, mp_context=context, initializer=_worker_init, initargs=(threads,)
    ) as pool:
        futures = {}
        for spec in todo:
            futures[pool.submit(_train_in_worker, config, spec, paths[run_id(config, spec)])] = spec
        try:
            for future in concurrent.futures.as_completed(futures):
                rid = run_id(config, futures[future])
                _record(lines, finish(future.result(), rid, resumed[rid], paths[rid]), done, rid)
                bar.update(config.steps)
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def _record(lines: Path, row: dict, done: dict, rid: str) -> None:
    with lines.open("a") as fh:
        fh.write(json.dumps(row) + "\n")
    done[rid] = row


def _run(config, out, resume, progress, stop_after, jobs=1, threads=1, extending: int | None = None) -> dict:
    """``extending``: the horizon of the schedule the recorded runs were trained on (rows without ``steps``, from
    before rows recorded it, trained exactly that many); runs recorded with fewer than ``config.steps`` steps are
    trained on and noted."""
    out = prepare_out(out)
    lines, header = out / f"{config.name}.jsonl", out / f"{config.name}.config.json"
    _check_folder(config, out, resume, extending)
    grid = config.grid()
    done, before = _read_lines(lines, config, extending)
    todo = [spec for spec in grid if run_id(config, spec) not in done]
    paths = {run_id(config, spec): out / "checkpoints" / config.name / f"{run_id(config, spec)}.pt" for spec in todo}
    # every kept checkpoint's configuration is checked before anything is written
    resumed = {run_id(config, spec): _checkpoint_step(paths[run_id(config, spec)], config, spec) for spec in todo}
    header.write_text(json.dumps(config.to_dict(), indent=1) + "\n")
    corpus = tasks.load_corpus(config.max_chars) if isinstance(config, LMConfig) else None
    show = sys.stderr.isatty() if progress is None else progress
    budget = [stop_after] if stop_after is not None else None

    def finish(row, rid, resumed_at, checkpoint):
        return _continued(row, before[rid], resumed_at, checkpoint) if rid in before else row

    if todo:
        (out / "checkpoints").mkdir(exist_ok=True)
        (out / "checkpoints" / ".gitignore").write_text(
            "# final and intermediate training states (analysis.training)\n*\n"
        )
    start = time.perf_counter()
    with tqdm(total=len(todo) * config.steps, disable=not show, desc=config.name, unit="step") as bar:
        if jobs > 1 and todo:
            _train_parallel(config, todo, paths, resumed, lines, done, jobs, threads, bar, finish)
        for spec in todo if jobs == 1 else ():
            rid = run_id(config, spec)
            bar.set_description(f"{config.name} {spec['kind']} n={spec['n']} w={spec['w']} L={spec['layers']}")
            row = train(config, spec, paths[rid], corpus, bar, budget)
            _record(lines, finish(row, rid, resumed[rid], paths[rid]), done, rid)
    summary = {
        "experiment": config.name,
        "config": config.to_dict(),
        "versions": versions(),
        "threads": threads,
        "jobs": jobs,
        "session_seconds": round(time.perf_counter() - start, 1),
        "runs": [done[run_id(config, spec)] for spec in grid],
    }
    summary["train_seconds_total"] = round(sum(r["train_seconds"] for r in summary["runs"]), 1)
    summary["aggregate"] = aggregate(summary["runs"])
    if corpus is not None:
        summary["corpus"] = corpus.describe()
        summary["paper"] = compare_with_paper(summary["runs"])
    else:
        summary["deviations"] = deviations(summary["runs"])
    path = out / f"{config.name}.json"
    notes = json.loads(path.read_text()).get("run_notes") if path.exists() else None
    if notes is not None:  # written by hand (e.g. which machine trained which run): kept
        summary["run_notes"] = notes
    path.write_text(json.dumps(summary, indent=1) + "\n")
    return summary
