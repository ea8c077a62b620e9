"""Attention patterns as layered graphs: which keys each query attends to in each layer.

A pattern turns layer ``l`` into the engine's operators (:mod:`graphs.ops`): a window in (possibly permuted)
order, or explicit neighbour lists; a layer with several operators is their union. Every pattern includes the
query itself (it also stands for the residual path). Adding a pattern means one subclass that implements
:meth:`Pattern.layer_ops` (and, if it has one, a closed form) plus one entry in :data:`PATTERNS`, e.g. a dilated
window is a ``WindowOp`` over a strided permutation, BigBird's random + global keys a ``NeighbourOp``.

Window offsets follow :mod:`receptive.windows`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from graphs.ops import NeighbourOp, Op, WindowOp

from .permutations import layer_permutation
from .validation import check_int, check_permutation
from .windows import check_window, window_offsets


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


class SlidingWindow(WindowPattern):
    """SWA: query ``i`` attends to ``i-left .. i+right`` (``(w-1, 0)`` causal), the same in every layer."""

    name = "swa"

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        self._check_layer(layer)
        return (WindowOp(self.left, self.right, self.circular and not self.causal),)

    def closed_form_counts(self, layers: int) -> np.ndarray:
        """Receptive fields of SWA are intervals: ``RF_L(i) = [i - L*left, i + L*right]`` clipped to ``0..n-1``
        (causal: ``[i - L(w-1), i]``); circular: ``min(n, L(w-1) + 1)`` positions."""
        layers = check_int("layers", layers, 0)
        i = np.arange(self.n, dtype=np.int64)
        if self.circular and not self.causal:
            return np.full(self.n, min(self.n, layers * (self.w - 1) + 1), dtype=np.int64)
        lo = np.maximum(0, i - layers * self.left)
        hi = np.minimum(self.n - 1, i + layers * self.right)
        return hi - lo + 1

    def closed_form_full_layer(self) -> int | None:
        """``ceil((n-1)/(w-1))`` causal or circular; ``ceil((n-1)/right)`` truncated two-sided (the shorter side
        limits it); ``None`` when a side needed is empty (``w = 1``, or ``w = 2`` two-sided)."""
        if self.n == 1:
            return 1
        step = self.right if not (self.causal or self.circular) else self.w - 1
        return max(1, math.ceil((self.n - 1) / step)) if step > 0 else None


class StochasticAttention(WindowPattern):
    """SA (Jin & Sui 2026, arXiv 2604.00754): layer ``l`` draws a permutation ``sigma_l``; position ``i`` attends
    to ``sigma_l(q)`` for ``q`` in the two-sided window around ``sigma_l^{-1}(i)`` in permuted order. Causal SA
    keeps that band and masks keys whose original position is after ``i``'s (a causal band in permuted order
    alone would leak future tokens).

    ``permutations`` (one per layer, ``perm[p]`` = original position at permuted position ``p``) replaces the
    seeded draw so the exact permutations a model used can be analysed; the pattern then has that many layers.
    With identity permutations SA equals bidirectional SWA, and truncated causal SA equals causal SWA of
    ``w//2 + 1`` keys.
    """

    name = "sa"
    two_sided_band = True

    def __init__(self, n, w, causal=False, circular=False, seed: int = 0, permutations: Sequence | None = None):
        super().__init__(n, w, causal, circular)
        self.seed = check_int("seed", seed, 0)
        if permutations is not None:
            if len(permutations) == 0:
                raise ValueError("permutations: expected at least one permutation (one per layer)")
            self._given = [check_permutation(f"permutations[{k}]", p, self.n) for k, p in enumerate(permutations)]
            self.max_layers = len(self._given)
        else:
            self._given = None
        self.permutation = lru_cache(maxsize=None)(self._permutation)

    def _permutation(self, layer: int) -> np.ndarray:
        self._check_layer(layer)
        if self._given is not None:
            return self._given[layer - 1]
        return layer_permutation(self.n, self.seed, layer)

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        return (WindowOp(self.left, self.right, self.circular, self.permutation(layer), +1 if self.causal else 0),)


class GatedSAPlusSWA(StochasticAttention):
    """Gated SA+SWA: both paths on the same q/k/v, mixed by sigmoid gates. For reachability a layer is the union of
    the SA edges (with this pattern's permutations) and the SWA edges of ``w_swa`` keys (default ``w``)."""

    name = "sa+swa"

    def __init__(self, n, w, causal=False, circular=False, seed=0, permutations=None, w_swa: int | None = None):
        super().__init__(n, w, causal, circular, seed, permutations)
        self.swa = SlidingWindow(self.n, self.w if w_swa is None else w_swa, self.causal, self.circular)

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        return super().layer_ops(layer) + self.swa.layer_ops(layer)

    def describe(self) -> str:
        extra = f" w_swa={self.swa.w}" if self.swa.w != self.w else ""
        return super().describe() + extra


class FullAttention(Pattern):
    """Every key (causal: every key ``j <= i``): the reference, fully covered after one layer."""

    name = "full"

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        self._check_layer(layer)
        return (WindowOp(self.n - 1, 0 if self.causal else self.n - 1),)

    def closed_form_counts(self, layers: int) -> np.ndarray:
        """``|RF_L(i)| = |A(i)|`` for ``L >= 1`` (``i + 1`` causal, ``n`` otherwise)."""
        layers = check_int("layers", layers, 0)
        i = np.arange(self.n, dtype=np.int64)
        if layers == 0:
            return np.ones(self.n, dtype=np.int64)
        return i + 1 if self.causal else np.full(self.n, self.n, dtype=np.int64)

    def closed_form_full_layer(self) -> int:
        return 1


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
    p = np.repeat(np.arange(n, dtype=np.int64), op.size)
    x = p + np.tile(np.arange(-op.left, op.right + 1, dtype=np.int64), n)
    keep = (x >= 0) & (x < n) if not op.circular else np.ones(x.size, dtype=bool)
    query, key = perm[p[keep]], perm[x[keep] % n]
    if op.order:
        ok = key <= query if op.order > 0 else key >= query
        query, key = query[ok], key[ok]
    return query, key


#: name -> constructor(n, w, causal, circular, seed, permutations)
PATTERNS = {
    "swa": lambda n, w, causal, circular, seed, permutations: SlidingWindow(n, w, causal, circular),
    "sa": lambda n, w, causal, circular, seed, permutations: StochasticAttention(
        n, w, causal, circular, seed, permutations
    ),
    "sa+swa": lambda n, w, causal, circular, seed, permutations: GatedSAPlusSWA(
        n, w, causal, circular, seed, permutations
    ),
    "full": lambda n, w, causal, circular, seed, permutations: FullAttention(n, causal),
}


def make_pattern(
    name: str,
    n: int,
    w: int,
    causal: bool = False,
    circular: bool = False,
    seed: int = 0,
    permutations: Sequence | None = None,
) -> Pattern:
    """Build a registered pattern by name (``swa``, ``sa``, ``sa+swa``, ``full``)."""
    if name not in PATTERNS:
        raise ValueError(f"patterns: unknown pattern {name!r}; choose from {', '.join(PATTERNS)}")
    return PATTERNS[name](n, w, causal, circular, seed, permutations)
