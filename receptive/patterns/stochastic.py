"""Stochastic Attention (Jin & Sui 2026, arXiv 2604.00754) and its gated union with a sliding window."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphs.ops import Op, WindowOp

from ..permutations import layer_permutation
from ..validation import check_int, check_permutation
from .base import WindowPattern, layer_cached
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

    Parameters
    ----------
    n : int
        Sequence length.
    w : int
        Keys per query in permuted order, itself included.
    causal : bool, default False
        Mask keys whose original position is after the query's.
    circular : bool, default False
        The band wraps around in permuted order (the SA paper's theory).
    seed : int, default 0
        Seed of the per-layer permutations (:func:`receptive.layer_permutation`).
    permutations : sequence of array_like, optional
        One permutation of ``0..n-1`` per layer, replacing the seeded draw.

    Raises
    ------
    TypeError
        If ``n``, ``w`` or ``seed`` is not an integer, ``causal`` or ``circular`` is not a bool, or
        ``permutations`` is not a sequence of integer arrays.
    ValueError
        If a value is out of range or a given permutation is not one.

    Examples
    --------
    >>> from receptive import StochasticAttention, coverage_by_layer
    >>> sa = StochasticAttention(256, 8, seed=0)
    >>> sa.permutation(1).shape
    (256,)
    >>> coverage_by_layer(sa, method="exact").full_coverage_layer is not None
    True

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """

    name = "sa"
    two_sided_band = True

    def __init__(self, n, w, causal=False, circular=False, seed: int = 0, permutations: Sequence | None = None):
        super().__init__(n, w, causal, circular)
        self.seed = check_int("seed", seed, 0)
        if permutations is not None:
            if not hasattr(permutations, "__len__") or isinstance(permutations, str | bytes):
                what = type(permutations).__name__
                raise TypeError(f"permutations: expected a sequence of permutations (one per layer), got {what}")
            if len(permutations) == 0:
                raise ValueError("permutations: expected at least one permutation (one per layer)")
            self._given = [check_permutation(f"permutations[{k}]", p, self.n) for k, p in enumerate(permutations)]
            self.max_layers = len(self._given)
        else:
            self._given = None

    @layer_cached()
    def permutation(self, layer: int) -> np.ndarray:
        """``sigma_l`` of layer ``layer``: the given one, or :func:`receptive.layer_permutation` (kept once drawn)."""
        self._check_layer(layer)
        if self._given is not None:
            return self._given[layer - 1]
        return layer_permutation(self.n, self.seed, layer)

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        return (WindowOp(self.left, self.right, self.circular, self.permutation(layer), +1 if self.causal else 0),)


class GatedSAPlusSWA(StochasticAttention):
    """Gated SA+SWA: both paths on the same q/k/v, mixed by sigmoid gates.

    For reachability a layer is the union of the SA edges (with this pattern's permutations) and the SWA edges of
    ``w_swa`` keys.

    Parameters
    ----------
    n, w, causal, circular, seed, permutations
        As for :class:`StochasticAttention` (``w`` is the SA band).
    w_swa : int, optional
        Keys of the sliding-window path, itself included (default ``w``).

    Raises
    ------
    TypeError
        If an integer argument is not an integer.
    ValueError
        If a value is out of range.

    Examples
    --------
    >>> from receptive import GatedSAPlusSWA
    >>> GatedSAPlusSWA(64, 8, causal=True, w_swa=4).describe()
    'sa+swa ... w_swa=4'

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754 (SA and the gated SA+SWA model).
    Beltagy, Peters & Cohan 2020, "Longformer", arXiv 2004.05150 (the sliding window).
    """

    name = "sa+swa"

    def __init__(self, n, w, causal=False, circular=False, seed=0, permutations=None, w_swa: int | None = None):
        super().__init__(n, w, causal, circular, seed, permutations)
        self.swa = SlidingWindow(
            self.n, self.w if w_swa is None else check_int("w_swa", w_swa, 1), self.causal, self.circular
        )

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        return super().layer_ops(layer) + self.swa.layer_ops(layer)

    def describe(self) -> str:
        extra = f" w_swa={self.swa.w}" if self.swa.w != self.w else ""
        return super().describe() + extra
