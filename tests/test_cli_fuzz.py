"""A table of bad inputs for the command lines that read result files or write where a flag says: each run must end
in exit status 2 with one line on stderr (no traceback), and leave no file behind.

Each case writes its input files into a fresh folder, runs the command's ``main(argv)`` in-process and compares the
folder before and after (outputs are pointed into the same folder)."""

import importlib
import json
from pathlib import Path

import pytest
from benchmark_scripts import load_benchmark

BENCH_KEYS = {"device": "cpu", "parameters": {"w": 8}, "cost_to_full_coverage": []}
LAYOUT = {"name": "x", "stack": "swa:16", "layers": 2, "causal": True}


def _module(name):
    return lambda: importlib.import_module(name).main


def _script(name):
    return lambda: load_benchmark(name).main


def _json(path: Path, doc) -> str:
    path.write_text(json.dumps(doc))
    return str(path)


def _text(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


def _configs(tmp: Path, **fields) -> str:
    folder = tmp / "configs"
    folder.mkdir()
    _json(folder / "bad.json", {**LAYOUT, **fields})
    return str(folder)


#: (id, what the command needs, its main, argv built in the case's folder)
# fmt: off
CASES = [
    ("replot-empty-rows", "torch", _module("gpu.bench.cli"),
     lambda t: ["--replot", _json(t / "b.json", {**BENCH_KEYS, "rows": []}), "--plot", str(t / "p.png")]),
    ("replot-foreign-rows", "torch", _module("gpu.bench.cli"),
     lambda t: ["--replot", _json(t / "b.json", {**BENCH_KEYS, "rows": [{"w": 1}]}), "--plot", str(t / "p.png")]),
    ("figures-bench-empty-rows", "matplotlib", _module("figures.cli"),
     lambda t: ["cost_per_layer", "--bench", _json(t / "b.json", {**BENCH_KEYS, "rows": []}), "--out", str(t / "o")]),
    ("figures-bench-foreign-rows", "matplotlib", _module("figures.cli"),
     lambda t: ["cost_per_layer", "--bench", _json(t / "b.json", {**BENCH_KEYS, "rows": [{"path": 3}]}),
                "--out", str(t / "o")]),
    ("figures-layouts-string", "matplotlib", _module("figures.cli"),
     lambda t: ["layouts", "--layouts-json", _json(t / "l.json", {"n": 8, "layouts": "nope"}), "--out", str(t / "o")]),
    ("figures-layouts-empty", "matplotlib", _module("figures.cli"),
     lambda t: ["layouts", "--layouts-json", _json(t / "l.json", {"n": 8, "layouts": []}), "--out", str(t / "o")]),
    ("layouts-layers-string", None, _module("receptive.layouts"),
     lambda t: ["--n", "64", "--no-progress", "--configs", _configs(t, layers="two"), "--json", str(t / "o.json")]),
    ("layouts-causal-string", None, _module("receptive.layouts"),
     lambda t: ["--n", "64", "--no-progress", "--configs", _configs(t, causal="false"), "--json", str(t / "o.json")]),
    ("approx-json-folder", "torch", _module("gpu.approx.cli"),
     lambda t: ["--n", "16", "--d", "4", "--budgets", "4", "--seeds", "1", "--json", str(t)]),
    ("bench-banded-json-folder", "torch", _script("bench_banded"),
     lambda t: ["--n", "32", "--repeats", "1", "--json", str(t)]),
    ("bench-banded-json-missing-parent", "torch", _script("bench_banded"),
     lambda t: ["--n", "32", "--repeats", "1", "--json", str(t / "missing" / "x.json")]),
    ("bench-generation-json-folder", "transformers", _script("bench_generation"),
     lambda t: ["--tiny", "--n", "64", "--new", "0", "--repeats", "1", "--json", str(t)]),
    ("bench-sa-layer-json-folder", "numba", _script("bench_sa_layer"),
     lambda t: ["--n", "512", "--w", "8", "--repeats", "1", "--json", str(t)]),
    ("bound-scheduler-not-an-address", None, _module("receptive.bound.cli"),
     lambda t: ["--quick", "--scheduler", "notanaddress", "--out", str(t / "out")]),
    ("bound-scheduler-nobody-listens", None, _module("receptive.bound.cli"),
     lambda t: ["--quick", "--scheduler", "tcp://127.0.0.1:1", "--out", str(t / "out")]),
    ("real-models-fake-gguf", "transformers", _module("analysis.real_models.study"),
     lambda t: ["--model", _text(t / "x.gguf", "not a model"), "--out", str(t / "o.json")]),
    ("real-models-empty-folder", "transformers", _module("analysis.real_models.study"),
     lambda t: ["--model", str(_folder(t / "m")), "--out", str(t / "o.json")]),
    ("bench-generation-fake-gguf", "transformers", _script("bench_generation"),
     lambda t: ["--model", _text(t / "x.gguf", "not a model"), "--n", "64", "--new", "0", "--repeats", "1"]),
    ("coverage-negative-layer-argument", None, _module("receptive.coverage.cli"),
     lambda t: ["--n", "64", "--w", "4", "--patterns", "random:-2", "--json"]),
    ("coverage-binary-hf-config", None, _module("receptive.coverage.cli"),
     lambda t: ["--n", "64", "--hf-config", _text(t / "c.json", "\x00\xd0\xff binary")]),
    ("smallworld-edges-folder", None, _module("graphs.smallworld.cli"),
     lambda t: ["--edges", str(_folder(t / "edges"))]),
    ("real-models-scored-zero", "transformers", _module("analysis.real_models.study"),
     lambda t: ["--scored", "0", "--out", str(t / "o.json")]),
    ("hf-eval-unknown-task", "transformers", _module("gpu.harness.cli"),
     lambda t: ["--tasks", "nosuchtask", "--out", str(t / "out")]),
    ("hf-eval-fake-gguf", "transformers", _module("gpu.harness.cli"),
     lambda t: ["--model", _text(t / "x.gguf", "not a model"), "--tasks", _text(t / "r.jsonl", ""),
                "--out", str(t / "out")]),
    ("hf-eval-bad-request-file", "transformers", _module("gpu.harness.cli"),
     lambda t: ["--tasks", _text(t / "r.jsonl", '{"doc_id": 0}'), "--out", str(t / "out")]),
]
# fmt: on


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


#: the flag a case's one line must name
FLAGS = {
    "bound-scheduler-not-an-address": "--scheduler",
    "bound-scheduler-nobody-listens": "--scheduler",
    "real-models-fake-gguf": "--model",
    "real-models-empty-folder": "--model",
    "bench-generation-fake-gguf": "--model",
    "hf-eval-unknown-task": "--tasks",
    "hf-eval-fake-gguf": "--model",
    "hf-eval-bad-request-file": "--tasks",
    "coverage-negative-layer-argument": "--patterns",
    "coverage-binary-hf-config": "--hf-config",
    "smallworld-edges-folder": "--edges",
    "real-models-scored-zero": "--scored",
}


@pytest.mark.parametrize(
    ("needs", "main", "argv", "flag"), [(*c[1:], FLAGS.get(c[0])) for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_one_line_exit_2_and_leaves_nothing(tmp_path, capsys, needs, main, argv, flag):
    if needs:
        pytest.importorskip(needs)
    main = main()
    args = argv(tmp_path)
    before = _files(tmp_path)
    try:
        code = main(args)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, (args, code, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert flag is None or f" {flag}:" in err, err
    assert _files(tmp_path) == before, "a file was left behind"
