"""Every reader of a result file in ``analysis/`` and ``figures/`` refuses a file of another shape before any work:
valid JSON (or JSON lines) with the keys the reader looks for, one entry inside of another shape. A command line
ends in exit status 2 with one line on stderr naming the flag that gave the file, no traceback and nothing written;
a function raises a one-line ``ValueError`` naming its argument (or the flag it reads for)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from refusals import assert_refused

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "analysis"
#: a row of receptive.bound's tasks.jsonl, and one of another shape (its task is a string, as in a paper-task store)
BOUND_ROW = {
    "key": "sa|n64",
    "task": {
        "pattern": "sa",
        "causal": True,
        "circular": False,
        "n": 64,
        "w": 4,
        "seed": 0,
        "method": "exact",
        "max_layers": 16,
        "targets": 0,
        "start": 0,
        "stop": 64,
    },
    "full_layer": 3,
}
PAPER_ROW = {
    "key": "smollm2|exact|arc_easy",
    "task": "arc_easy",
    "kind": "choice",
    "method": "exact",
    "budget": 0,
    "seed": 0,
    "exact_layers": [],
    "runs": [{"attention": {"label": "exact"}, "records": [{"doc_id": 0}]}],
}
VARIANTS_ROW = {
    "pattern": "sa+swa",
    "causal": True,
    "n": 64,
    "w": 4,
    "seed": 0,
    "method": "exact",
    "full_layer": 3,
    "keys_per_query": 7.5,
    "seconds": 0.1,
}


def _jsonl(rows) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def _write(folder: Path, name: str, content) -> Path:
    """``content`` (text, or a value written as JSON) at ``folder/name``."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def _store(t: Path, row: dict) -> str:
    return str(_write(t / "store", "tasks.jsonl", _jsonl([row])).parent)


def _training(t: Path) -> list[str]:
    # a finished run of another experiment's shape (no accuracy) in the quick retrieval's log
    row = {
        "run": "sa-n64",
        "kind": "sa",
        "n": 64,
        "w": 4,
        "layers": 2,
        "train_seconds": 1.0,
        "loss_curve": [1.0],
        "lstar": 2,
        "coverage_mean": 1.0,
        "val_perplexity": 3.0,
        "val_loss": 1.1,
    }
    _write(t / "train", "retrieval.jsonl", _jsonl([row]))
    return ["retrieval", "--quick", "--resume", "--out", str(t / "train")]


def _variants_resume(t: Path) -> list[str]:
    _write(t / "v", "variants.jsonl", _jsonl([VARIANTS_ROW]))
    _write(t / "v", "variants.json", {"runs": [{"max_layers": 64}, 7]})
    return ["--patterns", "sa+swa", "--n", "64", "--w", "4", "--seeds", "1", "--resume", "--out", str(t / "v")]


def _figure(name: str, flag: str, doc, *others: str):
    def argv(t: Path) -> list[str]:
        return [name, flag, str(_write(t, "bad.json", doc)), *others, "--out", str(t / "figures")]

    return argv


CAUSAL_FILES = {
    "--bound-json": "bound/results/bound.json",
    "--bound-22-json": "causal/results/n2p22/bound.json",
    "--variants-json": "causal/results/variants/variants.json",
    "--pooled-json": "causal/results/pooled.json",
}


def _causal(flag: str, doc):
    def argv(t: Path) -> list[str]:
        files = {f: str(RESULTS / p) for f, p in CAUSAL_FILES.items()} | {flag: str(_write(t, "bad.json", doc))}
        return ["causal", *(x for item in files.items() for x in item), "--out", str(t / "figures")]

    return argv


POINT = {"pattern": "sa", "causal": True, "w": 4, "n": 64}
#: command lines: (id, package needed, module, flag, argv from the case folder)
# fmt: off
COMMANDS = [
    ("paper-tasks-figure", "matplotlib", "analysis.paper_tasks.figure", "--summary",
     lambda t: ["--summary", str(_write(t, "s.json", {"tasks": [{"task": "arc_easy", "informative": True}],
                                                      "patterns": [], "averages": []})), "--out", str(t / "fig")]),
    ("paper-tasks-summary", "torch", "analysis.paper_tasks.summary", "--store",
     lambda t: ["--store", _store(t, BOUND_ROW), "--out", str(t / "summary.json")]),
    ("paper-tasks-reach", "torch", "analysis.paper_tasks.reach", "--store",
     lambda t: ["--store", _store(t, PAPER_ROW), "--out", str(t / "reach.json")]),
    ("real-models-figure", "matplotlib", "analysis.real_models.figure", "--json",
     lambda t: ["--json", str(_write(t, "study.json", {"model": "m", "costs": [{"budget": "128"}], "rows": [
         {"label": "exact", "n": 64, "task": "perplexity", "protocol": "sparse", "perplexity": 2.0, "seed": 0}]})),
                "--out", str(t / "fig.png")]),
    ("refresh-costs", "torch", "analysis.numerical_methods.refresh_costs", "FILE",
     lambda t: [str(_write(t, "approx.json", {"parameters": {"kinds": "x", "seeds": 1, "d": 8, "heads": 1,
                                                             "causal": False, "budgets": "4"}, "rows": []}))]),
    ("refresh-keys", None, "analysis.causal.refresh_keys", "--out",
     lambda t: ["--out", str(_write(t / "v", "variants.jsonl", _jsonl([{**VARIANTS_ROW, "n": "64"}])).parent)]),
    ("variants-resume", None, "analysis.causal.variants", "--out", _variants_resume),
    ("pooled", None, "analysis.causal.pooled", "dirs", lambda t: [_store(t, PAPER_ROW)]),
    ("interval-model", None, "analysis.causal.interval_model", "dirs",
     lambda t: [_store(t, {**BOUND_ROW, "full_layer": "3"}), "--out", str(t / "interval.json")]),
    ("causal-model-attempts", None, "analysis.causal.causal_model_attempts", "--out",
     lambda t: ["--variants", "model", "--append", "--dirs", str(RESULTS / "causal/results/seeds"),
                "--out", str(_write(t, "a.json", {"rows": [{"variant": "x"}]}))]),
    ("training-resume", "torch", "analysis.training.__main__", "--out", _training),
    ("figures-bench", "matplotlib", "figures.cli", "--bench",
     _figure("cost_per_layer", "--bench", {"device": "cpu", "parameters": {}, "rows": [{}],
                                           "cost_to_full_coverage": []})),
    ("figures-approx-json", "matplotlib", "figures.cli", "--approx-json",
     _figure("approx_methods", "--approx-json", {"parameters": {}, "structure": [], "errors": [{"method": 3}],
                                                 "substitution": [], "costs": []})),
    ("figures-decoder-json", "matplotlib", "figures.cli", "--decoder-json",
     _figure("approx_kv_cache", "--decoder-json", {"parameters": {}, "config": {}, "rows": [{"method": "sa"}]},
             "--approx-json", str(RESULTS / "numerical_methods/results/approx_minilm.json"))),
    ("figures-layouts-json", "matplotlib", "figures.cli", "--layouts-json",
     _figure("layouts", "--layouts-json", {"n": 64, "layouts": [{"layout": {"name": 3}}]})),
    ("figures-training-dir", "matplotlib", "figures.cli", "--training-dir",
     lambda t: ["training", "--training-dir", str(_write(t / "train", "lm.json", {"runs": [{"kind": "sa"}]}).parent),
                "--out", str(t / "figures")]),
    *[(f"figures-{flag[2:]}", "matplotlib", "figures.cli", flag, _causal(flag, {"points": [POINT]}))
      for flag in CAUSAL_FILES],
]
# fmt: on


@pytest.mark.parametrize(("needs", "module", "flag", "argv"), [c[1:] for c in COMMANDS], ids=[c[0] for c in COMMANDS])
def test_a_command_refuses_a_file_of_another_shape(needs, module, flag, argv, tmp_path, capsys, monkeypatch):
    if needs:
        pytest.importorskip(needs)
    import importlib

    main = importlib.import_module(module).main
    monkeypatch.chdir(tmp_path)
    args = argv(tmp_path)
    before = {p for p in tmp_path.rglob("*")}
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(args)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert exit_.value.code == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f"error: {flag}:" in lines[0], f"the line does not start with {flag}: {err}"
    assert "expected" in lines[0] or "writes" in lines[0], f"the line does not say what was expected: {err}"
    assert {p for p in tmp_path.rglob("*")} == before, "the refused command wrote something"


def _summary_store(t: Path):
    from analysis.paper_tasks.summary import store_rows

    return lambda: store_rows(_store(t, {**PAPER_ROW, "runs": []}))


def _log(t: Path):
    from analysis.causal.variants import read_log

    return lambda: read_log(_write(t, "variants.jsonl", _jsonl([VARIANTS_ROW, {**VARIANTS_ROW, "causal": "yes"}])))


def _variants_summary(t: Path):
    from analysis.causal.variants import read_summary

    return lambda: read_summary(_write(t, "variants.json", {"runs": [{"max_layers": "64"}]}))


def _pool(t: Path):
    from analysis.causal.pooled import pool_seeds

    row = {**BOUND_ROW, "task": {**BOUND_ROW["task"], "method": "approximate"}}
    return lambda: pool_seeds([_write(t, "tasks.jsonl", _jsonl([row]))])


def _refresh(t: Path):
    from analysis.numerical_methods.refresh_costs import refresh_file

    doc = {"parameters": {"substitution_budgets": [4]}, "costs": [{"method": "sa", "budget": 4}]}
    return lambda: refresh_file(_write(t, "approx.json", doc), "python -m analysis.numerical_methods.refresh_costs")


def _attempts(t: Path):
    from analysis.causal.causal_model_attempts import read_rows

    return lambda: read_rows(_write(t, "attempts.json", {"rows": {"variant": "model"}}))


def _study(t: Path):
    from analysis.real_models.figure import check_study

    row = {"label": "exact", "n": 64, "task": "perplexity", "protocol": "dense", "perplexity": 2.0, "seed": 0}
    return lambda: check_study({"model": "m", "costs": [{"budget": 8}], "rows": [row]})


def _run_experiment(t: Path):
    from analysis.training.configs import preset
    from analysis.training.runner import run_experiment

    _write(t / "train", "retrieval.config.json", ["not", "a", "header"])
    return lambda: run_experiment(preset(True).retrieval, t / "train", resume=True, progress=False)


def _figures_training(t: Path):
    from figures.training import load

    return lambda: load(_write(t / "train", "retrieval.json", {"runs": [{"kind": "sa", "n": 64}]}).parent)


def _figures_causal(t: Path):
    from figures.causal import make

    files = {"bound", "bound_22", "variants", "pooled"}
    kwargs = {name: str(RESULTS / CAUSAL_FILES[f"--{name.replace('_', '-')}-json"]) for name in files}
    return lambda: make(t / "figures", **(kwargs | {"pooled": _write(t, "pooled.json", {"points": [POINT]})}))


#: functions: (id, package needed, the name first in the error, the call from the case folder)
FUNCTIONS = [
    ("paper-tasks-store-rows", "torch", "store", _summary_store),
    ("variants-read-log", None, "--out", _log),
    ("variants-read-summary", None, "--out", _variants_summary),
    ("pooled-pool-seeds", None, "files", _pool),
    ("refresh-costs-refresh-file", "torch", "FILE", _refresh),
    ("causal-model-attempts-read-rows", None, "--out", _attempts),
    ("real-models-check-study", "matplotlib", "--json", _study),
    ("training-run-experiment", "torch", "out", _run_experiment),
    ("figures-training-load", "matplotlib", "results", _figures_training),
    ("figures-causal-make", "matplotlib", "pooled", _figures_causal),
]


@pytest.mark.parametrize(("needs", "name", "call"), [c[1:] for c in FUNCTIONS], ids=[c[0] for c in FUNCTIONS])
def test_a_function_refuses_a_file_of_another_shape(needs, name, call, tmp_path):
    if needs:
        pytest.importorskip(needs)
    assert_refused(call(tmp_path), ValueError, name)
