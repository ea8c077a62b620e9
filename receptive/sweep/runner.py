"""Run sweep tasks locally (in this process; numba uses every core) or on a Dask cluster.

Either way each result is written to the store as soon as its task finishes, tasks already in the store are
skipped, and a task that raises is retried ``retries`` times and then recorded as failed, never dropped.
"""

from __future__ import annotations

import socket
import traceback
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from tqdm.auto import tqdm

from graphs.reachability import _quiet

from .store import ResultStore
from .tasks import Task, run_task

__all__ = ["check_scheduler", "pending", "run_dask", "run_local"]


def check_scheduler(address, option: str = "--scheduler", timeout: float = 5.0) -> str:
    """Check, before any work, that ``address`` is a Dask scheduler address and that something listens there.

    Parameters
    ----------
    address : str
        ``tcp://host:port`` or ``tls://host:port``.
    option : str, default "--scheduler"
        The flag or argument that named it (the first word of an error message).
    timeout : float, default 5.0
        Seconds to wait for the connection.

    Returns
    -------
    str
        ``address``.

    Raises
    ------
    TypeError
        If ``address`` is not a string.
    ValueError
        If it is not such an address, or nothing accepts a connection there.

    Examples
    --------
    >>> check_scheduler("notanaddress")
    Traceback (most recent call last):
    ...
    ValueError: --scheduler: expected an address such as tcp://host:8786, got 'notanaddress'
    """
    if not isinstance(address, str):
        raise TypeError(f"{option}: expected a str, got {type(address).__name__}")
    parts = urlsplit(address)
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if parts.scheme not in ("tcp", "tls") or not host or port is None:
        raise ValueError(f"{option}: expected an address such as tcp://host:8786, got {address!r}")
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ValueError(f"{option}: no Dask scheduler answers at {address} ({reason})") from None
    return address


def pending(tasks: Sequence[Task], store: ResultStore) -> list[Task]:
    """The tasks whose key ``store`` does not hold yet, in order.

    Parameters
    ----------
    tasks : sequence of Task
        The sweep's tasks.
    store : ResultStore
        Where finished tasks are recorded.

    Returns
    -------
    list of Task

    Examples
    --------
    >>> import tempfile
    >>> from receptive.sweep import ResultStore, tasks_for
    >>> tasks = tasks_for("sa", 64, 8, False, False, 0, exact=True, max_layers=8)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     len(pending(tasks, ResultStore(folder)))
    1
    """
    done = store.done()
    return [t for t in tasks if t.key not in done]


def run_local(
    tasks: Sequence[Task],
    store: ResultStore,
    *,
    retries: int = 2,
    progress: bool | None = None,
    work: Callable[[Task], dict] = run_task,
) -> list[str]:
    """Run the pending tasks one after another; return the keys that failed every attempt.

    Parameters
    ----------
    tasks : sequence of Task
        The sweep's tasks; those already in ``store`` are skipped.
    store : ResultStore
        Each result is added as soon as its task finishes.
    retries : int, default 2
        Further attempts of a task that raised, before it is recorded as failed.
    progress : bool or None, default None
        Show a progress bar (``None``: tqdm decides from the terminal).
    work : callable, default run_task
        ``work(task) -> result row``.

    Returns
    -------
    list of str
        The keys of the tasks that failed every attempt (recorded with :meth:`ResultStore.fail`).

    Examples
    --------
    >>> import tempfile
    >>> from receptive.sweep import ResultStore, tasks_for
    >>> tasks = tasks_for("sa", 64, 8, False, False, 0, exact=True, max_layers=8)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     store = ResultStore(folder)
    ...     run_local(tasks, store, progress=False), [row["full_layer"] for row in store.results()]
    ([], [4])
    """
    failed = []
    for task in tqdm(pending(tasks, store), unit="task", desc="sweep", disable=_quiet(progress)):
        for _ in range(retries + 1):
            try:
                store.add(work(task))
                break
            except Exception:  # a task's failure is recorded, the sweep goes on
                error = traceback.format_exc(limit=3)
        else:
            store.fail(task.key, error, retries + 1)
            failed.append(task.key)
    return failed


def run_dask(
    tasks: Sequence[Task],
    store: ResultStore,
    *,
    scheduler: str = "local",
    retries: int = 2,
    progress: bool | None = None,
    work: Callable[[Task], dict] = run_task,
    workers: int | None = None,
) -> list[str]:
    """Submit the pending tasks to Dask (``scheduler``: ``local`` starts a ``LocalCluster``, else an address such as
    ``tcp://host:8786``); results are written here as they complete. Returns the keys that failed.

    Each task is one future under its own key, written once when it completes: a task whose worker dies is run
    again elsewhere by the scheduler (up to ``distributed.scheduler.allowed-failures`` deaths), so a lost worker
    neither loses a task nor stores it twice.

    Parameters
    ----------
    tasks : sequence of Task
        The sweep's tasks; those already in ``store`` are skipped.
    store : ResultStore
        Each result is added here as its future completes.
    scheduler : str, default "local"
        ``"local"`` or a scheduler address.
    retries : int, default 2
        Dask's retries of a failed task.
    progress : bool or None, default None
        Show a progress bar.
    work : callable, default run_task
        ``work(task) -> result row``, run on the workers.
    workers : int or None, default None
        Workers of the local cluster (``None``: Dask's default).

    Returns
    -------
    list of str
        The keys of the tasks that failed every attempt.

    Raises
    ------
    ImportError
        If ``dask.distributed`` is not installed (the ``dask`` extra).

    Examples
    --------
    Starting a cluster takes seconds, so this example is not run by the doctests (``run_local`` is the same loop
    in this process):

    >>> from receptive.sweep import ResultStore, tasks_for
    >>> tasks = tasks_for("sa", 64, 8, False, False, 0, exact=True, max_layers=8)
    >>> run_dask(tasks, ResultStore("sweep-out"), workers=2)  # doctest: +SKIP
    []
    """
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("--dask/--scheduler need the 'dask' extra: pip install 'receptive[dask]'") from exc
    todo = pending(tasks, store)
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True) if scheduler == "local" else None
    client = Client(cluster if cluster is not None else scheduler)
    failed = []
    try:
        futures = {client.submit(work, t, key=t.key, retries=retries, pure=False): t for t in todo}
        bar = tqdm(total=len(futures), unit="task", desc="sweep (dask)", disable=_quiet(progress))
        for future in as_completed(list(futures)):
            task = futures.pop(future)  # its result is released on the worker once written here
            if future.status == "finished":
                store.add(future.result())
            else:
                error = "".join(traceback.format_exception(future.exception())[-3:])
                store.fail(task.key, error, retries + 1)
                failed.append(task.key)
            future.release()
            bar.update(1)
        bar.close()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return failed
