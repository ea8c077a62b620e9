"""What every command line of the toolkit shares, at the bottom of the dependency chain (``graphs`` imports nothing
of ``receptive``; ``receptive.cli_parser`` and ``receptive.plotting`` re-export these):

* :class:`OneLineErrorParser`: an ``argparse`` parser whose errors are one line naming the argument (exit 2);
* :func:`write_atomic`: write a file whole or not at all (a temporary file in the same folder, then a rename);
* :func:`save_png_pdf`: a matplotlib figure as PNG and PDF side by side, each written atomically.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ._atomic import atomic_write, write_text_atomic

__all__ = ["OneLineErrorParser", "save_png_pdf", "write_atomic"]


class OneLineErrorParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line that names the argument (exit status 2)."""

    def error(self, message: str):
        message = " ".join(str(message).split())  # never more than one line
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def write_atomic(path: str | Path, text: str, *, option: str = "path", mkdir: bool = False) -> str:
    """Write ``text`` to ``path`` whole or not at all (:func:`graphs._atomic.atomic_write`); ``mkdir``: create
    missing folders first. A place that cannot be written gives a ``ValueError`` naming ``option``."""
    write_text_atomic(path, text, option, make_parents=mkdir)
    return str(path)


def save_png_pdf(fig, path: str | Path, dpi: int = 150, *, option: str = "path") -> list[str]:
    """Write ``fig`` to ``path`` without its suffix + ``.png`` and ``.pdf`` (folders created), each atomically,
    close it, and return the two paths. An unwritable place gives a ``ValueError`` naming ``option``."""
    import matplotlib.pyplot as plt

    stem = Path(path).with_suffix("")
    written = [f"{stem}.png", f"{stem}.pdf"]
    try:
        for target in written:
            with atomic_write(target, option, mode="wb", make_parents=True) as fh:
                fig.savefig(fh, dpi=dpi, format=Path(target).suffix[1:])
    finally:
        plt.close(fig)
    return written
