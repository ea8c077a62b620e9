"""The pattern interface: a layered attention pattern as the engine's operators (:mod:`graphs.ops`).

A pattern turns layer ``l`` into operators: a window in (possibly permuted) order, explicit neighbour lists,
block-sparse layouts or global tokens; a layer with several operators is their union. Every pattern includes the
query itself (it also stands for the residual path). Window offsets follow :mod:`receptive.windows`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import scipy.sparse as sp

from graphs.ops import NeighbourOp, Op

from ..validation import check_int
from ..windows import check_window, window_offsets


class Pattern(ABC):
    """A layered attention pattern on ``n`` positions (``causal``: keys never come after the query)."""

    name: str = "pattern"

    def __init__(self, n: int, causal: bool = False):
        self.n = check_int("n", n, 1)
        self.causal = bool(causal)

    #: number of layers the pattern defines (``None``: unlimited), e.g. the number of explicit permutations
    max_layers: int | None = None

    @abstractmethod
    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        """The operators of layer ``layer`` (1-based) whose union is its edge set key -> query."""

    def closed_form_counts(self, layers: int) -> np.ndarray | None:
        """``|RF_layers(i)|`` for every ``i`` in closed form, or ``None`` if the pattern has none."""
        return None

    def closed_form_full_layer(self) -> int | None:
        """The closed-form first layer of full coverage (only meaningful when :meth:`closed_form_counts` exists)."""
        raise NotImplementedError(f"{self.name} has no closed form")

    @property
    def has_closed_form(self) -> bool:
        return type(self).closed_form_counts is not Pattern.closed_form_counts

    def adjacency(self, layer: int) -> sp.csr_array:
        """Boolean ``n x n`` sparse matrix of layer ``layer``: entry ``[i, j]`` is set when query ``i`` attends to
        key ``j``. Built by enumerating the ``O(n w)`` edges; meant for small ``n`` and for cross-checks."""
        rows, cols = [], []
        for op in self.layer_ops(self._check_layer(layer)):
            r, c = _edges(op, self.n)
            rows.append(r)
            cols.append(c)
        r, c = np.concatenate(rows), np.concatenate(cols)
        mat = sp.coo_array((np.ones(r.size, dtype=bool), (r, c)), shape=(self.n, self.n)).tocsr()
        mat.sum_duplicates()
        return mat

    def _check_layer(self, layer: int) -> int:
        high = self.max_layers if self.max_layers is not None else None
        return check_int("layer", layer, 1, high)

    def describe(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()} n={self.n} causal={self.causal}>"


class WindowPattern(Pattern):
    """Base of the patterns parameterised by a window of ``w`` keys."""

    two_sided_band = False  # SA keeps the two-sided band in permuted order even when causal

    def __init__(self, n: int, w: int, causal: bool = False, circular: bool = False):
        super().__init__(n, causal)
        self.circular = bool(circular)
        self.w = check_window(w, self.n, self.causal and not self.two_sided_band, self.circular)
        self.left, self.right = window_offsets(self.w, self.causal and not self.two_sided_band)

    def describe(self) -> str:
        return f"{self.name} w={self.w}" + (" circular" if self.circular else "")


class NeighbourListPattern(Pattern):
    """An arbitrary pattern given as explicit neighbour lists: ``neighbours[i]`` are the keys of query ``i``, one
    list for every layer or a sequence of them (one per layer; the pattern then has that many layers). Content-based
    patterns (routing, LSH buckets, top-k) fit here. The query itself is added to its own list; with ``causal``
    a key after its query is an error."""

    name = "neighbours"

    def __init__(self, n: int, neighbours, causal: bool = False, per_layer: bool = False):
        super().__init__(n, causal)
        layers = list(neighbours) if per_layer else [neighbours]
        if per_layer and not layers:
            raise ValueError("neighbours: expected at least one layer of neighbour lists")
        self._ops = [self._with_self(NeighbourOp.from_lists(nb, self.n)) for nb in layers]
        if per_layer:
            self.max_layers = len(self._ops)

    def _with_self(self, op: NeighbourOp) -> NeighbourOp:
        rows = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(op.indptr))
        if self.causal and np.any(op.indices > rows):
            raise ValueError("neighbours: a causal pattern cannot list a key after its query")
        mat = sp.csr_array((np.ones(rows.size, dtype=bool), (rows, op.indices)), shape=(self.n, self.n))
        mat = (mat + sp.eye_array(self.n, dtype=bool, format="csr")).tocsr()
        mat.sort_indices()
        return NeighbourOp(mat.indptr.astype(np.int64), mat.indices.astype(np.int64))

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        self._check_layer(layer)
        return (self._ops[0] if len(self._ops) == 1 and self.max_layers is None else self._ops[layer - 1],)


def _edges(op: Op, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(query, key) index arrays of one operator's edges."""
    if isinstance(op, NeighbourOp):
        return np.repeat(np.arange(n, dtype=np.int64), np.diff(op.indptr)), op.indices
    perm = np.arange(n, dtype=np.int64) if op.perm is None else op.perm
    length = perm.size  # a virtual sequence with holes (-1) may be longer than n
    p = np.repeat(np.arange(length, dtype=np.int64), op.size)
    x = p + np.tile(np.arange(-op.left, op.right + 1, dtype=np.int64), length)
    keep = (x >= 0) & (x < length) if not op.circular else np.ones(x.size, dtype=bool)
    query, key = perm[p[keep]], perm[x[keep] % length]
    real = (query >= 0) & (key >= 0)
    query, key = query[real], key[real]
    if op.order:
        ok = key <= query if op.order > 0 else key >= query
        query, key = query[ok], key[ok]
    return query, key
