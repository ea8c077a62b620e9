"""``benchmarks/gpu_check.py``: its dry run (CPU, Triton interpreter, tiny sizes) passes; failures and skips are
recorded, not hidden."""

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    # before triton is first imported in this process: other test modules run the kernels on the interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("gpu_check", None)


@pytest.fixture(scope="module")
def dry_run(gpu_check):
    """The whole dry run, once for the module: its document and the documents ``save`` got as it went."""
    saved = []
    doc = gpu_check.run(True, 600.0, log=lambda line: None, save=lambda d: saved.append(json.loads(json.dumps(d))))
    return doc, saved  # budget 600 s: shared cores skip nothing


@pytest.mark.xdist_group("gpu_check_dry_run")  # the tests of one dry run on one xdist worker (--dist loadgroup)
def test_dry_run(dry_run, gpu_check):
    doc, _ = dry_run
    assert doc["dry_run"] and doc["complete"] and doc["correctness"]["ok"] and doc["correctness"]["failed"] == []
    assert doc["correctness"]["skipped"] == []
    cases = {c["case"] for c in doc["correctness"]["checks"]}
    for kind in ("full", "swa", "sa shared", "sa per-head causal"):
        for backend in ("torch", "flex", "triton"):
            assert f"{kind} [{backend}]" in cases
        assert f"{kind} [triton] grad" in cases and f"{kind} [torch] grad" in cases
    assert all(c["max_error"] <= c["tolerance"] for c in doc["correctness"]["checks"])
    rows = {(r["path"], r["direction"]): r for r in doc["timings"]}
    assert set(rows) == {(label, d) for label, _, _ in gpu_check.TIMED for d in ("forward", "backward")}
    for (path, direction), row in rows.items():
        if path.endswith("flex") and direction == "backward":
            assert row["seconds"] is None and "no CPU backward" in row["note"]
        else:
            assert row["note"] == "" and row["seconds"] > 0, (path, direction, row["note"])
            assert row["extra"]["speedup_over_full"] > 0
    assert rows["sa fused", "forward"]["extra"]["sa_over_swa"] == pytest.approx(
        rows["sa fused", "forward"]["seconds"] / rows["swa fused", "forward"]["seconds"]
    )
    assert rows["sa", "forward"]["extra"]["peer"] == "sa flex"


def test_the_script_runs_as_a_command_and_grad_only_runs_the_gradient_pass_alone(tmp_path):
    """``python benchmarks/gpu_check.py --dry-run --grad-only`` (the gradient pass: the shortest whole run) writes
    its document in place of the partial one and prints its summary."""
    out = tmp_path / "check.json"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--dry-run", "--grad-only", "--out", str(out), "--budget", "600"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "checks pass" in result.stdout
    doc = json.loads(out.read_text())
    assert not out.with_name(out.name + ".partial").exists()
    cases = {c["case"] for c in doc["correctness"]["checks"]}
    assert doc["complete"] and doc["correctness"]["ok"] and "timings" not in doc
    assert doc["command"].endswith("--grad-only") and "sa per-head causal [triton] grad" in cases
    assert {c["dtype"] for c in doc["correctness"]["checks"]} == {"float32"}


def test_budget_guard_skips_with_a_note(gpu_check):
    rows = gpu_check.timings(gpu_check.DRY_SIZES, "cpu", deadline=0.0, log=lambda line: None)
    assert len(rows) == 2 * len(gpu_check.TIMED)
    assert all(r.seconds is None and r.note == "skipped: time budget spent" for r in rows)
    checks, skipped = gpu_check.correctness(gpu_check.DRY_SIZES, "cpu", log=lambda line: None, deadline=0.0)
    assert checks == [] and len(skipped) == 8 * (3 + 2)  # 8 cases: 3 backends forward, 2 with a CPU backward
    assert "sa per-head causal [triton] grad n=33 float32" in skipped


def test_a_wrong_backend_fails_its_check(gpu_check, monkeypatch):
    """The checks can fail: a backend off by 1e-3 and one that raises are both recorded as failures."""
    import gpu.attention.oracle

    real_call = gpu.attention.oracle._call

    def call(kind, backend, *args):
        if backend == "flex":
            raise RuntimeError("not here")
        out = real_call(kind, "torch", *args)
        return out + 1e-3 if (backend == "triton" and kind == "sa") else out

    monkeypatch.setattr(gpu.attention.oracle, "_call", call)
    sizes = replace(gpu_check.DRY_SIZES, check_n=[20], grad_n=[20])
    checks, skipped = gpu_check.correctness(sizes, "cpu", log=lambda line: None)
    assert skipped == []
    failed = {c.case for c in checks if not c.ok}
    assert {"sa shared [triton]", "sa per-head causal [triton]", "swa [flex]"} <= failed
    assert "swa [triton]" not in failed and "sa shared [torch]" not in failed
    assert next(c for c in checks if c.case == "swa [flex]").note == "RuntimeError: not here"


def test_bad_arguments(gpu_check, capsys):
    with pytest.raises(SystemExit) as exc:
        gpu_check.main(["--out", "x.json", "--budget", "-1"])
    assert exc.value.code == 2 and "--budget: expected a positive" in capsys.readouterr().err
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit) as exc:
            gpu_check.main(["--out", "x.json"])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and err.count("\n") == 1 and "pass --dry-run" in err


def test_memory_guard(gpu_check, monkeypatch):
    """Paths whose estimated memory exceeds what is free are skipped with a note; the estimate grows with n, the
    torch path's band dominates it, and the backward doubles the band."""
    est = gpu_check.estimated_bytes
    assert est("sa", "torch", 4096, 64, 2, 16, 4, False) < est("sa", "torch", 8192, 64, 2, 16, 4, False)
    assert est("sa", "torch", 8192, 64, 2, 16, 4, False) > 4 * est("sa", "triton", 8192, 64, 2, 16, 4, False)
    assert est("sa+swa", "flex", 8192, 64, 2, 16, 4, False) == 2 * est("sa", "flex", 8192, 64, 2, 16, 4, False)
    band = est("swa", "torch", 8192, 64, 2, 16, 4, False) - est("swa", "triton", 8192, 64, 2, 16, 4, False)
    assert est("swa", "torch", 8192, 64, 2, 16, 4, True) - est("swa", "triton", 8192, 64, 2, 16, 4, True) == 2 * band
    monkeypatch.setattr(gpu_check, "free_memory", lambda device: 1000)  # bytes
    rows = gpu_check.timings(gpu_check.DRY_SIZES, "cpu", deadline=float("inf"), log=lambda line: None)
    assert all(r.seconds is None and r.note.startswith("skipped:") for r in rows)
    guarded = [r for r in rows if not (r.backend == "flex" and r.direction == "backward")]  # no CPU backward
    assert len(guarded) == 17 and all(r.note.startswith("skipped: needs about") for r in guarded)


def test_oracle_masks_match_the_loop_oracle():
    """gpu.attention.oracle's masks (receptive's adjacency) against the plain-loop definitions of tests/oracle.py."""
    import numpy as np
    from oracle import sa_matrix, swa_matrix

    from gpu.attention.oracle import check_backends, oracle_mask

    n, w = 23, 6
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(0))
    for causal in (False, True):
        swa = oracle_mask("swa", n, w, causal, None, 2, "cpu")[0].numpy()
        np.testing.assert_array_equal(swa, swa_matrix(n, w, causal, False))
        sa = oracle_mask("sa", n, w, causal, perm, 2, "cpu")[0].numpy()
        np.testing.assert_array_equal(sa, sa_matrix(perm.numpy(), w, causal, False))
    with pytest.raises(ValueError, match=r"^dtype"):
        check_backends([8], dtype="float64", device="cpu")
    with pytest.raises(ValueError, match=r"^kv_heads"):
        check_backends([8], heads=4, kv_heads=3, device="cpu")
    with pytest.raises(TypeError, match=r"^dtype"):
        check_backends([8], dtype=32, device="cpu")
    with pytest.raises(ValueError, match=r"^w:"):
        check_backends([8], w=0, device="cpu")


@pytest.mark.xdist_group("gpu_check_dry_run")
def test_partial_documents_are_saved_as_the_run_goes(dry_run, gpu_check):
    """A run killed at its time limit leaves what it finished: ``save`` sees the correctness pass, then every row."""
    doc, saved = dry_run
    assert doc["complete"] and not any(d["complete"] for d in saved)
    assert "correctness" in saved[0] and "timings" not in saved[0]
    counts = [len(d["timings"]) for d in saved[1:]]
    assert counts == list(range(1, 2 * len(gpu_check.TIMED) + 1))
