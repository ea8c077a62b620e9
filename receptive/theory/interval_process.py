"""Monte Carlo of the causal interval process: failure events of causal SA+SWA counted by key and by target.

A causal path from key ``j`` to query ``i`` never leaves ``[j, i]``, so whether ``j`` reaches every query in
``[j,j+D]`` is decided by the edges inside that interval alone (``docs/theory.md`` Sec. 5). Inside it causal SA+SWA is
a causal window of ``a`` keys (offsets ``0 .. a-1``) plus one SA edge per unordered pair with probability
``p=E[w_s-1]/(n-1)`` per layer, independently (the permutation's own constraint is ``O(w/n)``), and the law does not
depend on where the interval sits. The simulation draws a Poisson number of uniform pairs with mean ``-ln(1-p)`` per
pair, so that a given pair holds at least one draw with probability exactly ``p``. This module simulates that process
for a strip of ``K`` consecutive keys at once (one bit per key and position, ``K/64`` words per position), layer by
layer, and records for every key its first missed offset ``x_min`` (``inf`` once it reaches every position of the
interval). From it:

* ``q_L(h) = P(x_min <= h)``: a key with ``h`` queries after it fails by layer ``L`` (by the time-reversal symmetry of
  the causal pattern, also the probability that a target with ``h`` keys before it has a missed key);
* ``s_L(h) = P(key k fails with horizon h, and none of the g keys before it fails with theirs)``: key ``k - i`` has
  horizon ``h + i`` and fails iff ``x_min(k - i) <= h + i``, so ``k`` starts an event for ``h`` in
  ``[x_min(k), min_i (x_min(k - i) - i) - 1]``.

Failures of neighbouring keys are one event (a thin stretch of forward sets), and events ``g`` keys apart are
independent; any ``g`` with ``g q << 1`` counts each event once (Aldous' Poisson clumping heuristic), and the count
does not depend on ``g`` once ``g`` exceeds the events' extent along the keys, which :func:`interval_event_rates`
reports for several ``g`` so that this can be checked. The model built on it is :mod:`receptive.theory.interval`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..validation import check_int

#: memory of a thread's four strip arrays (``length x keys/64`` words each), at most
_MAX_STRIP_BYTES = 2**28
#: ``x_min`` of a key that reaches every position of its interval
_FULL = np.iinfo(np.int64).max // 4


@njit(cache=True, inline="always")
def _next(state):
    """xorshift64* step; ``state`` is a one-element uint64 array (one stream per sample)."""
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    return x * np.uint64(2685821657736338717)


@njit(cache=True, inline="always")
def _uniform(state):
    return float(_next(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def _seed_state(seed, sample):
    """splitmix64 of ``(seed, sample)``: independent, reproducible streams whatever the thread layout."""
    z = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(sample + 1) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    state = np.empty(1, dtype=np.uint64)
    state[0] = z if z != 0 else np.uint64(1)
    return state


@njit(cache=True)
def _poisson(state, lam):
    """Poisson(``lam``) by Knuth's product method, in chunks of mean <= 20 (sums of Poissons are Poisson)."""
    total = 0
    while lam > 0.0:
        chunk = min(lam, 20.0)
        lam -= chunk
        limit = math.exp(-chunk)
        prod = _uniform(state)
        while prod > limit:
            total += 1
            prod *= _uniform(state)
    return total


@njit(cache=True)
def _window_or(old, new, a, g, h):
    """``new[y] = OR_{d=0..a-1} old[y - d]`` (van Herk / Gil-Werman: blocks of ``a``, prefix and suffix ORs)."""
    length, words = old.shape
    for start in range(0, length, a):
        stop = min(start + a, length)
        for wd in range(words):
            acc = np.uint64(0)
            for y in range(start, stop):
                acc |= old[y, wd]
                g[y, wd] = acc
            acc = np.uint64(0)
            for y in range(stop - 1, start - 1, -1):
                acc |= old[y, wd]
                h[y, wd] = acc
    for y in range(length):
        lo = y - a + 1
        for wd in range(words):
            new[y, wd] = g[y, wd] if lo <= 0 else (h[lo, wd] | g[y, wd])


@njit(cache=True)
def _first_missed(masks, keys, xmin):
    """``xmin[k]`` = first offset ``y - k`` that key ``k`` (at position ``k``) misses, ``_FULL`` if none; returns
    the number of keys that miss something."""
    length, words = masks.shape
    for k in range(keys):
        xmin[k] = _FULL
    found = np.zeros(words, dtype=np.uint64)
    failing = 0
    all_ones = ~np.uint64(0)
    for y in range(length):
        for wd in range(words):
            base = wd * 64
            if y < base:
                continue
            upto = y - base  # keys base .. min(y, base + 63) precede or sit at y
            valid = all_ones if upto >= 63 else (np.uint64(1) << np.uint64(upto + 1)) - np.uint64(1)
            miss = ~masks[y, wd] & valid & ~found[wd]
            if miss == 0:
                continue
            found[wd] |= miss
            while miss != 0:
                low = miss & (~miss + np.uint64(1))
                bit = 0
                probe = low
                while probe > np.uint64(1):
                    probe >>= np.uint64(1)
                    bit += 1
                k = base + bit
                xmin[k] = y - k
                failing += 1
                miss ^= low
    return failing


@njit(cache=True, parallel=True)
def _simulate(p, a, layers, cut, keys, gaps, samples, seed, chunks):
    """Aggregate over ``samples`` strips: ``fails[L, x]`` keys with ``x_min == x`` (``x <= cut``), and for each
    gap ``g`` the difference array ``starts[gi, L, h]`` of event starts by horizon (see the module docstring)."""
    words = keys // 64
    length = keys + cut + 1
    # a Poisson number of uniform pairs, with the mean that puts at least one draw on a given pair with probability p
    lam = -math.log1p(-p) * length * (length - 1) / 2.0
    fails = np.zeros((chunks, layers, cut + 2))
    starts = np.zeros((chunks, gaps.size, layers, cut + 2))
    per_chunk = (samples + chunks - 1) // chunks
    for c in prange(chunks):
        old = np.zeros((length, words), dtype=np.uint64)
        new = np.zeros((length, words), dtype=np.uint64)
        g = np.zeros((length, words), dtype=np.uint64)
        h = np.zeros((length, words), dtype=np.uint64)
        xmin = np.empty(keys, dtype=np.int64)
        for s in range(c * per_chunk, min(samples, (c + 1) * per_chunk)):
            state = _seed_state(seed, s)
            old[:, :] = 0
            for k in range(keys):
                old[k, k // 64] = np.uint64(1) << np.uint64(k % 64)
            for layer in range(layers):
                _window_or(old, new, a, g, h)
                for _ in range(_poisson(state, lam)):
                    u = int(_uniform(state) * length)
                    v = int(_uniform(state) * (length - 1))
                    if v >= u:
                        v += 1
                    if u > v:
                        u, v = v, u
                    for wd in range(words):
                        new[v, wd] |= old[u, wd]
                old, new = new, old
                if _first_missed(old, keys, xmin) == 0:
                    break  # every key reaches its whole interval: nothing fails from here on
                for k in range(keys):
                    lo = xmin[k]
                    if lo > cut:
                        continue
                    fails[c, layer, lo] += 1
                    for gi in range(gaps.size):
                        gap = gaps[gi]
                        if k < gap:
                            continue
                        hi = cut
                        for i in range(1, gap + 1):
                            prev = xmin[k - i]
                            if prev - i - 1 < hi:  # a key that never fails has x_min = _FULL
                                hi = prev - i - 1
                        if hi >= lo:
                            starts[c, gi, layer, lo] += 1
                            starts[c, gi, layer, hi + 1] -= 1
    return fails.sum(axis=0), starts.sum(axis=0)


def interval_event_rates(
    p: float,
    a: int,
    layers: int,
    samples: int,
    keys: int = 256,
    gaps: tuple[int, ...] = (8, 32, 96),
    seed: int = 0,
    cut: int | None = None,
) -> dict:
    """Monte Carlo of the causal interval process (module docstring): failure and event-start rates.

    For ``L = 1..layers`` and horizons ``h = 0..cut`` (default ``6 layers (a - 1) + a``, the same for every layer:
    the near part of the causal model), the probability ``fail[L-1, h]`` that a key with ``h`` queries after it
    fails, and ``start[g][L-1, h]`` that it starts an event with declumping gap ``g`` (per key). ``samples`` strips
    of ``keys`` consecutive keys (a multiple of 64); ``fail`` uses all keys of a strip, ``start[g]`` the
    ``keys - g`` that have ``g`` keys before them. Reproducible for a given ``seed`` whatever the number of threads.

    Parameters
    ----------
    p : float
        SA edge probability per unordered pair and layer, in ``(0, 1)``.
    a : int
        Causal window size (keys, self included), ``>= 1``.
    layers : int
        Number of layers, in ``1..4096``.
    samples : int
        Number of strips, ``>= 1``.
    keys : int, optional
        Keys per strip, a multiple of 64 in ``64..4096``.
    gaps : tuple of int, optional
        Declumping gaps ``g``, each in ``0..keys-1``; non-empty.
    seed : int, optional
        Seed, in ``0..2**63-1``.
    cut : int or None, optional
        Largest horizon, ``>= 1``; ``None``: ``6 layers (a - 1) + a``.

    Returns
    -------
    dict
        ``fail`` (shape ``(layers, cut + 1)``), ``start`` (``{g: array of that shape}``), ``starts_seen`` (event
        starts sampled at the cut, shape ``(layers, len(gaps))``), and the settings ``cut``, ``samples``, ``keys``,
        ``gaps``, ``p``, ``a``.

    Raises
    ------
    TypeError
        If an integer argument is not an integer.
    ValueError
        If an argument is out of range, ``keys`` is not a multiple of 64, ``gaps`` is empty, or a strip would need
        over 256 MiB.

    Examples
    --------
    >>> import numpy as np
    >>> from receptive.theory import interval_event_rates
    >>> rates = interval_event_rates(0.03, 4, 3, 4, keys=64, gaps=(8,), seed=1)
    >>> rates["fail"].shape, rates["cut"]
    ((3, 59), 58)
    >>> bool(np.all(np.diff(rates["fail"], axis=1) >= 0))  # a longer horizon fails more often
    True

    References
    ----------
    * Aldous 1989, Probability Approximations via the Poisson Clumping Heuristic, Springer.
    * Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p: expected an edge probability in (0, 1), got {p!r}")
    a = check_int("a", a, 1)
    layers = check_int("layers", layers, 1, 4096)
    samples = check_int("samples", samples, 1)
    keys = check_int("keys", keys, 64, 4096)
    if keys % 64:
        raise ValueError(f"keys: expected a multiple of 64, got {keys}")
    if not gaps:
        raise ValueError("gaps: expected a non-empty tuple of declumping gaps")
    gaps = tuple(check_int("gaps", g, 0, keys - 1) for g in gaps)
    seed = check_int("seed", seed, 0, 2**63 - 1)
    cut = _cut(a, layers) if cut is None else check_int("cut", cut, 1)
    words = keys // 64
    length = keys + cut + 1
    if length * words * 8 * 4 > _MAX_STRIP_BYTES:
        raise ValueError(
            f"interval: {length} positions x {keys} keys needs over 256 MiB per thread; fewer layers or a shorter cut"
        )
    chunks = max(1, min(samples, 64))
    fails, starts = _simulate(
        float(p), a, layers, cut, keys, np.array(gaps, dtype=np.int64), samples, int(seed), chunks
    )
    fail = np.cumsum(fails[:, :-1], axis=1) / (samples * keys)
    start = {g: np.cumsum(starts[i][:, :-1], axis=1) / (samples * (keys - g)) for i, g in enumerate(gaps)}
    # event starts sampled at the cut (the horizon of almost every key), per layer and gap
    starts_seen = np.stack([start[g][:, cut] * samples * (keys - g) for g in gaps], axis=1)
    return {
        "fail": fail,
        "start": start,
        "starts_seen": starts_seen,
        "cut": cut,
        "samples": samples,
        "keys": keys,
        "gaps": gaps,
        "p": p,
        "a": a,
    }


def _cut(a: int, layers: int) -> int:
    """The near part's shortest last offset, the same for every layer: ``6 layers (a - 1) + a``, where the
    run-branching model's misses have died out (``docs/theory.md`` Sec. 5). A cut that grew with the layer would hand
    the offsets between two cuts to the far part's profile model at the earlier layer; the strip holds them anyway."""
    return 6 * layers * (a - 1) + a


def interval_cost(p: float, samples: int, keys: int, cut: int, alive) -> float:
    """Word operations of :func:`interval_event_rates` (an estimate).

    Per strip and layer, the window and the scan over ``length x keys/64`` words plus one update per shortcut
    (``p length^2 / 2`` of them), times ``alive[L]``, the share of strips that still have a failing key when layer
    ``L`` starts (a strip stops once none fails).

    Parameters
    ----------
    p : float
        SA edge probability per pair and layer.
    samples : int
        Number of strips.
    keys : int
        Keys per strip.
    cut : int
        Largest horizon (``length = keys + cut + 1``).
    alive : array_like of float
        Share of strips still simulating at each layer.

    Returns
    -------
    float
        The estimated number of word operations.

    Examples
    --------
    >>> from receptive.theory import interval_cost
    >>> round(interval_cost(0.03, 4, 64, 22, [1, 1, 1]), 1)
    9944.1
    """
    length = keys + cut + 1
    per_layer = float(samples) * (length * (keys // 64) * 3 + p * length * length / 2 * (keys // 64 + 4))
    return per_layer * float(np.sum(alive))
