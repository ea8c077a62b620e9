"""Every command of the studies analysis/bound and analysis/causal runs from the checkout root at its smallest size,
writing into a temporary folder: a tiny sweep, the interval model on it, the pooled evaluation of it with that model,
and each script of analysis/causal. Each runs through its ``__main__`` entry point (``run_command(main)``, what
``python -m`` runs) in this process, which spares an interpreter per command; the variants and refresh_keys scripts
run with ``python -m`` in a subprocess (as receptive.bound does in tests/receptive/test_bound.py and the pooled
evaluation in tests/analysis/test_pooled_causal.py)."""

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from graphs.cli_common import run_command

ROOT = Path(__file__).resolve().parents[2]


def _run(module, *argv, code=0):
    """``python -m module argv`` from the checkout root, in this process: the module's ``run_command(main)``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        with pytest.raises(SystemExit) as done:
            run_command(importlib.import_module(module).main, list(argv))
    assert done.value.code == code


def _python_m(*argv):
    result = subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return result


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A tiny causal SA+SWA sweep of ``python -m receptive.bound`` (n = 256, w = 8, 16, 3 seeds)."""
    out = tmp_path_factory.mktemp("causal") / "runs"
    _run(
        "receptive.bound.cli",
        "--n",
        "256",
        "--w",
        "8,16",
        "--patterns",
        "sa+swa",
        "--causal",
        "yes",
        "--seeds",
        "3",
        "--out",
        str(out),
        "--no-progress",
    )
    return out


def test_interval_model_then_pooled_on_a_sweep(sweep, tmp_path):
    model = tmp_path / "interval_model.json"
    _run("analysis.causal.interval_model", str(sweep), "--events", "50", "--out", str(model))
    doc = json.loads(model.read_text())
    assert {(r["n"], r["w"]) for r in doc["points"]} == {(256, 8), (256, 16)}
    assert doc["command"].startswith("python -m analysis.causal.interval_model")
    out = tmp_path / "pooled.json"
    _run("analysis.causal.pooled", str(sweep), "--interval-file", str(model), "--out", str(out))
    pooled = json.loads(out.read_text())
    assert pooled["model"] == "interval" and len(pooled["points"]) == 2
    probs = {(r["n"], r["w"]): r["full_probability"] for r in doc["points"]}
    assert all(p["probabilities"] == probs[p["n"], p["w"]] for p in pooled["points"])
    assert out.with_suffix(".csv").read_text().startswith("pattern,causal,circular,n,w")


def test_interval_model_predictions(tmp_path):
    out = tmp_path / "pred.json"
    _run("analysis.causal.interval_model", "--points", "256:8", "--seeds", "5", "--events", "50", "--out", str(out))
    (row,) = json.loads(out.read_text())["points"]
    assert row["predicted"] is not None and 0 <= row["exact_probability"] <= 1


def test_pooled_on_a_committed_folder_with_the_committed_interval_file(tmp_path):
    out = tmp_path / "pooled.json"
    _run("analysis.causal.pooled", "analysis/causal/results/seeds/s15-39-n2p10-2p15/a", "--out", str(out))
    (point,) = json.loads(out.read_text())["points"]
    assert (point["n"], point["w"], point["seeds"]) == (1024, 8, list(range(15, 40)))


def test_pooled_bad_input_is_one_line(capsys):
    _run("analysis.causal.pooled", "no/such/folder", code=2)
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "dirs:" in err


def test_model_attempts_on_a_sweep(sweep, tmp_path):
    out = tmp_path / "attempts.json"
    _run("analysis.causal.causal_model_attempts", "--variants", "model,events", "--dirs", str(sweep), "--out", str(out))
    rows = json.loads(out.read_text())["rows"]
    assert [r["variant"] for r in rows] == ["model", "events"]


def test_clumps_far_offsets_and_interval_check(tmp_path):
    clumps = tmp_path / "clumps.json"
    _run(
        "analysis.causal.causal_clumps",
        "--point",
        "64:4:2-3",
        "--seeds",
        "2",
        "--sampled-point",
        "256:8:2",
        "--targets",
        "16",
        "--sampled-seeds",
        "1",
        "--out",
        str(clumps),
    )
    doc = json.loads(clumps.read_text())
    assert len(doc["rows"]) == 2 and len(doc["sampled_rows"]) == 1
    far = tmp_path / "far.json"
    _run(
        "analysis.causal.causal_far_offsets",
        "--n",
        "256",
        "--w",
        "8",
        "--layer",
        "2",
        "--targets",
        "16",
        "--seeds",
        "1",
        "--out",
        str(far),
    )
    assert json.loads(far.read_text())["summary"]
    check = tmp_path / "check.json"
    _run(
        "analysis.causal.causal_interval_check",
        "--events",
        "5",
        "--sources",
        str(clumps),
        "--gap-points",
        "256:8:3",
        "--out",
        str(check),
    )
    doc = json.loads(check.read_text())
    assert len(doc["rows"]) == 3 and len(doc["gaps"]) == 1 and doc["sources"] == [str(clumps)]


def test_variants_then_refresh_keys(tmp_path):
    out = tmp_path / "variants"
    _python_m(
        "analysis.causal.variants",
        "--patterns",
        "sa+swa,dilated+swa-eq",
        "--n",
        "64",
        "--w",
        "4",
        "--seeds",
        "2",
        "--causal",
        "yes",
        "--out",
        str(out),
    )
    before = (out / "variants.jsonl").read_bytes()
    result = _python_m("analysis.causal.refresh_keys", "--out", str(out), "--json")
    assert json.loads(result.stdout)["rows_changed"] == 0 and (out / "variants.jsonl").read_bytes() == before
