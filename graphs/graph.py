"""A static graph in compressed sparse row form: the input of every path, clustering and small-world measure."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class Graph:
    """``n`` nodes; out-neighbours of ``u`` are ``indices[indptr[u]:indptr[u+1]]`` (sorted, no duplicates, no
    self-loops). ``directed=False`` graphs store every edge in both directions."""

    n: int
    indptr: np.ndarray = field(repr=False)
    indices: np.ndarray = field(repr=False)
    directed: bool = True

    @classmethod
    def from_edges(cls, n: int, sources, targets, directed: bool = True) -> Graph:
        """Edges ``sources[k] -> targets[k]``; duplicates and self-loops are dropped, undirected edges mirrored."""
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"n: expected an integer >= 1, got {n!r}")
        src = np.asarray(sources, dtype=np.int64).ravel()
        dst = np.asarray(targets, dtype=np.int64).ravel()
        if src.shape != dst.shape:
            raise ValueError(f"edges: {src.size} sources but {dst.size} targets")
        if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
            raise ValueError(f"edges: node indices must lie in 0..{n - 1}")
        keep = src != dst
        src, dst = src[keep], dst[keep]
        if not directed:
            src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
        mat = sp.csr_array((np.ones(src.size, dtype=bool), (src, dst)), shape=(n, n))
        mat.sum_duplicates()
        mat.sort_indices()
        return cls(int(n), mat.indptr.astype(np.int64), mat.indices.astype(np.int64), bool(directed))

    @classmethod
    def from_scipy(cls, matrix, directed: bool = True) -> Graph:
        """From a square sparse (or dense) adjacency matrix: entry ``[u, v] != 0`` is the edge ``u -> v``."""
        coo = sp.coo_array(matrix)
        if coo.shape[0] != coo.shape[1]:
            raise ValueError(f"matrix: expected a square adjacency matrix, got shape {coo.shape}")
        nonzero = coo.data != 0
        return cls.from_edges(coo.shape[0], coo.row[nonzero], coo.col[nonzero], directed)

    @classmethod
    def from_networkx(cls, graph) -> Graph:
        """From a networkx (Di)Graph; nodes are numbered in ``list(graph.nodes)`` order."""
        index = {node: i for i, node in enumerate(graph.nodes)}
        edges = np.array([(index[u], index[v]) for u, v in graph.edges], dtype=np.int64).reshape(-1, 2)
        return cls.from_edges(len(index), edges[:, 0], edges[:, 1], graph.is_directed())

    @property
    def edges(self) -> int:
        """Number of edges (an undirected edge counts once)."""
        return int(self.indices.size if self.directed else self.indices.size // 2)

    @property
    def out_degree(self) -> np.ndarray:
        return np.diff(self.indptr)

    @property
    def mean_degree(self) -> float:
        """``<k>``: mean out-degree (directed) or mean degree (undirected)."""
        return self.indices.size / self.n

    def to_scipy(self) -> sp.csr_array:
        return sp.csr_array((np.ones(self.indices.size, dtype=bool), self.indices, self.indptr), shape=(self.n, self.n))

    def reverse(self) -> Graph:
        """Every edge reversed (in-neighbour lists as CSR)."""
        if not self.directed:
            return self
        mat = self.to_scipy().T.tocsr()
        mat.sort_indices()
        return Graph(self.n, mat.indptr.astype(np.int64), mat.indices.astype(np.int64), True)

    def undirected(self) -> Graph:
        """The underlying undirected graph (``u - v`` if ``u -> v`` or ``v -> u``)."""
        if not self.directed:
            return self
        rows = np.repeat(np.arange(self.n, dtype=np.int64), self.out_degree)
        return Graph.from_edges(self.n, rows, self.indices, directed=False)

    def subgraph(self, nodes: np.ndarray) -> Graph:
        """The graph induced by ``nodes`` (renumbered ``0..len(nodes)-1`` in the given order)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        mat = self.to_scipy()[nodes][:, nodes]
        coo = sp.coo_array(mat)
        return Graph.from_edges(nodes.size, coo.row, coo.col, True if self.directed else False)

    def to_networkx(self):
        import networkx as nx

        g = nx.DiGraph() if self.directed else nx.Graph()
        g.add_nodes_from(range(self.n))
        rows = np.repeat(np.arange(self.n), self.out_degree)
        g.add_edges_from(zip(rows.tolist(), self.indices.tolist(), strict=True))
        return g
