"""Sweeps of coverage over a grid of patterns, sizes, windows and seeds, run as independent tasks."""

from .runner import check_scheduler, run_dask, run_local
from .store import ResultStore, first_difference, read_json_object, torn_last_line
from .tasks import Task, run_task, tasks_for

__all__ = [
    "ResultStore",
    "Task",
    "check_scheduler",
    "first_difference",
    "read_json_object",
    "run_dask",
    "run_local",
    "run_task",
    "tasks_for",
    "torn_last_line",
]
