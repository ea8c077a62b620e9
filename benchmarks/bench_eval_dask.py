"""Time one small grid of ``python -m gpu.harness`` locally and on Dask, on the same cores.

    python benchmarks/bench_eval_dask.py [--model smollm2] [--tasks lambada] [--limit 4] [--attention exact,swa,sa]
        [--budgets 16] [--shards 2] [--modes local,localcluster,scheduler] [--baseline DIR [--baseline-commit SHA]]
        [--json PATH]

Modes, each a fresh ``python -m gpu.harness`` process scoring the same grid into its own store:

* ``local``: this machine's default, one process on two torch threads (``--threads 2``);
* ``localcluster``: ``--dask --workers 2 --threads 1``, a Dask ``LocalCluster`` of two one-thread processes;
* ``scheduler``: ``--scheduler tcp://127.0.0.1:PORT``, a ``dask scheduler`` and two ``dask worker --nthreads 1``
  processes started here before the timing (and stopped after it);
* ``localcluster@baseline``, with ``--baseline DIR``: the LocalCluster on the code of another checkout (``git
  archive COMMIT | tar -x -C DIR``), imported first through ``PYTHONPATH``.

``wall`` is the command's time; ``grid_seconds`` leaves out what comes before the first task starts (imports, the
model loaded and the items checked in the command, a cluster's start): from the first row's start (the time it was
written less the seconds it reports) to the last row. ``items_per_second`` counts (item, configuration) pairs over
``grid_seconds``, ``over_local`` is its ratio to the local mode's in this run. Per item the records of each mode are
compared with the local mode's (``max_ll_difference``). The modes run one after another, so the load average
before and after each is recorded; on a machine shared with other work compare the ratios of one run only.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from a checkout: import this checkout's packages
    sys.path.insert(0, str(ROOT))

from gpu.hf.checkpoints import add_model_option  # noqa: E402
from graphs.cli_common import run_command, write_atomic  # noqa: E402
from receptive.cli_parser import OneLineErrorParser, comma_names, output_file  # noqa: E402

MODES = ("local", "localcluster", "scheduler")
FLAGS = {"local": ["--threads", "2"], "localcluster": ["--dask", "--workers", "2", "--threads", "1"]}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(arguments: list[str], log: Path, env: dict) -> subprocess.Popen:
    command = [sys.executable, "-m", f"distributed.cli.dask_{arguments[0]}", *arguments[1:]]
    with log.open("w") as fh:
        return subprocess.Popen(command, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _stop(processes: list[subprocess.Popen]) -> None:
    for process in reversed(processes):
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def start_cluster(folder: Path, env: dict, workers: int = 2) -> tuple[str, list[subprocess.Popen]]:
    """A ``dask scheduler`` and ``workers`` one-thread ``dask worker`` processes on 127.0.0.1; their address."""
    from distributed import Client

    address = f"tcp://127.0.0.1:{_free_port()}"
    port = address.rsplit(":", 1)[1]
    processes = [_start(["scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard"], folder / "s.log", env)]
    for i in range(workers):
        arguments = ["worker", address, "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1", "--name", f"w{i}"]
        processes.append(_start(arguments, folder / f"w{i}.log", env))
    try:
        with Client(address, timeout=300) as client:
            client.wait_for_workers(workers, timeout=300)
    except Exception:
        _stop(processes)
        raise
    return address, processes


def records(store: Path) -> dict[tuple, list[float]]:
    """(attention, task, doc id) -> the item's choices' log-likelihoods."""
    out = {}
    for line in (store / "tasks.jsonl").read_text().splitlines():
        row = json.loads(line)
        for run in row["runs"]:
            for record in run["records"]:
                out[run["attention"]["label"], row["task"], record["doc_id"]] = [c["ll"] for c in record["choices"]]
    return out


def grid_module(checkout: Path) -> str | None:
    """The harness's command module in a checkout (``gpu.harness``, or ``gpu.hf.eval_cli`` in older layouts)."""
    for module in ("gpu.harness", "gpu.hf.eval_cli"):
        path = checkout.joinpath(*module.split("."))
        if (path / "__main__.py").is_file() or path.with_suffix(".py").is_file():
            return module
    return None


def time_mode(arguments: list[str], store: Path, env: dict, module: str = "gpu.harness") -> dict:
    """Run the command, polling its store for the time each row lands; the timings of :func:`main`'s doc."""
    command = [sys.executable, "-m", module, *arguments, "--out", str(store), "--quiet"]
    load_before = os.getloadavg()
    landed: list[float] = []
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rows = store / "tasks.jsonl"
    while process.poll() is None:
        count = rows.read_text().count("\n") if rows.is_file() else 0
        landed += [time.perf_counter() - start] * (count - len(landed))
        time.sleep(0.1)
    wall = time.perf_counter() - start
    output = process.stdout.read()
    if process.returncode:
        raise RuntimeError(f"{' '.join(command)} exited {process.returncode}:\n{output[-2000:]}")
    lines = rows.read_text().splitlines()
    landed += [wall] * (len(lines) - len(landed))
    first = json.loads(lines[0])
    grid_seconds = landed[-1] - (landed[0] - first["seconds"])
    pairs = sum(len(run["records"]) for line in lines for run in json.loads(line)["runs"])
    return {
        "command": " ".join(["python -m gpu.harness", *command[3:]]),
        "wall": wall,
        "grid_seconds": grid_seconds,
        "rows": len(lines),
        "item_configurations": pairs,
        "items_per_second": pairs / grid_seconds,
        "task_seconds": sum(json.loads(x)["seconds"] for x in lines),
        "load_average_before": list(load_before),
        "load_average_after": list(os.getloadavg()),
    }


FORWARDS = """
import sys, time
import torch
from gpu.hf.checkpoints import model_path
from gpu.hf.models import load_causal_lm
threads, count, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
model, _ = load_causal_lm(model_path(sys.argv[4]))
import numba
numba.set_num_threads(1)  # numba's pool started first: its OpenMP layer would reset torch's count
torch.set_num_threads(threads)
ids = torch.randint(0, 1000, (1, n))
with torch.inference_mode():
    model(ids)
    sys.stdout.write("ready\\n"); sys.stdout.flush(); sys.stdin.readline()
    start = time.perf_counter()
    for _ in range(count):
        model(ids)
print(time.perf_counter() - start, torch.get_num_threads())
"""


def time_forwards(model: str, processes: int, threads: int, count: int, n: int, env: dict) -> dict:
    """``processes`` processes at once, each ``count`` forwards over ``n`` tokens on ``threads`` torch threads
    (started together once every one has loaded the model): forwards per second over all of them."""
    command = [sys.executable, "-c", FORWARDS, str(threads), str(count), str(n), model]
    running = [
        subprocess.Popen(
            command,
            env=env,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(processes)
    ]
    for process in running:
        if process.stdout.readline().strip() != "ready":
            raise RuntimeError(f"{' '.join(command[:2])} ... did not load the model")
    load_before = os.getloadavg()
    for process in running:
        process.stdin.write("\n")
        process.stdin.flush()
    outputs = [process.communicate()[0].split() for process in running]
    seconds = [float(out[0]) for out in outputs]
    return {
        "processes": processes,
        "torch_threads": threads,
        "forwards_each": count,
        "tokens": n,
        "seconds": seconds,
        "torch_threads_seen": [int(out[1]) for out in outputs],
        "forwards_per_second": processes * count / max(seconds),
        "load_average_before": list(load_before),
        "load_average_after": list(os.getloadavg()),
    }


def _commit(folder: Path) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True)
    except OSError:
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def main(argv=None) -> int:
    """Run the benchmark: print a table, write ``--json``.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0.
    """
    parser = OneLineErrorParser(prog="python benchmarks/bench_eval_dask.py", description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add_model_option(parser)
    add("--tasks", default="lambada", help="as gpu.harness's --tasks [lambada]")
    add("--limit", type=int, default=4, help="items per task [4]")
    add("--attention", default="exact,swa,sa", help="as gpu.harness's --attention [exact,swa,sa]")
    add("--budgets", default="16", help="keys per query [16]")
    add("--shards", type=int, default=2, help="shards per task: grid tasks for two workers [2]")
    add("--modes", default=",".join(MODES), help=f"comma-separated of {', '.join(MODES)} [all]")
    add("--baseline", help="also time the LocalCluster on the code of this checkout folder")
    add("--baseline-commit", help="the commit --baseline was exported from (recorded; a folder without .git)")
    add("--commit", help="the commit this checkout was exported from, where it has no .git (recorded)")
    add(
        "--forwards",
        type=int,
        default=0,
        help="also time this many forwards per process of the model alone, as "
        "1 process x 2 threads, 2 x 1 and 2 x 2 (oversubscribed), in rotating rounds [0: not]",
    )
    add("--rounds", type=int, default=2, help="rounds of the --forwards configurations [2]")
    add("--json", type=output_file("--json", suffixes=(".json",)), help="write the results here")
    args = parser.parse_args(argv)
    try:
        modes = comma_names("--modes", args.modes, MODES)
        if args.baseline and grid_module(Path(args.baseline)) is None:
            raise ValueError(f"--baseline: {args.baseline} holds no gpu/harness/__main__.py (nor gpu/hf/eval_cli.py)")
    except ValueError as exc:
        parser.error(str(exc))
    grid = [
        "--model",
        args.model,
        "--tasks",
        args.tasks,
        "--limit",
        str(args.limit),
        "--attention",
        args.attention,
        "--budgets",
        args.budgets,
        "--decode",
        "sparse,exact",
        "--shards",
        str(args.shards),
    ]
    here = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(":")}
    runs = [(mode, here, "gpu.harness") for mode in modes]
    if args.baseline:
        base = Path(args.baseline).resolve()
        runs.append(("localcluster@baseline", {**here, "PYTHONPATH": str(base)}, grid_module(base)))
    results: dict[str, dict] = {}
    forwards: list[dict] = []
    for _ in range(args.rounds if args.forwards else 0):
        for processes, threads in ((1, 2), (2, 1), (2, 2)):
            forwards.append(time_forwards(args.model, processes, threads, args.forwards, 400, here))
            row = forwards[-1]
            print(f"forwards {processes} x {threads}: {row['forwards_per_second']:.3f}/s", file=sys.stderr)
    folder = Path(tempfile.mkdtemp(prefix="bench_eval_dask_"))
    try:
        for mode, env, module in runs:
            flags = FLAGS.get(mode.split("@")[0])
            processes = []
            if mode == "scheduler":
                address, processes = start_cluster(folder, env)
                flags = ["--threads", "2", "--scheduler", address]
            try:
                results[mode] = time_mode(grid + flags, folder / mode, env, module)
            finally:
                _stop(processes)
            print(
                f"{mode}: {results[mode]['grid_seconds']:.1f} s grid, {results[mode]['wall']:.1f} s wall",
                file=sys.stderr,
            )
        reference = records(folder / runs[0][0])
        for mode, row in results.items():
            found = records(folder / mode)
            row["same_items"] = found.keys() == reference.keys()
            row["max_ll_difference"] = max(
                (abs(a - b) for key in reference for a, b in zip(found.get(key, []), reference[key], strict=False)),
                default=0.0,
            )
            row["over_first_mode"] = row["items_per_second"] / results[runs[0][0]]["items_per_second"]
            row["wall_over_first_mode"] = results[runs[0][0]]["wall"] / row["wall"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    import distributed
    import torch

    print(f"{'mode':24} {'wall s':>8} {'grid s':>8} {'items/s':>8} {'x first':>8} {'max dll':>9} {'load':>10}")
    for mode, row in results.items():
        load = f"{row['load_average_before'][0]:.1f}-{row['load_average_after'][0]:.1f}"
        print(
            f"{mode:24} {row['wall']:8.1f} {row['grid_seconds']:8.1f} {row['items_per_second']:8.3f} "
            f"{row['over_first_mode']:8.2f} {row['max_ll_difference']:9.2g} {load:>10}"
        )
    if args.json:
        command = "python benchmarks/bench_eval_dask.py " + " ".join(sys.argv[1:] if argv is None else argv)
        doc = {
            "command": command,
            "machine": platform.platform(),
            "processor": platform.processor(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "distributed": distributed.__version__,
            "commit": args.commit or _commit(ROOT),
            "baseline_commit": args.baseline_commit or (_commit(Path(args.baseline)) if args.baseline else None),
            "threads": {
                "local": "1 process x 2 torch threads",
                "localcluster": "2 processes x 1 thread",
                "scheduler": "2 dask worker --nthreads 1 processes",
            },
            "modes": results,
            "forwards": forwards,
        }
        write_atomic(args.json, json.dumps(doc, indent=1) + "\n", option="--json")
    return 0


if __name__ == "__main__":
    run_command(main)
