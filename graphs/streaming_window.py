"""The streaming sliding-window OR of the reachability engine (:func:`window_or`) and its hand-written LLVM
helpers (prefetch, 512-bit gathers, streaming stores, store fence).

Slabs as in :mod:`graphs.kernels`: ``bits`` of shape ``(n, W)`` and dtype uint64, row ``i`` a bitset of ``64 * W``
seeds. A window kernel never builds an ``n x w`` neighbour list. A window is a run of ``m = left + right + 1``
consecutive positions in (permuted) order, so the OR over it is a sliding-window OR, computed with the
van Herk / Gil-Werman block prefix and suffix ORs in 3 word operations per output word, independent of ``m``
(van Herk 1992, Pattern Recognit. Lett. 13:517; Gil & Werman 1993, IEEE TPAMI 15:504).
Rows are gathered through the permutation while they are loaded and scattered while they are stored, so a
permuted window (Stochastic Attention) costs the same passes over memory as a plain one.

The kernel works on tasks of (chunk of consecutive window positions, tile of words): every task gathers its
rows plus the window's halo into a small buffer that stays in cache, then writes its outputs once.
"""

from __future__ import annotations

import platform

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.core.extending import intrinsic

from .validation import check_int


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


def window_or(
    bits, out, perm, left, right, circular, accumulate, chunk_len, tile, stream_bytes=WINDOW_OR_STREAM_BYTES
) -> None:
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

    Parameters
    ----------
    bits : numpy.ndarray
        ``(n, W)`` uint64 slab, C-contiguous.
    out : numpy.ndarray
        Slab of the same shape, distinct from ``bits``, that receives the result.
    perm : numpy.ndarray
        int64 original index at each permuted position (``-1`` holes; empty: identity).
    left, right : int
        Keys before and after the query's position, ``>= 0``.
    circular : bool
        Windows wrap around.
    accumulate : bool
        OR into ``out`` instead of overwriting it.
    chunk_len, tile : int
        Positions and words per parallel task (:func:`window_or_tiling`), ``>= 1``.
    stream_bytes : int, optional
        Use streaming stores when ``out`` has at least this many bytes.

    Raises
    ------
    TypeError
        If an integer argument is not an integer.
    ValueError
        Naming the argument: arrays of the wrong dtype, shape or layout, or a negative size.

    References
    ----------
    - M. van Herk, "A fast algorithm for local minimum and maximum filters on rectangular and octagonal kernels",
      Pattern Recognit. Lett. 13, 517-521 (1992).
    - J. Gil and M. Werman, "Computing 2-D min, median, and max filters", IEEE Trans. Pattern Anal. Mach. Intell.
      15, 504-507 (1993).

    Examples
    --------
    >>> import numpy as np
    >>> bits = np.zeros((5, 1), dtype=np.uint64); bits[:, 0] = [1, 2, 4, 8, 16]
    >>> out = np.empty_like(bits)
    >>> window_or(bits, out, np.empty(0, dtype=np.int64), 1, 1, False, False, 5, 1)
    >>> out[:, 0].tolist()
    [3, 7, 14, 28, 24]
    """
    _check_slabs(bits, out)
    if not (isinstance(perm, np.ndarray) and perm.ndim == 1 and perm.dtype.kind == "i"):
        raise ValueError("perm: expected a 1-d integer array (empty for the identity)")
    if perm.size and (perm.size < bits.shape[0] or perm.min() < -1 or perm.max() >= bits.shape[0]):
        raise ValueError(f"perm: expected at least {bits.shape[0]} entries in -1 .. {bits.shape[0] - 1}")
    for name, value, low in (("left", left, 0), ("right", right, 0), ("chunk_len", chunk_len, 1), ("tile", tile, 1)):
        check_int(name, value, low)
    check_int("stream_bytes", stream_bytes, 0)
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
#: page that the hardware prefetcher runs past), so whole rows beat narrower tiles (``benchmarks/bench_sa_layer.py``
#: times the engine with 64- and 256-word tiles next to whole rows; its rows: ``benchmarks/results/sa_layer.json``).
WINDOW_OR_TASK_WORDS = 64 * 1024


def window_or_tiling(length: int, m: int, n_words: int) -> tuple[int, int]:
    """``(chunk_len, tile)`` for :func:`window_or`: tiles as wide as one ``m x tile`` buffer allows within
    ``WINDOW_OR_TASK_WORDS`` (long contiguous row reads), chunks of at least 16 windows (the extra block each chunk
    loads costs at most 1/16) and at least 1024 positions.

    Parameters
    ----------
    length : int
        Positions of the (virtual) sequence: ``n``, or ``len(perm)`` when ``-1`` holes make it longer than the
        sequence (:meth:`graphs.ops.WindowOp.length`; hence not named ``n``).
    m : int
        Window width.
    n_words : int
        Words per row.

    Returns
    -------
    chunk_len, tile : int

    Examples
    --------
    >>> window_or_tiling(4096, 16, 8)
    (1024, 8)
    """
    tile = max(1, min(n_words, WINDOW_OR_TASK_WORDS // m))
    chunk = min(length, max(1024, 16 * m))
    return chunk, tile
