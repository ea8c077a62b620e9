"""The toolkit's numba reader of CSV files of integer ids and plain numeric weights (the fast engine of
:func:`graphs.edgelist.read_columns`).

The file is mapped, not copied (a ``.gz`` is decompressed whole), cut at line ends into one piece per numba
thread and parsed by all threads at once, ids 8 digits at a time (Lemire 2021). A file outside the reader's
grammar (text ids, quotes, exponents, a short row) gives ``None``, and the other readers of
:mod:`graphs.edgelist` judge it. :func:`idle_cores` decides whether parallel regions pay on the machine it runs on
(the reader's and the aggregation's).
"""

from __future__ import annotations

import gzip
import mmap
import os
import types
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange

#: exact powers of ten (a decimal ``m / 10**k`` with ``m < 2**53`` is then correctly rounded: Clinger 1990)
_POW10 = np.array([10.0**k for k in range(16)])

_COMMA, _NEWLINE, _RETURN, _MINUS, _DOT, _QUOTE = 44, 10, 13, 45, 46, 34
_U = np.uint64

#: rows from which the aggregation and the reader use all numba threads (when :func:`idle_cores` says so)
PARALLEL_ROWS = 1 << 20


def idle_cores() -> bool:
    """Whether parallel regions pay: more than one numba thread, and a core left idle by the 1-minute load average.

    A parallel region ends when its slowest thread does; on cores busy with other work a thread waits for its turn,
    so the parallel read can be slower than the serial one, and there the serial twins run.

    Returns
    -------
    bool
        ``True`` when numba has at least two threads and the load average plus one fits the cores this process may
        run on (always ``True`` where there is no load average).

    Examples
    --------
    >>> import numba
    >>> idle_cores() in (True, False)
    True
    >>> before = numba.get_num_threads()
    >>> numba.set_num_threads(1)
    >>> idle_cores()  # one thread: no parallel region
    False
    >>> numba.set_num_threads(before)
    """
    threads = numba.get_num_threads()
    if threads < 2:
        return False
    try:
        load = os.getloadavg()[0]
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    except (OSError, AttributeError):  # no load average (Windows): trust the thread count
        return True
    return load + 1 <= cores


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
    """A copy of ``fn`` under another qualified name (the reader's twins and :mod:`graphs.edgelist`'s): numba's
    on-disk cache keys compiled code by the name (not by the ``parallel`` flag), so a parallel and a serial
    compilation of one function need two names."""
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


def count_line_ends(path: str | os.PathLike) -> int:
    """The number of line ends (``\\n`` bytes) of a file, read the way :func:`graphs.io.load_edge_list`'s numba
    reader reads it: mapped, not copied (a ``.gz`` decompressed whole), and scanned once by a numba loop.

    Every parse of the file reads each byte at least once, so its time is a floor under any reader's (what the
    benchmark of the loader sets it against).

    Parameters
    ----------
    path : str or os.PathLike
        The file, plain or ``.gz``.

    Returns
    -------
    int
        The count of ``\\n`` bytes (a last line without one is not counted).

    Raises
    ------
    TypeError
        If ``path`` is not a str or path.
    ValueError
        If ``path`` is not a file.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder) / "edges.csv"
    ...     _ = path.write_text("pre,post\\n1,2\\n2,3")
    ...     count_line_ends(path)
    2
    """
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path: expected a str or path, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path: no such file: {path}")
    data, mapped = _file_bytes(path)
    try:
        return int(_newlines(data, 0, data.shape[0]))
    finally:
        del data
        if mapped is not None:
            mapped.close()
