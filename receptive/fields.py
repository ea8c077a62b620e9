"""The receptive field itself: which positions a token sees after ``L`` layers (not only how many).

``RF_L(t)`` is found by propagating one seed backward from ``t`` through the transposed layers ``L, .., 1``
(as :mod:`graphs.backward` does): ``L`` passes over ``n`` words, cheap at any ``n``. Up to 64 targets share a word.
"""

from __future__ import annotations

import numpy as np

from graphs.ops import apply_layer

from .patterns import Pattern
from .validation import check_int


def receptive_fields(pattern: Pattern, targets, layers: int) -> list[np.ndarray]:
    """The receptive fields ``RF_layers(t)`` of the given targets, exactly (the query itself included).

    Parameters
    ----------
    pattern : Pattern
        The attention pattern.
    targets : int or array_like of int
        Query positions in ``0..n-1``.
    layers : int
        Depth ``L`` (``0`` gives ``{t}``).

    Returns
    -------
    list of numpy.ndarray
        The sorted positions of each target's field, in the order of ``targets``.

    Raises
    ------
    TypeError
        If ``pattern`` is not a pattern, ``targets`` are not integers or ``layers`` is not an integer.
    ValueError
        If a target or ``layers`` is out of range.

    Examples
    --------
    >>> from receptive import make_pattern
    >>> from receptive.fields import receptive_fields
    >>> [f.tolist() for f in receptive_fields(make_pattern("swa", 16, 3, causal=True), [0, 9], 2)]
    [[0], [5, 6, 7, 8, 9]]

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754 (receptive fields through depth).
    """
    if not isinstance(pattern, Pattern):
        raise TypeError(f"pattern: expected a receptive.patterns.Pattern, got {type(pattern).__name__}")
    n = pattern.n
    layers = check_int("layers", layers, 0, pattern.max_layers)
    raw, targets = targets, np.atleast_1d(np.asarray(targets))
    if isinstance(raw, str | bytes | bool) or (targets.size and targets.dtype.kind not in "iu"):
        raise TypeError(f"targets: expected a position or an array of integer positions, got {type(raw).__name__}")
    if targets.ndim != 1 or targets.size == 0:
        raise ValueError("targets: expected a position or a non-empty 1-d array of positions")
    if targets.min() < 0 or targets.max() >= n:
        raise ValueError(f"targets: positions must lie in 0..{n - 1}")
    fields = []
    for k0 in range(0, targets.size, 64):
        chunk = targets[k0 : k0 + 64].astype(np.int64)
        bits = np.zeros((n, 1), dtype=np.uint64)
        nxt = np.empty_like(bits)
        np.bitwise_or.at(bits[:, 0], chunk, np.left_shift(np.uint64(1), np.arange(chunk.size, dtype=np.uint64)))
        for layer in range(layers, 0, -1):
            apply_layer([op.transpose() for op in pattern.layer_ops(layer)], bits, nxt)
            bits, nxt = nxt, bits
        for k in range(chunk.size):
            fields.append(np.flatnonzero((bits[:, 0] >> np.uint64(k)) & np.uint64(1)))
    return fields


def receptive_field(pattern: Pattern, target: int, layers: int) -> np.ndarray:
    """Sorted positions of ``RF_layers(target)`` (see :func:`receptive_fields`).

    Parameters
    ----------
    pattern : Pattern
        The attention pattern.
    target : int
        Query position in ``0..n-1``.
    layers : int
        Depth ``L``.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``target`` or ``layers`` is out of range.

    Examples
    --------
    >>> from receptive import make_pattern
    >>> from receptive.fields import receptive_field
    >>> receptive_field(make_pattern("swa", 16, 4, causal=True), 15, 1).tolist()
    [12, 13, 14, 15]
    """
    target = check_int("target", target, 0, pattern.n - 1) if isinstance(pattern, Pattern) else target
    return receptive_fields(pattern, np.array([target]), layers)[0]
