"""Results of a sweep, one JSON line per finished task, so an interrupted sweep resumes where it stopped."""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path

from graphs._atomic import write_text_atomic


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
        write_text_atomic(path, keep, "--out")

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
