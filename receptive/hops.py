"""Path lengths through depth: how many layers information needs from key j to query i.

For a layered pattern the distance ``j -> i`` is the first layer at which ``j`` enters ``RF_L(i)``, so the number of
(query, key) pairs at distance exactly ``L`` is ``sum_i |RF_L(i)| - |RF_{L-1}(i)|`` (``|RF_0(i)| = 1``). Its mean
over the reached pairs is the attention counterpart of a connectome's average path length (FlyWire: 4.42 hops
directed, Lin et al. 2024).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from graphs import admissible_sizes

from .coverage import coverage
from .patterns import Pattern


@dataclass(frozen=True)
class HopDistribution:
    """``pairs[L]``: (query, key) pairs (key != query, key admissible) first connected at layer ``L`` (``pairs[0]
    = 0``); ``mean``: their mean hop count; ``unreached_fraction``: share of admissible pairs not connected within
    the layers computed (then ``mean`` is over the connected ones only)."""

    pattern: str
    n: int
    causal: bool
    method: str
    pairs: np.ndarray = field(repr=False)
    mean: float
    unreached_fraction: float

    @property
    def distribution(self) -> np.ndarray:
        total = self.pairs.sum()
        return self.pairs / total if total else self.pairs.astype(float)

    def to_dict(self) -> dict:
        return {
            "pattern": self.pattern,
            "n": self.n,
            "causal": self.causal,
            "method": self.method,
            "mean": self.mean,
            "unreached_fraction": self.unreached_fraction,
            "distribution": [float(x) for x in self.distribution],
        }


def hop_distribution(pattern: Pattern, layers: int | None = None, **kwargs) -> HopDistribution:
    """The first-arrival layer distribution of ``pattern`` (keyword arguments go to :func:`receptive.coverage`)."""
    result = coverage(pattern, layers, **kwargs)
    sizes = result.sizes
    start = np.ones((1, sizes.shape[1]), dtype=sizes.dtype)
    new = np.diff(np.vstack([start, sizes]), axis=0).sum(axis=1)
    pairs = np.concatenate([[0], new]).astype(np.int64)
    admissible = int(admissible_sizes(result.positions, pattern.n, pattern.causal).sum() - result.positions.size)
    reached = int(pairs.sum())
    mean = float(np.arange(pairs.size) @ pairs / reached) if reached else 0.0
    unreached = 1.0 - reached / admissible if admissible else 0.0
    return HopDistribution(pattern.name, pattern.n, pattern.causal, result.method, pairs, mean, unreached)
