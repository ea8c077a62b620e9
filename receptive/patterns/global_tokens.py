"""Window plus tokens that every query attends: Longformer's global attention and StreamingLLM's attention sinks."""

from __future__ import annotations

import numpy as np

from graphs.ops import GlobalOp, Op, WindowOp

from ..validation import check_int
from .local import SlidingWindow


def _tokens(name: str, tokens, count: int, n: int) -> np.ndarray:
    if tokens is None:
        return np.arange(count, dtype=np.int64)
    arr = np.unique(np.asarray(tokens, dtype=np.int64))
    if arr.size == 0 or arr.min() < 0 or arr.max() >= n:
        raise ValueError(f"{name}: expected a non-empty list of positions in 0..{n - 1}")
    return arr


class WindowGlobal(SlidingWindow):
    """Longformer attention: a sliding window plus global tokens that attend and are attended by all.

    Longformer attention (Beltagy, Peters & Cohan 2020, arXiv 2004.05150, Sec. 3.1): a sliding window of ``w``
    keys plus ``g`` global tokens (the first ``g`` positions unless ``tokens`` are given) that attend every key
    and that every query attends (symmetric). Causal: a global token attends keys ``j <= g`` and is attended by
    queries ``i >= g``.

    Closed form (bidirectional): ``RF_1(i) = W(i) U G`` (``A`` for a global ``i``) and every field is complete
    after two layers, ``RF_2(i) ⊇ RF_1(g) = A``: ``L* = 2`` unless one window already spans the sequence.

    Parameters
    ----------
    n : int
        Sequence length.
    w : int
        Window size.
    globals : int, optional
        Number of global tokens (the first positions), in ``1..n``; ignored when ``tokens`` is given.
    causal : bool, optional
        Causal mask.
    tokens : array_like of int or None, optional
        Global positions in ``0..n-1``; ``None``: ``0..globals-1``.

    Raises
    ------
    TypeError
        If an integer argument is not an integer.
    ValueError
        If an argument is out of range or ``tokens`` is empty.

    Examples
    --------
    >>> from receptive.coverage import coverage_by_layer
    >>> from receptive.patterns.global_tokens import WindowGlobal
    >>> p = WindowGlobal(64, 3, globals=1)
    >>> p.describe(), coverage_by_layer(p, 4, progress=False).full_coverage_layer
    ('global w=3 globals=1', 2)

    References
    ----------
    Beltagy, Peters & Cohan 2020, "Longformer: The Long-Document Transformer", arXiv 2004.05150.
    """

    name = "global"

    def __init__(self, n: int, w: int, globals: int = 1, causal: bool = False, tokens=None):
        super().__init__(n, w, causal)
        count = check_int("globals", globals, 1, self.n) if tokens is None else 0
        self.tokens = _tokens("tokens", tokens, count, self.n)

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        self._check_layer(layer)
        return (WindowOp(self.left, self.right), GlobalOp(self.tokens, True, True, +1 if self.causal else 0))

    @property
    def has_closed_form(self) -> bool:
        return not self.causal

    def closed_form_counts(self, layers: int) -> np.ndarray | None:
        layers = check_int("layers", layers, 0)
        if self.causal:
            return None
        if layers == 0:
            return np.ones(self.n, dtype=np.int64)
        if layers >= 2:
            return np.full(self.n, self.n, dtype=np.int64)
        i = np.arange(self.n, dtype=np.int64)
        lo, hi = np.maximum(0, i - self.left), np.minimum(self.n - 1, i + self.right)
        outside = np.searchsorted(self.tokens, lo, "left") + (
            self.tokens.size - np.searchsorted(self.tokens, hi, "right")
        )
        counts = hi - lo + 1 + outside
        counts[self.tokens] = self.n
        return counts

    def closed_form_full_layer(self) -> int | None:
        return 1 if np.all(self.closed_form_counts(1) == self.n) else 2

    def kv_cache_entries(self, layer: int) -> int:
        self._check_layer(layer)
        return int(min(self.n, self.w + self.tokens.size))

    def describe(self) -> str:
        return f"{self.name} w={self.w} globals={self.tokens.size}"


class SinkWindow(SlidingWindow):
    """StreamingLLM: a sliding window plus ``sinks`` attention-sink positions that every query attends.

    StreamingLLM (Xiao et al. 2024, ICLR, arXiv 2309.17453): the first ``sinks`` positions (attention sinks; 4 in
    the paper) are keys of every query, besides a window of ``w`` keys. Sinks attend only their own window.

    Closed form, ``L >= 1``: causal ``RF_L(i) = [i - L(w-1), i] U [0, min(s-1, i)]``; bidirectional
    ``RF_L(i) = [i - L left, i + L right] U [0, s - 1 + (L - 1) right]`` (a sink's field is a prefix that grows by
    ``right`` per layer), clipped to ``0..n-1``.

    Parameters
    ----------
    n : int
        Sequence length.
    w : int
        Window size.
    sinks : int, optional
        Attention sinks (the first positions), in ``1..n``.
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
    >>> from receptive.patterns.global_tokens import SinkWindow
    >>> p = SinkWindow(16, 3, sinks=2, causal=True)
    >>> p.closed_form_counts(1).tolist()[:6], p.describe()
    ([1, 2, 3, 4, 5, 5], 'sink w=3 sinks=2')

    References
    ----------
    Xiao et al. 2024, "Efficient Streaming Language Models with Attention Sinks", ICLR, arXiv 2309.17453.
    """

    name = "sink"

    def __init__(self, n: int, w: int, sinks: int = 4, causal: bool = False):
        super().__init__(n, w, causal)
        self.sinks = check_int("sinks", sinks, 1, self.n)

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        self._check_layer(layer)
        tokens = np.arange(self.sinks, dtype=np.int64)
        return (WindowOp(self.left, self.right), GlobalOp(tokens, True, False, +1 if self.causal else 0))

    def closed_form_counts(self, layers: int) -> np.ndarray:
        layers = check_int("layers", layers, 0)
        i = np.arange(self.n, dtype=np.int64)
        if layers == 0:
            return np.ones(self.n, dtype=np.int64)
        lo = np.maximum(0, i - layers * self.left)
        hi = np.minimum(self.n - 1, i + layers * self.right)
        if self.causal:
            prefix_end = np.minimum(self.sinks - 1, i)
        else:
            prefix_end = np.full(self.n, min(self.n - 1, self.sinks - 1 + (layers - 1) * self.right))
        # |[lo, hi] U [0, prefix_end]|: the prefix adds the positions below lo and above hi it holds
        below = np.clip(np.minimum(prefix_end, lo - 1) + 1, 0, None)
        return hi - lo + 1 + below + np.clip(prefix_end - hi, 0, None)

    def closed_form_full_layer(self) -> int | None:
        return self.search_full_layer(self.n)

    def kv_cache_entries(self, layer: int) -> int:
        self._check_layer(layer)
        return int(min(self.n, self.w + self.sinks))

    def describe(self) -> str:
        return f"{self.name} w={self.w} sinks={self.sinks}"
