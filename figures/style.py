"""One look for every figure: column width, font sizes, colours per pattern, PNG + PDF output."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import matplotlib.pyplot as plt

from receptive.plotting import save_png_pdf

COLUMN = 3.4  # inches: one column of a two-column paper
WIDE = 7.0
COLORS = {"full": "#444444", "swa": "#1f77b4", "sa": "#d62728", "sa+swa": "#2ca02c", "connectome": "#9467bd",
          "sa fused": "#ff7f0e", "sa-ms": "#8c564b", "kleinberg": "#e377c2", "dilated": "#17becf"}  # fmt: skip
LABELS = {"full": "full", "swa": "SWA", "sa": "SA", "sa+swa": "SA+SWA", "connectome": "connectome model",
          "sa fused": "SA (fused)", "sa-ms": "multi-scale SA", "kleinberg": "Kleinberg keys",
          "dilated": "dilated heads"}  # fmt: skip

#: the rcParams of every figure, applied only while a figure is drawn (:func:`styled`): importing ``figures``
#: changes neither the backend nor the global rcParams (a notebook keeps its inline plots and its own style)
STYLE = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "legend.fontsize": 7,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "lines.linewidth": 1.2,
    "lines.markersize": 3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "savefig.dpi": 200,
}


def styled(make):
    """Decorator: run a figure function inside ``matplotlib.rc_context(STYLE)`` (the style applies to the artists
    created within, and the global rcParams are restored afterwards, also on an exception)."""

    @functools.wraps(make)
    def wrapper(*args, **kwargs):
        with plt.rc_context(STYLE):
            return make(*args, **kwargs)

    return wrapper


def figure(width: float = COLUMN, height: float = 2.3, ncols: int = 1):
    return plt.subplots(1, ncols, figsize=(width, height), constrained_layout=True, squeeze=False)


def save(fig, out: str | Path, name: str) -> list[Path]:
    """Write ``out/name.png`` and ``out/name.pdf`` (at the style's dpi)."""
    return [Path(p) for p in save_png_pdf(fig, Path(out) / name, dpi=STYLE["savefig.dpi"])]


def load_results(path: str | Path, command: str, name: str | None = None) -> dict:
    """The JSON document at ``path``.

    Parameters
    ----------
    path : str or pathlib.Path
        The result file.
    command : str
        The command that writes it, named in the error when it is missing.
    name : str or None, default None
        The argument (or CLI flag) that gave ``path``, named first in the error.

    Returns
    -------
    dict
        The parsed document.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist: one line naming ``name`` and ``command``.

    Examples
    --------
    >>> load_results("no/such/file.json", "python -m gpu.bench --json no/such/file.json", "--bench")
    Traceback (most recent call last):
    ...
    FileNotFoundError: --bench: no/such/file.json not found; run `python -m gpu.bench --json no/such/file.json` first
    """
    path = Path(path)
    if not path.exists():
        prefix = f"{name}: " if name else ""
        raise FileNotFoundError(f"{prefix}{path} not found; run `{command}` first")
    return json.loads(path.read_text())
