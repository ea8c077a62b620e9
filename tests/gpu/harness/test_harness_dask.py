"""``python -m gpu.harness`` on Dask: a ``dask scheduler`` and two ``dask worker --nthreads 1`` processes over tcp
on this machine, started and stopped here, and a ``LocalCluster``. Per item the records of a local run; the model
loaded once per worker; torch on the worker's threads; a worker killed in the middle loses no task and stores
none twice."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
import torch

pytest.importorskip("transformers")
distributed = pytest.importorskip("distributed")
from hf_eval_models import FIXTURES, tiny_llama, tiny_tokenizer  # noqa: E402

from gpu.harness.cli import main  # noqa: E402

TASKS = ",".join(
    str(FIXTURES / f"{name}.jsonl") for name in ("arc_easy_rc_5shot", "winogrande_rc_5shot", "lambada_bpb_0shot")
)
START_TIMEOUT = 120.0  # seconds for the scheduler and the workers to come up on a busy machine


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-llama")
    tiny_llama(dtype=torch.float32).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder


def run(model_folder, out, *extra):
    argv = [
        "--model",
        str(model_folder),
        "--tasks",
        TASKS,
        "--attention",
        "exact,sa,swa",
        "--budgets",
        "4",
        "--decode",
        "sparse,exact",
        "--limit",
        "6",
        "--shards",
        "2",
        "--out",
        str(out),
        "--quiet",
        "--threads",
        "1",
        *extra,
    ]
    return main(argv)


def rows(out) -> list[dict]:
    """Every row of the store as written, in order (a key written twice shows twice)."""
    return [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]


def records(out) -> dict[tuple, dict]:
    """(attention, task, doc id) -> the item's record, each item once."""
    found = {}
    for row in rows(out):
        for run_ in row["runs"]:
            for record in run_["records"]:
                key = (run_["attention"]["label"], row["task"], record["doc_id"])
                assert key not in found, f"{key} scored twice"
                found[key] = record
    return found


def same_records(found: dict, expected: dict) -> bool:
    """The same items, each with the same fields; log-likelihoods to within float32 rounding (SDPA's sums may run
    in another order in another process)."""
    assert found.keys() == expected.keys()
    for key, record in expected.items():
        other = found[key]
        assert {k: v for k, v in other.items() if k != "choices"} == {k: v for k, v in record.items() if k != "choices"}
        assert len(other["choices"]) == len(record["choices"]), key
        for got, want in zip(other["choices"], record["choices"], strict=True):
            assert {k: v for k, v in got.items() if k != "ll"} == {k: v for k, v in want.items() if k != "ll"}, key
            assert got["ll"] == pytest.approx(want["ll"], rel=1e-6, abs=1e-6), key
    return True


@pytest.fixture(scope="module")
def local_run(model_folder, tmp_path_factory):
    """The grid scored in this process on one torch thread, the reference: its records and its summary rows."""
    folder = tmp_path_factory.mktemp("local")
    assert run(model_folder, folder / "store", "--json", str(folder / "summary.json")) == 0
    return records(folder / "store"), json.loads((folder / "summary.json").read_text())["rows"]


@pytest.fixture(scope="module")
def local(local_run):
    return local_run[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cluster:
    """``dask scheduler`` and ``dask worker --nthreads 1`` processes on 127.0.0.1, each in its own process group."""

    def __init__(self, workers: int, folder):
        self.address = f"tcp://127.0.0.1:{free_port()}"
        self.folder = folder
        self.processes: list[subprocess.Popen] = []
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        port = self.address.rsplit(":", 1)[1]
        self._start(["scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard"], "scheduler", env)
        worker = ["worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"]
        self.workers = [self._start([*worker, "--name", f"w{i}"], f"worker{i}", env) for i in range(workers)]
        with distributed.Client(self.address, timeout=START_TIMEOUT) as client:
            client.wait_for_workers(workers, timeout=START_TIMEOUT)

    def _start(self, arguments, name, env) -> subprocess.Popen:
        log = (self.folder / f"{name}.log").open("w")
        command = [sys.executable, "-m", "distributed.cli.dask_" + arguments[0], *arguments[1:]]
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.processes.append(process)
        return process

    def kill(self, process: subprocess.Popen) -> None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=20)


def _worker_state() -> dict:
    """On a worker, from a task's thread: the model loads of this process, the threads torch and numba score on."""
    import numba

    from gpu.harness import cli as eval_cli

    return {
        "loads": eval_cli._model.cache_info().misses,
        "torch": torch.get_num_threads(),
        "numba": numba.get_num_threads(),
        "worker_threads": eval_cli._worker_threads(),
    }


def run_killing_a_busy_worker(cluster: Cluster, model_folder, out) -> tuple[int, list[int]]:
    """The grid on ``cluster``, one of its busy workers killed once the first row is stored: the run's status and
    the pids killed."""
    killed = []

    def kill_a_busy_worker_after_the_first_row():
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not (
            (out / "tasks.jsonl").is_file() and (out / "tasks.jsonl").read_text().count("\n") >= 1
        ):
            time.sleep(0.05)
        with distributed.Client(cluster.address) as client:
            pids = client.run(os.getpid)
            busy = [address for address, keys in client.processing().items() if keys]
        if busy:
            victim = next(p for p in cluster.workers if p.pid == pids[busy[0]])
            cluster.kill(victim)
            killed.append(victim.pid)

    watcher = threading.Thread(target=kill_a_busy_worker_after_the_first_row)
    watcher.start()
    status = run(model_folder, out, "--scheduler", cluster.address)
    watcher.join()
    return status, killed


@pytest.fixture(scope="module")
def servers(model_folder, tmp_path_factory):
    """One ``dask scheduler`` and two workers started for the module's checks: first the grid on both workers and
    then each worker's state, then the grid again while one busy worker is killed (the run that loses a worker comes
    last)."""
    folder = tmp_path_factory.mktemp("servers")
    cluster = Cluster(2, folder)
    try:
        whole = folder / "whole"
        whole_status = run(model_folder, whole, "--scheduler", cluster.address)
        with distributed.Client(cluster.address) as client:
            workers = list(client.scheduler_info()["workers"])
            states = client.gather([client.submit(_worker_state, workers=[w], pure=False) for w in workers])
        killed_out = folder / "killed"
        killed_status, killed = run_killing_a_busy_worker(cluster, model_folder, killed_out)
    finally:
        cluster.stop()
    return {"whole": (whole_status, whole, states), "killed": (killed_status, killed_out, killed)}


@pytest.mark.slow  # 20-40 s on a busy machine; one xdist worker starts the Dask processes of the module
@pytest.mark.xdist_group("dask_servers")
def test_a_scheduler_and_two_workers_give_the_local_records_loading_the_model_once_per_worker(servers, local):
    status, out, states = servers["whole"]
    assert status == 0
    assert len(rows(out)) == 3 * 3 * 2 and same_records(records(out), local)  # per item: the local record
    assert len(states) == 2 and sum(s["loads"] > 0 for s in states) == 2, states  # both workers scored
    assert all(s["loads"] == 1 and s["torch"] == 1 and s["numba"] == 1 for s in states), states
    assert all(s["worker_threads"] == 1 for s in states), states


@pytest.mark.slow
@pytest.mark.xdist_group("dask_servers")
def test_a_worker_killed_in_the_middle_loses_nothing_and_stores_nothing_twice(servers, local):
    status, out, killed = servers["killed"]
    assert killed, "no worker was busy after the first row: nothing was killed"
    assert status == 0
    keys = [row["key"] for row in rows(out)]
    assert len(keys) == len(set(keys)) == 3 * 3 * 2  # every task once
    assert not (out / "failures.jsonl").is_file() or not (out / "failures.jsonl").read_text()
    assert same_records(records(out), local)


@pytest.mark.slow
@pytest.mark.xdist_group("dask_servers")
def test_a_local_cluster_of_two_one_thread_workers_gives_the_local_records_and_scores(
    model_folder, local_run, tmp_path
):
    local, local_summary = local_run
    out = tmp_path / "dask"
    assert run(model_folder, out, "--dask", "--workers", "2", "--json", str(tmp_path / "dask.json")) == 0
    assert same_records(records(out), local)
    summary = json.loads((tmp_path / "dask.json").read_text())["rows"]
    assert len(summary) == len(local_summary)  # the scores to within float rounding (sums in another order)
    assert all(a == pytest.approx(b) for a, b in zip(summary, local_summary, strict=True))


THREADS_AFTER_NUMBA = """
import threading
import numba
import numpy as np
import torch
from gpu.harness.cli import _set_threads
from numba.np.ufunc import parallel

assert not parallel._is_initialized  # numba's pool is not running yet

@numba.njit(parallel=True)
def total(x):
    s = 0.0
    for i in numba.prange(x.size):
        s += x[i]
    return s

def score():
    torch.get_num_threads()  # torch's per-thread OpenMP setup done, as in a worker that has loaded the model
    _set_threads(1)
    total(np.ones(1000))  # the process's first parallel kernel
    print(torch.get_num_threads(), numba.get_num_threads())

worker = threading.Thread(target=score)  # as a Dask worker's task thread
worker.start()
worker.join()
"""


def test_one_thread_stays_one_thread_after_numba_starts_its_pool():
    """numba's OpenMP pool, launched in a fresh process, must not undo torch's one thread (it shares the OpenMP
    runtime and sets the launching thread's count to its own pool size)."""
    env = {**os.environ, "NUMBA_NUM_THREADS": "2", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(
        [sys.executable, "-c", THREADS_AFTER_NUMBA], capture_output=True, text=True, env=env, timeout=300, check=True
    )
    assert done.stdout.split() == ["1", "1"]


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler"),
        (["--scheduler", "notanaddress"], "--scheduler"),
        (["--scheduler", "tcp://127.0.0.1:1", "--workers", "2"], "--workers"),
    ],
)
def test_the_study_refuses_a_scheduler_nobody_runs_and_workers_beside_one(tmp_path, capsys, extra, flag):
    from analysis.paper_tasks import study

    with pytest.raises(SystemExit) as exit_:
        study.main(["--out", str(tmp_path / "out"), "--tiers", "exact", "--tasks", "arc_easy", *extra])
    assert exit_.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and f"error: {flag}: " in error[0], error
    assert not (tmp_path / "out" / "tasks.jsonl").exists()
