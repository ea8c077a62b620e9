"""Output files that appear whole or not at all, and one-line errors for paths that cannot be written.

Used by the CLIs of ``graphs``, ``receptive`` and ``gpu`` (it sits below all three): a file is written to a
temporary file in the same directory and moved over the target with ``os.replace`` (atomic on POSIX and Windows), so
an interrupted or failed run never leaves a partial output file; an unwritable path is a ``ValueError`` naming the
option. The finished file gets the permissions a plain ``open(path, "w")`` would give it: an existing file keeps
its mode, a new one gets ``0o666`` less the caller's umask.

Beside them, what a resumable result store needs to stay whole: :func:`read_json_object` reads the header that
records what its rows depend on, :func:`first_difference` names the first entry a resume would change, and
:func:`torn_last_line` finds the last row a killed write left unfinished.
"""

from __future__ import annotations

import contextlib
import json
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
