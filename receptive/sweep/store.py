"""Results of a sweep, one JSON line per finished task, so an interrupted sweep resumes where it stopped.

Beside :class:`ResultStore`, what any resumable store needs to stay whole: :func:`read_json_object` reads the header
that records what its rows depend on, :func:`first_difference` names the first entry a resume would change, and
:func:`torn_last_line` finds the last row a killed write left unfinished.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path

from graphs.cli_common import write_atomic


def _parse(line: str) -> dict | None:
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return None
    return row if isinstance(row, dict) and "key" in row else None


class ResultStore:
    """``DIR/tasks.jsonl`` (finished tasks) and ``DIR/failures.jsonl`` (tasks that failed every attempt).

    Each line is flushed when written (a killed process loses nothing) and fsynced at most every few seconds (a
    machine crash loses at most those seconds). On reading, a torn last line is skipped with a warning (and cut off
    before the next append); a malformed line anywhere else is an error naming the file and line.

    Parameters
    ----------
    directory : str or os.PathLike
        The folder of the two files (created if missing).
    resume : bool, default False
        Continue the results already there (checked for malformed lines first); without it a folder that holds
        results is refused, and an old ``failures.jsonl`` is removed.

    Raises
    ------
    FileExistsError
        If ``directory`` holds results and ``resume`` is False.
    ValueError
        If the folder cannot be created or written, or (``resume``) a line inside a file is malformed.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     store = ResultStore(folder)
    ...     store.add({"key": "a", "full_layer": 3})
    ...     store.fail("b", "Traceback ...", 3)
    ...     sorted(store.done()), [row["key"] for row in store.failures()], ResultStore(folder, resume=True).done()
    (['a'], ['b'], {'a'})
    """

    FSYNC_EVERY = 5.0  # seconds

    def __init__(self, directory: str | os.PathLike, resume: bool = False):
        self.directory = Path(directory)
        self.results_path = self.directory / "tasks.jsonl"
        self.failures_path = self.directory / "failures.jsonl"
        if self.results_path.exists() and self.results_path.stat().st_size and not resume:
            raise FileExistsError(
                f"--out: {self.directory} already holds sweep results; pass --resume to continue them or choose "
                "another directory"
            )
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"--out: cannot create directory {self.directory}: {exc.strerror or exc}") from None
        if not os.access(self.directory, os.W_OK | os.X_OK):
            raise ValueError(f"--out: directory {self.directory} is not writable")
        self._parsed: dict[Path, tuple[tuple, list[dict]]] = {}  # path -> (its stamp, its rows)
        if resume:  # a malformed line is an error now, before any work
            self._rows(self.results_path)
            self._rows(self.failures_path)
        self._synced = time.monotonic()
        self._repaired: set[Path] = set()
        if not resume and self.failures_path.exists():
            self.failures_path.unlink()

    @staticmethod
    def _read(path: Path) -> list[dict]:
        """The rows of ``path``. Only a torn last line (no newline: the write of a killed run) is skipped, with a
        warning; any other line that is not a JSON object with a ``key`` raises ``ValueError`` naming file and line."""
        if not path.exists():
            return []
        text = path.read_text()
        lines = text.split("\n")
        torn = lines.pop()  # "" when the file ends with a newline
        rows = []
        for number, line in enumerate(lines, start=1):
            row = _parse(line)
            if row is None:
                raise ValueError(f"{path}:{number}: not a result row (a JSON object with a 'key'): {line[:80]!r}")
            rows.append(row)
        if torn:
            row = _parse(torn)
            if row is None:
                warnings.warn(
                    f"{path}:{len(lines) + 1}: skipping a torn last line (an interrupted write)", stacklevel=3
                )
            else:
                rows.append(row)
        return rows

    def _rows(self, path: Path) -> list[dict]:
        """:meth:`_read`, parsed again only when the file changed (its modification time or size): a large store is
        read once for the check at resume and once for the results otherwise."""
        stamp = (path.stat().st_mtime_ns, path.stat().st_size) if path.exists() else None
        if path not in self._parsed or self._parsed[path][0] != stamp:
            self._parsed[path] = (stamp, self._read(path))
        return self._parsed[path][1]

    @staticmethod
    def _repair(path: Path) -> None:
        """End the file with a newline before appending: a torn last line is cut off (complete rows are kept)."""
        if not path.exists() or not path.stat().st_size:
            return
        text = path.read_text()
        if text.endswith("\n"):
            return
        head, _, tail = text.rpartition("\n")
        keep = text + "\n" if _parse(tail) is not None else (head + "\n" if head else "")
        write_atomic(path, keep, option="--out")

    def results(self) -> list[dict]:
        """Finished tasks, the last result per key (the row objects are shared with later calls while the file is
        unchanged: read them, do not modify them)."""
        return list({row["key"]: row for row in self._rows(self.results_path)}.values())

    def done(self) -> set[str]:
        """The keys of the finished tasks."""
        return {row["key"] for row in self._rows(self.results_path)}

    def failures(self) -> list[dict]:
        """The failed tasks that have not finished since (``{"key", "error", "attempts"}`` rows)."""
        done = self.done()
        return [row for row in self._rows(self.failures_path) if row["key"] not in done]

    def _append(self, path: Path, row: dict) -> None:
        if path not in self._repaired:
            self._repair(path)
            self._repaired.add(path)
        with path.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            if time.monotonic() - self._synced > self.FSYNC_EVERY:
                os.fsync(fh.fileno())
                self._synced = time.monotonic()

    def add(self, row: dict) -> None:
        """Append one finished task's result row (a dict with a ``key``)."""
        self._append(self.results_path, row)

    def fail(self, key: str, error: str, attempts: int) -> None:
        """Record that task ``key`` failed ``attempts`` times, the last with ``error``."""
        self._append(self.failures_path, {"key": key, "error": error, "attempts": attempts})


def read_json_object(path: str | os.PathLike, name: str) -> dict | None:
    """The JSON object in ``path``, or ``None`` when there is no such file.

    Parameters
    ----------
    path : str or os.PathLike
        The file, e.g. the header a result store keeps beside its rows.
    name : str
        The option or argument that named the file's folder (the first word of an error message).

    Returns
    -------
    dict or None
        The object.

    Raises
    ------
    ValueError
        If the file is not valid UTF-8 JSON or holds something other than an object.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder) / "store.json"
    ...     missing = read_json_object(path, "--out")
    ...     _ = path.write_text('{"version": "1"}')
    ...     missing, read_json_object(path, "--out")
    (None, {'version': '1'})
    """
    path = Path(path)
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{name}: {path} is not a JSON object ({exc})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{name}: {path} is not a JSON object (got a {type(doc).__name__})")
    return doc


def first_difference(stored: dict, given: dict, names: dict[str, str] | None = None, where: str = "the store") -> str:
    """One line naming the first entry whose value differs between two records of what results depend on.

    Entries are compared in the order of ``given``; nested objects are compared entry by entry (their names joined
    with ``.``); an entry that only one side holds is not a difference (a record may grow new entries).

    Parameters
    ----------
    stored : dict
        What the results were computed with.
    given : dict
        What the command was asked to compute with now.
    names : dict of str to str, optional
        Entry name (dotted) -> the flag that sets it, e.g. ``{"max_layers": "--max-layers"}``.
    where : str, default "the store"
        What holds the results, in the message.

    Returns
    -------
    str
        ``"FLAG: WHERE was written with STORED, given GIVEN"``, or ``""`` when nothing differs.

    Examples
    --------
    >>> first_difference({"n": 64, "seeds": [0, 1]}, {"n": 64, "seeds": [0, 1]})
    ''
    >>> flags = {"rows.max_layers": "--max-layers"}
    >>> first_difference({"rows": {"max_layers": 64}}, {"rows": {"max_layers": 32}}, flags)
    '--max-layers: the store was written with 64, given 32'
    """
    names = names or {}

    def walk(old: dict, new: dict, prefix: str) -> str:
        for key, value in new.items():
            if key not in old:
                continue
            dotted = f"{prefix}{key}"
            if isinstance(value, dict) and isinstance(old[key], dict):
                found = walk(old[key], value, dotted + ".")
                if found:
                    return found
            elif old[key] != value:
                shown = f"{where} was written with {_shown(old[key])}, given {_shown(value)}"
                return f"{names.get(dotted, dotted)}: {shown}"
        return ""

    return walk(stored, given, "")


def _shown(value) -> str:
    """A recorded value in a message: JSON, shortened to 80 characters."""
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def torn_last_line(path: str | os.PathLike) -> int | None:
    """The number of the last line of a JSON-lines file when a killed write left it torn, else ``None``.

    A line is torn when the file does not end with a newline and its last line is not a whole JSON object. Only
    the end of the file is read to decide; the lines are counted only when one is torn.

    Parameters
    ----------
    path : str or os.PathLike
        The file (missing or empty: ``None``).

    Returns
    -------
    int or None
        The 1-based number of the torn line.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder) / "tasks.jsonl"
    ...     _ = path.write_text('{"key": "a"}\\n{"key": "b"}\\n{"key": "c", "ro')
    ...     torn = torn_last_line(path)
    ...     _ = path.write_text('{"key": "a"}\\n{"key": "b"}')
    ...     torn, torn_last_line(path)
    (3, None)
    """
    path = Path(path)
    if not path.is_file():
        return None
    with path.open("rb") as fh:
        end = fh.seek(0, os.SEEK_END)
        if end == 0:
            return None
        fh.seek(end - 1)
        if fh.read(1) == b"\n":
            return None
        tail, position = b"", end
        while position > 0 and b"\n" not in tail:
            step = min(1 << 20, position)
            position -= step
            fh.seek(position)
            tail = fh.read(step) + tail
    last = tail.rpartition(b"\n")[2]
    try:
        if isinstance(json.loads(last), dict):
            return None
    except (UnicodeDecodeError, json.JSONDecodeError):
        pass
    with path.open("rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b"")) + 1
