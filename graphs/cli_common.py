"""What every command line of the toolkit shares, at the bottom of the dependency chain (``graphs`` imports nothing
of ``receptive``; ``receptive.cli_parser`` and ``receptive.plotting`` re-export these):

* :class:`OneLineErrorParser`: an ``argparse`` parser whose errors are one line naming the argument (exit 2);
* :func:`write_atomic`: write a file whole or not at all (a temporary file in the same folder, then a rename);
* :func:`save_png_pdf`: a matplotlib figure as PNG and PDF side by side, each written atomically.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["OneLineErrorParser", "save_png_pdf", "write_atomic"]


class OneLineErrorParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line that names the argument (exit status 2)."""

    def error(self, message: str):
        message = " ".join(str(message).split())  # never more than one line
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _check_folder(path: Path, option: str) -> None:
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{option}: {str(folder)!r} is not a folder")


@contextlib.contextmanager
def _atomic(path: str | Path, option: str, mkdir: bool):
    """Yield a temporary path next to ``path``; rename it onto ``path`` if the block succeeds, delete it if not."""
    path = Path(path)
    _check_folder(path, option)
    try:
        if mkdir:
            path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise ValueError(f"{option}: cannot write {str(path)!r} ({exc.strerror or exc})") from None
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: str | Path, text: str, *, option: str = "path", mkdir: bool = False) -> str:
    """Write ``text`` to ``path`` whole or not at all: a temporary file in the same folder, renamed onto ``path``
    (``os.replace`` is atomic on POSIX and Windows). ``mkdir``: create missing folders first. A folder that is
    missing (without ``mkdir``) or unwritable gives a ``ValueError`` naming ``option``; nothing is left behind."""
    with _atomic(path, option, mkdir) as tmp:
        try:
            Path(tmp).write_text(text)
        except OSError as exc:
            raise ValueError(f"{option}: cannot write {str(path)!r} ({exc.strerror or exc})") from None
    return str(path)


def save_png_pdf(fig, path: str | Path, dpi: int = 150, *, option: str = "path") -> list[str]:
    """Write ``fig`` to ``path`` without its suffix + ``.png`` and ``.pdf`` (folders created), each atomically,
    close it, and return the two paths. An unwritable place gives a ``ValueError`` naming ``option``."""
    import matplotlib.pyplot as plt

    stem = Path(path).with_suffix("")
    written = [f"{stem}.png", f"{stem}.pdf"]
    try:
        for target in written:
            with _atomic(target, option, mkdir=True) as tmp:
                fig.savefig(tmp, dpi=dpi, format=Path(target).suffix[1:])
    finally:
        plt.close(fig)
    return written
