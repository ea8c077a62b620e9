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
