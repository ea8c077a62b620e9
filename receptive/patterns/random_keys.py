"""Random keys per query: the random part of BigBird, and the mean-field model of Stochastic Attention."""

from __future__ import annotations

import numpy as np

from graphs.ops import NeighbourOp, Op

from ..permutations import RANDOM_KEYS_STREAM, layer_rng
from ..validation import check_int
from .base import Pattern, layer_cached


class RandomKeys(Pattern):
    """Each query attends ``k`` uniformly random keys, drawn afresh in every layer, plus itself.

    Each query attends ``k`` keys drawn uniformly at random, afresh in every layer, plus itself: ``k`` draws with
    replacement among the other admissible positions (all others, or ``j < i`` when causal), duplicates merged, so
    a query keeps ``m (1 - (1 - 1/m)^k)`` distinct keys on average (``m`` admissible others).

    The random graph of Erdos & Renyi (1959) per layer, and BigBird's random attention at token level (Zaheer et
    al. 2020, NeurIPS, arXiv 2007.14062). Seeded per layer (stream ``RANDOM_KEYS_STREAM``).

    Parameters
    ----------
    n : int
        Sequence length.
    k : int
        Draws per query and layer, in ``1..max(1, n-1)``.
    causal : bool, optional
        Draw among earlier positions only.
    seed : int, optional
        Seed, ``>= 0``.

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If an argument is out of range.

    Examples
    --------
    >>> from receptive.patterns.random_keys import RandomKeys
    >>> p = RandomKeys(64, 3, seed=0)
    >>> p.describe(), 64 < p.adjacency(1).nnz <= 64 * 4  # itself plus at most k others each
    ('random k=3', True)

    References
    ----------
    Erdos & Renyi 1959, "On random graphs I", Publ. Math. Debrecen 6; Zaheer et al. 2020, BigBird, arXiv 2007.14062.
    """

    name = "random"

    def __init__(self, n: int, k: int, causal: bool = False, seed: int = 0):
        super().__init__(n, causal)
        self.k = check_int("k", k, 1, max(1, self.n - 1))
        self.seed = check_int("seed", seed, 0)

    @layer_cached(maxsize=8)
    def _draw(self, layer: int) -> NeighbourOp:
        n, k = self.n, self.k
        rng = layer_rng(self.seed, layer, RANDOM_KEYS_STREAM)
        i = np.repeat(np.arange(n, dtype=np.int64), k)
        if self.causal:
            j = np.floor(rng.random(n * k) * i).astype(np.int64)  # uniform in 0..i-1 (nothing for i = 0)
            keep = i > 0
        else:
            j = rng.integers(0, n - 1, size=n * k, dtype=np.int64)
            j += j >= i  # skip the query itself
            keep = np.ones(i.size, dtype=bool)
        flat = np.unique(np.concatenate([i[keep] * n + j[keep], np.arange(n, dtype=np.int64) * (n + 1)]))
        rows, cols = np.divmod(flat, n)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        return NeighbourOp(indptr, cols)

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        return (self._draw(self._check_layer(layer)),)

    def describe(self) -> str:
        return f"{self.name} k={self.k}"
