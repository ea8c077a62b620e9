"""The figures of ``python -m gpu.bench`` (``--plot``, ``--replot``) and of ``figures.cost``: time per layer, speedup
over full attention next to the SA paper's, and time to full coverage, against n (log-log), one line per (kind,
backend), colour by kind and line style by backend."""

from __future__ import annotations

from receptive.plotting import save_png_pdf

#: SA's speedup over full attention per n as published (Jin & Sui 2026, arXiv 2604.00754, on an A100)
PAPER_SPEEDUP = {2048: 1.5, 8192: 6.6, 32768: 28.0}
#: colours per kind, shared with ``figures.style.COLORS`` (a test keeps them equal); line style per backend
KIND_COLORS = {
    "full": "#444444",
    "swa": "#1f77b4",
    "sa": "#d62728",
    "sa+swa": "#2ca02c",
    "sa-ms": "#8c564b",
    "kleinberg": "#e377c2",
    "dilated": "#17becf",
}
KIND_LABELS = {
    "full": "full",
    "swa": "SWA",
    "sa": "SA",
    "sa+swa": "SA+SWA",
    "sa-ms": "multi-scale SA",
    "kleinberg": "Kleinberg keys",
    "dilated": "dilated heads",
}
BACKEND_LINES = {
    "torch": "-",
    "sdpa": "-",
    "flex": "--",
    "triton": ":",
    "gather": "-.",
    "dense": (0, (5, 1, 1, 1)),
    "kernel": (0, (1, 1)),
}
BACKEND_NAMES = {
    "torch": "",
    "sdpa": "",
    "flex": " (Flex)",
    "triton": " (fused)",
    "gather": " (gathered lists)",
    "dense": " (lists as a dense mask)",
    "kernel": " (numba kernel)",
}


def kind_and_backend(row: dict) -> tuple[str, str]:
    """A row's (kind, backend) of a ``gpu.bench.cli`` result.

    Its ``kind`` and ``backend`` fields, or, for a row that names only its ``path``, read from the label
    (``sa fused``: the Triton kernel; a bare kind: the torch path; ``full``: SDPA).

    Parameters
    ----------
    row : dict
        A row of the benchmark's ``rows`` (or ``cost_to_full_coverage``).

    Returns
    -------
    tuple of str
        ``(kind, backend)``, keys of :data:`KIND_COLORS` and :data:`BACKEND_LINES`.

    Examples
    --------
    >>> kind_and_backend({"kind": "sa-ms", "backend": "flex"})
    ('sa-ms', 'flex')
    >>> kind_and_backend({"path": "sa fused"}), kind_and_backend({"path": "full"}), kind_and_backend({"path": "swa"})
    (('sa', 'triton'), ('full', 'sdpa'), ('swa', 'torch'))
    """
    if "kind" in row:
        return row["kind"], row["backend"]
    name = row["path"]
    if name.endswith(" fused"):
        return name[: -len(" fused")], "triton"
    return name, "sdpa" if name == "full" else "torch"


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_rows(records, where: str, value: str, required: bool) -> None:
    if not isinstance(records, list) or (required and not records):
        raise ValueError(f"{where}: expected a non-empty list of rows, got {_short(records)}")
    for i, row in enumerate(records):
        if not isinstance(row, dict):
            raise ValueError(f"{where}[{i}]: expected an object, got {_short(row)}")
        if "kind" in row:
            kind, backend = row["kind"], row.get("backend")
        elif isinstance(row.get("path"), str):
            kind, backend = kind_and_backend(row)
        else:
            raise ValueError(f"{where}[{i}]: expected 'kind' and 'backend' (or 'path'), got keys {sorted(row)}")
        if kind not in KIND_COLORS or backend not in BACKEND_LINES:
            raise ValueError(
                f"{where}[{i}]: unknown kind {kind!r} or backend {backend!r} (kinds: {', '.join(KIND_COLORS)}; "
                f"backends: {', '.join(BACKEND_LINES)})"
            )
        if not _number(row.get("n")) or row["n"] < 1:
            raise ValueError(f"{where}[{i}]: 'n' must be a positive number, got {_short(row.get('n'))}")
        if row.get(value) is not None and (not _number(row[value]) or row[value] < 0):
            raise ValueError(f"{where}[{i}]: {value!r} must be a number >= 0 or null, got {_short(row[value])}")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_bench_result(doc) -> dict:
    """Check that ``doc`` holds what the figures of a ``gpu.bench.cli`` result read, before any drawing.

    Parameters
    ----------
    doc : dict
        A parsed ``python -m gpu.bench --json`` document: ``device`` (a string), ``parameters`` with ``w``,
        ``rows`` (non-empty; ``kind`` and ``backend`` or ``path``, ``n``, ``seconds``, ``speedup_over_full``) and
        ``cost_to_full_coverage`` (``kind`` and ``backend`` or ``path``, ``n``, ``seconds_to_full_coverage``).

    Returns
    -------
    dict
        ``doc``.

    Raises
    ------
    ValueError
        One line naming the first entry that is missing or of the wrong kind, e.g. ``"rows[0]: ..."``.

    Examples
    --------
    >>> doc = {"device": "cpu", "parameters": {"w": 64}, "cost_to_full_coverage": [],
    ...        "rows": [{"kind": "sa", "backend": "torch", "n": 1024, "seconds": 1e-3}]}
    >>> check_bench_result(doc) is doc
    True
    >>> check_bench_result({**doc, "rows": [{"x": 1}]})
    Traceback (most recent call last):
    ...
    ValueError: rows[0]: expected 'kind' and 'backend' (or 'path'), got keys ['x']
    """
    if not isinstance(doc, dict):
        raise ValueError(f"expected a JSON object, got {_short(doc)}")
    if not isinstance(doc.get("device"), str):
        raise ValueError(f"device: expected a string, got {_short(doc.get('device'))}")
    parameters = doc.get("parameters")
    if not isinstance(parameters, dict) or not _number(parameters.get("w")):
        raise ValueError(f"parameters: expected an object with a number 'w', got {_short(parameters)}")
    for key in ("seconds", "speedup_over_full"):
        _check_rows(doc.get("rows"), "rows", key, required=True)
    _check_rows(doc.get("cost_to_full_coverage"), "cost_to_full_coverage", "seconds_to_full_coverage", False)
    return doc


def _curves(records, value, skip_full: bool = False):
    """``{(kind, backend): [(n, value), ...]}`` in the order kinds and backends first appear."""
    curves = {}
    for r in records:
        kind, backend = kind_and_backend(r)
        if (skip_full and kind == "full") or r.get(value) is None:
            continue
        curves.setdefault((kind, backend), []).append((r["n"], r[value]))
    return curves


def _draw(ax, curves, colors, labels, scale=1.0):
    for (kind, backend), points in curves.items():
        n, y = zip(*points, strict=True)
        ax.plot(
            n,
            [t * scale for t in y],
            marker="o",
            ms=3,
            color=colors[kind],
            ls=BACKEND_LINES[backend],
            label=labels[kind] + BACKEND_NAMES[backend],
        )
    ax.set(xscale="log", yscale="log", xlabel="sequence length n")
    ax.legend(fontsize=7)


def draw_per_layer(ax, doc: dict, colors=KIND_COLORS, labels=KIND_LABELS) -> None:
    """Time per layer [ms] vs n, one line per (kind, backend): colour by kind, line style by backend.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Where to draw.
    doc : dict
        A ``gpu.bench.cli`` result: ``device``, ``parameters["w"]`` and ``rows`` with ``kind``, ``backend`` (or
        ``path``), ``n`` and ``seconds``.
    colors : dict, optional
        Colour per kind.
    labels : dict, optional
        Legend label per kind.

    Examples
    --------
    >>> doc = {"device": "cpu", "parameters": {"w": 64}, "rows": [
    ...     {"kind": "full", "backend": "sdpa", "n": 1024, "seconds": 2e-3, "speedup_over_full": 1.0},
    ...     {"kind": "full", "backend": "sdpa", "n": 4096, "seconds": 3e-2, "speedup_over_full": 1.0},
    ...     {"kind": "sa", "backend": "torch", "n": 1024, "seconds": 1e-3, "speedup_over_full": 2.0},
    ...     {"kind": "sa", "backend": "torch", "n": 4096, "seconds": 4e-3, "speedup_over_full": 7.5}],
    ...     "cost_to_full_coverage": [
    ...     {"kind": "sa", "backend": "torch", "n": 1024, "seconds_to_full_coverage": 3e-3},
    ...     {"kind": "sa", "backend": "torch", "n": 4096, "seconds_to_full_coverage": 1.6e-2}]}
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().subplots()
    >>> draw_per_layer(ax, doc)
    >>> [line.get_label() for line in ax.get_lines()], ax.get_yscale()
    (['full', 'SA'], 'log')
    """
    _draw(ax, _curves(doc["rows"], "seconds"), colors, labels, scale=1e3)
    ax.set(ylabel="time per layer [ms]", title=f"{doc['device']}, w = {doc['parameters']['w']}")


def draw_speedup(ax, doc: dict, colors=KIND_COLORS, labels=KIND_LABELS) -> None:
    """Speedup over full attention vs n, next to the SA paper's (A100) [1]_.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Where to draw.
    doc : dict
        A ``gpu.bench.cli`` result whose ``rows`` carry ``speedup_over_full`` (rows of ``full`` are left out).
    colors : dict, optional
        Colour per kind.
    labels : dict, optional
        Legend label per kind.

    References
    ----------
    .. [1] Jin & Sui (2026), Stochastic Attention, arXiv:2604.00754 (the published speedups,
       :data:`PAPER_SPEEDUP`).

    Examples
    --------
    >>> doc = {"device": "cpu", "parameters": {"w": 64}, "rows": [
    ...     {"kind": "full", "backend": "sdpa", "n": 1024, "seconds": 2e-3, "speedup_over_full": 1.0},
    ...     {"kind": "full", "backend": "sdpa", "n": 4096, "seconds": 3e-2, "speedup_over_full": 1.0},
    ...     {"kind": "sa", "backend": "torch", "n": 1024, "seconds": 1e-3, "speedup_over_full": 2.0},
    ...     {"kind": "sa", "backend": "torch", "n": 4096, "seconds": 4e-3, "speedup_over_full": 7.5}],
    ...     "cost_to_full_coverage": [
    ...     {"kind": "sa", "backend": "torch", "n": 1024, "seconds_to_full_coverage": 3e-3},
    ...     {"kind": "sa", "backend": "torch", "n": 4096, "seconds_to_full_coverage": 1.6e-2}]}
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().subplots()
    >>> draw_speedup(ax, doc)
    >>> [line.get_label() for line in ax.get_lines()]
    ['SA', 'SA paper (A100)']
    """
    _draw(ax, _curves(doc["rows"], "speedup_over_full", skip_full=True), colors, labels)
    ax.plot(list(PAPER_SPEEDUP), list(PAPER_SPEEDUP.values()), "k*", ms=7, label="SA paper (A100)")
    ax.set(ylabel="speedup over full attention")
    ax.legend(fontsize=7)


def draw_to_coverage(ax, doc: dict, colors=KIND_COLORS, labels=KIND_LABELS) -> None:
    """Time to full coverage (L* layers x time per layer) vs n.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Where to draw.
    doc : dict
        A ``gpu.bench.cli`` result with ``cost_to_full_coverage`` rows carrying ``seconds_to_full_coverage``.
    colors : dict, optional
        Colour per kind.
    labels : dict, optional
        Legend label per kind.

    Examples
    --------
    >>> doc = {"device": "cpu", "parameters": {"w": 64}, "rows": [
    ...     {"kind": "full", "backend": "sdpa", "n": 1024, "seconds": 2e-3, "speedup_over_full": 1.0},
    ...     {"kind": "full", "backend": "sdpa", "n": 4096, "seconds": 3e-2, "speedup_over_full": 1.0},
    ...     {"kind": "sa", "backend": "torch", "n": 1024, "seconds": 1e-3, "speedup_over_full": 2.0},
    ...     {"kind": "sa", "backend": "torch", "n": 4096, "seconds": 4e-3, "speedup_over_full": 7.5}],
    ...     "cost_to_full_coverage": [
    ...     {"kind": "sa", "backend": "torch", "n": 1024, "seconds_to_full_coverage": 3e-3},
    ...     {"kind": "sa", "backend": "torch", "n": 4096, "seconds_to_full_coverage": 1.6e-2}]}
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().subplots()
    >>> draw_to_coverage(ax, doc)
    >>> [line.get_label() for line in ax.get_lines()], ax.get_ylabel()
    (['SA'], 'time to full coverage [s]')
    """
    _draw(ax, _curves(doc["cost_to_full_coverage"], "seconds_to_full_coverage"), colors, labels)
    ax.set(ylabel="time to full coverage [s]", title="L* layers x time per layer")


def plot_cost(doc: dict, path: str) -> list[str]:
    """Time per layer and time to full coverage vs n for every path (log-log), saved as PNG and PDF.

    The same drawing functions ``figures.cost`` uses (:func:`draw_per_layer`, :func:`draw_to_coverage`).

    Parameters
    ----------
    doc : dict
        A ``gpu.bench.cli`` result (see :func:`draw_per_layer` and :func:`draw_to_coverage`).
    path : str
        The files are ``path`` without its suffix plus ``.png`` and ``.pdf``.

    Returns
    -------
    list of str
        The two paths written.

    Raises
    ------
    ValueError
        If the place cannot be written.

    Examples
    --------
    >>> doc = {"device": "cpu", "parameters": {"w": 64}, "rows": [
    ...     {"kind": "full", "backend": "sdpa", "n": 1024, "seconds": 2e-3, "speedup_over_full": 1.0},
    ...     {"kind": "full", "backend": "sdpa", "n": 4096, "seconds": 3e-2, "speedup_over_full": 1.0},
    ...     {"kind": "sa", "backend": "torch", "n": 1024, "seconds": 1e-3, "speedup_over_full": 2.0},
    ...     {"kind": "sa", "backend": "torch", "n": 4096, "seconds": 4e-3, "speedup_over_full": 7.5}],
    ...     "cost_to_full_coverage": [
    ...     {"kind": "sa", "backend": "torch", "n": 1024, "seconds_to_full_coverage": 3e-3},
    ...     {"kind": "sa", "backend": "torch", "n": 4096, "seconds_to_full_coverage": 1.6e-2}]}
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     [pathlib.Path(p).name for p in plot_cost(doc, str(pathlib.Path(folder) / "cost.png"))]
    ['cost.png', 'cost.pdf']
    """
    from matplotlib.figure import Figure  # no pyplot: the caller's backend stays as it is

    fig = Figure(figsize=(7, 3), layout="constrained")
    axes = fig.subplots(1, 2)
    draw_per_layer(axes[0], doc)
    draw_to_coverage(axes[1], doc)
    return save_png_pdf(fig, path)
