"""The per-layer permutations of Stochastic Attention, reproducible from a seed.

Layer ``l`` (1-based) of a run with seed ``s`` uses ``numpy.random.default_rng(SeedSequence(s, spawn_key=(0, l)))
.permutation(n)``: the same permutation whatever order layers are drawn in, for every pattern that uses it
(SA and the SA path of SA+SWA share them) and for the attention backend, so the coverage of exactly the
permutations a model used can be computed.
"""

from __future__ import annotations

import numpy as np

from .validation import check_int, check_permutation

_PERMUTATION_STREAM = 0
TARGET_STREAM = 1
#: streams of the zoo patterns that draw at random (2 and 3 are the sa-ms blocks and Kleinberg keys of
#: receptive.patterns.causal_variants)
RANDOM_KEYS_STREAM = 4
RANDOM_BLOCKS_STREAM = 5


def layer_permutation(n: int, seed: int, layer: int) -> np.ndarray:
    """``perm`` with ``perm[p]`` = original position at permuted position ``p`` for layer ``layer`` (1-based)."""
    n = check_int("n", n, 1)
    layer = check_int("layer", layer, 1)
    seed = check_int("seed", seed, 0)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_PERMUTATION_STREAM, layer)))
    return rng.permutation(n).astype(np.int64)


def layer_rng(seed: int, layer: int, stream: int) -> np.random.Generator:
    """The generator of layer ``layer`` (1-based) of stream ``stream``: independent of the order layers are drawn in."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(stream, layer)))


def sample_permutations(n: int, layers: int, seed: int) -> list[np.ndarray]:
    """The permutations of layers ``1..layers``."""
    layers = check_int("layers", layers, 1)
    return [layer_permutation(n, seed, layer) for layer in range(1, layers + 1)]


def inverse_permutation(perm: np.ndarray) -> np.ndarray:
    """``inv`` with ``inv[perm[p]] = p``: where original position ``i`` sits in permuted order."""
    perm = check_permutation("perm", perm, len(perm))
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size, dtype=perm.dtype)
    return inv
