"""Output files that appear whole or not at all, and one-line errors for paths that cannot be written.

Used by the CLIs of ``graphs`` and ``receptive`` (it sits below both): a file is written to a temporary file in the
same directory and moved over the target with ``os.replace`` (atomic on POSIX and Windows), so an interrupted or
failed run never leaves a partial output file; an unwritable path is a ``ValueError`` naming the option.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


def check_writable(path: str | os.PathLike, name: str, make_parents: bool = False) -> Path:
    """``path`` as a ``Path`` if a file can be created there (checked before any work is done), else a
    ``ValueError`` naming ``name``: the directory is missing (unless ``make_parents``), is not a directory, or
    is not writable, or ``path`` is a directory."""
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


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike, name: str, mode: str = "w", newline: str | None = None, make_parents: bool = False
) -> Iterator:
    """``with atomic_write(path, "--csv") as fh: ...`` writes ``path`` whole or not at all.

    The text goes to a temporary file next to ``path``, which replaces ``path`` only when the block finishes
    without an exception; on any error the temporary file is removed. A path that cannot be written is a
    ``ValueError`` naming ``name``."""
    path = check_writable(path, name, make_parents)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise ValueError(f"{name}: cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, mode, newline=newline) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str | os.PathLike, text: str, name: str, make_parents: bool = False) -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path, name, make_parents=make_parents) as fh:
        fh.write(text)
    return Path(path)
