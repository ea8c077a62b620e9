"""Train every run of an experiment, checkpointing so a killed sweep resumes where it stopped.

Layout of ``out``: ``NAME.jsonl`` (one line per finished run, appended as runs finish; ``--resume`` skips them),
``NAME.config.json`` (the configuration the lines belong to), ``checkpoints/NAME/RUN.pt`` (model, optimiser, step,
loss history, both random generators and the run's configuration, every ``checkpoint_every`` steps and at the end of
the run; the final one is kept so the run can be continued; ``checkpoints/.gitignore`` keeps them out of git; a
checkpoint of another configuration is refused, and a fresh run refuses a folder holding checkpoints of its
experiment: :mod:`gpu.train.extend`) and ``NAME.json``, the
summary written when every run is done (config, versions, one row per run in grid order; ``session_seconds`` is the
wall time of the last call, ``train_seconds_total`` the training time of all runs; a ``run_notes`` entry added to an
earlier ``NAME.json`` by hand is kept).

Continuing (``extend_to``, ``python -m gpu.train ... --extend-to STEPS``): every run of the grid is trained on to
``STEPS`` with the configuration :func:`gpu.train.configs.extended` gives (same schedule, ``decay_steps`` fixed at
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
import math
import multiprocessing
import os
import platform
import sys
import time
from pathlib import Path

import numba
import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

import receptive

from ..validation import writable_folder
from . import tasks
from .configs import LMConfig, SyntheticConfig, extended
from .extend import (
    _check_checkpoint,
    _check_extension,
    _check_folder,
    _checkpoint_step,
    _continued,
    _read_lines,
    _run_config,
)
from .models import TinyTransformer, parameter_counts
from .reach import coverage_summary, pattern_for, reachable
from .summary import aggregate, compare_with_paper, deviations, loss_curve

EVAL_SEED_OFFSET = 1_000_003


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


def learning_rate(config, step: int) -> float:
    """Linear warm-up to ``lr`` over ``warmup`` steps, cosine decay to ``lr / 10`` at ``config.horizon``
    (``decay_steps``, or ``steps`` when that is ``None``), then ``lr / 10``:

    ``lr (t + 1) / warmup`` for ``t < warmup``, else ``lr (0.1 + 0.45 (1 + cos(pi min(1, (t - warmup) /
    max(1, horizon - warmup)))))``. With ``decay_steps`` set the value at step ``t`` does not depend on ``steps``."""
    if config.warmup and step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    progress = (step - config.warmup) / max(1, config.horizon - config.warmup)
    return config.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def build_model(config, spec: dict) -> TinyTransformer:
    if isinstance(config, LMConfig):
        vocab, classes, causal = tasks.TEXT_VOCAB, None, True
    else:
        vocab, causal = tasks.SYNTHETIC_VOCAB, config.causal
        classes = tasks.N_VALUES if config.task == "retrieval" else config.max_count + 1
    return TinyTransformer(
        spec["kind"], vocab, config.d_model, config.n_heads, spec["layers"], spec["w"], causal, spec["seed"], classes
    )


class RunData:
    """Training batches and the fixed evaluation set of run ``spec`` of ``config``: ``train_batch()`` draws the next
    batch from a generator seeded with ``spec["seed"]`` (LM: random windows of ``corpus.train``); ``eval_set()`` is
    the same ``eval_samples`` examples at every call (seed ``spec["seed"] + EVAL_SEED_OFFSET``)."""

    def __init__(self, config, spec: dict, corpus: tasks.Corpus | None):
        self.config, self.spec, self.corpus = config, spec, corpus
        self.generator = torch.Generator().manual_seed(spec["seed"])

    def train_batch(self):
        c, n = self.config, self.spec["n"]
        if self.corpus is not None:
            return tasks.lm_batch(self.corpus.train, c.batch, n, self.generator)
        return self._synthetic(c.batch, self.generator)

    def _synthetic(self, batch: int, generator: torch.Generator) -> tasks.Batch:
        c, n = self.config, self.spec["n"]
        if c.task == "retrieval":
            return tasks.retrieval(batch, n, c.causal, generator)
        return tasks.counting(batch, n, c.causal, generator, c.max_count)

    def eval_set(self) -> tasks.Batch:
        generator = torch.Generator().manual_seed(self.spec["seed"] + EVAL_SEED_OFFSET)
        return self._synthetic(self.config.eval_samples, generator)


def _loss(model, batch, lm: bool) -> torch.Tensor:
    if lm:
        x, y = batch
        return F.cross_entropy(model(x).flatten(0, 1), y.flatten())
    return F.cross_entropy(model(batch.tokens).flatten(0, 1), batch.dense.flatten(), ignore_index=tasks.IGNORE)


def train_step(model: TinyTransformer, optimizer: torch.optim.Optimizer, data: RunData, config, step: int) -> float:
    """One optimiser step of :func:`train` at step index ``step`` (0-based), returning its training loss.

    The learning rate of every parameter group is set to :func:`learning_rate` ``(config, step)``; the loss is the
    mean cross-entropy of ``model`` on ``data.train_batch()`` over every position with a target (LM: the next
    character; synthetic tasks: ``batch.dense``, positions marked ``tasks.IGNORE`` left out); gradients are zeroed,
    computed, their global norm clipped at 1 (``torch.nn.utils.clip_grad_norm_``, Pascanu et al. 2013) and
    ``optimizer.step()`` applied (AdamW in :func:`train`). ``model`` should be in training mode.
    """
    if not isinstance(config, SyntheticConfig | LMConfig):
        raise ValueError(f"config: expected a SyntheticConfig or LMConfig, got {type(config).__name__}")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"step: expected an integer >= 0, got {step!r}")
    for group in optimizer.param_groups:
        group["lr"] = learning_rate(config, step)
    loss = _loss(model, data.train_batch(), isinstance(config, LMConfig))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


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
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step, "losses": losses,
            "seconds": seconds, "torch_rng": torch.get_rng_state(), "data_rng": data.generator.get_state(),
            "config": record}  # fmt: skip


def _evaluate_synthetic(model, config: SyntheticConfig, spec: dict, data: RunData) -> dict:
    batch = data.eval_set()
    chance = 1 / (tasks.N_VALUES if config.task == "retrieval" else config.max_count + 1)
    correct, losses = [], []
    for lo in range(0, batch.tokens.shape[0], 256):
        part = slice(lo, lo + 256)
        tokens, targets, readout = batch.tokens[part], batch.targets[part], batch.readout[part]
        logits = model(tokens)[torch.arange(tokens.shape[0]), readout]
        losses.append(F.cross_entropy(logits, targets, reduction="none"))
        correct.append(logits.argmax(-1) == targets)
    correct = torch.cat(correct).numpy()
    n, w, layers, seed = spec["n"], spec["w"], spec["layers"], spec["seed"]
    pattern = pattern_for(spec["kind"], n, w, config.causal, seed)
    reach = reachable(pattern, layers, batch.readout.numpy(), batch.sources.numpy())
    share = float(reach.mean())
    cov = coverage_summary(spec["kind"], n, w, layers, config.causal, seed, n - 1 if config.causal else None)
    return {
        "task": config.task,
        "causal": config.causal,
        "accuracy": float(correct.mean()),
        "eval_loss": float(torch.cat(losses).mean()),
        "chance": chance,
        "reachable": share,
        "predicted_accuracy": share + (1 - share) * chance,
        "accuracy_reachable": float(correct[reach].mean()) if reach.any() else None,
        "accuracy_unreachable": float(correct[~reach].mean()) if (~reach).any() else None,
        "swa_field": layers * (w - 1) + 1 if config.causal else layers * (w // 2) + 1,
        **cov,
    }


def _evaluate_lm(model, config: LMConfig, spec: dict, corpus: tasks.Corpus) -> dict:
    x, y = tasks.validation_windows(corpus.validation, config.n, config.eval_windows)
    per_token = torch.cat(
        [
            F.cross_entropy(model(x[lo : lo + 32]).transpose(1, 2), y[lo : lo + 32], reduction="none")
            for lo in range(0, x.shape[0], 32)
        ]
    ).numpy()
    masks = tasks.copy_probe_mask(x.numpy(), y.numpy(), config.field, config.probe_k)
    other = ~(masks["far"] | masks["near"])
    loss = float(per_token.mean())
    probe = {
        name: {"tokens": int(m.sum()), "loss": float(per_token[m].mean()) if m.any() else None}
        for name, m in (("far", masks["far"]), ("near", masks["near"]), ("other", other))
    }
    cov = coverage_summary(model.kind, config.n, config.w, config.layers, True, spec["seed"], None)
    return {"val_loss": loss, "val_perplexity": math.exp(loss), "val_bits_per_char": loss / math.log(2),
            "probe": probe, "swa_field": config.field, **cov}  # fmt: skip


def run_experiment(config, out, resume: bool = False, progress: bool | None = None, stop_after: int | None = None,
                   threads: int | None = None, jobs: int = 1, extend_to: int | None = None) -> dict:  # fmt: skip
    """Train every run of ``config`` into ``out`` and return (and write) the summary ``NAME.json``.

    ``resume``: continue the runs recorded in ``out`` (finished ones are skipped, a checkpointed one continues);
    without it an existing ``NAME.jsonl`` is an error. ``progress``: a tqdm bar (``None``: only on a terminal).
    ``stop_after``: raise :class:`Interrupted` after that many optimiser steps (simulates a kill). ``threads``:
    ``torch.set_num_threads`` (default 1: these models are too small to gain from more, and
    on shared cores extra threads spin-wait; measured 25x slower with 2 threads under load). ``jobs``: worker
    processes training runs side by side (each with ``threads`` torch threads; spawned, so a script calling this with
    ``jobs > 1`` needs the ``if __name__ == "__main__":`` guard); ``stop_after`` needs ``jobs = 1``.
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
            _check_extension(config, target, prepare_out(out))
            return _run(target, out, True, progress, stop_after, jobs, threads if threads is not None else 1,
                        extending=config.horizon)  # fmt: skip
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
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context, initializer=_worker_init,
                                                initargs=(threads,)) as pool:  # fmt: skip
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
        (out / "checkpoints" / ".gitignore").write_text("# final and intermediate training states (gpu.train)\n*\n")
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
