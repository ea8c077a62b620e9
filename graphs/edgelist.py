"""Reading edge-list tables fast (the engine of :func:`graphs.io.load_edge_list`).

Four readers give the same columns: the toolkit's numba reader of CSV files of integer ids and plain numeric
weights (:mod:`graphs.csv_reader`: the file mapped, not copied, cut at line ends and parsed by all numba threads,
ids 8 digits at a time), ``pyarrow.csv`` (multi-threaded), pandas' C parser, and the standard library (always
there; slow). pandas and pyarrow are optional: the toolkit's dependencies stay numpy, scipy and numba, and the
``bench`` extra installs both. A file outside the numba reader's grammar (text ids, quotes, exponents) goes to the
next reader; a table the fast readers find irregular (a short row, an empty field) is read again by the standard
library, whose errors name the line.

After reading, integer node ids are numbered by first appearance with a numba hash table (text ids by
``pandas.factorize``, or ``numpy.unique`` without pandas), and the rows are aggregated into CSR by numba passes:
a stable counting sort by source, then per row a merge that sums the weights of repeated targets in file order
(found by their position in the row), drops self-loops and pairs below the threshold and sorts the kept targets.
That is ``O(m + n)`` plus ``O(d log d)`` per row for the kept targets, instead of the two sorts of all ``m`` rows
a ``numpy.unique`` on pairs followed by ``scipy.sparse`` would take.
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import math
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange

from .csv_reader import PARALLEL_ROWS, _numba_csv, _twin, idle_cores

ENGINES = ("auto", "numba", "pyarrow", "pandas", "python")
FORMATS = ("auto", "csv", "plain")

_U = np.uint64


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


# --------------------------------------------------------------------------------------------------- numbering


@njit(cache=True)
def _factorize_pairs(src, dst):
    """Codes of ``src[0], dst[0], src[1], dst[1], ...`` by first appearance: open addressing (linear probing,
    Fibonacci hashing, load <= 1/2, int32 slots; unsigned indices compile to plain loads). Returns ``u, v`` (int32
    codes) and the distinct values."""
    m = src.shape[0]
    bits = 16
    cap = 1 << bits
    mask = _U(cap - 1)
    slots = np.full(cap, -1, dtype=np.int32)
    uniques = np.empty(max(2 * m, 1), dtype=np.int64)
    u = np.empty(m, dtype=np.int32)
    v = np.empty(m, dtype=np.int32)
    count = 0
    mult = _U(0x9E3779B97F4A7C15)
    for k in range(2 * m):
        row = _U(k >> 1)
        x = src[row] if (k & 1) == 0 else dst[row]
        i = (_U(x) * mult) >> _U(64 - bits)
        while True:
            c = slots[i]
            if c == -1:
                c = count
                slots[i] = c
                uniques[_U(c)] = x
                count += 1
                break
            if uniques[_U(c)] == x:
                break
            i = (i + _U(1)) & mask
        if (k & 1) == 0:
            u[row] = c
        else:
            v[row] = c
        if 2 * count > cap:  # grow and rehash
            bits += 1
            cap = 1 << bits
            mask = _U(cap - 1)
            slots = np.full(cap, -1, dtype=np.int32)
            for c in range(count):
                j = (_U(uniques[c]) * mult) >> _U(64 - bits)
                while slots[j] != -1:
                    j = (j + _U(1)) & mask
                slots[j] = c
    return u, v, uniques[:count].copy()


def factorize_pairs(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Number the end points of edges by first appearance: ``u, v, uniques`` with ``uniques[u] == src``.

    Also ``uniques[v] == dst``; uniques are in order of first appearance row by row, source before target.
    Integers are numbered by a numba hash table (open addressing with linear probing and Fibonacci hashing [1]_),
    strings by :func:`factorize`.

    Parameters
    ----------
    src, dst : numpy.ndarray
        The sources and targets of the rows, integers or strings, of one length.

    Returns
    -------
    u, v : numpy.ndarray
        The codes of ``src`` and ``dst`` (int32 for integer ids, int64 for strings).
    uniques : numpy.ndarray
        The distinct values in order of first appearance.

    References
    ----------
    .. [1] D. E. Knuth, *The Art of Computer Programming, Vol. 3: Sorting and Searching*, 2nd ed., Addison-Wesley,
       1998, section 6.4 (multiplicative hashing, linear probing).

    Examples
    --------
    >>> import numpy as np
    >>> u, v, uniques = factorize_pairs(np.array([10, 30, 10]), np.array([30, 20, 20]))
    >>> u.tolist(), v.tolist(), uniques.tolist()
    ([0, 1, 0], [1, 2, 2], [10, 30, 20])
    """
    if src.dtype.kind in "iu" and dst.dtype.kind in "iu" and src.size < 2**30:
        return _factorize_pairs(src.astype(np.int64, copy=False), dst.astype(np.int64, copy=False))
    both = np.empty(2 * src.size, dtype=np.result_type(src.dtype, dst.dtype))
    both[0::2], both[1::2] = src, dst
    codes, uniques = factorize(both)
    return codes[0::2].copy(), codes[1::2].copy(), uniques


def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes of ``values`` by first appearance: ``codes, uniques`` with ``uniques[codes] == values``.

    By ``pandas.factorize`` (``numpy.unique`` without pandas).

    Parameters
    ----------
    values : numpy.ndarray
        One-dimensional values (integers or strings).

    Returns
    -------
    codes : numpy.ndarray
        int64 codes, one per value.
    uniques : numpy.ndarray
        The distinct values in order of first appearance.

    References
    ----------
    - pandas documentation, ``pandas.factorize``,
      https://pandas.pydata.org/docs/reference/api/pandas.factorize.html

    Examples
    --------
    >>> import numpy as np
    >>> codes, uniques = factorize(np.array(["b", "a", "b", "c"]))
    >>> codes.tolist(), uniques.tolist()
    ([0, 1, 0, 2], ['b', 'a', 'c'])
    """
    if available("pandas"):
        import pandas as pd

        codes, uniques = pd.factorize(values)
        return codes.astype(np.int64, copy=False), np.asarray(uniques)
    uniques, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    rank = np.empty(uniques.size, dtype=np.int64)
    order = np.argsort(first, kind="stable")
    rank[order] = np.arange(uniques.size)
    return rank[inverse.ravel()], uniques[order]


def as_ids(uniques: np.ndarray) -> np.ndarray:
    """Distinct ids as int64 when every one is an integer literal (and distinct as an integer), else strings.

    Parameters
    ----------
    uniques : numpy.ndarray
        Distinct ids, integers or strings.

    Returns
    -------
    numpy.ndarray
        int64 ids, or the ids as strings when one is not an integer literal or two equal the same integer.

    Examples
    --------
    >>> import numpy as np
    >>> as_ids(np.array(["12", "3"])).tolist()
    [12, 3]
    >>> as_ids(np.array(["7", "07"])).tolist()
    ['7', '07']
    >>> as_ids(np.array(["a", "1"])).tolist()
    ['a', '1']
    """
    if uniques.dtype.kind in "iu":
        return uniques.astype(np.int64, copy=False)
    text = uniques.astype(str)
    try:
        ints = text.astype(np.int64)
    except (ValueError, OverflowError):
        return text
    return ints if np.unique(ints).size == ints.size else text  # "7" and "07" stay distinct


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


# --------------------------------------------------------------------------------------------------- aggregation


@njit(cache=True)
def _bucket(n, u, v, w, weighted):
    """Counting sort of the rows by source (stable: each row keeps the file's order): ``start`` (CSR offsets),
    targets and weights in source order. Unsigned indices compile to plain loads."""
    m = u.shape[0]
    start = np.zeros(n + 1, dtype=np.int64)
    for k in range(m):
        start[_U(u[_U(k)] + 1)] += 1
    for i in range(n):
        start[i + 1] += start[i]
    fill = start[:-1].copy()
    cols = np.empty_like(v)
    ws = np.empty(m if weighted else 0, dtype=np.float64)
    for k in range(m):
        at = _U(k)
        row = _U(u[at])
        p = _U(fill[row])
        cols[p] = v[at]
        if weighted:
            ws[p] = w[at]
        fill[row] = p + _U(1)
    return start, cols, ws


def _merge_rows_py(start, cols, ws, weighted, threshold, thresholded, blocks):
    """Per row, in place: sum the weights of repeated targets (in row order: the file's order), keep targets that
    are not the row itself and whose sum is ``>= threshold``, sorted; kept targets move to the start of the row,
    ``kept[r]`` counts them. Repeats are found by ``seen[c]``, the position of target ``c`` in the row being
    merged (positions in earlier rows are below its start), so only the kept targets are sorted. ``blocks`` runs
    of rows in parallel, each with its own ``seen``."""
    n = start.shape[0] - 1
    kept = np.zeros(n, dtype=np.int64)
    for block in prange(blocks):
        seen = np.full(n, -1, dtype=np.int64)
        for r in range(n * block // blocks, n * (block + 1) // blocks):
            a, b = start[r], start[r + 1]
            out = a
            for i in range(a, b):
                c = cols[i]
                p = seen[c]
                if p >= a:
                    if weighted:
                        ws[p] += ws[i]
                else:
                    seen[c] = out
                    cols[out] = c
                    if weighted:
                        ws[out] = ws[i]
                    out += 1
            end = a
            for i in range(a, out):
                c = cols[i]
                if c != r and (not thresholded or ws[i] >= threshold):
                    cols[end] = c
                    end += 1
            if end - a > 32:
                cols[a:end] = np.sort(cols[a:end])
            else:
                for i in range(a + 1, end):  # insertion sort of short rows
                    c = cols[i]
                    j = i - 1
                    while j >= a and cols[j] > c:
                        cols[j + 1] = cols[j]
                        j -= 1
                    cols[j + 1] = c
            kept[r] = end - a
    return kept


#: per row in parallel (worth its start-up only for many rows: on shared cores a parallel region waits for every
#: thread to be scheduled) and its serial twin
_merge_rows = njit(parallel=True, cache=True)(_merge_rows_py)
_merge_rows_serial = njit(cache=True)(_twin(_merge_rows_py, "_serial"))


@njit(cache=True)
def _compact(start, cols, kept, used, new):
    """CSR of the kept pairs over the used nodes only, renumbered by ``new`` (monotone, so rows stay sorted)."""
    rows = np.flatnonzero(used)
    indptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    for i in range(rows.shape[0]):
        indptr[i + 1] = indptr[i] + kept[rows[i]]
    indices = np.empty(indptr[-1], dtype=np.int64)
    for i in range(rows.shape[0]):
        r = rows[i]
        p = indptr[i]
        for q in range(start[r], start[r] + kept[r]):
            indices[p] = new[cols[q]]
            p += 1
    return indptr, indices


def aggregate(n: int, u: np.ndarray, v: np.ndarray, w: np.ndarray | None, threshold: float | None):
    """Rows ``u[k] -> v[k]`` (weights ``w``) over nodes ``0..n-1`` as CSR of the distinct pairs kept.

    A pair is kept when it is not a self-loop and its summed weight is ``>= threshold``; the CSR is over the nodes
    those pairs touch, renumbered in their original order, and each row's targets are sorted. The rows are
    bucketed by a stable counting sort by source, then merged per row (``O(m + n)`` plus ``O(d log d)`` per row).

    Parameters
    ----------
    n : int
        The number of nodes (codes ``0..n-1``).
    u, v : numpy.ndarray
        The codes of the sources and targets, one per row.
    w : numpy.ndarray or None
        The weights, one per row, summed per ordered pair; ``None``: unweighted.
    threshold : float or None
        Keep the pairs whose summed weight is ``>= threshold``; ``None``: keep every pair.

    Returns
    -------
    indptr, indices : numpy.ndarray
        The CSR (int64) of the kept pairs over the kept nodes.
    used : numpy.ndarray
        Boolean mask over ``0..n-1`` of the nodes kept.

    References
    ----------
    - T. H. Cormen, C. E. Leiserson, R. L. Rivest, C. Stein, *Introduction to Algorithms*, 3rd ed., MIT Press,
      2009, section 8.2 (counting sort).

    Examples
    --------
    >>> import numpy as np
    >>> u = np.array([0, 0, 1, 2, 0], dtype=np.int32)
    >>> v = np.array([1, 1, 1, 0, 3], dtype=np.int32)
    >>> w = np.array([2.0, 3.0, 9.0, 1.0, 6.0])
    >>> indptr, indices, used = aggregate(4, u, v, w, threshold=5.0)
    >>> indptr.tolist(), indices.tolist(), used.tolist()
    ([0, 2, 2, 2], [1, 2], [True, True, False, True])
    """
    weighted = w is not None
    weights = np.asarray(w, dtype=np.float64) if weighted else np.empty(0, dtype=np.float64)
    start, cols, ws = _bucket(n, u, v, weights, weighted)
    thresholded = threshold is not None
    level = float(threshold) if thresholded else 0.0
    if u.shape[0] >= PARALLEL_ROWS and idle_cores():
        kept = _merge_rows(start, cols, ws, weighted, level, thresholded, numba.get_num_threads())
    else:
        kept = _merge_rows_serial(start, cols, ws, weighted, level, thresholded, 1)
    used = kept > 0
    used[_kept_targets(start, cols, kept)] = True
    new = np.cumsum(used) - 1
    indptr, indices = _compact(start, cols, kept, used, new)
    return indptr, indices, used


@njit(cache=True)
def _kept_targets(start, cols, kept):
    n = start.shape[0] - 1
    total = 0
    for r in range(n):
        total += kept[r]
    out = np.empty(total, dtype=np.int64)
    p = 0
    for r in range(n):
        for q in range(start[r], start[r] + kept[r]):
            out[p] = cols[q]
            p += 1
    return out
