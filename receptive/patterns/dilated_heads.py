"""Dilated heads (``dilated``), the deterministic baseline among the causal SA variants (registry in
:mod:`.causal_variants`), LongNet-style (Ding et al. 2023, arXiv 2307.02486): head ``k`` is a window over every
``r_k``-th position, ``r_k = w^(k-1)`` (:class:`DilatedHeads`), in the virtual order of
:func:`dilation_permutation`. The dilated window and LongNet's segments as single patterns are in :mod:`.dilated`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphs.ops import Op, WindowOp

from ..validation import check_int
from ..windows import window_offsets
from ._heads import _HeadsPattern, equal_key_window


def dilation_permutation(n: int, r: int, gap: int = 0) -> np.ndarray:
    """Positions grouped by residue, ``(i mod r, i // r)``, with ``gap`` holes (``-1``) after each group.

    A window of at most ``gap + 1`` keys in this virtual order is a window of stride ``r`` that never crosses into
    another residue class (:class:`graphs.ops.WindowOp` skips holes).

    Parameters
    ----------
    n : int
        Sequence length, ``>= 1``.
    r : int
        Dilation, in ``1..n``.
    gap : int, optional
        Holes after each group, ``>= 0`` (none for ``r = 1``).

    Returns
    -------
    numpy.ndarray
        int64 virtual order: original positions, ``-1`` for holes.

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If an argument is out of range.

    Examples
    --------
    >>> from receptive.patterns.dilated_heads import dilation_permutation
    >>> dilation_permutation(6, 2).tolist(), dilation_permutation(6, 2, gap=1).tolist()
    ([0, 2, 4, 1, 3, 5], [0, 2, 4, -1, 1, 3, 5, -1])

    References
    ----------
    Ding et al. 2023, "LongNet: Scaling Transformers to 1,000,000,000 Tokens", arXiv 2307.02486.
    """
    n, r, gap = check_int("n", n, 1), check_int("r", r, 1, n), check_int("gap", gap, 0)
    i = np.arange(n, dtype=np.int64)
    order = np.lexsort((i // r, i % r)).astype(np.int64)
    if gap == 0 or r == 1:
        return order
    counts = np.bincount(i % r, minlength=r)
    out = np.full(n + gap * r, -1, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts + gap)[:-1]])
    slot = np.repeat(starts, counts) + (np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts))
    out[slot] = order
    return out


class DilatedHeads(_HeadsPattern):
    """Dilated heads (``dilated``): one sliding window per dilation ``r_k = w^(k-1)``.

    Dilated heads (``dilated``, LongNet-style, Ding et al. 2023, arXiv 2307.02486; deterministic): head ``k``
    attends to ``i - r_k t`` for ``t = 0 .. head_w - 1`` (causal) or ``t`` in the two-sided window of ``head_w``
    (bidirectional), with dilations ``r_k = w^(k-1)`` while ``r_k < n`` (``r_1 = 1`` is the sliding window). Each
    head is a window over positions ordered by ``(i mod r, i // r)`` with holes between residue classes
    (:func:`dilation_permutation`), so it never leaves its class and, causal, never looks ahead. Causal, with
    ``head_w = w``: every distance ``d < w^H`` is ``sum_k t_k r_k`` with base-``w`` digits ``t_k < w``, one head per
    digit, so coverage is full after at most ``H = ceil(log_w n)`` layers, for ``H`` times SWA's cost per layer.
    ``dilated`` is LongNet's set (``r = 1`` is its own local path); ``dilated+swa`` adds a separate window of ``w``
    keys (it differs from ``dilated`` in the ``-eq`` form, whose heads are narrow).

    Equal keys (``-eq``): ``head_w = equal_key_window(target, H)`` with ``target = (w + 1) // 2`` causal (causal SA's
    mean keys) and ``w`` bidirectional, at least 2 keys causal and at least 3 bidirectional: a two-sided window of 2
    is one-sided (``window_offsets(2, False) = (1, 0)``), so with ``head_w = 2`` no head looks ahead and coverage is
    never full. With ``head_w = 3`` a bidirectional layer has ``1 + 2H`` keys per query away from the edges, above
    SA's ``w`` by ``2H + 1 - w`` (:meth:`mean_keys` gives the exact mean). Keeping all ``H = ceil(log_w n)`` scales
    is deliberate: ``H'`` heads of 3 keys (``1 + 2H' <= w``) must span ``n`` with dilations of base ``n^(1/H')``,
    and a distance then needs up to ``H' n^(1/H') / 2`` steps, a polynomial law in ``n``
    rather than a logarithmic one.

    Parameters
    ----------
    n : int
        Sequence length.
    w : int
        Window size (and the base of the default dilations).
    causal : bool, optional
        Causal mask.
    circular : bool, optional
        Circular window of the ``r = 1`` head (and the ``swa`` window).
    dilations : sequence of int or None, optional
        Dilations, each in ``1..n``; ``None``: ``1, w, w^2, ...`` below ``n``.
    head_w : int or None, optional
        Keys per head, in ``1..n``; ``None``: ``w``, or the equal-keys width with ``equal_keys``.
    swa : bool, optional
        Add a separate sliding window.
    w_swa : int or None, optional
        Its size; ``None``: ``w``.
    equal_keys : bool, optional
        The ``-eq`` form (see above).

    Raises
    ------
    TypeError
        If an integer argument is not an integer or a flag is not a bool.
    ValueError
        If an argument is out of range or ``dilations`` is empty.

    Examples
    --------
    >>> from receptive.coverage import coverage_by_layer
    >>> from receptive.patterns.dilated_heads import DilatedHeads
    >>> p = DilatedHeads(64, 4, causal=True)
    >>> p.describe(), coverage_by_layer(p, 4, progress=False).full_coverage_layer  # <= ceil(log_4 64) = 3
    ('dilated w=4 head_w=4 dilations=[1, 4, 16]', 3)
    >>> DilatedHeads(64, 4, causal=True, equal_keys=True).head_w
    2

    References
    ----------
    Ding et al. 2023, "LongNet: Scaling Transformers to 1,000,000,000 Tokens", arXiv 2307.02486.
    """

    name = "dilated"

    def __init__(
        self,
        n,
        w,
        causal=False,
        circular=False,
        dilations: Sequence[int] | None = None,
        head_w: int | None = None,
        swa: bool = False,
        w_swa: int | None = None,
        equal_keys: bool = False,
    ):
        super().__init__(n, w, causal, circular, swa, w_swa, equal_keys)
        if dilations is None:
            dilations, r = [], 1
            while r < self.n and (r == 1 or self.w > 1):
                dilations.append(r)
                r *= max(self.w, 2)
        self.dilations = [check_int("dilations", r, 1, self.n) for r in dilations]
        if not self.dilations:
            raise ValueError("dilations: expected at least one dilation")
        if head_w is None:  # causal heads keep all their keys: match causal SA's (w - 1)/2 other keys
            target = (self.w + 1) // 2 if self.causal else self.w
            # bidirectional, a head of 2 keys looks one way only (window_offsets(2, False) = (1, 0)): no head would
            # reach a later position, so a two-sided equal-keys head keeps one key on each side (head_w >= 3)
            floor = 2 if self.causal else 3
            head_w = equal_key_window(target, len(self.dilations), floor) if equal_keys else self.w
            head_w = min(head_w, self.n)  # a default window never reads past the sequence
        self.head_w = check_int("head_w", head_w, 1, self.n)
        self.head_left, self.head_right = window_offsets(self.head_w, self.causal)
        self.name = self._named("dilated")
        gap = max(self.head_left, self.head_right)
        self._perms = [dilation_permutation(self.n, r, gap) for r in self.dilations]

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        self._check_layer(layer)
        heads = tuple(
            WindowOp(self.head_left, self.head_right, self.circular and r == 1, None if r == 1 else p)
            for r, p in zip(self.dilations, self._perms, strict=True)
        )
        return heads + self._swa_ops(layer)

    def offsets(self) -> np.ndarray:
        """The distinct offsets ``j - i`` of a layer's keys (sorted; the query's own ``0`` included): ``r t`` for
        every head (``t`` from ``-head_left`` to ``head_right``) and, with ``swa``, the window's. Non-circular only
        (the same set for every query; edges drop the keys that fall outside ``0..n-1``)."""
        if self.circular:
            raise ValueError("circular: offsets are defined for the non-circular dilated heads only")
        t = np.arange(-self.head_left, self.head_right + 1, dtype=np.int64)
        parts = [r * t for r in self.dilations]
        if self.swa is not None:
            parts.append(np.arange(-self.swa.left, self.swa.right + 1, dtype=np.int64))
        return np.unique(np.concatenate(parts))

    def mean_keys(self) -> float:
        """Distinct keys per query of a layer in closed form: an offset ``s`` is a key of the ``n - |s|`` queries
        ``i`` with ``0 <= i + s < n``, so the mean is ``sum_s max(0, n - |s|) / n`` over :meth:`offsets` (equals
        :func:`keys_per_query`, without enumerating the edges: usable at any ``n``)."""
        s = np.abs(self.offsets())
        return float(np.maximum(0, self.n - s).sum() / self.n)

    def describe(self) -> str:
        return f"{self.name} w={self.w} head_w={self.head_w} dilations={self.dilations}"
