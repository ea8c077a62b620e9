"""FlexAttention interop: any ``mask_mod`` as a receptive pattern, and any receptive pattern as a ``mask_mod``.

FlexAttention (``torch.nn.attention.flex_attention``, PyTorch >= 2.5) describes a sparse layout by a predicate
``mask_mod(b, h, q_idx, kv_idx) -> bool`` that ``create_mask`` evaluates on every ``(b, h, q, kv)`` with four nested
``torch.vmap`` and ``create_block_mask`` turns into a block-sparse kernel. Here:

* :func:`from_mask_mod` evaluates a ``mask_mod`` the same way (``torch.vmap`` over ``q_idx`` and ``kv_idx``), one
  block of query rows at a time within a memory budget, and stores the layer as CSR neighbour lists
  (:class:`CSRPattern`); ``heads > 1`` unites the heads' masks into one layer.
* :func:`to_mask_mod` hands any :class:`~receptive.patterns.base.Pattern` to FlexAttention: layer ``l``'s adjacency is
  built once and looked up with tensor operations only (a dense boolean table, the table packed in 64-bit words, or
  a fixed-step binary search in the sorted CSR row), so the ``mask_mod`` is ``vmap`` and ``torch.compile`` friendly.

``receptive`` imports without torch: torch is imported inside these functions only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from graphs.memory import DEFAULT_MAX_MEMORY, parse_bytes
from graphs.ops import NeighbourOp, Op, WindowOp

from ..validation import check_bool, check_int
from .base import Pattern

__all__ = ["DENSE_TABLE_BYTES", "LOOKUPS", "CSRPattern", "from_mask_mod", "layer_pairs_bound", "to_mask_mod"]

#: working bytes per evaluated ``(query, key)`` pair while a block of the mask is evaluated: the boolean result plus
#: the int64 index tensors that ``vmap`` broadcasts (an estimate, not a measurement of every ``mask_mod``)
WORK_BYTES_PER_PAIR = 32
#: bytes per stored CSR entry while the pattern is assembled (int64 keys in per-block pieces, then concatenated)
CSR_BYTES_PER_ENTRY = 16
#: :func:`to_mask_mod` uses a dense ``n x n`` boolean table up to this many bytes (n = 4096), else the CSR search
DENSE_TABLE_BYTES = 2**24


class CSRPattern(Pattern):
    """A pattern given layer by layer as CSR neighbour lists (``NeighbourOp``), the query itself always included.

    ``layers``: a sequence of ``scipy.sparse`` ``n x n`` matrices or :class:`graphs.ops.NeighbourOp` (entry
    ``[i, j]``: query ``i`` attends to key ``j``). ``per_layer=True``: layer ``l`` is ``layers[l - 1]`` and the pattern
    has ``len(layers)`` layers; ``per_layer=False`` (one matrix): the same layer at every depth. Every receptive
    pattern includes the query itself (it stands for the residual path), so the diagonal is added; with ``causal`` a
    key after its query is a ``ValueError`` naming ``what``.

    Parameters
    ----------
    n : int
        Tokens.
    layers : sequence of scipy.sparse matrix or graphs.ops.NeighbourOp
        The layers' ``n x n`` adjacencies.
    causal : bool, default False
        Check that no query attends to a later key.
    per_layer : bool, default True
        One entry per layer; ``False``: one entry, the same layer at every depth.
    name : str or None, default None
        The pattern's name (default ``"csr"``).
    description : str or None, default None
        What :meth:`describe` returns.
    what : str, default "layers"
        The argument named in error messages.

    Raises
    ------
    TypeError
        If ``n`` is not an integer or ``causal`` or ``per_layer`` is not a bool.
    ValueError
        If there is no layer, ``per_layer=False`` gets several, a matrix is not ``n x n``, or a causal pattern attends
        to a later key.

    References
    ----------
    Dong et al. 2024, "Flex Attention: A Programming Model for Generating Optimized Attention Kernels", arXiv 2412.05496
    (``mask_mod``).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> previous = sp.csr_array(np.eye(4, k=-1, dtype=bool))  # query i attends to i - 1
    >>> pattern = CSRPattern(4, [previous], causal=True)
    >>> pattern.describe(), pattern.adjacency(1).nnz  # 3 edges plus the 4 queries themselves
    ('csr (1 layers)', 7)
    """

    name = "csr"

    def __init__(
        self,
        n: int,
        layers: Sequence,
        causal: bool = False,
        per_layer: bool = True,
        *,
        name: str | None = None,
        description: str | None = None,
        what: str = "layers",
    ):
        super().__init__(n, causal)
        per_layer = check_bool("per_layer", per_layer)
        layers = list(layers)
        if not layers:
            raise ValueError(f"{what}: expected at least one layer")
        if not per_layer and len(layers) != 1:
            raise ValueError(f"{what}: per_layer=False takes exactly one layer, got {len(layers)}")
        if name is not None:
            self.name = name
        self._description = description
        self._mats = [_with_self(_as_csr(layer, self.n, what), self.causal, what) for layer in layers]
        if per_layer:
            self.max_layers = len(self._mats)
        self._ops = [NeighbourOp(m.indptr.astype(np.int64), m.indices.astype(np.int64)) for m in self._mats]

    def layer_ops(self, layer: int) -> tuple[Op, ...]:
        layer = self._check_layer(layer)
        return (self._ops[layer - 1] if self.max_layers is not None else self._ops[0],)

    def adjacency(self, layer: int) -> sp.csr_array:
        """The stored ``n x n`` boolean CSR of layer ``layer`` (the query itself included), a copy."""
        layer = self._check_layer(layer)
        return (self._mats[layer - 1] if self.max_layers is not None else self._mats[0]).copy()

    def describe(self) -> str:
        if self._description is not None:
            return self._description
        depth = f"{self.max_layers} layers" if self.max_layers is not None else "every layer"
        return f"{self.name} ({depth})"


def _as_csr(layer, n: int, what: str) -> sp.csr_array:
    if isinstance(layer, NeighbourOp):
        op = NeighbourOp.from_csr(layer.indptr, layer.indices, n)
        data = np.ones(op.indices.size, dtype=bool)
        return sp.csr_array((data, op.indices, op.indptr), shape=(n, n))
    if sp.issparse(layer):
        if layer.shape != (n, n):
            raise ValueError(f"{what}: expected {n} x {n} matrices, got {layer.shape[0]} x {layer.shape[1]}")
        mat = sp.csr_array(layer).astype(bool)
        mat.eliminate_zeros()
        return mat
    raise ValueError(f"{what}: expected scipy.sparse matrices or graphs.ops.NeighbourOp, got {type(layer).__name__}")


def _with_self(mat: sp.csr_array, causal: bool, what: str) -> sp.csr_array:
    """``mat`` with its diagonal set, duplicates merged and rows sorted; the causal check first."""
    n = mat.shape[0]
    if causal:
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(mat.indptr))
        late = np.flatnonzero(mat.indices > rows)
        if late.size:
            q, kv = int(rows[late[0]]), int(mat.indices[late[0]])
            raise ValueError(f"{what}: a causal pattern cannot attend to a key after its query (query {q}, key {kv})")
    out = (mat + sp.eye_array(n, dtype=bool, format="csr")).tocsr()
    out.sum_duplicates()
    out.sort_indices()
    return out


# ---------------------------------------------------------------------------------------------------- from_mask_mod


def from_mask_mod(
    mask_mod: Callable | None,
    n: int,
    causal: bool = False,
    *,
    layers: Sequence[Callable] | None = None,
    heads: int = 1,
    max_memory: int | str = DEFAULT_MAX_MEMORY,
    block: int | None = None,
    device=None,
    name: str = "mask_mod",
) -> CSRPattern:
    """The receptive pattern of a FlexAttention ``mask_mod(b, h, q_idx, kv_idx) -> bool tensor``.

    Layer edge set: ``E = {(i, j) : OR_{h < heads} mask_mod(0, h, i, j)} ∪ {(i, i)}`` on ``0 <= i, j < n`` -- the
    mask exactly as ``torch.nn.attention.flex_attention.create_mask(mask_mod, 1, heads, n, n)`` computes it (the same
    ``torch.vmap`` over ``kv_idx`` and ``q_idx``, with the same ``tensor[index]`` translation), united over the heads,
    plus the diagonal: every receptive pattern includes the query itself (the residual path). ``layers``: a sequence
    of ``mask_mod`` s, one per layer (then pass ``mask_mod=None``; the pattern has ``len(layers)`` layers); a single
    ``mask_mod`` is the same layer at every depth.

    ``causal=True`` checks, it does not intersect: a ``mask_mod`` that lets a query see a later key is a
    ``ValueError`` naming the first such pair (a silent intersection would hide a mask that is not what its author
    thinks). For the causal part of a bidirectional mask, pass ``and_masks(causal_mask, mask_mod)``.

    The mask is evaluated ``block`` query rows x all ``n`` keys at a time: about ``WORK_BYTES_PER_PAIR * block * n``
    bytes of working memory (``block=None``: the largest block within a quarter of ``max_memory``), and the stored
    CSR takes ``CSR_BYTES_PER_ENTRY`` bytes per attended pair; a ``MemoryError`` naming ``max_memory`` is raised as
    soon as either would exceed it. Cost ``O(n^2)`` evaluations of ``mask_mod`` per layer and head. ``device``: where
    the index tensors live (that of the tensors the ``mask_mod`` closes over; default CPU).

    Parameters
    ----------
    mask_mod : callable or None
        ``mask_mod(b, h, q_idx, kv_idx) -> bool tensor``; ``None`` with ``layers``.
    n : int
        Tokens.
    causal : bool, default False
        Check that no query sees a later key.
    layers : sequence of callable or None, default None
        One ``mask_mod`` per layer.
    heads : int, default 1
        Heads evaluated (``h = 0 .. heads - 1``) and united.
    max_memory : int or str, default graphs.memory.DEFAULT_MAX_MEMORY
        Bytes (or a size such as ``"2GB"``) for the working block and the stored CSR.
    block : int or None, default None
        Query rows per evaluation block.
    device : torch.device or None, default None
        Device of the index tensors.
    name : str, default "mask_mod"
        The pattern's name.

    Returns
    -------
    CSRPattern
        One layer per ``mask_mod``, the query itself included.

    Raises
    ------
    TypeError
        If ``mask_mod`` (or an entry of ``layers``) is not callable, an integer argument is not an integer, or
        ``causal`` is not a bool.
    ValueError
        If both ``mask_mod`` and ``layers`` are given, the ``mask_mod`` fails under ``vmap`` or returns no bool
        tensor, or ``causal`` is violated.
    MemoryError
        If the working block or the CSR would exceed ``max_memory``.

    References
    ----------
    Dong et al. 2024, "Flex Attention: A Programming Model for Generating Optimized Attention Kernels", arXiv 2412.05496
    (``mask_mod``).

    Examples
    --------
    >>> band = from_mask_mod(lambda b, h, q_idx, kv_idx: (q_idx - kv_idx).abs() <= 1, 6)
    >>> band.describe(), band.adjacency(1).sum(axis=1).tolist()
    ('mask_mod (every layer)', [2, 3, 3, 3, 3, 2])
    >>> causal = from_mask_mod(None, 4, True, layers=[lambda b, h, q, kv: kv <= q, lambda b, h, q, kv: kv == q])
    >>> causal.max_layers, causal.adjacency(2).nnz  # layer 2 keeps each query to itself
    (2, 4)
    """
    torch = _torch("from_mask_mod")
    n = check_int("n", n, 1)
    causal = check_bool("causal", causal)
    heads = check_int("heads", heads, 1)
    max_memory = parse_bytes(max_memory)
    if layers is not None:
        if mask_mod is not None:
            raise ValueError("mask_mod: pass either one mask_mod or layers=[...], not both")
        if isinstance(layers, (str, bytes)) or not isinstance(layers, Sequence):
            raise TypeError("layers: expected a non-empty sequence of mask_mod callables, one per layer")
        if not layers:
            raise ValueError("layers: expected a non-empty sequence of mask_mod callables, one per layer")
        mods, per_layer = list(layers), True
        for k, mod in enumerate(mods):
            if not callable(mod):
                raise TypeError(f"layers: entry {k} is not callable ({type(mod).__name__}); expected a mask_mod")
    else:
        if not callable(mask_mod):
            raise TypeError(
                f"mask_mod: expected a callable mask_mod(b, h, q_idx, kv_idx), got {type(mask_mod).__name__}"
            )
        mods, per_layer = [mask_mod], False
    block = _mask_block(n, block, max_memory)
    what = "mask_mod" if layers is None else "layers"
    mats = [_evaluate(torch, mod, n, heads, causal, block, max_memory, what, device) for mod in mods]
    depth = f"{len(mods)} layers" if per_layer else "every layer"
    heads_text = f", union of {heads} heads" if heads > 1 else ""
    return CSRPattern(n, mats, causal, per_layer, name=name, description=f"{name} ({depth}{heads_text})", what=what)


def _mask_block(n: int, block: int | None, max_memory: int) -> int:
    if block is None:
        rows = max_memory // 4 // (WORK_BYTES_PER_PAIR * n)
        if rows < 1:
            raise MemoryError(
                f"max_memory: one query row of {n} keys needs about {WORK_BYTES_PER_PAIR * n} bytes of working memory, "
                f"more than a quarter of max_memory = {max_memory}"
            )
        return int(min(n, rows))
    block = check_int("block", block, 1, n)
    if WORK_BYTES_PER_PAIR * block * n > max_memory:
        raise MemoryError(
            f"max_memory: a block of {block} query rows x {n} keys needs about {WORK_BYTES_PER_PAIR * block * n} "
            f"bytes, more than max_memory = {max_memory}; use a smaller block"
        )
    return block


def _evaluate(torch, mask_mod, n, heads, causal, block, max_memory, what, device) -> sp.csr_array:
    """One layer's mask (union over heads, self added), block by block, as an ``n x n`` boolean CSR."""
    try:
        from torch._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex as getitem_to_index
    except ImportError:  # pragma: no cover - older or newer torch: create_mask's own context, if it moved
        from contextlib import nullcontext as getitem_to_index

    fn = torch.vmap(mask_mod, in_dims=(None, None, None, 0), out_dims=0)
    fn = torch.vmap(fn, in_dims=(None, None, 0, None), out_dims=0)
    b = torch.zeros((), dtype=torch.int64, device=device)
    kv = torch.arange(n, dtype=torch.int64, device=device)
    counts = np.zeros(n, dtype=np.int64)
    pieces: list[np.ndarray] = []
    stored = 0
    budget = max_memory - WORK_BYTES_PER_PAIR * block * n - 8 * (n + 1)
    for start in range(0, n, block):
        stop = min(n, start + block)
        q = torch.arange(start, stop, dtype=torch.int64, device=device)
        mask = torch.zeros((stop - start, n), dtype=torch.bool, device=device)
        for h in range(heads):
            with getitem_to_index():
                try:
                    out = fn(b, torch.tensor(h, dtype=torch.int64, device=device), q, kv)
                except Exception as err:  # the user's function failed under vmap: one line naming it
                    raise ValueError(
                        f"{what}: evaluating mask_mod(b, h, q_idx, kv_idx) under torch.vmap failed: "
                        f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
                    ) from err
            if not isinstance(out, torch.Tensor) or out.shape != mask.shape:
                shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
                raise ValueError(f"{what}: expected mask_mod to return a bool tensor of one element, got {shape}")
            if out.dtype != torch.bool:
                raise ValueError(f"{what}: expected mask_mod to return torch.bool, got {out.dtype}")
            mask |= out
        rows = torch.arange(stop - start, device=mask.device)
        if causal:
            late = torch.triu(mask, diagonal=start + 1).nonzero()
            if late.shape[0]:
                i, j = int(late[0, 0]) + start, int(late[0, 1])
                raise ValueError(
                    f"{what}: causal=True but mask_mod lets query {i} attend to the later key {j}; "
                    "wrap it as and_masks(causal_mask, mask_mod) for its causal part"
                )
        mask[rows, rows + start] = True  # the query itself (the residual path)
        counts[start:stop] = mask.sum(dim=1).cpu().numpy()
        cols = mask.nonzero()[:, 1].cpu().numpy().astype(np.int64)  # row-major: every row sorted
        stored += cols.size
        if CSR_BYTES_PER_ENTRY * stored > budget:
            raise MemoryError(
                f"max_memory: the mask holds at least {stored} pairs in its first {stop} of {n} query rows; its CSR "
                f"needs more than max_memory = {max_memory} bytes ({CSR_BYTES_PER_ENTRY} bytes per pair plus "
                "the working block)"
            )
        pieces.append(cols)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices = np.concatenate(pieces)
    return sp.csr_array((np.ones(indices.size, dtype=bool), indices, indptr), shape=(n, n))


# ------------------------------------------------------------------------------------------------------ to_mask_mod


def layer_pairs_bound(pattern: Pattern, layer: int) -> int:
    """An upper bound on the attended pairs of one layer from its operators, before any edge is built: the sum of
    the operators' ``pair_count`` where they have one, else ``n * min(size, n)`` for a window and the entries of a
    neighbour list; at most ``n^2``.

    Parameters
    ----------
    pattern : Pattern
        Any receptive pattern.
    layer : int
        The layer (1-based).

    Returns
    -------
    int
        At least the number of attended pairs of that layer, the query itself included.

    Examples
    --------
    >>> from receptive import make_pattern
    >>> swa = make_pattern("swa", 16, 3)
    >>> layer_pairs_bound(swa, 1) >= swa.adjacency(1).nnz
    True
    """
    n = pattern.n
    total = 0
    for op in pattern.layer_ops(layer):
        if hasattr(op, "pair_count"):
            total += int(op.pair_count(n))
        elif isinstance(op, NeighbourOp):
            total += op.indices.size
        elif isinstance(op, WindowOp):
            total += n * min(op.size, n)
        else:  # an operator this bound does not know: assume every pair
            total += n * n
    return min(total + n, n * n)


LOOKUPS = ("auto", "dense", "bits", "csr")


def to_mask_mod(
    pattern: Pattern,
    layer: int,
    *,
    lookup: str = "auto",
    device=None,
    max_memory: int | str = DEFAULT_MAX_MEMORY,
) -> Callable:
    """A FlexAttention ``mask_mod(b, h, q_idx, kv_idx)`` that is true exactly on layer ``layer`` of ``pattern``.

    ``mask_mod(b, h, i, j) = [i < n] and [j < n] and A_l[i, j]`` with ``A_l = pattern.adjacency(layer)`` (the query
    itself included, as in every receptive pattern), the same for every batch and head; use it with
    ``create_block_mask(mask_mod, B, H, n, n)`` / ``create_mask`` and ``flex_attention``. The adjacency is built
    once; the lookup is tensor operations only (no Python control flow on tensor values, no ``.item()``), so it
    works under ``torch.vmap`` and ``torch.compile``; indices outside ``0..n-1`` (kernel padding) are masked.

    ``lookup``: ``dense``, an ``n x n`` boolean table (``n^2`` bytes, one load); ``bits``, the same table packed in
    64-bit words, ``(T[i, j >> 6] >> (j & 63)) & 1`` (``n^2 / 8`` bytes, one load); ``csr``, a binary search of ``j``
    in the sorted CSR row of ``i`` in ``ceil(log2(max row + 1))`` fixed steps (``8 (n + 1 + pairs)`` bytes, as many
    dependent loads: fine eagerly and under ``vmap``, but far slower to compile into the fused CPU kernel than a
    table lookup); ``auto``: ``dense`` up to
    ``DENSE_TABLE_BYTES``, else ``bits`` within half of ``max_memory``, else ``csr``. ``device``: where the tables
    live (the device of the attention call). A ``MemoryError`` naming ``max_memory`` before anything is built if the
    adjacency (bounded from the layer's operators) and the table would not fit.

    Parameters
    ----------
    pattern : Pattern
        Any receptive pattern.
    layer : int
        The layer (1-based).
    lookup : str, default "auto"
        One of :data:`LOOKUPS`.
    device : torch.device or None, default None
        Where the tables live.
    max_memory : int or str, default graphs.memory.DEFAULT_MAX_MEMORY
        Bytes for the adjacency and the table.

    Returns
    -------
    callable
        ``mask_mod(b, h, q_idx, kv_idx) -> bool tensor``.

    Raises
    ------
    TypeError
        If ``pattern`` is not a Pattern.
    ValueError
        If ``layer`` is out of range or ``lookup`` is unknown.
    MemoryError
        If the lookup would exceed ``max_memory``.

    References
    ----------
    Dong et al. 2024, "Flex Attention: A Programming Model for Generating Optimized Attention Kernels", arXiv 2412.05496
    (``mask_mod``).

    Examples
    --------
    >>> import torch
    >>> from receptive import make_pattern
    >>> mask_mod = to_mask_mod(make_pattern("swa", 16, 3), 1, lookup="csr")
    >>> mask_mod.__name__, bool(mask_mod(0, 0, torch.tensor(5), torch.tensor(6)))
    ('receptive_swa_layer1', True)
    >>> bool(mask_mod(0, 0, torch.tensor(5), torch.tensor(8)))  # outside the window
    False
    """
    torch = _torch("to_mask_mod")
    if not isinstance(pattern, Pattern):
        raise TypeError(f"pattern: expected a receptive.patterns.Pattern, got {type(pattern).__name__}")
    layer = pattern._check_layer(layer)
    max_memory = parse_bytes(max_memory)
    if lookup not in LOOKUPS:
        raise ValueError(f"lookup: expected one of {', '.join(LOOKUPS)}, got {lookup!r}")
    n = pattern.n
    words = -(-n // 64)
    bound = layer_pairs_bound(pattern, layer)
    if lookup == "auto":
        lookup = "dense" if n * n <= DENSE_TABLE_BYTES else "bits" if 8 * n * words <= max_memory // 2 else "csr"
    table_bytes = {"dense": n * n, "bits": 8 * n * words, "csr": 8 * (n + 1 + bound)}[lookup]
    need = 32 * bound + table_bytes  # the adjacency's edges while it is built (2 x int64 and copies) + the table
    if need > max_memory:
        raise MemoryError(
            f"max_memory: layer {layer} of {pattern.describe()} has up to {bound} pairs; building its {lookup} "
            f"lookup needs about {need} bytes, more than max_memory = {max_memory}"
        )
    adj = pattern.adjacency(layer).tocsr()
    adj.sum_duplicates()
    adj.sort_indices()
    if lookup == "dense":
        table = torch.as_tensor(adj.toarray(), dtype=torch.bool, device=device)

        def mask_mod(b, h, q_idx, kv_idx):
            inside = (q_idx >= 0) & (q_idx < n) & (kv_idx >= 0) & (kv_idx < n)
            return inside & table[q_idx.clamp(0, n - 1), kv_idx.clamp(0, n - 1)]

    elif lookup == "bits":
        table = torch.as_tensor(_bit_rows(adj, words), device=device)

        def mask_mod(b, h, q_idx, kv_idx):
            inside = (q_idx >= 0) & (q_idx < n) & (kv_idx >= 0) & (kv_idx < n)
            kv = kv_idx.clamp(0, n - 1)
            word = table[q_idx.clamp(0, n - 1), kv // 64]
            return inside & (((word >> (kv % 64)) & 1) == 1)

    else:
        indptr = torch.as_tensor(adj.indptr.astype(np.int64), device=device)
        indices = torch.as_tensor(adj.indices.astype(np.int64), device=device)
        last = int(indices.numel()) - 1
        steps = max(1, int(np.diff(adj.indptr).max()).bit_length())

        def mask_mod(b, h, q_idx, kv_idx):
            inside = (q_idx >= 0) & (q_idx < n) & (kv_idx >= 0) & (kv_idx < n)
            q, kv = q_idx.clamp(0, n - 1), kv_idx.clamp(0, n - 1)
            lo, hi = indptr[q], indptr[q + 1]
            end = hi
            for _ in range(steps):  # lower_bound of kv in indices[lo:hi]; a fixed number of steps
                active = lo < hi
                mid = (lo + hi) // 2
                smaller = indices[mid.clamp(0, last)] < kv
                lo = torch.where(active & smaller, mid + 1, lo)
                hi = torch.where(active & ~smaller, mid, hi)
            return inside & (lo < end) & (indices[lo.clamp(0, last)] == kv)

    mask_mod.__name__ = f"receptive_{pattern.name}_layer{layer}".replace("+", "_").replace("-", "_")
    mask_mod.__doc__ = f"mask_mod of layer {layer} of {pattern.describe()} (n = {n}, {lookup} lookup)"
    return mask_mod


def _bit_rows(adj: sp.csr_array, words: int) -> np.ndarray:
    """Row ``i`` of ``adj`` as ``words`` int64 words, bit ``j % 64`` of word ``j // 64`` set for key ``j``."""
    n = adj.shape[0]
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(adj.indptr))
    cols = adj.indices.astype(np.int64)
    keys = rows * words + cols // 64  # non-decreasing: rows and the columns within a row are sorted
    bits = np.left_shift(np.uint64(1), (cols % 64).astype(np.uint64))
    table = np.zeros(n * words, dtype=np.uint64)
    if keys.size:
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        table[keys[starts]] = np.bitwise_or.reduceat(bits, starts)
    return table.view(np.int64).reshape(n, words)


def _torch(caller: str):
    try:
        import torch
    except ImportError as err:  # pragma: no cover - the CI installs torch
        raise ImportError(f"{caller}: needs torch (pip install torch>=2.5 for FlexAttention)") from err
    return torch
