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
    """The permutation of SA's layer ``layer``: ``perm[p]`` is the original position at permuted position ``p``.

    Parameters
    ----------
    n : int
        Sequence length.
    seed : int
        Seed of the run (``>= 0``).
    layer : int
        Layer, 1-based; each layer's draw is independent of the order layers are drawn in.

    Returns
    -------
    numpy.ndarray
        An int64 permutation of ``0..n-1``.

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If ``n < 1``, ``layer < 1`` or ``seed < 0``.

    Examples
    --------
    >>> from receptive import layer_permutation
    >>> sorted(layer_permutation(8, 0, 1).tolist())
    [0, 1, 2, 3, 4, 5, 6, 7]
    >>> bool((layer_permutation(8, 0, 1) == layer_permutation(8, 0, 1)).all())
    True

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    n = check_int("n", n, 1)
    layer = check_int("layer", layer, 1)
    seed = check_int("seed", seed, 0)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_PERMUTATION_STREAM, layer)))
    return rng.permutation(n).astype(np.int64)


def layer_rng(seed: int, layer: int, stream: int) -> np.random.Generator:
    """The generator of layer ``layer`` (1-based) of stream ``stream``, independent of the order layers are drawn in.

    Parameters
    ----------
    seed : int
        Seed of the run.
    layer : int
        Layer, 1-based.
    stream : int
        What is drawn (``TARGET_STREAM``, ``RANDOM_KEYS_STREAM``, ...), so that draws of different kinds never share
        random numbers.

    Returns
    -------
    numpy.random.Generator

    Examples
    --------
    >>> from receptive.permutations import RANDOM_KEYS_STREAM, layer_rng
    >>> int(layer_rng(0, 1, RANDOM_KEYS_STREAM).integers(10)) == int(layer_rng(0, 1, RANDOM_KEYS_STREAM).integers(10))
    True
    """
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(stream, layer)))


def sample_permutations(n: int, layers: int, seed: int = 0) -> list[np.ndarray]:
    """The permutations of SA's layers ``1..layers`` (:func:`layer_permutation` of each).

    Parameters
    ----------
    n : int
        Sequence length.
    layers : int
        Number of layers (``>= 1``).
    seed : int, default 0
        Seed of the run.

    Returns
    -------
    list of numpy.ndarray

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If a value is out of range.

    Examples
    --------
    >>> from receptive import sample_permutations
    >>> [p.shape for p in sample_permutations(16, 2)]
    [(16,), (16,)]

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    layers = check_int("layers", layers, 1)
    return [layer_permutation(n, seed, layer) for layer in range(1, layers + 1)]


def inverse_permutation(perm: np.ndarray) -> np.ndarray:
    """The inverse permutation ``inv`` with ``inv[perm[p]] = p``: where original position ``i`` sits in permuted order.

    Parameters
    ----------
    perm : array_like of int
        A permutation of ``0..len(perm) - 1``.

    Returns
    -------
    numpy.ndarray
        The int64 inverse.

    Raises
    ------
    TypeError
        If ``perm`` is not an array of integers.
    ValueError
        If ``perm`` is not a (non-empty, 1-d) permutation.

    Examples
    --------
    >>> from receptive import inverse_permutation
    >>> inverse_permutation([2, 0, 1]).tolist()
    [1, 2, 0]
    """
    perm = check_permutation("perm", perm)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size, dtype=perm.dtype)
    return inv
