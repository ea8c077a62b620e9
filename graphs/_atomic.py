"""Output files that appear whole or not at all, and one-line errors for paths that cannot be written.

Behind :func:`graphs.cli_common.write_atomic` and :func:`graphs.cli_common.atomic_write`, which every command of
``graphs``, ``receptive`` and ``gpu`` writes through: a file is written to a temporary file in the same directory and
moved over the target with ``os.replace`` (atomic on POSIX and Windows), so an interrupted or failed run never leaves a
partial output file; an unwritable path is a ``ValueError`` naming the option. The finished file gets the permissions a
plain ``open(path, "w")`` would give it: an existing file keeps its mode, a new one gets ``0o666`` less the caller's
umask.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path


def check_writable(path: str | os.PathLike, name: str, make_parents: bool = False) -> Path:
    """Check, before any work is done, that a file can be created at ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        The file to be written.
    name : str
        The option or argument that named ``path`` (the first word of an error message).
    make_parents : bool, optional
        Create a missing parent directory instead of refusing it.

    Returns
    -------
    pathlib.Path
        ``path`` as a ``Path``.

    Raises
    ------
    ValueError
        If ``path`` is a directory, or its directory is missing (unless ``make_parents``), is not a directory or is
        not writable.

    Examples
    --------
    >>> check_writable("/nonexistent-folder/out.json", "--json")
    Traceback (most recent call last):
    ...
    ValueError: --json: directory /nonexistent-folder does not exist
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise ValueError(f"{name}: {path} is a directory; expected a file path")
    if not parent.exists():
        if not make_parents:
            raise ValueError(f"{name}: directory {parent} does not exist")
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"{name}: cannot create directory {parent}: {exc.strerror or exc}") from None
    if not parent.is_dir():
        raise ValueError(f"{name}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{name}: directory {parent} is not writable")
    return path


_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """Return the process's umask without changing it.

    Linux reports it in ``/proc/self/status``; elsewhere it is read by setting and restoring it under a lock.

    Returns
    -------
    int
        The umask, e.g. ``0o022``.

    Examples
    --------
    >>> 0 <= current_umask() <= 0o777
    True
    """
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _final_mode(path: Path) -> int:
    """The mode ``open(path, "w")`` would leave: the existing file's, else ``0o666`` less the umask."""
    with contextlib.suppress(OSError):
        existing = path.stat()
        if stat.S_ISREG(existing.st_mode):
            return stat.S_IMODE(existing.st_mode)
    return 0o666 & ~current_umask()


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike, name: str, mode: str = "w", newline: str | None = None, make_parents: bool = False
) -> Iterator:
    """Open a file that replaces ``path`` only if the ``with`` block finishes.

    The text goes to a temporary file next to ``path``, which replaces ``path`` only when the block finishes
    without an exception; on any error the temporary file is removed. The result has the permissions of a plain
    ``open(path, "w")``: those of the file it replaces, or ``0o666`` less the umask for a new file.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.
    name : str
        The option or argument that named ``path`` (the first word of an error message).
    mode : str, optional
        ``"w"`` (text, the default) or ``"wb"``.
    newline : str or None, optional
        Passed to :func:`open` for text mode.
    make_parents : bool, optional
        Create missing parent directories.

    Yields
    ------
    file object
        The open temporary file.

    Raises
    ------
    ValueError
        If ``path`` cannot be written (see :func:`check_writable`).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     target = pathlib.Path(folder) / "out.txt"
    ...     with atomic_write(target, "--out") as fh:
    ...         _ = fh.write("done")
    ...     target.read_text()
    'done'
    """
    path = check_writable(path, name, make_parents)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise ValueError(f"{name}: cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, mode, newline=newline) as fh:
            yield fh
        os.chmod(tmp, _final_mode(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str | os.PathLike, text: str, name: str, make_parents: bool = False) -> Path:
    """Write ``text`` to ``path`` whole or not at all (see :func:`atomic_write`).

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.
    text : str
        Its content.
    name : str
        The option or argument that named ``path`` (the first word of an error message).
    make_parents : bool, optional
        Create missing parent directories.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ValueError
        If ``path`` cannot be written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     write_text_atomic(pathlib.Path(folder) / "a.txt", "x", "--out").read_text()
    'x'
    """
    with atomic_write(path, name, make_parents=make_parents) as fh:
        fh.write(text)
    return Path(path)
