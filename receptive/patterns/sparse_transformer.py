"""The factorized patterns of the Sparse Transformer (Child, Gray, Radford & Sutskever 2019, arXiv 1904.10509)."""

from __future__ import annotations

import numpy as np

from graphs.block_kernels import FULL, PREFIX
from graphs.ops import BlockOp, GlobalOp, Op, WindowOp

from ..validation import check_int
from ..windows import window_offsets
from .base import Pattern
from .blocks import block_starts
from .dilated import grouped_order


class Strided(Pattern):
    """Sparse Transformer's strided attention: a window of ``l`` keys plus every ``l``-th earlier position.

    Strided attention (Sec. 4.2, Eq. 2 of the paper): one head attends the previous ``l`` positions, the other
    every ``l``-th position before the query, ``(i - j) mod l = 0``; a layer is the union of both heads. The paper's
    first head ``{i-l .. i}`` has ``l + 1`` keys; ``i - l`` is also in the second head, so the union equals a window
    of ``l`` keys (``i-l+1 .. i``, the project's convention) plus the stride. Bidirectional: the two-sided window of
    ``l`` keys plus every position with ``(i - j) mod l = 0``.

    Every position is reached in two layers once ``n > l`` (a window holds every residue, the stride reaches all
    positions of one): ``L* <= 2``.

    Parameters
    ----------
    n : int
        Sequence length.
    stride : int
        ``l``, in ``1..n``.
    causal : bool, optional
        Causal mask.

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If ``stride`` is out of range.

    Examples
    --------
    >>> from receptive.coverage import coverage_by_layer
    >>> from receptive.patterns.sparse_transformer import Strided
    >>> p = Strided(64, 8, causal=True)
    >>> p.describe(), coverage_by_layer(p, 4, progress=False).full_coverage_layer
    ('strided l=8', 2)

    References
    ----------
    Child et al. 2019, "Generating Long Sequences with Sparse Transformers", arXiv 1904.10509.
    """

    name = "strided"

    def __init__(self, n: int, stride: int, causal: bool = False):
        super().__init__(n, causal)
        self.stride = check_int("stride", stride, 1, self.n)
        self.left, self.right = window_offsets(self.stride, self.causal)
        perm, starts = grouped_order(self.n, self.n, self.stride)
        self._ops = (WindowOp(self.left, self.right), BlockOp.diagonal(starts, PREFIX if self.causal else FULL, perm))

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        self._check_layer(layer)
        return self._ops

    def describe(self) -> str:
        return f"{self.name} l={self.stride}"


class Fixed(Pattern):
    """Sparse Transformer's fixed attention: the own block of ``l`` positions plus ``c`` summary positions per block.

    Fixed attention (Sec. 4.2, Eq. 3): one head attends its own block of ``l`` positions, ``floor(j/l) =
    floor(i/l)``, the other the ``c`` summary positions at the end of every block, ``j mod l >= l - c`` (causal: only
    ``j <= i`` in both). A layer is the union of both heads.

    Parameters
    ----------
    n : int
        Sequence length.
    block : int
        ``l``, in ``1..n``.
    summary : int, optional
        ``c``, in ``1..block``.
    causal : bool, optional
        Causal mask.

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If an argument is out of range.

    Examples
    --------
    >>> from receptive.coverage import coverage_by_layer
    >>> from receptive.patterns.sparse_transformer import Fixed
    >>> p = Fixed(64, 8, causal=True)
    >>> p.tokens.tolist()[:3], coverage_by_layer(p, 4, progress=False).full_coverage_layer
    ([7, 15, 23], 2)

    References
    ----------
    Child et al. 2019, "Generating Long Sequences with Sparse Transformers", arXiv 1904.10509.
    """

    name = "fixed"

    def __init__(self, n: int, block: int, summary: int = 1, causal: bool = False):
        super().__init__(n, causal)
        self.block = check_int("block", block, 1, self.n)
        self.summary = check_int("summary", summary, 1, self.block)
        j = np.arange(self.n, dtype=np.int64)
        self.tokens = j[j % self.block >= self.block - self.summary]
        self._ops = (
            BlockOp.diagonal(block_starts(self.n, self.block), PREFIX if self.causal else FULL),
            GlobalOp(self.tokens, True, False, +1 if self.causal else 0),
        )

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        self._check_layer(layer)
        return self._ops

    def kv_cache_entries(self, layer: int) -> int:
        self._check_layer(layer)
        return int(min(self.n, self.block + self.tokens.size))

    def describe(self) -> str:
        return f"{self.name} l={self.block} c={self.summary}"
