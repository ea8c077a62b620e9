"""Reading edge-list tables fast (the reading half of :func:`graphs.io.load_edge_list`; the numbering of the ids and
the aggregation into CSR are :mod:`graphs.edge_csr`).

Four readers give the same columns: the toolkit's numba reader of CSV files of integer ids and plain numeric
weights (:mod:`graphs.csv_reader`: the file mapped, not copied, cut at line ends and parsed by all numba threads,
ids 8 digits at a time), ``pyarrow.csv`` (multi-threaded), pandas' C parser, and the standard library (always
there; slow). pandas and pyarrow are optional: the toolkit's dependencies stay numpy, scipy and numba, and the
``bench`` extra installs both. A file outside the numba reader's grammar (text ids, quotes, exponents) goes to the
next reader; a table the fast readers find irregular (a short row, an empty field) is read again by the standard
library, whose errors name the line. :func:`first_bad_number` finds a weight that is not a finite number.
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import math
from pathlib import Path

import numpy as np

from .csv_reader import _numba_csv

ENGINES = ("auto", "numba", "pyarrow", "pandas", "python")
FORMATS = ("auto", "csv", "plain")


class Irregular(Exception):
    """A fast reader met something it cannot judge precisely (the standard-library reader reports it).

    Raised by the pyarrow and pandas readers for a null field, an id column parsed as floats, or a parse error;
    :func:`read_columns` catches it and reads the file again with the standard library, whose errors name the line.

    Examples
    --------
    >>> try:
    ...     raise Irregular
    ... except Irregular:
    ...     print("read again by the standard library")
    read again by the standard library
    """


def available(engine: str) -> bool:
    """Whether a reader can run here: ``python`` always, any other when the module of that name is installed.

    Parameters
    ----------
    engine : str
        A module name (``"pyarrow"``, ``"pandas"``) or ``"python"`` (the standard library).

    Returns
    -------
    bool
        ``True`` when the engine's module can be imported.

    Examples
    --------
    >>> available("python")
    True
    >>> available("no_such_module_here")
    False
    """
    return engine == "python" or importlib.util.find_spec(engine) is not None


def open_text(path: Path):
    """Open ``path`` for reading text with universal newlines off, gunzipped when its suffix is ``.gz``.

    Parameters
    ----------
    path : pathlib.Path
        A plain or gzip-compressed text file.

    Returns
    -------
    io.TextIOBase
        The open file (``newline=""``, as :mod:`csv` asks); the caller closes it.

    Examples
    --------
    >>> import gzip, tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "edges.txt.gz"
    >>> with gzip.open(path, "wt") as out:
    ...     _ = out.write("0 1\\n")
    >>> with open_text(path) as handle:
    ...     handle.read()
    '0 1\\n'
    """
    return gzip.open(path, "rt", newline="") if path.suffix == ".gz" else open(path, newline="")


def first_line(path: Path) -> str | None:
    """The first line that is not blank (``None`` for a file without one).

    Parameters
    ----------
    path : pathlib.Path
        A plain or gzip-compressed text file.

    Returns
    -------
    str or None
        The line with its line end, or ``None`` when every line is blank.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "edges.csv"
    >>> _ = path.write_text("\\n  \\npre,post\\n1,2\\n")
    >>> first_line(path)
    'pre,post\\n'
    """
    with open_text(path) as handle:
        for line in handle:
            if line.strip():
                return line
    return None


def sniff(line: str) -> str:
    """``plain`` for a line starting with ``#`` or without a comma, else ``csv``.

    Parameters
    ----------
    line : str
        The first line of the file that is not blank (:func:`first_line`).

    Returns
    -------
    str
        ``"plain"`` (whitespace-separated, SNAP style) or ``"csv"``.

    Examples
    --------
    >>> sniff("# FromNodeId ToNodeId")
    'plain'
    >>> sniff("0 1")
    'plain'
    >>> sniff("pre_root_id,post_root_id,syn_count")
    'csv'
    """
    return "plain" if line.lstrip().startswith("#") or "," not in line else "csv"


# --------------------------------------------------------------------------------------------------- readers


def _python_csv(path: Path, cols: list[int], ncols: int):
    """Columns ``cols`` of a CSV with a header as stripped strings; ``ValueError`` naming the line of a short row."""
    with open_text(path) as handle:
        reader = csv.reader(handle)
        next(reader, None)
        fields = [[] for _ in cols]
        for row in reader:
            if not row:
                continue
            try:
                for field, col in zip(fields, cols, strict=True):
                    field.append(row[col].strip())
            except IndexError:
                raise ValueError(
                    f"path: line {reader.line_num} of {path} has {len(row)} fields, expected {ncols}"
                ) from None
    return [np.array(f, dtype=str) for f in fields]


def _python_plain(path: Path, cols: list[int]):
    """Columns ``cols`` of a whitespace-separated file (``#`` comments, no header) as strings."""
    fields = [[] for _ in cols]
    need = max(cols) + 1
    with open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            parts = line.split("#", 1)[0].split()
            if not parts:
                continue
            if len(parts) < need:
                raise ValueError(f"path: line {number} of {path} has {len(parts)} fields, expected at least {need}")
            for field, col in zip(fields, cols, strict=True):
                field.append(parts[col])
    return [np.array(f, dtype=str) for f in fields]


def _arrow_column(column, is_id: bool):
    import pyarrow as pa
    import pyarrow.compute as pc

    if column.null_count:
        raise Irregular
    kind = column.type
    if is_id and pa.types.is_floating(kind):
        raise Irregular  # ids beyond int64 would be rounded: the standard library keeps them as text
    if pa.types.is_integer(kind) and kind != pa.uint64():
        return column.to_numpy().astype(np.int64, copy=False)
    if not is_id and (pa.types.is_floating(kind) or pa.types.is_decimal(kind)):
        return column.to_numpy().astype(np.float64, copy=False)
    return pc.utf8_trim_whitespace(pc.cast(column, pa.string())).to_numpy(zero_copy_only=False)


def _pyarrow_csv(path: Path, names: list[str], is_id: list[bool]):
    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:
        table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(include_columns=names))
    except (pa.ArrowInvalid, pa.ArrowKeyError) as exc:
        raise Irregular from exc
    return [_arrow_column(table.column(i), flag) for i, flag in enumerate(is_id)]


def _pandas_column(series, is_id: bool):
    if series.isna().any():
        raise Irregular
    values = series.to_numpy()
    if is_id and values.dtype.kind == "f":
        raise Irregular  # ids beyond int64 would be rounded: the standard library keeps them as text
    if values.dtype.kind == "i" or (values.dtype.kind == "u" and values.dtype.itemsize < 8):
        return values.astype(np.int64, copy=False)
    if not is_id and values.dtype.kind == "f":
        return values.astype(np.float64, copy=False)
    return np.char.strip(values.astype(str))


def _pandas_read(path: Path, cols: list, is_id: list[bool], plain: bool):
    import pandas as pd

    kwargs = dict(sep=r"\s+", comment="#", header=None) if plain else {}
    try:
        frame = pd.read_csv(path, usecols=cols, skipinitialspace=True, **kwargs)
    except (ValueError, pd.errors.ParserError) as exc:
        raise Irregular from exc
    return [_pandas_column(frame[c], flag) for c, flag in zip(cols, is_id, strict=True)]


def read_columns(path: Path, fmt: str, cols: list[int], names: list[str], is_id: list[bool], engine: str, ncols: int):
    """The columns ``cols`` of an edge list as numpy arrays: ids as int64 or strings, weights as float64 or strings.

    Columns are picked by position (``names`` from the header of ``ncols`` columns for CSV). ``engine="auto"``:
    for CSV the numba reader, then pyarrow, else pandas, else the standard library; ``numba`` reads CSV files of
    integer ids and numeric weights (:func:`graphs.csv_reader._read_part`) and hands any other file to the
    standard library. A table a fast reader finds irregular is read again by the standard library.

    Parameters
    ----------
    path : pathlib.Path
        The edge list (plain or ``.gz``).
    fmt : {"csv", "plain"}
        The file's format (:func:`sniff`).
    cols : list of int
        The positions of the columns to read.
    names : list of str
        The header names of those columns (CSV; ignored for plain files).
    is_id : list of bool
        Per column: ``True`` for an id column (never parsed as floats), ``False`` for a weight.
    engine : {"auto", "numba", "pyarrow", "pandas", "python"}
        The reader.
    ncols : int
        The number of columns in the CSV header.

    Returns
    -------
    list of numpy.ndarray
        One array per entry of ``cols``, in that order.

    Raises
    ------
    ValueError
        A row with too few fields (the message names the line).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "edges.txt"
    >>> _ = path.write_text("# a comment\\n7 3 2.5\\n3 9 1\\n")
    >>> src, dst = read_columns(path, "plain", [0, 1], ["0", "1"], [True, True], "python", 3)
    >>> src.tolist(), dst.tolist()
    (['7', '3'], ['3', '9'])
    """
    if engine in ("auto", "numba") and fmt == "csv":
        columns = _numba_csv(path, cols, ncols)
        if columns is not None:
            return columns
        engine = "python" if engine == "numba" else engine
    if engine == "auto":
        order = ("pyarrow", "pandas") if fmt == "csv" else ("pandas",)
        engine = next((e for e in order if available(e)), "python")
    try:
        if engine == "pyarrow":
            return _pyarrow_csv(path, names, is_id)
        if engine == "pandas":
            return _pandas_read(path, cols if fmt == "plain" else names, is_id, plain=fmt == "plain")
    except Irregular:
        pass  # the standard library reads it again and says what is wrong, or reads what pandas would not
    if fmt == "plain":
        return _python_plain(path, cols)
    return _python_csv(path, cols, ncols)


def first_bad_number(values: np.ndarray) -> int | None:
    """Index of the first entry that is not a finite number (``None`` if every one is).

    Parameters
    ----------
    values : numpy.ndarray
        Weights as numbers or as strings.

    Returns
    -------
    int or None
        The index of the first NaN, infinity or text that is not a number; ``None`` when there is none.

    Examples
    --------
    >>> import numpy as np
    >>> first_bad_number(np.array(["1", "2.5", "x"]))
    2
    >>> first_bad_number(np.array([1.0, np.inf]))
    1
    >>> first_bad_number(np.array([1, 2])) is None
    True
    """
    if values.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(values))
        return int(bad[0]) if bad.size else None
    if values.dtype.kind in "iu":
        return None
    for k, text in enumerate(values.tolist()):
        try:
            if not math.isfinite(float(text)):
                return k
        except ValueError:
            return k
    return None
