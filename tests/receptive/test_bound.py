"""``python -m receptive.bound`` and the sweep machinery: analysis, resume, retries, Dask = local, bad input."""

import json
import re
import signal
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import pytest
from scipy.stats import binomtest

from receptive import theory
from receptive.bound.analysis import PointResult, analyse_point, binomial_checks, fit_log_law, typical_layer
from receptive.bound.cli import main, task_bytes_at_least
from receptive.sweep import ResultStore, run_dask, run_local, tasks_for
from receptive.theory import interval_point_model

SMALL = ["--n", "256,1024", "--w", "8,64", "--seeds", "5", "--no-progress"]


def comparable(store):
    return sorted(({k: v for k, v in row.items() if k != "seconds"} for row in store.results()), key=lambda r: r["key"])


def small_tasks():
    return [
        t
        for seed in range(3)
        for t in tasks_for("sa", 600, 8, False, False, seed, exact=True, max_layers=64, slab_size=256)
        + tasks_for("sa+swa", 600, 8, True, False, seed, exact=False, max_layers=64, targets=50)
    ]


def test_quick_sweep_outputs(tmp_path, capsys):
    assert main([*SMALL, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "fit sa bidirectional" in out and "sharp model exact at" in out and "skipped sa causal" in out
    doc = json.loads((tmp_path / "bound.json").read_text())
    assert doc["parameters"]["seeds"] == [0, 1, 2, 3, 4] and doc["version"]
    point = next(p for p in doc["points"] if p["pattern"] == "sa" and p["n"] == 1024 and p["w"] == 8)
    assert len(point["full_layers"]) == 5 and point["typical"] == 5 and point["predicted"] == 5
    assert point["bound_holds"] is True and point["coupon_collector"] == 5 and point["ceil_log_w_n"] == 4
    assert (tmp_path / "bound.csv").read_text().count("\n") == len(doc["points"]) + 1


def test_sampled_points_say_so(tmp_path, capsys):
    assert (
        main(
            [
                "--n",
                "4096",
                "--w",
                "64",
                "--patterns",
                "sa",
                "--causal",
                "no",
                "--exact-limit",
                "1000",
                "--targets",
                "64",
                "--seeds",
                "5",
                "--out",
                str(tmp_path),
                "--json",
                "--no-progress",
            ]
        )
        == 0
    )
    point = json.loads(capsys.readouterr().out)["points"][0]
    assert point["method"] == "sampled" and "no sampled target uncovered" in point["note"]


def test_fit_recovers_a_known_law():
    points = []
    for n, w in [(256, 4), (4096, 8), (2**16, 16), (2**20, 4), (1024, 32)]:
        lw = np.log(n) / np.log(w)
        p = PointResult("sa", n, w, False, False, "exact", [0], [0], [1.0])
        p.full_layers, p.log_w_n = [2 * lw + 1], lw
        points.append(p)
    fit = fit_log_law(points)
    assert fit["a"] == pytest.approx(2) and fit["b"] == pytest.approx(1) and fit["max_abs_residual"] < 1e-9


def test_resume_after_interruption_equals_a_full_run(tmp_path):
    tasks = small_tasks()
    full = ResultStore(tmp_path / "full")
    assert run_local(tasks, full) == []
    calls = []

    def dies_after_four(task):
        if len(calls) == 4:
            raise KeyboardInterrupt
        calls.append(task.key)
        from receptive.sweep import run_task

        return run_task(task)

    part = ResultStore(tmp_path / "part")
    with pytest.raises(KeyboardInterrupt):
        run_local(tasks, part, work=dies_after_four)
    assert len(part.done()) == 4
    with pytest.raises(FileExistsError, match="--resume"):
        ResultStore(tmp_path / "part")
    resumed = ResultStore(tmp_path / "part", resume=True)
    assert run_local(tasks, resumed) == []
    assert comparable(resumed) == comparable(full)


def test_cli_resumes_after_kill(tmp_path):
    def cmd(out, *extra):
        return [
            sys.executable,
            "-m",
            "receptive.bound",
            "--n",
            "256,1024",
            "--w",
            "4,8",
            "--seeds",
            "3",
            "--causal",
            "no",
            "--slab-size",
            "64",
            "--out",
            str(out),
            "--no-progress",
            *extra,
        ]

    proc = subprocess.Popen(cmd(tmp_path / "run"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = tmp_path / "run" / "tasks.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if results.exists() and results.read_text().count("\n") >= 3:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.02)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL  # killed, not finished (nor failed on its own)
    before = ResultStore(tmp_path / "run", resume=True).done()
    assert main(cmd(tmp_path / "fresh")[3:]) == 0  # the runs that are not killed: in this process, the same CLI
    fresh = ResultStore(tmp_path / "fresh", resume=True)
    assert 3 <= len(before) < len(fresh.done())  # the kill left the store partial
    assert not (tmp_path / "run" / "bound.json").exists()
    assert main(cmd(tmp_path / "run", "--resume")[3:]) == 0
    resumed = ResultStore(tmp_path / "run", resume=True)
    assert before <= resumed.done()
    assert comparable(resumed) == comparable(fresh)
    summary = [json.loads((tmp_path / d / "bound.json").read_text())["points"] for d in ("run", "fresh")]
    assert summary[0] == summary[1]


def test_failed_tasks_are_retried_then_reported(tmp_path):
    tasks = small_tasks()[:3]
    attempts = {}

    def flaky(task):
        attempts[task.key] = attempts.get(task.key, 0) + 1
        if task is tasks[0] or (task is tasks[1] and attempts[task.key] == 1):
            raise RuntimeError("worker lost")
        from receptive.sweep import run_task

        return run_task(task)

    store = ResultStore(tmp_path)
    failed = run_local(tasks, store, retries=2, work=flaky)
    assert failed == [tasks[0].key] and attempts[tasks[0].key] == 3 and attempts[tasks[1].key] == 2
    assert store.done() == {tasks[1].key, tasks[2].key}
    assert [f["key"] for f in store.failures()] == [tasks[0].key] and "worker lost" in store.failures()[0]["error"]


def test_dask_local_cluster_equals_local_run(tmp_path):
    pytest.importorskip("dask.distributed")
    tasks = small_tasks()
    local, remote = ResultStore(tmp_path / "local"), ResultStore(tmp_path / "dask")
    assert run_local(tasks, local) == []
    assert run_dask(tasks, remote, scheduler="local", workers=2) == []
    assert comparable(remote) == comparable(local)


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["--n", "x"], "--n"),
        (["--n", "1"], "--n"),
        (["--w", "0"], "--w"),
        (["--patterns", "swa"], "--patterns"),
        (["--causal", "maybe"], "--causal"),
        (["--seeds", "0"], "--seeds"),
        (["--seed", "-1"], "--seed"),
        (["--max-layers", "0"], "--max-layers"),
        (["--targets", "0"], "--targets"),
        (["--retries", "-1"], "--retries"),
        (["--workers", "0"], "--workers"),
        (["--workers", "2"], "--workers"),  # no --dask: nothing would use them
        (["--exact-limit", "lots"], "--exact-limit"),
        (["--max-memory", "1KiB"], "--max-memory"),
        (["--max-memory", "0.5"], "--max-memory"),
        (["--slab-size", "0"], "--slab-size"),
        (["--n", "64", "--w", "1024"], "--w"),
        (["--n", "2^40"], "--max-memory"),
        (["--interval-file", "x.json"], "--interval-file"),
        (["--sharp-model", "interval", "--interval-file", "missing.json"], "--interval-file"),
        (["--dask", "--scheduler", "tcp://x:1"], "--scheduler"),
        (["--scheduler", "notanaddress"], "--scheduler"),
        (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler"),
        (["--sharp-model", "fitted"], "--sharp-model"),
    ],
)
def test_bad_input(argv, name, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--quick", "--out", str(tmp_path / "out"), *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and name in err, err
    assert not re.search(r"(?<![-\w])(w|n|max_memory|slab_size):", err), err  # the flags, not the parameters
    assert not (tmp_path / "out").exists()  # refused before any work


def test_a_window_no_length_admits_is_refused_with_the_range(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--n", "64", "--w", "1024", "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and "--w: must be in 1..63 for --n 64, got 1024" in err, err
    # several lengths: a w too large for the largest n is refused, one too large for a smaller n only is skipped there
    with pytest.raises(SystemExit):
        main(["--n", "256,1024", "--w", "2048", "--out", str(tmp_path / "out"), "--no-progress"])
    assert "1..1023" in capsys.readouterr().err
    argv = ["--n", "64,256", "--w", "8,128", "--patterns", "sa", "--causal", "no", "--seeds", "1", "--no-progress"]
    assert main([*argv, "--json", "--out", str(tmp_path / "ok")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {(p["n"], p["w"]) for p in doc["points"]} == {(64, 8), (256, 8), (256, 128)}


def test_a_length_beyond_the_memory_is_refused_before_allocating(tmp_path, capsys):
    """--n 2^40 would need terabytes per task: refused from the sizes alone, in well under a megabyte."""
    tracemalloc.start()
    try:
        with pytest.raises(SystemExit) as exc:
            main(["--n", "2^40", "--out", str(tmp_path / "out"), "--no-progress"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1, err
    assert "--n" in err and "--max-memory" in err and "TiB" in err and "Unable to allocate" not in err, err
    assert peak < 2**20
    # the estimate scales with n: a length that fits a larger --max-memory is accepted
    assert task_bytes_at_least(2**20) < 2**30 < task_bytes_at_least(2**26)


INTERVAL_POINT = {"n": 256, "w": 8, "targets": None, "max_layers": 2, "full_probability": [0.5, 1.0]}
INTERVAL_FILES = {
    "empty": b"",
    "binary": bytes(range(256)),
    "a list": b"[1, 2]",
    "truncated": json.dumps({"events": 300, "seed": 0, "max_cost": 2e11, "points": [INTERVAL_POINT]}).encode()[:-20],
    "no points": json.dumps({"events": 300, "seed": 0, "max_cost": 2e11}).encode(),
    "a bad setting": json.dumps({"events": "x", "seed": 0, "max_cost": 2e11, "points": []}).encode(),
    "too few layers": json.dumps(
        {"events": 300, "seed": 0, "max_cost": 2e11, "points": [INTERVAL_POINT | {"max_layers": 4}]}
    ).encode(),
    "not probabilities": json.dumps(
        {"events": 300, "seed": 0, "max_cost": 2e11, "points": [INTERVAL_POINT | {"full_probability": [2, "x"]}]}
    ).encode(),
}


@pytest.mark.parametrize("kind", INTERVAL_FILES)
def test_a_bad_interval_file_is_refused_before_the_sweep(kind, tmp_path, capsys):
    """Each kind of bad --interval-file is one line naming the flag and what was expected, before any task runs."""
    path = tmp_path / "interval.json"
    path.write_bytes(INTERVAL_FILES[kind])
    start = time.perf_counter()
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "--n",
                "256",
                "--w",
                "8",
                "--patterns",
                "sa+swa",
                "--causal",
                "yes",
                "--seeds",
                "1",
                "--sharp-model",
                "interval",
                "--interval-file",
                str(path),
                "--out",
                str(tmp_path / "out"),
                "--no-progress",
            ]
        )
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1, err
    assert "error: --interval-file: expected an interval-model result file" in err, err
    assert not (tmp_path / "out").exists() and time.perf_counter() - start < 5


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["--seeds", "10000000"], "--seeds"),
        (["--seeds", "5000", "--n", "2^8,2^10,2^12,2^14"], "--seeds"),
        (["--max-layers", "100000000"], "--max-layers"),
        (["--dask", "--workers", "1000000"], "--workers"),
    ],
)
def test_work_beyond_the_bounds_is_refused_at_once(argv, name, tmp_path, capsys):
    """A seed count or layer cap that would plan or predict for minutes is refused in well under a second's work."""
    start = time.perf_counter()
    with pytest.raises(SystemExit) as exc:
        main(["--quick", "--out", str(tmp_path / "out"), "--no-progress", *argv])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1 and f"error: {name}:" in err, err
    assert time.perf_counter() - start < 5 and not (tmp_path / "out").exists()


@pytest.mark.parametrize("state", ["missing", "empty folder", "empty file"])
def test_resume_needs_something_to_resume(state, tmp_path, capsys):
    out = tmp_path / "out"
    if state != "missing":
        out.mkdir()
    if state == "empty file":
        (out / "tasks.jsonl").write_text("")
    with pytest.raises(SystemExit) as exc:
        main([*SMALL, "--out", str(out), "--resume"])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1, err
    assert err.count("--resume") == 1 and "nothing to resume" in err, err
    assert state != "missing" or not out.exists()


def test_existing_results_need_resume(tmp_path, capsys):
    assert main([*SMALL, "--out", str(tmp_path), "--patterns", "sa", "--causal", "no"]) == 0
    with pytest.raises(SystemExit):
        main([*SMALL, "--out", str(tmp_path), "--patterns", "sa", "--causal", "no"])
    assert "--resume" in capsys.readouterr().err


def test_backward_full_layer_search_equals_layer_by_layer_scan():
    from graphs import backward_counts, backward_full_layer
    from receptive import make_pattern

    for name, causal in [("sa", False), ("sa+swa", True)]:
        pat = make_pattern(name, 3000, 8, causal, seed=5)
        targets = np.arange(0, 3000, 29)
        scan = backward_counts(pat.layer_ops, 3000, targets, max_layers=64, causal=causal).full_layer
        for guess in (1, scan - 1, scan, scan + 1, 40, 64):
            found, applied = backward_full_layer(
                pat.layer_ops, 3000, targets, guess=guess, max_layers=64, causal=causal
            )
            assert found == scan
            if guess == scan:  # a right guess costs two passes: L* complete, L* - 1 not
                assert applied == 2 * scan - 1
        assert backward_full_layer(pat.layer_ops, 3000, targets, guess=2, max_layers=scan - 1, causal=causal)[0] is None


# ------------------------------------------------------------------ the typical L* and the binomial checks


def slow_typical(full_layers, max_layers):
    """The definition: the first layer (1 .. max_layers) at which the fraction of full seeds is >= 1/2."""
    for layer in range(1, max_layers + 1):
        if np.mean([f is not None and f <= layer for f in full_layers]) >= 0.5:
            return layer
    return None


def slow_checks(full_layers, probabilities):
    """The definition, layer by layer: ``(layer, #full, k, F(L), p-value)`` where ``0 < #full < k`` or
    ``0.01 < F(L) < 0.99``, with the two-sided binomial test of ``#full ~ Bin(k, F(L))``."""
    k, rows = len(full_layers), []
    for layer, p in enumerate(probabilities, 1):
        full = sum(1 for f in full_layers if f is not None and f <= layer)
        if 0 < full < k or 0.01 < p < 0.99:
            rows.append((layer, full, k, float(p), binomtest(full, k, min(max(p, 1e-12), 1 - 1e-12)).pvalue))
    return rows


def random_full_layers(rng):
    k = int(rng.integers(1, 16))
    return [None if rng.random() < 0.2 else int(rng.integers(1, 14)) for _ in range(k)]


def test_typical_layer_against_its_definition():
    rng = np.random.default_rng(0)
    for _ in range(1000):
        full, cap = random_full_layers(rng), int(rng.integers(1, 15))
        assert typical_layer(full, cap) == slow_typical(full, cap), (full, cap)
        assert typical_layer(full) == slow_typical(full, 14), full  # no cap: every L* here is <= 13
    # an even number of seeds, exactly half of them full: the half reached is enough
    assert typical_layer([5, None, 7, None]) == 7 and typical_layer([5, None, 7, None], 6) is None
    assert typical_layer([None]) is None and typical_layer(np.array([3, 2, 9])) == 3


def test_binomial_checks_against_their_definition():
    rng = np.random.default_rng(1)
    for case in range(600):
        full, layers = random_full_layers(rng), int(rng.integers(1, 16))
        if case % 3 == 0:  # a model CDF, with exact 0s and 1s and values on the 0.01 / 0.99 edges
            probs = np.sort(rng.choice([0.0, 0.01, 0.3, 0.5, 0.99, 1.0, rng.random()], size=layers))
        else:
            probs = rng.random(layers)
        got = [(c["layer"], c["full"], c["seeds"], c["predicted"], c["p_value"]) for c in binomial_checks(full, probs)]
        assert got == slow_checks(full, probs), (full, probs)


def test_analyse_point_uses_the_shared_rules():
    seeds = {
        s: {"method": "exact", "full_layer": f, "coverage": None, "positions": 1024}
        for s, f in enumerate([4, 5, None, 6])
    }
    res = analyse_point(("sa", 1024, 8, False, False), seeds, 12)
    assert res.typical == typical_layer([4, 5, None, 6], 12) == 5
    _, probs = theory.predict_full_layer("sa", 1024, 8, False, False, 12)
    shared = binomial_checks([4, 5, None, 6], probs)
    assert [(c["layer"], c["measured"] * 4, c["predicted"], c["p_value"]) for c in res.probability_checks] == [
        (c["layer"], c["full"], c["predicted"], c["p_value"]) for c in shared
    ]


def test_interval_model_option(tmp_path, capsys):
    """--sharp-model interval: causal SA+SWA is predicted by the interval model, computed live (no file is read unless
    --interval-file names one), every other point by the analytic model; the choice is recorded in the
    parameters."""
    row = interval_point_model(256, 8, 64)
    argv = ["--n", "256", "--w", "8", "--patterns", "sa+swa", "--seeds", "2", "--json", "--no-progress"]
    assert main([*argv, "--sharp-model", "interval", "--out", str(tmp_path / "i")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["parameters"]["model"] == "interval" and "interval_file" not in doc["parameters"]
    points = {p["causal"]: p for p in doc["points"]}
    assert points[True]["predicted"] == theory.median_layer(row["full_probability"])
    assert points[False]["predicted"] == theory.predict_full_layer("sa+swa", 256, 8, False)[0]
    checked = {c["layer"]: c["predicted"] for c in points[True]["probability_checks"]}
    assert all(checked[layer] == pytest.approx(row["full_probability"][layer - 1]) for layer in checked)


def test_interval_file_option(tmp_path, capsys):
    """--interval-file: the points the file holds are read from it (here a made-up law with L* = 9), the others
    computed live with the file's settings."""
    law = [0.0] * 8 + [0.6] + [1.0] * 55
    doc = {"events": 300, "seed": 0, "max_cost": 2e11, "points": []}
    doc["points"].append({"n": 256, "w": 8, "targets": None, "max_layers": 64, "full_probability": law})
    path = tmp_path / "interval.json"
    path.write_text(json.dumps(doc))
    argv = ["--n", "256", "--w", "8,16", "--patterns", "sa+swa", "--causal", "yes", "--seeds", "2", "--json"]
    argv += ["--no-progress", "--sharp-model", "interval", "--interval-file", str(path), "--out", str(tmp_path / "i")]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["parameters"]["interval_file"] == str(path)
    points = {p["w"]: p for p in out["points"]}
    assert points[8]["predicted"] == 9
    assert points[16]["predicted"] == theory.median_layer(interval_point_model(256, 16, 64)["full_probability"])
    seeds = {s: {"method": "exact", "full_layer": 7, "coverage": None, "positions": 1024} for s in range(2)}
    with pytest.raises(ValueError, match="model: expected one of"):
        analyse_point(("sa+swa", 1024, 8, True, False), seeds, 64, model="fitted")


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: typical_layer([]), "full_layers"),
        (lambda: typical_layer("45"), "full_layers"),
        (lambda: typical_layer(7), "full_layers"),
        (lambda: typical_layer([3, 0]), "full_layers"),
        (lambda: typical_layer([3, 2.5]), "full_layers"),
        (lambda: typical_layer([True]), "full_layers"),
        (lambda: typical_layer([3], 0), "max_layers"),
        (lambda: typical_layer([3], 2.0), "max_layers"),
        (lambda: binomial_checks([], [0.5]), "full_layers"),
        (lambda: binomial_checks([2], [[0.5]]), "probabilities"),
        (lambda: binomial_checks([2], [0.5, 1.5]), "probabilities"),
        (lambda: binomial_checks([2], [float("nan")]), "probabilities"),
    ],
)
def test_shared_rules_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()
