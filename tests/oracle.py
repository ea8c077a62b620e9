"""Slow, obviously-correct definitions that the engine is tested against (plain loops, dense boolean matrices)."""

from __future__ import annotations

import networkx as nx
import numpy as np


def offsets(w: int, causal: bool) -> tuple[int, int]:
    return (w - 1, 0) if causal else (w // 2, (w - 1) // 2)


def swa_matrix(n: int, w: int, causal: bool, circular: bool) -> np.ndarray:
    """A[i, j] = query i attends to key j in a sliding window of w keys."""
    left, right = offsets(w, causal)
    a = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for d in range(-left, right + 1):
            j = i + d
            if circular and not causal:
                j %= n
            elif not 0 <= j < n:
                continue
            a[i, j] = True
    return a


def sa_matrix(perm: np.ndarray, w: int, causal: bool, circular: bool) -> np.ndarray:
    """Stochastic Attention: i attends to perm[q] for q in the two-sided window around perm^-1(i); causal keeps
    only keys whose original position is <= i."""
    n = len(perm)
    left, right = offsets(w, False)
    where = {int(orig): p for p, orig in enumerate(perm)}
    a = np.zeros((n, n), dtype=bool)
    for i in range(n):
        p = where[i]
        for d in range(-left, right + 1):
            x = p + d
            if circular:
                x %= n
            elif not 0 <= x < n:
                continue
            j = int(perm[x])
            if causal and j > i:
                continue
            a[i, j] = True
    return a


def window_matrix(n: int, perm, left: int, right: int, circular: bool, order: int) -> np.ndarray:
    """A[i, j] = query i attends to key j in a window in permuted order: query ``perm[p]`` attends ``perm[x]`` for
    ``x = p - left .. p + right``, truncated at ``0 .. len(perm) - 1`` or taken modulo ``len(perm)`` (circular),
    holes (-1) skipped, ``order`` +1 keeping keys <= the query, -1 keys >= it; ``perm`` None or empty: the identity."""
    perm = list(range(n)) if perm is None or len(perm) == 0 else [int(v) for v in perm]
    length = len(perm)
    a = np.zeros((n, n), dtype=bool)
    for p in range(length):
        for x in range(p - left, p + right + 1):
            if circular:
                x %= length
            elif not 0 <= x < length:
                continue
            query, key = perm[p], perm[x]
            if query < 0 or key < 0 or (order > 0 and key > query) or (order < 0 and key < query):
                continue
            a[query, key] = True
    return a


def propagate(bits: np.ndarray, attends: np.ndarray) -> np.ndarray:
    """``out[i] = OR_j attends[i, j] bits[j]`` on packed uint64 bit rows, as a boolean matrix product."""
    unpacked = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little").astype(np.int64)
    reached = (attends.astype(np.int64) @ unpacked) > 0
    return np.packbits(reached, axis=1, bitorder="little").view(np.uint64).reshape(bits.shape)


def full_matrix(n: int, causal: bool) -> np.ndarray:
    return np.tril(np.ones((n, n), dtype=bool)) if causal else np.ones((n, n), dtype=bool)


def layer_matrices(name, n, w, causal, circular, perms) -> list[np.ndarray]:
    mats = []
    for perm in perms:
        if name == "swa":
            mats.append(swa_matrix(n, w, causal, circular))
        elif name == "sa":
            mats.append(sa_matrix(perm, w, causal, circular))
        elif name == "sa+swa":
            mats.append(sa_matrix(perm, w, causal, circular) | swa_matrix(n, w, causal, circular))
        elif name == "full":
            mats.append(full_matrix(n, causal))
        else:
            raise ValueError(name)
    return mats


def rf_sizes(mats: list[np.ndarray]) -> np.ndarray:
    """sizes[l - 1, i] = |RF_l(i)| with R_0 = I and R_l = (A_l R_{l-1}) > 0, R[i, s] = s in RF(i)."""
    n = mats[0].shape[0]
    r = np.eye(n, dtype=np.int64)
    out = []
    for a in mats:
        r = ((a.astype(np.int64) @ r) > 0).astype(np.int64)
        out.append(r.sum(axis=1))
    return np.array(out)


def rf_sizes_networkx(mats: list[np.ndarray]) -> np.ndarray:
    """The same through networkx: layered DAG (l, j) -> (l + 1, i), RF_L(i) = layer-0 ancestors of (L, i)."""
    n = mats[0].shape[0]
    g = nx.DiGraph()
    g.add_nodes_from((0, i) for i in range(n))
    out = []
    for layer, a in enumerate(mats, start=1):
        qs, ks = np.nonzero(a)
        g.add_edges_from(((layer - 1, int(k)), (layer, int(q))) for q, k in zip(qs, ks, strict=True))
        out.append([sum(1 for node in nx.ancestors(g, (layer, i)) if node[0] == 0) for i in range(n)])
    return np.array(out)
