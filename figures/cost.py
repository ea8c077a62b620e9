"""Figures 5 and 6: time per layer and time to full coverage vs n, from the benchmark JSON of ``python -m
gpu.bench.cli --json FILE`` (``python -m figures`` reads ``--bench``). Drawn by the same functions as ``gpu.bench.cli
--plot`` (:func:`gpu.bench.plot.draw_per_layer`, :func:`gpu.bench.plot.draw_speedup`,
:func:`gpu.bench.plot.draw_to_coverage`), in this package's colours and labels: one plotting path."""

from __future__ import annotations

from .style import COLORS, COLUMN, LABELS, figure, load_results, save

SOURCE = "the JSON of `python -m gpu.bench --json FILE`"
KEYS = ("device", "parameters", "rows", "cost_to_full_coverage")  # what the figures read


def check(doc: dict) -> dict:
    """Check that a ``python -m gpu.bench --json`` document holds what the figures read
    (:func:`gpu.bench.plot.check_bench_result`).

    Parameters
    ----------
    doc : dict
        The parsed document.

    Returns
    -------
    dict
        ``doc``.

    Raises
    ------
    ValueError
        One line naming the first entry that is missing or of the wrong kind.

    Examples
    --------
    >>> check({"device": "cpu", "parameters": {"w": 8}, "rows": [], "cost_to_full_coverage": []})
    Traceback (most recent call last):
    ...
    ValueError: rows: expected a non-empty list of rows, got []
    """
    from gpu.bench.plot import check_bench_result

    return check_bench_result(doc)


def make_per_layer(out, quick: bool = False, *, bench):
    """Time per layer, and the speedup over full attention next to the SA paper's (A100).

    Parameters
    ----------
    out : str or pathlib.Path
        The folder of ``cost_per_layer.png`` and ``.pdf``.
    quick : bool, default False
        Unused: the figure only reads ``bench``.
    bench : str or pathlib.Path
        The JSON of ``python -m gpu.bench --json FILE``.

    Returns
    -------
    list of pathlib.Path
        The PNG and the PDF.

    Raises
    ------
    FileNotFoundError
        ``bench`` does not exist (the message names what the file is).

    Examples
    --------
    Without its input it names what the input is:

    >>> make_per_layer("figures-out", bench="missing.json")
    Traceback (most recent call last):
    ...
    FileNotFoundError: bench: missing.json not found; expected the JSON of `python -m gpu.bench --json FILE`
    """
    from gpu.bench.plot import draw_per_layer, draw_speedup

    doc = load_results(bench, SOURCE, "bench", KEYS, check)
    fig, axes = figure(2 * COLUMN, 2.4, ncols=2)
    draw_per_layer(axes[0, 0], doc, COLORS, LABELS)
    draw_speedup(axes[0, 1], doc, COLORS, LABELS)
    return save(fig, out, "cost_per_layer")


def make_to_coverage(out, quick: bool = False, *, bench):
    """Write ``out/cost_to_coverage.png`` and ``.pdf``: time to full coverage (``L*`` times the time of a layer)
    against n.

    Parameters
    ----------
    out : str or pathlib.Path
        The folder of the files (created if missing).
    quick : bool, default False
        Unused: the figure only reads its inputs.
    bench : str or pathlib.Path
        The JSON of ``python -m gpu.bench --json FILE``.

    Returns
    -------
    list of pathlib.Path
        The PNG and the PDF.

    Raises
    ------
    FileNotFoundError
        If an input does not exist: one line naming the argument and what the file is.

    Examples
    --------
    Without its input it names what the input is:

    >>> make_to_coverage("figures-out", bench="missing.json")
    Traceback (most recent call last):
    ...
    FileNotFoundError: bench: missing.json not found; expected the JSON of `python -m gpu.bench --json FILE`
    """
    from gpu.bench.plot import draw_to_coverage

    doc = load_results(bench, SOURCE, "bench", KEYS, check)
    fig, axes = figure(COLUMN, 2.4)
    draw_to_coverage(axes[0, 0], doc, COLORS, LABELS)
    return save(fig, out, "cost_to_coverage")
