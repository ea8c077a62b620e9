"""Dilated layouts: a dilated sliding window (Longformer) and LongNet's dilated segments."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphs.block_kernels import FULL, PREFIX
from graphs.ops import BlockOp, Op, WindowOp

from ..validation import check_int
from ..windows import window_offsets
from .base import Pattern


def residue_order(n: int, modulus: int, gap: int) -> np.ndarray:
    """A virtual sequence: the positions grouped by residue mod ``modulus``, with ``gap`` holes after each group.

    The positions of residue ``0, 1, ..`` mod ``modulus``, each group in increasing order and followed by ``gap``
    holes (``-1``), so that a window of half-width ``<= gap`` never leaves its group.

    Parameters
    ----------
    n : int
        Sequence length.
    modulus : int
        The dilation ``r``, ``>= 1``.
    gap : int
        Holes after each group, ``>= 0``.

    Returns
    -------
    numpy.ndarray
        int64 array of length ``modulus * (ceil(n / modulus) + gap)``: original positions, ``-1`` for holes.

    Examples
    --------
    >>> from receptive.patterns.dilated import residue_order
    >>> residue_order(5, 2, 1).tolist()
    [0, 2, 4, -1, 1, 3, -1, -1]

    References
    ----------
    Beltagy, Peters & Cohan 2020, "Longformer: The Long-Document Transformer", arXiv 2004.05150.
    """
    per_group = -(-n // modulus) + gap
    i = np.arange(n, dtype=np.int64)
    perm = np.full(modulus * per_group, -1, dtype=np.int64)
    perm[(i % modulus) * per_group + i // modulus] = i
    return perm


class DilatedWindow(Pattern):
    """A dilated sliding window: query ``i`` attends ``w`` keys ``r`` positions apart.

    Longformer's dilated window (Beltagy et al. 2020, arXiv 2004.05150, Sec. 3.1): query ``i`` attends ``w`` keys
    ``i + r k`` for ``k = -left .. right`` (``(w-1, 0)`` causal, ``(w//2, (w-1)//2)`` otherwise), gaps of ``r - 1``
    between them. ``r = 1`` is the sliding window.

    Closed form: ``RF_L(i) = {i + r k : -L left <= k <= L right} ∩ [0, n)``; only positions of ``i``'s residue mod
    ``r`` are ever reached, so ``L*`` exists only for ``r = 1``. One layer is a window over the positions grouped
    by residue (``residue_order``), the same kernel as SWA.

    Parameters
    ----------
    n : int
        Sequence length.
    w : int
        Keys per query, in ``1 .. ceil(n/r)`` causal, ``1 .. 2 ceil(n/r) - 1`` otherwise.
    dilation : int
        ``r``, in ``1..n``.
    causal : bool, optional
        Causal mask.

    Raises
    ------
    TypeError
        If an integer argument is not an integer.
    ValueError
        If an argument is out of range.

    Examples
    --------
    >>> from receptive.patterns.dilated import DilatedWindow
    >>> p = DilatedWindow(16, 3, 2, causal=True)
    >>> p.closed_form_counts(1).tolist()[:6], p.closed_form_full_layer(), p.describe()
    ([1, 1, 2, 2, 3, 3], None, 'dilated w=3 r=2')
    >>> DilatedWindow(16, 3, 1).closed_form_full_layer()
    15

    References
    ----------
    Beltagy, Peters & Cohan 2020, "Longformer: The Long-Document Transformer", arXiv 2004.05150.
    """

    name = "dilated"

    def __init__(self, n: int, w: int, dilation: int, causal: bool = False):
        super().__init__(n, causal)
        self.dilation = check_int("dilation", dilation, 1, self.n)
        group = -(-self.n // self.dilation)
        self.w = check_int("w", w, 1, group if causal else 2 * group - 1)
        self.left, self.right = window_offsets(self.w, self.causal)
        perm = residue_order(self.n, self.dilation, max(self.left, self.right)) if self.dilation > 1 else None
        self._op = WindowOp(self.left, self.right, False, perm)

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        self._check_layer(layer)
        return (self._op,)

    def closed_form_counts(self, layers: int) -> np.ndarray:
        layers = check_int("layers", layers, 0)
        i = np.arange(self.n, dtype=np.int64)
        r = self.dilation
        # k from max(-L left, -(i // r)) to min(L right, (n - 1 - i) // r)
        lo = np.maximum(-layers * self.left, -(i // r))
        hi = np.minimum(layers * self.right, (self.n - 1 - i) // r)
        return hi - lo + 1

    def closed_form_full_layer(self) -> int | None:
        return None if self.dilation > 1 else self.search_full_layer(self.n)

    def kv_cache_entries(self, layer: int) -> int:
        self._check_layer(layer)
        return int(min(self.n, (self.w - 1) * self.dilation + 1))

    def describe(self) -> str:
        return f"{self.name} w={self.w} r={self.dilation}"


def grouped_order(n: int, segment: int, dilation: int) -> tuple[np.ndarray, np.ndarray]:
    """LongNet's sparsification of one ``(segment, dilation)`` pair with every head offset.

    Positions sorted by (segment, residue of the offset in the segment, position) and the starts of the groups in
    that order.

    Parameters
    ----------
    n : int
        Sequence length.
    segment : int
        Segment length ``w_i``.
    dilation : int
        Dilation ``r_i``.

    Returns
    -------
    perm : numpy.ndarray
        int64 array of the ``n`` positions in group order.
    starts : numpy.ndarray
        int64 starts of the groups in ``perm``, ending with ``n``.

    Examples
    --------
    >>> from receptive.patterns.dilated import grouped_order
    >>> perm, starts = grouped_order(8, 4, 2)
    >>> perm.tolist(), starts.tolist()
    ([0, 2, 1, 3, 4, 6, 5, 7], [0, 2, 4, 6, 8])

    References
    ----------
    Ding et al. 2023, "LongNet: Scaling Transformers to 1,000,000,000 Tokens", arXiv 2307.02486.
    """
    i = np.arange(n, dtype=np.int64)
    seg, res = i // segment, (i % segment) % dilation
    perm = np.lexsort((i, res, seg)).astype(np.int64)
    group = seg[perm] * dilation + res[perm]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(group)) + 1, [n]]).astype(np.int64)
    return perm, starts


class LongNet(Pattern):
    """LongNet's dilated attention: full attention inside dilated segments, a union over ``(w_i, r_i)`` pairs.

    Ding et al. 2023, arXiv 2307.02486, Sec. 2.2-2.4: for each pair ``(w_i, r_i)`` the sequence is cut into segments
    of ``w_i`` positions, each segment is sparsified by keeping every ``r_i``-th row, and the kept rows attend each
    other (full attention inside the group). With the heads offset (Sec. 2.3) every residue is a group of some head,
    so for reachability a pair links ``i`` and ``j`` iff they share a segment and ``(i - j) mod r_i = 0``; a layer is
    the union over pairs (the paper mixes them). Causal: ``j <= i`` inside a group. Default geometric schedule
    ``w_i = segment * ratio^i``, ``r_i = ratio^i`` up to the first ``w_i >= n`` (the paper: w = 2048 .. 32768,
    r = 1, 2, 4, 6, 12).

    Parameters
    ----------
    n : int
        Sequence length.
    segment : int, optional
        First segment length ``w_0``, in ``1..n`` (default schedule only).
    ratio : int, optional
        Growth of segments and dilations, ``>= 2`` (default schedule only).
    causal : bool, optional
        Causal mask.
    segments, dilations : sequence of int or None, optional
        An explicit schedule, two lists of the same length (``1 <= r_i <= w_i <= n``); ``None``: the geometric
        default.

    Raises
    ------
    TypeError
        If an integer argument is not an integer.
    ValueError
        If an argument is out of range or the schedule's lists are empty or of different lengths.

    Examples
    --------
    >>> from receptive.fields import receptive_field
    >>> from receptive.patterns.dilated import LongNet
    >>> p = LongNet(16, segment=4, ratio=2)
    >>> p.describe()
    'longnet (w, r) = (4, 1), (8, 2), (16, 4)'
    >>> receptive_field(p, 5, 1).tolist()
    [1, 3, 4, 5, 6, 7, 9, 13]

    References
    ----------
    Ding et al. 2023, "LongNet: Scaling Transformers to 1,000,000,000 Tokens", arXiv 2307.02486.
    """

    name = "longnet"

    def __init__(
        self,
        n: int,
        segment: int = 2048,
        ratio: int = 2,
        causal: bool = False,
        segments: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
    ):
        super().__init__(n, causal)
        if segments is None:
            w0 = check_int("segment", segment, 1, self.n)
            ratio = check_int("ratio", ratio, 2)
            segments, dilations = [], []
            w, r = w0, 1
            while True:
                segments.append(min(w, self.n))
                dilations.append(r)
                if w >= self.n:
                    break
                w, r = w * ratio, r * ratio
        if dilations is None or len(segments) != len(dilations) or not segments:
            raise ValueError("segments, dilations: expected two non-empty lists of the same length")
        self.segments = [check_int("segments", s, 1, self.n) for s in segments]
        self.dilations = [check_int("dilations", r, 1, s) for r, s in zip(dilations, self.segments, strict=True)]
        diag = PREFIX if self.causal else FULL
        self._ops = tuple(
            BlockOp.diagonal(starts, diag, perm)
            for perm, starts in (
                grouped_order(self.n, s, r) for s, r in zip(self.segments, self.dilations, strict=True)
            )
        )

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        self._check_layer(layer)
        return self._ops

    def describe(self) -> str:
        pairs = ", ".join(f"({s}, {r})" for s, r in zip(self.segments, self.dilations, strict=True))
        return f"{self.name} (w, r) = {pairs}"
