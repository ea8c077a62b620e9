"""Results of a sweep, one JSON line per finished task, so an interrupted sweep resumes where it stopped."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path


class ResultStore:
    """``DIR/tasks.jsonl`` (finished tasks) and ``DIR/failures.jsonl`` (tasks that failed every attempt).

    Each line is flushed when written (a killed process loses nothing) and fsynced at most every few seconds (a
    machine crash loses at most those seconds); a line cut short is ignored on reading.
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
        self.directory.mkdir(parents=True, exist_ok=True)
        self._synced = time.monotonic()
        if not resume and self.failures_path.exists():
            self.failures_path.unlink()

    @staticmethod
    def _read(path: Path) -> list[dict]:
        if not path.exists():
            return []
        rows = []
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # the last line of a killed run
        return rows

    def results(self) -> list[dict]:
        """Finished tasks, the last result per key."""
        return list({row["key"]: row for row in self._read(self.results_path)}.values())

    def done(self) -> set[str]:
        return {row["key"] for row in self._read(self.results_path)}

    def failures(self) -> list[dict]:
        done = self.done()
        return [row for row in self._read(self.failures_path) if row["key"] not in done]

    def _append(self, path: Path, row: dict) -> None:
        with path.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            if time.monotonic() - self._synced > self.FSYNC_EVERY:
                os.fsync(fh.fileno())
                self._synced = time.monotonic()

    def add(self, row: dict) -> None:
        self._append(self.results_path, row)

    def fail(self, key: str, error: str, attempts: int) -> None:
        self._append(self.failures_path, {"key": key, "error": error, "attempts": attempts})
