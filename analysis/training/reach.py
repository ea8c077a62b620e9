"""What the toolkit predicts for a trained model: coverage, L* and whether each answer is reachable at all.

A model with attention ``kind`` and ``L`` layers evaluated at sequence length ``n`` has exactly the reachability of
``receptive.make_pattern(kind, n, w, causal, seed=seed)`` through layers ``1..L`` (SA layers use
:func:`receptive.permutations.layer_permutation` in eval mode). With ``A_l`` the boolean adjacency of layer ``l``
(``A_l[i, j]``: query ``i`` attends to key ``j``; every pattern includes ``i`` itself, the residual path), the
receptive field of ``i`` after ``L`` layers is row ``i`` of ``A_L A_{L-1} ... A_1``; an answer whose sources all
lie in the readout's receptive field is *reachable*. A model that uses its receptive field perfectly has accuracy
``reach + (1 - reach) c`` where ``c`` is chance; SWA's field is ``[i - L (w - 1), i]`` causal. The causal
variants (``sa-ms``, ``kleinberg``, ``dilated``, ``+swa``, ``-eq``) are
``receptive.patterns.causal_variants.make_variant(kind, n, min(w, n), causal, seed)``, the pattern whose key lists
:class:`gpu.attention.neighbour.PatternAttention` attends in eval mode.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from receptive import coverage_by_layer, make_pattern
from receptive.patterns.causal_variants import keys_per_query, make_variant, variant_names
from receptive.windows import max_window

MAX_LSTAR_LAYERS = 64


def pattern_for(kind: str, n: int, w: int, causal: bool, seed: int):
    """The ``receptive`` pattern of a model (windows clipped as the model clips them)."""
    if kind in variant_names():
        return make_variant(kind, n, min(w, n), causal, seed=seed)
    limit = max_window(n, causal and kind == "swa", False)
    return make_pattern(kind, n, min(w, limit), causal=causal, seed=seed)


def receptive_rows(pattern, layers: int, rows: np.ndarray) -> np.ndarray:
    """Boolean ``(len(rows), n)``: the receptive fields ``RF_layers(i)`` of the positions ``rows``."""
    rows = np.asarray(rows, dtype=np.int64)
    n = pattern.n
    field = sp.csr_array((np.ones(rows.size, dtype=np.float32), (np.arange(rows.size), rows)), shape=(rows.size, n))
    for layer in range(layers, 0, -1):
        field = (field @ pattern.adjacency(layer).astype(np.float32)).astype(bool).astype(np.float32)
    return field.toarray().astype(bool)


def reachable(pattern, layers: int, readout: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """Per sample: every source (``-1`` = none) lies in ``RF_layers(readout)``."""
    readout, sources = np.asarray(readout, dtype=np.int64), np.asarray(sources, dtype=np.int64)
    unique, where = np.unique(readout, return_inverse=True)
    fields = receptive_rows(pattern, layers, unique)[where]  # (b, n)
    hit = np.take_along_axis(fields, np.maximum(sources, 0), axis=1) | (sources < 0)
    return hit.all(axis=1)


def coverage_summary(kind: str, n: int, w: int, layers: int, causal: bool, seed: int, readout: int | None) -> dict:
    """``receptive``'s coverage after ``layers`` layers (mean, min, fully covered share), L* (first layer at which
    every position sees all of ``A(i)``; ``None`` beyond 64 layers), the distinct keys per query of layer 1
    (:func:`receptive.patterns.causal_variants.keys_per_query`, self included) and, for a fixed readout position, its
    own coverage and first fully covered layer."""
    pattern = pattern_for(kind, n, w, causal, seed)
    at = coverage_by_layer(pattern, layers=layers, progress=False)
    through = coverage_by_layer(pattern, max_layers=MAX_LSTAR_LAYERS, progress=False)
    row = at.layers[layers - 1]
    out = {
        "coverage_mean": row.mean,
        "coverage_min": row.min,
        "full_fraction": row.full_fraction,
        "lstar": through.full_coverage_layer,
        "keys_per_query": keys_per_query(pattern, 1),
    }
    if readout is not None:
        admissible = readout + 1 if causal else n
        out["readout_coverage"] = float(at.sizes[layers - 1, readout] / admissible)
        full = np.flatnonzero(through.sizes[:, readout] == admissible)
        out["lstar_readout"] = int(full[0]) + 1 if full.size else None
    return out
