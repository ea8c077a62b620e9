"""The attention pattern behind each kind of ``python -m gpu.bench`` row: its allowed (query, key) pairs, which
give the useful FLOPs (:func:`_pairs`), and its coverage pattern and layer cap for L* (:func:`_pattern`,
:func:`_layer_cap`)."""

from __future__ import annotations

import numpy as np

import receptive
from gpu.attention.variants import head_dilations, kleinberg_keys
from receptive import make_pattern
from receptive.coverage.compute import DEFAULT_MAX_LAYERS
from receptive.patterns.causal_variants import DilatedHeads


def _band_pairs(n: int, left: int, right: int) -> int:
    """Pairs of the truncated band ``-left <= key - query <= right`` on ``0..n-1``."""
    i = np.arange(n)
    return int((np.minimum(n - 1, i + right) - np.maximum(0, i - left) + 1).sum())


def _pairs(kind: str, n: int, w: int, heads: int = 1) -> float:
    """Allowed (query, key) pairs per head: every pair for full attention, the distinct listed keys for Kleinberg
    (seed 0), the band for the windowed paths, and for the dilated heads the window per residue class, averaged
    over the heads (:func:`gpu.attention.variants.head_dilations`)."""
    if kind == "full":
        return n * n
    if kind == "kleinberg":
        return int((kleinberg_keys(n, w, seed=0) >= 0).sum())
    left, right = receptive.window_offsets(w, False)
    if kind == "dilated":
        total = 0
        for r in head_dilations(n, heads, w):  # classes c < n mod r hold ceil(n / r) positions, the others floor
            long_rows, length = n % r, -(-n // r)
            total += long_rows * _band_pairs(length, left, right)
            total += (r - long_rows) * _band_pairs(n // r, left, right)
        return total / heads
    band = _band_pairs(n, left, right)
    return 2 * band if kind == "sa+swa" else band


def _pattern(kind: str, n: int, w: int, heads: int):
    """The coverage pattern of a row: ``make_pattern``'s, and for dilated heads the dilations the heads run (fewer
    heads than dilations drop the largest)."""
    if kind == "dilated":
        return DilatedHeads(n, w, dilations=sorted(set(head_dilations(n, heads, w))))
    return make_pattern(kind, n, w, seed=0)


def _layer_cap(kind: str, n: int, w: int) -> int:
    """Layers to compute L* within: SWA's L* is ``ceil((n-1)/h)`` with ``h = floor((w-1)/2)`` its shorter side (the
    last position must reach the first), which coverage's default of 64 layers cuts off from n = 2048 at w = 64."""
    if kind == "swa":
        return max(DEFAULT_MAX_LAYERS, -(-(n - 1) // max((w - 1) // 2, 1)) + 1)
    return DEFAULT_MAX_LAYERS
