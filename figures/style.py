"""One look for every figure: column width, font sizes, colours per pattern, PNG + PDF output."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import matplotlib.pyplot as plt

from graphs.cli_common import NUMBER, check_shape  # noqa: F401 (NUMBER: the figures' shapes use it from here)
from receptive.plotting import save_png_pdf

COLUMN = 3.4  # inches: one column of a two-column paper
WIDE = 7.0
COLORS = {
    "full": "#444444",
    "swa": "#1f77b4",
    "sa": "#d62728",
    "sa+swa": "#2ca02c",
    "connectome": "#9467bd",
    "sa fused": "#ff7f0e",
    "sa-ms": "#8c564b",
    "kleinberg": "#e377c2",
    "dilated": "#17becf",
}
LABELS = {
    "full": "full",
    "swa": "SWA",
    "sa": "SA",
    "sa+swa": "SA+SWA",
    "connectome": "connectome model",
    "sa fused": "SA (fused)",
    "sa-ms": "multi-scale SA",
    "kleinberg": "Kleinberg keys",
    "dilated": "dilated heads",
}

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
    """Decorate a figure function so that it runs inside ``matplotlib.rc_context(STYLE)``.

    The style applies to the artists created within, and the global rcParams are restored afterwards, also on an
    exception: importing or drawing a figure leaves a notebook's own style as it was.

    Parameters
    ----------
    make : callable
        The figure function.

    Returns
    -------
    callable
        ``make`` with the same signature, drawn in :data:`STYLE`.

    Examples
    --------
    >>> import matplotlib
    >>> font = styled(lambda: matplotlib.rcParams["font.size"])
    >>> font() == STYLE["font.size"], matplotlib.rcParams["font.size"] == STYLE["font.size"]
    (True, False)
    """

    @functools.wraps(make)
    def wrapper(*args, **kwargs):
        with plt.rc_context(STYLE):
            return make(*args, **kwargs)

    return wrapper


def figure(width: float = COLUMN, height: float = 2.3, ncols: int = 1):
    """A figure of ``ncols`` axes side by side, in inches, with constrained layout.

    Parameters
    ----------
    width : float, default COLUMN
        Width in inches (:data:`COLUMN`: one column of a two-column paper; :data:`WIDE`: both).
    height : float, default 2.3
        Height in inches.
    ncols : int, default 1
        Axes side by side.

    Returns
    -------
    tuple of (matplotlib.figure.Figure, numpy.ndarray)
        The figure and its ``(1, ncols)`` array of axes.

    Examples
    --------
    >>> fig, axes = figure(WIDE, 2.4, ncols=3)
    >>> axes.shape, [round(float(x), 1) for x in fig.get_size_inches()]
    ((1, 3), [7.0, 2.4])
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    return plt.subplots(1, ncols, figsize=(width, height), constrained_layout=True, squeeze=False)


def save(fig, out: str | Path, name: str) -> list[Path]:
    """Write ``out/name.png`` and ``out/name.pdf`` (the PNG at the style's dpi), each atomically, and close ``fig``.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    out : str or pathlib.Path
        The folder (created if missing).
    name : str
        The file name without its suffix.

    Returns
    -------
    list of pathlib.Path
        The PNG and the PDF.

    Examples
    --------
    >>> import tempfile
    >>> import matplotlib.figure
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     print([path.name for path in save(matplotlib.figure.Figure(), folder, "empty")])
    ['empty.png', 'empty.pdf']
    """
    return [Path(p) for p in save_png_pdf(fig, Path(out) / name, dpi=STYLE["savefig.dpi"])]


def load_results(
    path: str | Path, source: str, name: str | None = None, keys: tuple[str, ...] = (), check=None
) -> dict:
    """The JSON document at ``path``, checked to be ``source`` (an object with ``keys``, whose contents pass
    ``check``).

    Parameters
    ----------
    path : str or pathlib.Path
        The result file.
    source : str
        What the file is, named in the errors, e.g. ``"the JSON of `python -m gpu.bench --json FILE`"``.
    name : str or None, default None
        The argument (or CLI flag) that gave ``path``, named first in the error.
    keys : tuple of str, default ()
        The top-level keys the caller reads.
    check : callable or None, default None
        ``check(doc)`` raises ``ValueError`` (one line naming the entry) when the contents are not what the caller
        reads, e.g. :func:`gpu.bench.plot.check_bench_result`.

    Returns
    -------
    dict
        The parsed document.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist: one line naming ``name`` and ``source``.
    ValueError
        ``path`` is not JSON, not an object with ``keys``, or ``check`` refuses it: one line naming ``name`` and
        ``source``.

    Examples
    --------
    >>> load_results("no/such/file.json", "the JSON of `python -m gpu.bench --json FILE`", "--bench")
    Traceback (most recent call last):
    ...
    FileNotFoundError: --bench: no/such/file.json not found; expected the JSON of `python -m gpu.bench --json FILE`
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".json") as fh:
    ...     _ = fh.write('{"rows": []}'); fh.flush()
    ...     load_results(fh.name, "the JSON of `python -m gpu.bench --json FILE`", "--bench", keys=("rows", "device"))
    Traceback (most recent call last):
    ...
    ValueError: --bench: ... lacks 'device'; expected the JSON of `python -m gpu.bench --json FILE`
    """
    path = Path(path)
    prefix = f"{name}: " if name else ""
    if not path.exists():
        raise FileNotFoundError(f"{prefix}{path} not found; expected {source}")
    try:
        doc = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{prefix}{path} is not a JSON document ({exc}); expected {source}") from None
    missing = [key for key in keys if not isinstance(doc, dict) or key not in doc]
    if missing:
        raise ValueError(f"{prefix}{path} lacks {', '.join(map(repr, missing))}; expected {source}")
    if check is not None:
        try:
            check(doc)
        except ValueError as exc:
            raise ValueError(f"{prefix}{path}: {exc}; expected {source}") from None
    return doc


def shape_check(shape):
    """A ``check`` for :func:`load_results`: :func:`check_shape` of the whole document against ``shape``.

    Parameters
    ----------
    shape : dict
        The document's shape.

    Returns
    -------
    callable
        ``doc -> None``, raising ``ValueError``.

    Examples
    --------
    >>> shape_check({"rows": [dict]})({"rows": [3]})
    Traceback (most recent call last):
    ...
    ValueError: rows[0] is a number, expected dict
    """

    def check(doc) -> None:
        check_shape(doc, shape)

    return check
