"""Bookkeeping of resuming and extending runs (:func:`analysis.training.runner.run_experiment`, ``--resume``,
``--extend-to``): the configuration header a folder was written with, the checks a folder must pass before it is
trained into (fresh, resumed or extended), the configuration every checkpoint records and its check, the step a
run's checkpoint holds, and the ``continued`` note an extended row carries.

A checkpoint records its run's configuration without ``steps`` and ``decay_steps`` (which ``--extend-to``
changes) but with the step its cosine ends at (``horizon``, which it keeps), and the run's spec
(:func:`_run_config`); :func:`analysis.training.runner.train` refuses a checkpoint whose record differs. A fresh
run (not
resumed, not extended) refuses a folder that holds checkpoints of its experiment rather than clearing them: they
may be the final states of long runs, kept so they can be continued, and a user who meant to start over can delete
them with one command, while one who ran without ``--resume`` by mistake cannot get them back. Checkpoints written
before they recorded a configuration are loaded unchecked, as before (only a resume or an extension loads them,
after the folder's header was compared).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from graphs.cli_common import NUMBER, check_shape

from .summary import loss_curve

#: what a resume or an extension reads of a folder's header, ``NAME.config.json``
HEADER_SHAPE = {"name": str, "steps": int, "decay_steps?": (int, None)}
#: what they read of every line of ``NAME.jsonl`` (a finished run), and of the lines of each kind of experiment
ROW_SHAPE = {
    "run": str,
    "kind": str,
    "n": int,
    "w": int,
    "layers": int,
    "steps?": int,
    "train_seconds": NUMBER,
    "loss_curve": [NUMBER],
    "lstar": (int, None),
    "coverage_mean": NUMBER,
}
SYNTHETIC_SHAPE = {"accuracy": NUMBER, "predicted_accuracy": NUMBER, "chance": NUMBER}
LM_SHAPE = {"val_perplexity": NUMBER, "val_loss": NUMBER}
_WRITER = "python -m analysis.training"


def _header(path: Path) -> dict:
    """A written configuration (checked against :data:`HEADER_SHAPE`, a ``ValueError`` naming ``out``), with the
    fields added since it was written at their defaults."""
    try:
        config = json.loads(path.read_text())
        check_shape(config, HEADER_SHAPE)
    except ValueError as exc:  # not text, not JSON, or a JSON value of another shape
        problem = str(exc) if not isinstance(exc, json.JSONDecodeError | UnicodeDecodeError) else "not JSON"
        raise ValueError(f"out: {path}: {problem}; expected the configuration header of {_WRITER}") from None
    config.setdefault("decay_steps", None)  # headers written before decay_steps existed: the cosine ended at steps
    return config


def _schedule_free(config: dict) -> dict:
    """A configuration (``to_dict()`` or a written header) without ``steps`` and ``decay_steps`` and with
    ``horizon``, the step its cosine ends at (``decay_steps``, or ``steps`` when that is ``None``): what stays the
    same when runs are extended to more steps."""
    horizon = config["steps"] if config.get("decay_steps") is None else config["decay_steps"]
    return {**{k: v for k, v in config.items() if k not in ("steps", "decay_steps")}, "horizon": horizon}


def _run_config(config, spec: dict) -> dict:
    """What a checkpoint of run ``spec`` of ``config`` records of how it was trained (module doc)."""
    return {**_schedule_free(config.to_dict()), "spec": dict(spec)}


def _check_checkpoint(state: dict, config, spec: dict, checkpoint: Path) -> None:
    """A one-line ``ValueError`` unless the checkpoint ``state`` (loaded from ``checkpoint``) was trained as run
    ``spec`` of ``config`` is (:func:`_run_config`; a checkpoint without a record passes, module doc)."""
    recorded = state.get("config")
    if recorded is None:
        return
    expected = _run_config(config, spec)
    if recorded != expected:
        keys = sorted(k for k in recorded.keys() | expected.keys() if recorded.get(k) != expected.get(k))
        shown = ", ".join(f"{k} {recorded.get(k)!r} there, {expected.get(k)!r} here" for k in keys[:3])
        raise ValueError(
            f"checkpoint: {checkpoint} was trained with a different configuration ({shown}); "
            "delete it or choose another --out"
        )


def _check_folder(config, out: Path, resume: bool, extending: int | None) -> None:
    """Before anything is written to ``out``: a fresh run (``resume`` false) refuses a folder with results or
    checkpoints of ``config.name`` (``FileExistsError``, module doc); a plain resume refuses a header of another
    configuration (``ValueError``)."""
    lines, header = out / f"{config.name}.jsonl", out / f"{config.name}.config.json"
    if lines.exists() and not resume:
        raise FileExistsError(f"out: {lines} already holds results; pass --resume to continue or choose another --out")
    kept = sorted((out / "checkpoints" / config.name).glob("*.pt"))
    if kept and not resume:
        raise FileExistsError(
            f"out: {kept[0].parent} holds {len(kept)} checkpoints of an earlier training of "
            f"{config.name}; pass --resume to continue it (each checkpoint's configuration is "
            "checked), delete that folder to start over, or choose another --out"
        )
    if header.exists() and resume and extending is None and _header(header) != config.to_dict():
        raise ValueError(f"resume: {header} was written with a different configuration; choose another --out")


def _check_extension(config, target, out: Path) -> None:
    """``out`` holds runs of ``config`` (possibly extended before, to at most ``target.steps``) on its schedule."""
    header = out / f"{config.name}.config.json"
    if not header.exists():
        raise ValueError(f"extend_to: {header} does not exist; train {config.name} into this folder first")
    written = _header(header)
    if _schedule_free(written) != _schedule_free(config.to_dict()):
        raise ValueError(f"extend_to: {header} was written with a different configuration or schedule")
    if written["steps"] > target.steps:
        raise ValueError(
            f"extend_to: expected at least the {written['steps']} steps {header} records, got {target.steps}"
        )


def _checkpoint_step(checkpoint: Path, config, spec: dict) -> int:
    """The step ``checkpoint`` holds (0 if there is none), once its configuration is checked
    (:func:`_check_checkpoint`)."""
    if not checkpoint.exists():
        return 0
    state = torch.load(checkpoint, weights_only=False)
    _check_checkpoint(state, config, spec, checkpoint)
    return int(state["step"])


def _continued(row: dict, before: dict, resumed_at: int, checkpoint: Path) -> dict:
    """``row`` (the run trained on) with a ``continued`` note on what it was before. ``resumed_at``: the step of the
    checkpoint training started from (``before["steps"]``: the final one; below it: none was kept, so the run was
    replayed from step 0, and ``replay_curve_max_abs_diff`` is the largest difference between the recorded loss
    curve and the replayed one over the steps recorded before)."""
    keep = (
        "accuracy",
        "accuracy_reachable",
        "reachable",
        "eval_loss",
        "val_perplexity",
        "val_loss",
        "train_loss_last",
        "train_seconds",
    )
    replay = resumed_at < before["steps"]
    note = {
        "from_steps": before["steps"],
        "to_steps": row["steps"],
        "resumed_at_step": resumed_at,
        "how": "replayed from step 0 (no final checkpoint)" if replay else "continued from the final checkpoint",
        "before": {k: before[k] for k in keep if k in before},
    }
    if replay:
        replayed = loss_curve(torch.load(checkpoint, weights_only=False)["losses"][: before["steps"]])
        recorded = before["loss_curve"]
        note["replay_curve_max_abs_diff"] = (
            max(abs(a - b) for a, b in zip(replayed, recorded, strict=True)) if len(replayed) == len(recorded) else None
        )
    return {**row, "continued": [*before.get("continued", []), note]}


def _read_lines(path: Path, config, extending: int | None) -> tuple[dict[str, dict], dict[str, dict]]:
    """The rows of the log ``path`` by run: ``(done, before)``, ``before`` the runs recorded with fewer than
    ``config.steps`` steps (to be trained on and noted; a row without ``steps``, from before rows recorded it,
    trained ``extending`` steps, the horizon of the schedule the recorded runs were trained on, or ``config.steps``
    when not extending), ``done`` the others (a later line of a run replaces an earlier one)."""
    done = {}
    shape = ROW_SHAPE | (LM_SHAPE if hasattr(config, "max_chars") else SYNTHETIC_SHAPE)  # the LM reads a corpus
    if path.exists():
        try:
            lines = path.read_text().splitlines()
        except ValueError:  # not text
            raise ValueError(f"out: {path} is not JSON lines; expected the finished runs of {_WRITER}") from None
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    row = json.loads(line)
                    check_shape(row, shape, "the run")
                except ValueError as exc:
                    problem = "not JSON" if isinstance(exc, json.JSONDecodeError) else str(exc)
                    raise ValueError(
                        f"out: {path} line {number}: {problem}; expected a finished run of {_WRITER} {config.name}"
                    ) from None
                done[row["run"]] = row
    recorded = config.steps if extending is None else extending  # the steps of a row that does not say
    before = {rid: row for rid, row in done.items() if row.get("steps", recorded) < config.steps}
    for rid, row in before.items():
        row.setdefault("steps", recorded)
        del done[rid]
    return done, before
