"""Numba kernels of the bit-parallel reachability engine.

A *slab* is a matrix ``bits`` of shape ``(n, W)`` and dtype uint64: row ``i`` is a bitset of ``64 * W`` seeds.
One layer of attention maps it to ``out[i] = OR_{j in N(i)} bits[j]``, where ``N(i)`` are the keys query ``i``
attends to (forward, from sources) or the queries that attend to ``i`` (backward, from targets).

Window kernels never build an ``n x w`` neighbour list. A window is a run of ``m = left + right + 1``
consecutive positions in (permuted) order, so the OR over it is a sliding-window OR, computed with the
van Herk / Gil-Werman block prefix and suffix ORs in 3 word operations per output word, independent of ``m``
(van Herk 1992, Pattern Recognit. Lett. 13:517; Gil & Werman 1993, IEEE TPAMI 15:504).
Rows are gathered through the permutation while they are loaded and scattered while they are stored, so a
permuted window (Stochastic Attention) costs the same passes over memory as a plain one.

Each kernel works on tasks of (chunk of consecutive window positions, tile of words): every task gathers its
rows plus the window's halo into a small buffer that stays in cache, then writes its outputs once.
"""

from __future__ import annotations

import platform

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.core.extending import intrinsic

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


@njit(inline="always")
def popcount64(x):
    """Number of set bits of a uint64 (SWAR; LLVM lowers it to ``popcnt`` where available)."""
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return (x * _H01) >> np.uint64(56)


@njit(inline="always")
def _resolve(x, n, circular):
    """Position ``x`` of the virtual (padded) sequence -> index in 0..n-1, or -1 outside a truncated window."""
    if circular:
        x = x % n
        return x if x >= 0 else x + n
    if x < 0 or x >= n:
        return -1
    return x


_V8 = ir.VectorType(ir.IntType(64), 8)


def _array_pointer(context, builder, array_type, array, index, vector=True):
    """LLVM pointer to ``array[index]`` of a 1-d contiguous array, as a pointer to 8 words (``vector``) or to one."""
    pointer = builder.gep(context.make_array(array_type)(context, builder, array).data, [index])
    return builder.bitcast(pointer, _V8.as_pointer()) if vector else pointer


_X86 = platform.machine().lower() in ("x86_64", "amd64", "x86", "i386", "i686")


def _c_words(*arrays) -> bool:
    """True if every (numba) type is a 1-d C-contiguous uint64 array: the intrinsics below address words directly."""
    return all(
        isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C" and a.dtype == types.uint64 for a in arrays
    )


#: :func:`_emit8` modes: write the target (plain stores), write it with streaming (non-temporal) stores, OR into it
_PLAIN, _STREAM, _ACCUMULATE = 1, 2, 3


@intrinsic
def _prefetch(typingctx, array, index):
    """Hint the cache line of ``array[index]`` into the cache (``llvm.prefetch``: no fault, no effect on results)."""
    if not _c_words(array):
        return None

    def codegen(context, builder, signature, args):
        pointer = _array_pointer(context, builder, signature.args[0], *args, vector=False)
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [pointer.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [pointer, i32(0), i32(3), i32(1)])  # read, keep in all levels, data cache
        return context.get_dummy_value()

    return types.void(array, index), codegen


@intrinsic
def _gather8(typingctx, src, row, acc, index, first):
    """Words ``index .. index + 7``: ``row = src``; ``acc = src`` if ``first`` else ``acc | src`` (one 512-bit
    vector, unaligned loads; LLVM splits it where the target's vectors are narrower)."""
    if not _c_words(src, row, acc):
        return None

    def codegen(context, builder, signature, args):
        src_t, row_t, acc_t = signature.args[:3]
        src, row, acc, index, first = args
        value = builder.load(_array_pointer(context, builder, src_t, src, index), align=8)
        builder.store(value, _array_pointer(context, builder, row_t, row, index), align=8)
        acc_pointer = _array_pointer(context, builder, acc_t, acc, index)
        running = builder.or_(builder.load(acc_pointer, align=8), value)
        builder.store(builder.select(first, value, running), acc_pointer, align=8)
        return context.get_dummy_value()

    return types.void(src, row, acc, index, first), codegen


@intrinsic
def _emit8(typingctx, a, b, target, index, mode):
    """Words ``index .. index + 7`` of ``target``: ``= a | b`` (``_PLAIN``), the same with a streaming store that
    bypasses the caches (``_STREAM``; ``target[index]`` must be 64-byte aligned), or ``|= a | b`` (``_ACCUMULATE``)."""
    if not _c_words(a, b, target):
        return None

    def codegen(context, builder, signature, args):
        a_t, b_t, target_t = signature.args[:3]
        a, b, target, index, mode = args
        value = builder.or_(
            builder.load(_array_pointer(context, builder, a_t, a, index), align=8),
            builder.load(_array_pointer(context, builder, b_t, b, index), align=8),
        )
        pointer = _array_pointer(context, builder, target_t, target, index)
        is_stream = builder.icmp_signed("==", mode, mode.type(_STREAM))
        is_accumulate = builder.icmp_signed("==", mode, mode.type(_ACCUMULATE))
        with builder.if_else(is_stream) as (stream, other):
            with stream:
                store = builder.store(value, pointer, align=64)
                store.set_metadata("nontemporal", builder.module.add_metadata([ir.IntType(32)(1)]))
            with other:
                old = builder.load(pointer, align=8)
                builder.store(builder.select(is_accumulate, builder.or_(old, value), value), pointer, align=8)
        return context.get_dummy_value()

    return types.void(a, b, target, index, mode), codegen


@intrinsic
def _store_fence(typingctx):
    """Order this thread's streaming stores before anything it does next (``sfence`` on x86, a full fence elsewhere)."""

    def codegen(context, builder, signature, args):
        if _X86:
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse.sfence"
            )
            builder.call(fn, [])
        else:
            builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


@njit(inline="always")
def _gathered(bits, perm, has_perm, x, n, circular, w0, w1, zero):
    """Words ``w0 .. w1 - 1`` of the input row at virtual position ``x``, or ``zero`` (outside a truncated sequence,
    or a hole)."""
    x = _resolve(x, n, circular)
    src = x
    if x >= 0 and has_perm:
        src = perm[x]
    if src < 0:
        return zero
    return bits[src, w0:w1]


@njit(inline="always")
def _gather_row(got, ahead, row, acc, first, nb, target, mode):
    """One gathered row of the streaming window, in a single pass over its words: ``row = got``, ``acc = got`` if
    ``first`` else ``acc | got``, then ``target (|)= nb | acc`` (``mode``; 0 writes nothing), while the row
    ``ahead`` (the next one gathered) is prefetched at the same offsets, one cache line per 8 words."""
    t = got.shape[0]
    head = 0
    if mode == _STREAM:  # plain stores up to the first 64-byte boundary of the target row
        head = min(t, ((64 - target.ctypes.data % 64) % 64) // 8)
    b = 0
    while b < t:
        if head <= b and b + 8 <= t:
            _prefetch(ahead, b)
            _gather8(got, row, acc, b, first)
            if mode != 0:
                _emit8(nb, acc, target, b, mode)
            b += 8
        else:
            v = got[b]
            row[b] = v
            acc[b] = v if first else acc[b] | v
            if mode == _ACCUMULATE:
                target[b] |= nb[b] | acc[b]
            elif mode != 0:
                target[b] = nb[b] | acc[b]
            b += 1


@njit(inline="always")
def _emit_row(a, b_row, target, mode):
    """``target (|)= a | b_row`` (``mode`` as in :func:`_emit8`)."""
    t = a.shape[0]
    head = 0
    if mode == _STREAM:
        head = min(t, ((64 - target.ctypes.data % 64) % 64) // 8)
    b = 0
    while b < t:
        if head <= b and b + 8 <= t:
            _emit8(a, b_row, target, b, mode)
            b += 8
        else:
            if mode == _ACCUMULATE:
                target[b] |= a[b] | b_row[b]
            else:
                target[b] = a[b] | b_row[b]
            b += 1


#: slabs at least this large are written with streaming stores by :func:`window_or` (when it does not accumulate):
#: a slab larger than the last-level cache is evicted before the next layer reads it anyway, and streaming stores
#: save the read of every written line (the write-allocate); a smaller slab is better left in the cache.
WINDOW_OR_STREAM_BYTES = 32 * 2**20


@njit(parallel=True, cache=True)
def _window_or(bits, out, perm, left, right, circular, accumulate, chunk_len, tile, stream_bytes):
    """The kernel of :func:`window_or` (arguments checked there)."""
    n_words = bits.shape[1]
    m = left + right + 1
    has_perm = perm.shape[0] > 0
    n = perm.shape[0] if has_perm else bits.shape[0]
    n_chunks = (n + chunk_len - 1) // chunk_len
    n_tiles = (n_words + tile - 1) // tile
    mode = _ACCUMULATE if accumulate else (_STREAM if out.nbytes >= stream_bytes else _PLAIN)
    for task in prange(n_chunks * n_tiles):
        c = task // n_tiles
        w0 = (task % n_tiles) * tile
        w1 = min(n_words, w0 + tile)
        t_words = w1 - w0
        q0 = c * chunk_len
        n_out = min(n, q0 + chunk_len) - q0
        base = q0 - left  # virtual position of block row 0 of the first block: output t covers rows t .. t + m - 1
        buf = np.empty((m, t_words), dtype=np.uint64)  # S_B, overwritten row by row with the next block
        acc = np.empty(t_words, dtype=np.uint64)  # P_{B+1}[k]: the running prefix OR of the next block
        zero = np.zeros(t_words, dtype=np.uint64)
        for k in range(m):
            got = _gathered(bits, perm, has_perm, base + k, n, circular, w0, w1, zero)
            ahead = _gathered(bits, perm, has_perm, base + k + 1, n, circular, w0, w1, zero)
            _gather_row(got, ahead, buf[k], acc, True, zero, zero, 0)
        for k in range(m - 2, -1, -1):
            row, below = buf[k], buf[k + 1]
            for b in range(t_words):
                row[b] |= below[b]
        for block in range(0, n_out, m):
            count = min(m, n_out - block)
            dst = perm[q0 + block] if has_perm else q0 + block
            if dst >= 0:  # output j = 0 of the block is the whole block: S_B[0]
                _emit_row(buf[0], zero, out[dst, w0:w1], mode)
            # gather the next block row by row (the last block of a chunk only the rows its outputs reach)
            for k in range(m if block + m < n_out else count - 1):
                x = base + block + m + k
                got = _gathered(bits, perm, has_perm, x, n, circular, w0, w1, zero)
                ahead = _gathered(bits, perm, has_perm, x + 1, n, circular, w0, w1, zero)
                j = k + 1
                dst = -1
                if j < count:
                    dst = perm[q0 + block + j] if has_perm else q0 + block + j
                if dst >= 0:
                    _gather_row(got, ahead, buf[k], acc, k == 0, buf[j], out[dst, w0:w1], mode)
                else:
                    _gather_row(got, ahead, buf[k], acc, k == 0, zero, zero, 0)
            if block + m < n_out:  # the next block's suffix ORs become S_{B+1}
                for k in range(m - 2, -1, -1):
                    row, below = buf[k], buf[k + 1]
                    for b in range(t_words):
                        row[b] |= below[b]
        if mode == _STREAM:
            _store_fence()


def window_or(bits, out, perm, left, right, circular, accumulate, chunk_len, tile, stream_bytes=WINDOW_OR_STREAM_BYTES):
    """Sliding-window OR in (permuted) order.

    With ``perm`` of length n (``perm[p]`` = original index at permuted position ``p``; pass an empty array for
    the identity), for every permuted position ``p``::

        out[perm[p]] (|)= OR_{x = p-left .. p+right} bits[perm[x]]

    Positions outside ``0..n-1`` are skipped (truncated) or taken modulo n (``circular``).
    ``perm`` may be longer than ``n`` with entries ``-1``: holes of a virtual sequence (zero rows in, nothing written),
    which keep windows from crossing the segments they separate (dilated windows, grouped orders).
    ``accumulate`` ORs into ``out``; otherwise ``out`` rows are overwritten (each row is written exactly once), with
    streaming stores when ``out`` has at least ``stream_bytes`` bytes.

    Streaming van Herk / Gil-Werman in one ``m x tile`` buffer (``m = left + right + 1``): a task (``chunk_len``
    consecutive outputs, ``tile`` words) walks its windows block by block (``m`` rows). With ``S_B`` the suffix ORs
    of block ``B`` and ``P_{B+1}`` the prefix ORs of the next, the window starting at offset ``j`` of block ``B`` is
    ``S_B[j] | P_{B+1}[j - 1]`` (``S_B[0]`` for ``j = 0``). Row ``k`` of block ``B + 1`` is gathered into buffer row
    ``k``, whose ``S_B[k]`` the output ``j = k`` has already used, in the same pass that extends the running prefix
    and writes output ``j = k + 1``; one backward pass then turns the buffer into ``S_{B+1}``. Every input word is
    read from memory once and every output word written once; the gathered rows are prefetched one row ahead (their
    order is random, so the hardware prefetcher cannot guess them).
    """
    _check_slabs(bits, out)
    if not (isinstance(perm, np.ndarray) and perm.ndim == 1 and perm.dtype.kind == "i"):
        raise ValueError("perm: expected a 1-d integer array (empty for the identity)")
    if perm.size and (perm.size < bits.shape[0] or perm.min() < -1 or perm.max() >= bits.shape[0]):
        raise ValueError(f"perm: expected at least {bits.shape[0]} entries in -1 .. {bits.shape[0] - 1}")
    for name, value, low in (("left", left, 0), ("right", right, 0), ("chunk_len", chunk_len, 1), ("tile", tile, 1)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"{name}: expected an integer >= {low}, got {value!r}")
    if isinstance(stream_bytes, bool) or not isinstance(stream_bytes, int | np.integer) or stream_bytes < 0:
        raise ValueError(f"stream_bytes: expected an integer >= 0, got {stream_bytes!r}")
    _window_or(bits, out, perm, left, right, bool(circular), bool(accumulate), chunk_len, tile, stream_bytes)


def _check_slabs(bits, out) -> None:
    """``bits`` and ``out``: distinct C-contiguous 2-d uint64 arrays of the same shape (one-line ``ValueError``)."""
    for name, a in (("bits", bits), ("out", out)):
        if not (isinstance(a, np.ndarray) and a.ndim == 2 and a.dtype == np.uint64 and a.flags.c_contiguous):
            raise ValueError(f"{name}: expected a C-contiguous 2-d uint64 array")
    if out.shape != bits.shape or not out.flags.writeable or np.may_share_memory(bits, out):
        raise ValueError(f"out: expected a writeable array of shape {bits.shape} that does not overlap bits")


#: words of the one ``m x tile`` buffer of a :func:`window_or` task: 512 KiB, half the L2 of a current core.
#: Wide tiles matter more than an L1-sized buffer: each tile of a row is a separate random-row gather (a new DRAM
#: page that the hardware prefetcher runs past), so n = 65536, w = 64 runs fastest with whole 8 KiB rows: tiles of
#: 512 and 256 words took 1.3x and 1.8x as long (2-core Zen 5, same run).
WINDOW_OR_TASK_WORDS = 64 * 1024


def window_or_tiling(length: int, m: int, n_words: int) -> tuple[int, int]:
    """``(chunk_len, tile)`` for :func:`window_or`: tiles as wide as one ``m x tile`` buffer allows within
    ``WINDOW_OR_TASK_WORDS`` (long contiguous row reads), chunks of at least 16 windows (the extra block each chunk
    loads costs at most 1/16) and at least 1024 positions."""
    tile = max(1, min(n_words, WINDOW_OR_TASK_WORDS // m))
    chunk = min(length, max(1024, 16 * m))
    return chunk, tile


#: windows at least this long use the Fenwick sweep in :func:`window_or_ordered`, shorter ones the direct loop
FENWICK_MIN_WINDOW = 24


@njit(cache=True)
def _fenwick_or_insert(tree, i, row):
    i += 1
    while i < tree.shape[0]:
        for b in range(row.shape[0]):
            tree[i, b] |= row[b]
        i += i & -i


@njit(cache=True)
def _fenwick_or_query(tree, i, acc):
    """``acc |=`` OR of the rows inserted at positions ``0..i``."""
    i += 1
    while i > 0:
        for b in range(acc.shape[0]):
            acc[b] |= tree[i, b]
        i -= i & -i


@njit(cache=True)
def _ordered_windows_fenwick(rows, origin, dsts, m, direction, res):
    """``res[t] |= OR rows[k]`` over ``k in [t, t+m-1]`` with ``origin[k] >= 0`` and ``origin[k] <= dsts[t]``
    (``direction > 0``; ``>=`` otherwise), by blocks of ``m``: each window is a suffix of one block and a prefix
    of the next, and within a block the two-sided condition (position and origin) is a dominance query answered
    offline: elements inserted in origin order into Fenwick trees over positions, queries taken in the same order.
    ``O(log m)`` row operations per output instead of ``m``."""
    buf_len, t_words = rows.shape
    n_out = dsts.shape[0]
    forward = np.zeros((m + 1, t_words), dtype=np.uint64)
    reverse = np.zeros((m + 1, t_words), dtype=np.uint64)
    q_t = np.empty(2 * m, dtype=np.int64)
    q_kind = np.empty(2 * m, dtype=np.int64)
    q_v = np.empty(2 * m, dtype=np.int64)
    for s in range(0, buf_len, m):
        e = min(s + m, buf_len)
        forward[:] = 0
        reverse[:] = 0
        n_q = 0
        for t in range(s, min(e, n_out)):  # suffix of this block from t
            q_t[n_q], q_kind[n_q], q_v[n_q] = t, 0, dsts[t]
            n_q += 1
        for t in range(max(0, s - m + 1), min(s, n_out)):  # prefix of this block up to t + m - 1
            q_t[n_q], q_kind[n_q], q_v[n_q] = t, 1, dsts[t]
            n_q += 1
        if n_q == 0:
            continue
        keys = origin[s:e] if direction > 0 else -origin[s:e]
        elements = np.argsort(keys)
        q_order = np.argsort(q_v[:n_q] if direction > 0 else -q_v[:n_q])
        j = 0
        acc = np.empty(t_words, dtype=np.uint64)
        for qi in q_order:
            v = q_v[qi]
            while j < e - s:
                k = s + elements[j]
                o = origin[k]
                if o >= 0:
                    if (direction > 0 and o > v) or (direction < 0 and o < v):
                        break
                    _fenwick_or_insert(forward, k - s, rows[k])
                    _fenwick_or_insert(reverse, e - 1 - k, rows[k])
                j += 1
            t = q_t[qi]
            acc[:] = 0
            if q_kind[qi] == 0:
                _fenwick_or_query(reverse, e - 1 - t, acc)
            else:
                _fenwick_or_query(forward, t + m - 1 - s, acc)
            for b in range(t_words):
                res[t, b] |= acc[b]


@njit(parallel=True, cache=True)
def window_or_ordered(bits, out, perm, left, right, circular, direction, accumulate, chunk_len, tile):
    """Window OR restricted by original position: the causal mask of Stochastic Attention.

    As :func:`window_or`, but key ``perm[x]`` contributes to ``perm[p]`` only if ``perm[x] <= perm[p]``
    (``direction = +1``: forward, keys never come from the future) or ``perm[x] >= perm[p]``
    (``direction = -1``: the transposed graph, used when propagating backward from targets).
    The filter breaks the OR semigroup's sliding structure: short windows loop over their ``m`` keys, long ones
    (``m >= FENWICK_MIN_WINDOW``) use a Fenwick-tree sweep with ``O(log m)`` word operations per output word.
    Holes (``perm`` entries ``-1``) as in :func:`window_or`.
    """
    n_words = bits.shape[1]
    m = left + right + 1
    has_perm = perm.shape[0] > 0
    n = perm.shape[0] if has_perm else bits.shape[0]
    n_chunks = (n + chunk_len - 1) // chunk_len
    n_tiles = (n_words + tile - 1) // tile
    for task in prange(n_chunks * n_tiles):
        c = task // n_tiles
        w0 = (task % n_tiles) * tile
        w1 = min(n_words, w0 + tile)
        t_words = w1 - w0
        q0 = c * chunk_len
        q1 = min(n, q0 + chunk_len)
        buf_len = (q1 - q0) + m - 1
        rows = np.zeros((buf_len, t_words), dtype=np.uint64)
        origin = np.empty(buf_len, dtype=np.int64)
        for k in range(buf_len):
            x = _resolve(q0 - left + k, n, circular)
            if x < 0:
                origin[k] = -1
            else:
                src = perm[x] if has_perm else x
                origin[k] = src
                if src >= 0:
                    for b in range(t_words):
                        rows[k, b] = bits[src, w0 + b]
        dsts = np.empty(q1 - q0, dtype=np.int64)
        for t in range(q1 - q0):
            dsts[t] = perm[q0 + t] if has_perm else q0 + t
        res = np.zeros((q1 - q0, t_words), dtype=np.uint64)
        if m >= FENWICK_MIN_WINDOW:
            _ordered_windows_fenwick(rows, origin, dsts, m, direction, res)
        else:
            for t in range(q1 - q0):
                dst = dsts[t]
                for k in range(t, t + m):
                    o = origin[k]
                    if o < 0 or (direction > 0 and o > dst) or (direction < 0 and o < dst):
                        continue
                    for b in range(t_words):
                        res[t, b] |= rows[k, b]
        for t in range(q1 - q0):
            dst = dsts[t]
            if dst < 0:
                continue
            if accumulate:
                for b in range(t_words):
                    out[dst, w0 + b] |= res[t, b]
            else:
                for b in range(t_words):
                    out[dst, w0 + b] = res[t, b]


@njit(parallel=True, cache=True)
def neighbour_or(bits, out, indptr, indices, accumulate):
    """``out[i] (|)= OR_{j in indices[indptr[i]:indptr[i+1]]} bits[j]`` for an explicit (CSR) neighbour list."""
    n, n_words = bits.shape
    for i in prange(n):
        if not accumulate:
            for b in range(n_words):
                out[i, b] = 0
        for e in range(indptr[i], indptr[i + 1]):
            j = indices[e]
            for b in range(n_words):
                out[i, b] |= bits[j, b]


@njit(parallel=True, cache=True)
def row_popcounts(bits):
    """``counts[i]`` = number of set bits in row ``i``."""
    n, n_words = bits.shape
    counts = np.empty(n, dtype=np.int64)
    for i in prange(n):
        s = np.uint64(0)
        for b in range(n_words):
            s += popcount64(bits[i, b])
        counts[i] = np.int64(s)
    return counts


def _byte_spread_table():
    table = np.zeros(256, dtype=np.uint64)
    for v in range(256):
        for k in range(8):
            if v >> k & 1:
                table[v] |= np.uint64(1) << np.uint64(8 * k)
    return table


_SPREAD = _byte_spread_table()


@njit(parallel=True, cache=True)
def _column_popcounts(bits, spread, row_chunk):
    n, n_words = bits.shape
    n_chunks = (n + row_chunk - 1) // row_chunk
    partial = np.zeros((n_chunks, n_words * 64), dtype=np.int64)
    for task in prange(n_chunks * n_words):
        c = task // n_words
        b = task % n_words
        lanes = np.zeros(8, dtype=np.uint64)  # 8 counters of 8 bits per lane: bit 8*k + j of the word -> lane j
        since_flush = 0
        for i in range(c * row_chunk, min(n, (c + 1) * row_chunk)):
            x = bits[i, b]
            if x != 0:
                for j in range(8):
                    lanes[j] += spread[(x >> np.uint64(8 * j)) & np.uint64(255)]
            since_flush += 1
            if since_flush == 255:
                for j in range(8):
                    for k in range(8):
                        partial[c, b * 64 + 8 * j + k] += (lanes[j] >> np.uint64(8 * k)) & np.uint64(255)
                    lanes[j] = 0
                since_flush = 0
        for j in range(8):
            for k in range(8):
                partial[c, b * 64 + 8 * j + k] += (lanes[j] >> np.uint64(8 * k)) & np.uint64(255)
    return partial


def column_popcounts(bits: np.ndarray) -> np.ndarray:
    """``counts[s]`` = number of rows whose bit ``s`` is set (a positional popcount over all rows).

    Bytes are spread into 8-bit lane counters with a 256-entry table and flushed every 255 rows, so the cost is
    ``8`` table look-ups per nonzero word instead of 64 bit tests.
    """
    n = bits.shape[0]
    row_chunk = max(1024, -(-n // 16))
    return _column_popcounts(bits, _SPREAD, row_chunk).sum(axis=0)
