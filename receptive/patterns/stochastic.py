"""Stochastic Attention (Jin & Sui 2026, arXiv 2604.00754) and its gated union with a sliding window."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from graphs.ops import Op, WindowOp

from ..permutations import layer_permutation
from ..validation import check_int, check_permutation
from .base import WindowPattern
from .local import SlidingWindow


class StochasticAttention(WindowPattern):
    """SA (Jin & Sui 2026, arXiv 2604.00754): layer ``l`` draws a permutation ``sigma_l``; position ``i`` attends
    to ``sigma_l(q)`` for ``q`` in the two-sided window around ``sigma_l^{-1}(i)`` in permuted order. Causal SA
    keeps that band and masks keys whose original position is after ``i``'s (a causal band in permuted order
    alone would leak future tokens).

    ``permutations`` (one per layer, ``perm[p]`` = original position at permuted position ``p``) replaces the
    seeded draw so the exact permutations a model used can be analysed; the pattern then has that many layers.
    With identity permutations SA equals bidirectional SWA, and truncated causal SA equals causal SWA of
    ``w//2 + 1`` keys.
    """

    name = "sa"
    two_sided_band = True

    def __init__(self, n, w, causal=False, circular=False, seed: int = 0, permutations: Sequence | None = None):
        super().__init__(n, w, causal, circular)
        self.seed = check_int("seed", seed, 0)
        if permutations is not None:
            if len(permutations) == 0:
                raise ValueError("permutations: expected at least one permutation (one per layer)")
            self._given = [check_permutation(f"permutations[{k}]", p, self.n) for k, p in enumerate(permutations)]
            self.max_layers = len(self._given)
        else:
            self._given = None
        self.permutation = lru_cache(maxsize=None)(self._permutation)

    def _permutation(self, layer: int) -> np.ndarray:
        self._check_layer(layer)
        if self._given is not None:
            return self._given[layer - 1]
        return layer_permutation(self.n, self.seed, layer)

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        return (WindowOp(self.left, self.right, self.circular, self.permutation(layer), +1 if self.causal else 0),)


class GatedSAPlusSWA(StochasticAttention):
    """Gated SA+SWA: both paths on the same q/k/v, mixed by sigmoid gates. For reachability a layer is the union of
    the SA edges (with this pattern's permutations) and the SWA edges of ``w_swa`` keys (default ``w``)."""

    name = "sa+swa"

    def __init__(self, n, w, causal=False, circular=False, seed=0, permutations=None, w_swa: int | None = None):
        super().__init__(n, w, causal, circular, seed, permutations)
        self.swa = SlidingWindow(self.n, self.w if w_swa is None else w_swa, self.causal, self.circular)

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        return super().layer_ops(layer) + self.swa.layer_ops(layer)

    def describe(self) -> str:
        extra = f" w_swa={self.swa.w}" if self.swa.w != self.w else ""
        return super().describe() + extra
