"""Distance-stratified random keys (``kleinberg``), a causal SA variant (registry in
:mod:`.causal_variants`): :class:`KleinbergAttention` draws ``m`` random keys per query at distance ``d`` with
probability ``ln(1 + 1/d) / ln(D + 1)`` (``D`` the largest distance available; the discrete log-uniform law,
``~1/d``: Kleinberg 2000, "Navigation in a small world", the harmonic distribution that makes a lattice navigable).
"""

from __future__ import annotations

import numpy as np

from graphs.ops import NeighbourOp, Op

from ..validation import check_bool, check_int
from .base import Pattern, layer_cached
from .local import SlidingWindow

_KLEINBERG_STREAM = 3  # (3, layer) for Kleinberg's random keys


class KleinbergAttention(Pattern):
    """Distance-stratified random keys (``kleinberg``): ``m`` keys per query at log-uniform distances.

    Distance-stratified random keys (``kleinberg``; Kleinberg 2000, "Navigation in a small world", Nature 406):
    every layer, query ``i`` attends to itself and ``m`` fresh random keys at distance ``d`` drawn from the
    discrete log-uniform law ``P(d) = ln(1 + 1/d) / ln(D + 1)`` on ``d = 1..D`` (``~ 1/d``, the harmonic law):
    causal ``D = i`` (keys ``i - d``); bidirectional a side is chosen in proportion to its mass ``ln(D_side + 1)``
    (``D_left = i``, ``D_right = n - 1 - i``). Every distance scale ``[2^k, 2^(k+1))`` gets the same share of the
    keys, ``~ m ln 2 / ln n`` each. ``m`` defaults to ``w - 1`` (``w`` keys with the query, SA's slots); with
    ``equal_keys`` to ``round((w - 1)/2)`` in causal mode (causal SA keeps ``(w + 1)/2`` keys on average) and
    ``w - 1`` otherwise. Draws are independent, so a query may repeat a key (counted once). Explicit neighbour lists:
    ``n (m + 1)`` int64 entries per layer.

    Parameters
    ----------
    n : int
        Sequence length.
    w : int
        Window size, in ``1..n`` (sets the default ``m``).
    causal : bool, optional
        Causal mask (keys ``i - d``).
    circular : bool, optional
        Must be ``False``.
    seed : int, optional
        Seed of the draws, ``>= 0``.
    m : int or None, optional
        Random keys per query and layer, in ``0..n-1``; ``None``: see above.
    swa : bool, optional
        Add the sliding window.
    w_swa : int or None, optional
        Its size; ``None``: ``w``.
    equal_keys : bool, optional
        The ``-eq`` form.

    Raises
    ------
    TypeError
        If an integer argument is not an integer or a flag is not a bool.
    ValueError
        If ``circular`` is true or an argument is out of range.

    Examples
    --------
    >>> import numpy as np
    >>> from receptive.patterns.kleinberg import KleinbergAttention
    >>> p = KleinbergAttention(64, 4, causal=True)
    >>> keys = p.sample_keys(1)
    >>> p.name, keys.shape, bool((keys[1:] < np.arange(1, 64)[:, None]).all())  # causal: every key before its query
    ('kleinberg', (64, 3), True)

    References
    ----------
    Kleinberg 2000, "Navigation in a small world", Nature 406, 845.
    """

    name = "kleinberg"

    def __init__(
        self,
        n,
        w,
        causal=False,
        circular=False,
        seed: int = 0,
        m: int | None = None,
        swa: bool = False,
        w_swa: int | None = None,
        equal_keys: bool = False,
    ):
        super().__init__(n, causal)
        if check_bool("circular", circular):
            raise ValueError("circular: kleinberg draws distances on the line; circular=True is not supported")
        self.circular = False
        self.w = check_int("w", w, 1, n)
        self.seed = check_int("seed", seed, 0)
        self.equal_keys = check_bool("equal_keys", equal_keys)
        swa = check_bool("swa", swa)
        if m is None:
            m = round((self.w - 1) / 2) if (equal_keys and self.causal) else self.w - 1
        self.m = check_int("m", m, 0, n - 1)
        self.swa = (
            SlidingWindow(self.n, self.w if w_swa is None else check_int("w_swa", w_swa, 1), self.causal, False)
            if swa
            else None
        )
        self.name = "kleinberg" + ("+swa" if swa else "") + ("-eq" if equal_keys else "")

    def sample_keys(self, layer: int) -> np.ndarray:
        """``keys[i]``: the ``m`` random keys of query ``i`` in layer ``layer`` (shape ``(n, m)``)."""
        self._check_layer(layer)
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(_KLEINBERG_STREAM, layer)))
        n, m = self.n, self.m
        i = np.arange(n, dtype=np.int64)[:, None]
        u = rng.random((n, m))
        left = np.log1p(i.astype(float))  # mass of the left side: ln(D_left + 1), D_left = i
        if self.causal:
            side = np.ones((n, m), dtype=bool)
            mass = left
        else:
            right = np.log1p((n - 1 - i).astype(float))
            side = rng.random((n, m)) * (left + right) < left
            mass = np.where(side, left, right)
        d = np.floor(np.exp(u * mass)).astype(np.int64)  # P(d) = ln(1 + 1/d) / mass on 1..D
        d = np.clip(d, 1, None)
        keys = np.where(side, i - d, i + d)
        return np.where((keys >= 0) & (keys < n), keys, i)  # only i = 0 (causal) or D = 0 has no key: itself

    @layer_cached(maxsize=4)
    def _layer_op(self, layer: int) -> NeighbourOp:
        keys = self.sample_keys(layer)
        n = self.n
        both = np.concatenate([np.arange(n, dtype=np.int64)[:, None], keys], axis=1)
        indptr = np.arange(0, n * (self.m + 1) + 1, self.m + 1, dtype=np.int64)
        return NeighbourOp(indptr, np.ascontiguousarray(both.ravel()))

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        return (self._layer_op(self._check_layer(layer)),) + (self.swa.layer_ops(layer) if self.swa is not None else ())

    def describe(self) -> str:
        return f"{self.name} w={self.w} m={self.m}"
