"""Saving matplotlib figures the way every command of the toolkit does: PNG and PDF side by side."""

from __future__ import annotations

from pathlib import Path


def save_png_pdf(fig, path: str | Path, dpi: int = 150) -> list[str]:
    """Write ``fig`` to ``path`` without its suffix + ``.png`` and ``.pdf`` (folders created), close it, and
    return the two paths."""
    import matplotlib.pyplot as plt

    stem = Path(path).with_suffix("")
    stem.parent.mkdir(parents=True, exist_ok=True)
    written = [f"{stem}.png", f"{stem}.pdf"]
    for target in written:
        fig.savefig(target, dpi=dpi)
    plt.close(fig)
    return written
