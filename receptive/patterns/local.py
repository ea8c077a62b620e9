"""Position-based patterns whose receptive fields are intervals: sliding window and full attention."""

from __future__ import annotations

import math

import numpy as np

from graphs.ops import FullOp, Op, WindowOp

from ..validation import check_int
from .base import Pattern, WindowPattern


class SlidingWindow(WindowPattern):
    """Sliding-window attention (SWA): query ``i`` attends to ``i-left .. i+right``, the same in every layer.

    The window holds ``w`` keys, the query itself included: ``left, right = window_offsets(w, causal)``, i.e.
    ``(w - 1, 0)`` causal and about ``w / 2`` on each side otherwise.

    Parameters
    ----------
    n : int
        Sequence length (positions ``0 .. n-1``).
    w : int
        Keys per query, itself included; ``1 .. max_window(n, causal, circular)``.
    causal : bool, default False
        Attend only to keys ``j <= i``.
    circular : bool, default False
        Windows wrap around the ends (bidirectional only).

    Raises
    ------
    TypeError
        If ``n`` or ``w`` is not an integer.
    ValueError
        If ``n < 1`` or ``w`` is out of range.

    Examples
    --------
    >>> from receptive import SlidingWindow
    >>> swa = SlidingWindow(16, 4, causal=True)
    >>> swa.closed_form_full_layer()
    5
    >>> swa.closed_form_counts(2)[:6].tolist()
    [1, 2, 3, 4, 5, 6]

    References
    ----------
    Beltagy, Peters & Cohan 2020, "Longformer: The Long-Document Transformer", arXiv 2004.05150.
    """

    name = "swa"

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        self._check_layer(layer)
        return (WindowOp(self.left, self.right, self.circular and not self.causal),)

    def closed_form_counts(self, layers: int) -> np.ndarray:
        """Receptive fields of SWA are intervals: ``RF_L(i) = [i - L*left, i + L*right]`` clipped to ``0..n-1``
        (causal: ``[i - L(w-1), i]``); circular: ``min(n, L(w-1) + 1)`` positions."""
        layers = check_int("layers", layers, 0)
        i = np.arange(self.n, dtype=np.int64)
        if self.circular and not self.causal:
            return np.full(self.n, min(self.n, layers * (self.w - 1) + 1), dtype=np.int64)
        lo = np.maximum(0, i - layers * self.left)
        hi = np.minimum(self.n - 1, i + layers * self.right)
        return hi - lo + 1

    def closed_form_full_layer(self) -> int | None:
        """``ceil((n-1)/(w-1))`` causal or circular; ``ceil((n-1)/right)`` truncated two-sided (the shorter side
        limits it); ``None`` when a side needed is empty (``w = 1``, or ``w = 2`` two-sided)."""
        if self.n == 1:
            return 1
        step = self.right if not (self.causal or self.circular) else self.w - 1
        return max(1, math.ceil((self.n - 1) / step)) if step > 0 else None

    def kv_cache_entries(self, layer: int) -> int:
        """A causal window keeps its last ``w`` keys."""
        self._check_layer(layer)
        return min(self.w, self.n)


class FullAttention(Pattern):
    """Full attention: every key (causal: every key ``j <= i``), the reference, fully covered after one layer.

    Parameters
    ----------
    n : int
        Sequence length.
    causal : bool, default False
        Attend only to keys ``j <= i``.

    Raises
    ------
    TypeError
        If ``n`` is not an integer.
    ValueError
        If ``n < 1``.

    Examples
    --------
    >>> from receptive import FullAttention
    >>> FullAttention(8, causal=True).closed_form_counts(1).tolist()
    [1, 2, 3, 4, 5, 6, 7, 8]

    References
    ----------
    Vaswani et al. 2017, "Attention Is All You Need", NeurIPS, arXiv 1706.03762.
    """

    name = "full"

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        self._check_layer(layer)
        return (FullOp(+1 if self.causal else 0),)

    def closed_form_counts(self, layers: int) -> np.ndarray:
        """``|RF_L(i)| = |A(i)|`` for ``L >= 1`` (``i + 1`` causal, ``n`` otherwise)."""
        layers = check_int("layers", layers, 0)
        i = np.arange(self.n, dtype=np.int64)
        if layers == 0:
            return np.ones(self.n, dtype=np.int64)
        return i + 1 if self.causal else np.full(self.n, self.n, dtype=np.int64)

    def closed_form_full_layer(self) -> int:
        return 1
