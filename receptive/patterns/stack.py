"""Layer stacks: a pattern whose layer ``l`` is any pattern, e.g. five sliding-window layers per global one.

Real long-context models mix layer kinds (Gemma 3: five sliding layers per full one; GPT-OSS: banded and full
layers alternating; Llama 4: three chunked layers per global one). A :class:`LayerStack` holds a period of
patterns, repeated cyclically to ``depth`` layers; layer ``l`` of the stack is layer ``l`` of the pattern at
``(l - 1) mod period``, so randomized layers draw a fresh permutation or key set per stack layer (``--stack
sa:64`` is exactly ``--patterns sa``).
"""

from __future__ import annotations

from collections.abc import Sequence

from graphs.ops import Op

from ..validation import check_int
from .base import Pattern


class LayerStack(Pattern):
    """``period`` (a list of patterns on the same ``n`` and causality) repeated cyclically to ``depth`` layers.

    Layer ``L`` (1-based) uses ``period[(L - 1) % len(period)]``; hybrid models (local and global layers in a fixed
    rhythm) are stacks of this kind.

    Parameters
    ----------
    period : sequence of Pattern
        The patterns of one period, non-empty, all with the same ``n`` and ``causal``.
    depth : int or None, optional
        Layers, ``>= 1``; ``None``: ``len(period)``.
    name : str or None, optional
        A name; ``None``: ``"stack"``.

    Raises
    ------
    TypeError
        If ``period`` is not a sequence of patterns, ``depth`` is not an integer or ``name`` is not a string.
    ValueError
        If ``period`` is empty, its patterns differ in ``n`` or causality, or ``depth < 1``.

    Examples
    --------
    >>> from receptive import make_pattern
    >>> from receptive.coverage import coverage_by_layer
    >>> from receptive.patterns.stack import LayerStack
    >>> stack = LayerStack([make_pattern("swa", 64, 4, causal=True), make_pattern("full", 64, 1, causal=True)], depth=4)
    >>> stack.layer_names(), coverage_by_layer(stack, 4, progress=False).full_coverage_layer
    (['swa w=4', 'full', 'swa w=4', 'full'], 2)
    """

    name = "stack"

    def __init__(self, period: Sequence[Pattern], depth: int | None = None, name: str | None = None):
        if not hasattr(period, "__iter__") or isinstance(period, str | bytes):
            raise TypeError(f"period: expected a list of receptive patterns, got {type(period).__name__}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name: expected a str or None, got {type(name).__name__}")
        period = list(period)
        if not all(isinstance(p, Pattern) for p in period):
            raise TypeError("period: expected a list of receptive patterns (one per layer of the period)")
        if not period:
            raise ValueError("period: expected a non-empty list of receptive patterns (one per layer of the period)")
        n, causal = period[0].n, period[0].causal
        for k, p in enumerate(period):
            if p.n != n or p.causal != causal:
                raise ValueError(
                    f"period[{k}]: every layer needs the same n and causality, got n={p.n} causal={p.causal} after "
                    f"n={n} causal={causal}"
                )
        super().__init__(n, causal)
        self.period = period
        self.max_layers = check_int("depth", len(period) if depth is None else depth, 1)
        if name:
            self.name = name

    def pattern_of(self, layer: int) -> Pattern:
        """The pattern that layer ``layer`` (1-based) comes from."""
        return self.period[(self._check_layer(layer) - 1) % len(self.period)]

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        return self.pattern_of(layer).layer_ops(layer)

    def pair_count(self, layer: int) -> int:
        return self.pattern_of(layer).pair_count(layer)

    def kv_cache_entries(self, layer: int) -> int:
        return self.pattern_of(layer).kv_cache_entries(layer)

    def layer_names(self) -> list[str]:
        """``describe()`` of every layer's pattern, layers ``1..depth``."""
        return [self.pattern_of(layer).describe() for layer in range(1, self.max_layers + 1)]

    def describe(self) -> str:
        kinds = ", ".join(p.describe() for p in self.period)
        return f"{self.name}: [{kinds}] cycled to {self.max_layers} layers"
