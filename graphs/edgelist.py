"""Reading edge-list tables fast (the engine of :func:`graphs.io.load_edge_list`).

Four readers give the same columns: the toolkit's numba reader of CSV files of integer ids and plain numeric
weights (the file mapped, not copied, cut at line ends and parsed by all numba threads, ids 8 digits at a time),
``pyarrow.csv`` (multi-threaded), pandas' C parser, and the standard library (always there; slow). pandas and
pyarrow are optional: the toolkit's dependencies stay numpy, scipy and numba, and the ``bench`` extra installs
both. A file outside the numba reader's grammar (text ids, quotes, exponents) goes to the next reader; a table
the fast readers find irregular (a short row, an empty field) is read again by the standard library, whose
errors name the line.

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
import mmap
import os
import types
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange

ENGINES = ("auto", "numba", "pyarrow", "pandas", "python")
FORMATS = ("auto", "csv", "plain")


class Irregular(Exception):
    """A fast reader met something it cannot judge precisely (the standard-library reader reports it)."""


def available(engine: str) -> bool:
    return engine == "python" or importlib.util.find_spec(engine) is not None


def open_text(path: Path):
    return gzip.open(path, "rt", newline="") if path.suffix == ".gz" else open(path, newline="")


def first_line(path: Path) -> str | None:
    """The first line that is not blank (``None`` for a file without one)."""
    with open_text(path) as handle:
        for line in handle:
            if line.strip():
                return line
    return None


def sniff(line: str) -> str:
    """``plain`` for a line starting with ``#`` or without a comma, else ``csv``."""
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
    """The columns ``cols`` (by position; ``names`` from the header of ``ncols`` columns for CSV) as numpy arrays:
    ids as int64 or strings, weights as float64 or strings. ``engine="auto"``: for CSV the numba reader, then
    pyarrow, else pandas, else the standard library; ``numba`` reads CSV files of integer ids and numeric
    weights (:func:`_read_part`) and hands any other file to the standard library."""
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


# --------------------------------------------------------------------------------------------------- fast reader

#: exact powers of ten (a decimal ``m / 10**k`` with ``m < 2**53`` is then correctly rounded: Clinger 1990)
_POW10 = np.array([10.0**k for k in range(16)])

_COMMA, _NEWLINE, _RETURN, _MINUS, _DOT, _QUOTE = 44, 10, 13, 45, 46, 34
_U = np.uint64


@njit(cache=True, inline="always")
def _byte(buf, i):
    """``buf[i]`` for ``i >= 0``: an unsigned index compiles to a plain load (no test for negative indices)."""
    return buf[_U(i)]


@njit(cache=True, inline="always")
def _word(buf, i):
    """The 8 bytes ``buf[i:i + 8]`` as one little-endian integer (one load: unsigned indices)."""
    word = _U(0)
    at = _U(i)
    for b in range(8):
        word |= _U(buf[at + _U(b)]) << _U(8 * b)
    return word


@njit(cache=True, inline="always")
def _eight_digits(word):
    """Whether the 8 bytes of ``word`` are all ASCII digits."""
    high = _U(0xF0F0F0F0F0F0F0F0)
    return ((word & high) | (((word + _U(0x0606060606060606)) & high) >> _U(4))) == _U(0x3333333333333333)


@njit(cache=True, inline="always")
def _eight_value(word):
    """The number written by 8 ASCII digits (the first byte is the most significant digit) in three multiplies
    (Lemire, "Number parsing at a gigabyte per second", Software: Practice and Experience 51, 1700, 2021)."""
    word = word - _U(0x3030303030303030)
    word = word * _U(10) + (word >> _U(8))
    low = (word & _U(0x000000FF000000FF)) * _U(100 + (1000000 << 32))
    high = ((word >> _U(16)) & _U(0x000000FF000000FF)) * _U(1 + (10000 << 32))
    return (low + high) >> _U(32)


@njit(cache=True, nogil=True)
def _read_part(buf, lo, hi, ncols, cs, cd, cw, src, dst, w, at, limit):
    """Rows of ``buf[lo:hi]`` (whole lines, no header) into ``src, dst, w`` from row ``at`` on.

    Grammar: ``ncols`` comma-separated fields per line; the ids (fields ``cs, cd``) are ``[-]digits`` within
    int64, the weight (field ``cw``; ``-1`` for none) is ``[-]digits[.digits]`` with at most 15 digits; other
    fields hold no quote, comma or line end. Blank lines are skipped; ``\\r\\n`` ends a line too. Returns ``rows,
    status``: 0 (read), 1 (a line outside the grammar, which the other readers then judge) or 2 (more rows than
    ``limit - at``)."""
    k = at
    i = lo
    while i < hi:
        c = _byte(buf, i)
        if c == _NEWLINE:
            i += 1
            continue
        if c == _RETURN and i + 1 < hi and _byte(buf, i + 1) == _NEWLINE:
            i += 2
            continue
        if k == limit:
            return k - at, 2
        field = 0
        a = np.int64(0)
        b = np.int64(0)
        weight = 0.0
        while True:
            if field == cs or field == cd:
                neg = i < hi and _byte(buf, i) == _MINUS
                if neg:
                    i += 1
                x = _U(0)
                digits = 0
                while digits <= 11 and i + 8 <= hi:  # eight digits at a time while the value stays below 10**19
                    word = _word(buf, i)
                    if not _eight_digits(word):
                        break
                    x = x * _U(100000000) + _eight_value(word)
                    digits += 8
                    i += 8
                while i < hi:
                    d = np.int64(_byte(buf, i)) - 48
                    if d < 0 or d > 9:
                        break
                    x = x * _U(10) + _U(d)
                    digits += 1
                    i += 1
                if digits == 0 or digits > 19 or (digits == 19 and x > (_U(2**63) if neg else _U(2**63 - 1))):
                    return k - at, 1
                value = np.int64(_U(0) - x) if neg else np.int64(x)
                if field == cs:
                    a = value
                else:
                    b = value
            elif field == cw:
                neg = i < hi and _byte(buf, i) == _MINUS
                if neg:
                    i += 1
                m = np.int64(0)
                digits = 0
                scale = -1
                while i < hi:
                    d = np.int64(_byte(buf, i)) - 48
                    if 0 <= d <= 9:
                        m = m * 10 + d
                        digits += 1
                        if scale >= 0:
                            scale += 1
                    elif d == _DOT - 48 and scale < 0:
                        scale = 0
                    else:
                        break
                    i += 1
                if digits == 0 or digits > 15:
                    return k - at, 1
                weight = m / _POW10[max(scale, 0)]
                if neg:
                    weight = -weight
            else:
                while i < hi:
                    c = _byte(buf, i)
                    if c == _COMMA or c == _NEWLINE or c == _RETURN or c == _QUOTE:
                        break
                    i += 1
            if i >= hi:  # the last line without a newline
                break
            c = _byte(buf, i)
            if c == _COMMA:
                field += 1
                i += 1
                if field == ncols:
                    return k - at, 1
                continue
            if c == _NEWLINE:
                i += 1
                break
            if c == _RETURN and i + 1 < hi and _byte(buf, i + 1) == _NEWLINE:
                i += 2
                break
            return k - at, 1
        if field != ncols - 1:
            return k - at, 1
        src[k] = a
        dst[k] = b
        if cw >= 0:
            w[k] = weight
        k += 1
    return k - at, 0


@njit(cache=True)
def _cut(buf, i, hi):
    """The first position ``>= i`` that starts a line (just after a newline), or ``hi``."""
    while i < hi and buf[i - 1] != _NEWLINE:
        i += 1
    return min(i, hi)


@njit(cache=True)
def _newlines(buf, lo, hi):
    total = 0
    for i in range(lo, hi):
        total += buf[i] == _NEWLINE
    return total


def _read_parts_py(buf, bounds, starts, ncols, cs, cd, cw, src, dst, w):
    """:func:`_read_part` on the pieces ``buf[bounds[j]:bounds[j + 1]]`` (cut at line ends), in parallel, piece
    ``j`` into rows ``starts[j]:starts[j + 1]``. Returns the rows and the status of each piece."""
    parts = bounds.shape[0] - 1
    rows = np.zeros(parts, dtype=np.int64)
    status = np.zeros(parts, dtype=np.int64)
    for j in prange(parts):
        r, code = _read_part(buf, bounds[j], bounds[j + 1], ncols, cs, cd, cw, src, dst, w, starts[j], starts[j + 1])
        rows[j] = r
        status[j] = code
    return rows, status


def _line_counts_py(buf, bounds):
    """Line ends in each piece, plus one (a last line without one), in parallel."""
    parts = bounds.shape[0] - 1
    lines = np.zeros(parts, dtype=np.int64)
    for j in prange(parts):
        lines[j] = _newlines(buf, bounds[j], bounds[j + 1]) + 1
    return lines


@njit(cache=True)
def _close_gaps(src, dst, w, starts, rows):
    """Move the rows of each piece down to follow the previous piece's; returns the number of rows."""
    at = rows[0]
    for j in range(1, rows.shape[0]):
        if starts[j] != at:
            for k in range(rows[j]):
                src[at + k] = src[starts[j] + k]
                dst[at + k] = dst[starts[j] + k]
                if w.shape[0]:
                    w[at + k] = w[starts[j] + k]
        at += rows[j]
    return at


@njit(cache=True)
def _bounds(buf, lo, parts):
    """``parts + 1`` cut points of ``buf[lo:]``, each at the start of a line, about equally spaced."""
    hi = buf.shape[0]
    bounds = np.empty(parts + 1, dtype=np.int64)
    bounds[0] = lo
    bounds[parts] = hi
    for j in range(1, parts):
        bounds[j] = _cut(buf, max(lo + (hi - lo) * j // parts, bounds[j - 1]), hi)
    return bounds


def _twin(fn, suffix: str):
    """A copy of ``fn`` under another qualified name: numba's on-disk cache keys compiled code by the name (not by
    the ``parallel`` flag), so a parallel and a serial compilation of one function need two names."""
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + suffix, fn.__defaults__, fn.__closure__)
    twin.__qualname__ = fn.__qualname__ + suffix
    twin.__doc__ = fn.__doc__
    return twin


_read_parts = njit(parallel=True, cache=True)(_read_parts_py)
_read_parts_serial = njit(cache=True)(_twin(_read_parts_py, "_serial"))  # one part: no parallel region to start
_line_counts = njit(parallel=True, cache=True)(_line_counts_py)
_line_counts_serial = njit(cache=True)(_twin(_line_counts_py, "_serial"))


def _read(data, lo: int, parts: int, ncols: int, cs: int, cd: int, cw: int, per_byte: float):
    """The rows of ``data[lo:]`` read by ``parts`` threads. Each piece writes from a row placed by an estimate
    (``per_byte`` rows per byte, with room to spare); when a piece holds more rows, the read starts again with
    the rows placed by a count of line ends. Returns ``src, dst, w`` or ``None`` (a line outside the grammar)."""
    bounds = _bounds(data, lo, parts)
    sizes = (np.diff(bounds) * per_byte).astype(np.int64) + 16
    read = _read_parts if parts > 1 else _read_parts_serial
    for _ in range(2):
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        total = int(starts[-1])
        src, dst = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64)
        w = np.empty(total if cw >= 0 else 0, dtype=np.float64)
        rows, status = read(data, bounds, starts, ncols, cs, cd, cw, src, dst, w)
        if (status == 1).any():
            return None
        if not (status == 2).any():
            break
        sizes = _line_counts(data, bounds) if parts > 1 else _line_counts_serial(data, bounds)
    at = _close_gaps(src, dst, w, starts, rows)
    return src[:at], dst[:at], w[: at if cw >= 0 else 0]


def _file_bytes(path: Path):
    """The bytes of ``path`` as a uint8 array: a read-only map of the page cache (no copy), or the whole
    decompressed ``.gz``. Returns the array and the map to close (``None`` for none)."""
    if path.suffix == ".gz":
        with gzip.open(path, "rb") as handle:
            return np.frombuffer(handle.read(), dtype=np.uint8), None
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=np.uint8), None
    with open(path, "rb") as handle:
        if hasattr(mmap, "MAP_SHARED"):  # POSIX: page tables filled in one call where MAP_POPULATE exists (Linux)
            flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
            mapped = mmap.mmap(handle.fileno(), 0, flags=flags, prot=mmap.PROT_READ)
        else:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    return np.frombuffer(mapped, dtype=np.uint8), mapped


def _numba_csv(path: Path, cols: list[int], ncols: int, parts: int | None = None, rows_per_byte: float | None = None):
    """Columns ``cols`` (source, target, optional weight) of a CSV of integer ids as int64, int64 and float64
    arrays, or ``None`` when the file is outside the grammar of :func:`_read_part` (the other readers judge it).

    The file is mapped, not copied, and read by ``parts`` threads at once (default: one per numba thread for a
    file of 32 MiB or more when :func:`idle_cores`, else one). Each part's rows are placed by the rows per byte
    of the first MiB, times 1.25 (``rows_per_byte`` overrides it; when a part holds more rows, one more pass
    counts the line ends)."""
    cs, cd = cols[0], cols[1]
    cw = cols[2] if len(cols) > 2 else -1
    if cw in (cs, cd):
        return None
    data, mapped = _file_bytes(path)
    try:
        pos = 0
        while pos < data.shape[0] and data[pos] in (_NEWLINE, _RETURN):
            pos += 1
        header = data[pos : pos + (1 << 20)].tobytes()
        end = header.find(b"\n")
        if end < 0 and pos + len(header) == data.shape[0]:
            end = len(header) - 1  # a header without a line end and no rows
        if end < 0 or b'"' in header[:end]:
            return None  # a long or a quoted header: the other readers judge
        if parts is None:
            parts = numba.get_num_threads() if data.shape[0] >= 32 * PARALLEL_ROWS and idle_cores() else 1
        start = pos + end + 1
        sample = data[start : start + (1 << 20)].tobytes()  # rows per byte, to place each part's rows
        per_byte = rows_per_byte if rows_per_byte is not None else 1.25 * (sample.count(b"\n") + 1) / (len(sample) + 1)
        columns = _read(data, start, parts, ncols, cs, cd, cw, per_byte)
    finally:
        del data
        if mapped is not None:
            mapped.close()
    if columns is None:
        return None
    return list(columns) if cw >= 0 else list(columns[:2])


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
    """``u, v, uniques`` with ``uniques[u] == src``, ``uniques[v] == dst``, uniques in order of first appearance
    row by row, source before target: integers by a numba hash table, strings by :func:`factorize`."""
    if src.dtype.kind in "iu" and dst.dtype.kind in "iu" and src.size < 2**30:
        return _factorize_pairs(src.astype(np.int64, copy=False), dst.astype(np.int64, copy=False))
    both = np.empty(2 * src.size, dtype=np.result_type(src.dtype, dst.dtype))
    both[0::2], both[1::2] = src, dst
    codes, uniques = factorize(both)
    return codes[0::2].copy(), codes[1::2].copy(), uniques


def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``codes, uniques`` with ``uniques[codes] == values`` and uniques in order of first appearance, by
    ``pandas.factorize`` (``numpy.unique`` without pandas)."""
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
    """Distinct ids as int64 when every one is an integer literal (and distinct as an integer), else strings."""
    if uniques.dtype.kind in "iu":
        return uniques.astype(np.int64, copy=False)
    text = uniques.astype(str)
    try:
        ints = text.astype(np.int64)
    except (ValueError, OverflowError):
        return text
    return ints if np.unique(ints).size == ints.size else text  # "7" and "07" stay distinct


def first_bad_number(values: np.ndarray) -> int | None:
    """Index of the first entry that is not a finite number (``None`` if every one is)."""
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

#: rows from which the aggregation and the reader use all numba threads (when :func:`idle_cores` says so)
PARALLEL_ROWS = 1 << 20


def idle_cores() -> bool:
    """Whether parallel regions pay: more than one numba thread, and a core left idle by the 1-minute load
    average. A parallel region ends when its slowest thread does; on cores busy with other work a thread waits
    for its turn, and on the 2-core machine of the README (load 3-9) the parallel read of a 148 MB table took
    0.168-0.19 s against 0.154 s serial, so there the serial twins run."""
    threads = numba.get_num_threads()
    if threads < 2:
        return False
    try:
        load = os.getloadavg()[0]
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    except (OSError, AttributeError):  # no load average (Windows): trust the thread count
        return True
    return load + 1 <= cores


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
    """Rows ``u[k] -> v[k]`` (weights ``w``) over nodes ``0..n-1`` as CSR of the distinct pairs that are not
    self-loops and whose summed weight is ``>= threshold``, over the nodes those pairs touch. Returns ``indptr,
    indices, used`` (``used``: mask of the nodes kept, in their original order)."""
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
