"""Path lengths through depth: how many layers information needs from key j to query i.

For a layered pattern the distance ``j -> i`` is the first layer at which ``j`` enters ``RF_L(i)``, so the number of
(query, key) pairs at distance exactly ``L`` is ``sum_i |RF_L(i)| - |RF_{L-1}(i)|`` (``|RF_0(i)| = 1``). Its mean
over the reached pairs is the attention counterpart of a connectome's average path length.

References
----------
.. [1] S. Dorkenwald et al., "Neuronal wiring diagram of an adult brain", Nature 634, 124-138 (2024).
.. [2] A. Lin et al., "Network statistics of the whole-brain connectome of Drosophila", Nature 634, 153-165 (2024).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from graphs import admissible_sizes

from .coverage import coverage_by_layer
from .patterns import Pattern


@dataclass(frozen=True)
class HopDistribution:
    """First-arrival layers of the (query, key) pairs of a pattern, as returned by :func:`hop_distribution`.

    Attributes
    ----------
    pattern : str
        The pattern's name.
    n : int
        Sequence length.
    causal : bool
        Whether the pattern is causal.
    method : str
        The coverage method that computed the receptive fields.
    pairs : numpy.ndarray
        ``pairs[L]``: pairs (key != query, key admissible) first connected at layer ``L``; ``pairs[0] = 0``.
    mean : float
        Their mean hop count (over the connected pairs only).
    unreached_fraction : float
        Share of admissible pairs not connected within the layers computed.

    Examples
    --------
    >>> from receptive import make_pattern
    >>> from receptive.hops import hop_distribution
    >>> hops = hop_distribution(make_pattern("swa", 8, 3, causal=True))
    >>> hops.pairs.tolist(), round(hops.mean, 3), hops.unreached_fraction
    ([0, 13, 9, 5, 1], 1.786, 0.0)
    """

    pattern: str
    n: int
    causal: bool
    method: str
    pairs: np.ndarray = field(repr=False)
    mean: float
    unreached_fraction: float

    @property
    def distribution(self) -> np.ndarray:
        """Share of the connected pairs first connected at each layer ``L = 0, 1, ...``."""
        total = self.pairs.sum()
        return self.pairs / total if total else self.pairs.astype(float)

    def to_dict(self) -> dict:
        """Return the distribution as a JSON-ready ``dict``."""
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
    """Return the distribution of the layer at which each key first reaches each query.

    Parameters
    ----------
    pattern : receptive.patterns.Pattern
        The layered pattern.
    layers : int or None, optional
        Layers to compute (``None``: until every receptive field is full), as in :func:`receptive.coverage_by_layer`.
    **kwargs
        Passed to :func:`receptive.coverage_by_layer` (``method``, ``max_memory``, ...).

    Returns
    -------
    HopDistribution

    Raises
    ------
    TypeError, ValueError
        As :func:`receptive.coverage_by_layer` for bad arguments.

    References
    ----------
    .. [1] A. Lin et al., "Network statistics of the whole-brain connectome of Drosophila", Nature 634, 153-165
       (2024) (path lengths of the FlyWire connectome).

    Examples
    --------
    >>> from receptive import make_pattern
    >>> hops = hop_distribution(make_pattern("swa", 32, 5))
    >>> hops.pairs[:3].tolist(), hops.unreached_fraction
    ([0, 122, 114], 0.0)
    """
    result = coverage_by_layer(pattern, layers, **kwargs)
    sizes = result.sizes
    start = np.ones((1, sizes.shape[1]), dtype=sizes.dtype)
    new = np.diff(np.vstack([start, sizes]), axis=0).sum(axis=1)
    pairs = np.concatenate([[0], new]).astype(np.int64)
    admissible = int(admissible_sizes(result.positions, pattern.n, pattern.causal).sum() - result.positions.size)
    reached = int(pairs.sum())
    mean = float(np.arange(pairs.size) @ pairs / reached) if reached else 0.0
    unreached = 1.0 - reached / admissible if admissible else 0.0
    return HopDistribution(pattern.name, pattern.n, pattern.causal, result.method, pairs, mean, unreached)
