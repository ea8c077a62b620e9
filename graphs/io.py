"""Loading real networks: edge-list CSV files (the FlyWire connections table and the like) and GraphML.

The FlyWire whole-brain connectome (Dorkenwald et al. 2024, Nature 634, 124) ships its synapse table as CSV with
columns ``pre_root_id, post_root_id, neuropil, syn_count, nt_type``: one row per (pre, post, neuropil), so the rows
of a neuron pair are summed before thresholding, and the usual graph keeps pairs with ``>= 5`` synapses::

    graph, ids = load_edge_list("connections.csv.gz", weight="syn_count", threshold=5)
"""

from __future__ import annotations

import csv
import gzip
import math
import numbers
from pathlib import Path

import numpy as np

from .graph import Graph

#: re-exported: a networkx (Di)Graph as a :class:`Graph`, nodes numbered in ``list(graph.nodes)`` order
from_networkx = Graph.from_networkx


def _resolve_column(kind: str, name, header: list[str], path: Path) -> int:
    """Index of column ``name``: an exact match, else the only column that starts with ``name`` (``pre`` finds
    ``pre_root_id``)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"{kind}: expected a column name (a non-empty string), got {name!r}")
    if name in header:
        return header.index(name)
    matches = [i for i, col in enumerate(header) if col.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    why = "no column" if not matches else f"{len(matches)} columns"
    raise ValueError(f"{kind}: {why} of {path} named or starting with {name!r}; columns are {', '.join(header)}")


def _open_text(path: Path):
    return gzip.open(path, "rt", newline="") if path.suffix == ".gz" else open(path, newline="")


def _as_ids(values: np.ndarray) -> np.ndarray:
    """Node ids as int64 when every one is an integer literal, else as strings."""
    try:
        ints = values.astype(np.int64)
    except (ValueError, OverflowError):
        return values
    # distinct strings such as "7" and "07" must stay distinct ids
    return ints if np.unique(ints).size == ints.size else values


def load_edge_list(
    path,
    *,
    source: str = "pre",
    target: str = "post",
    weight: str | None = None,
    threshold: float | None = None,
    directed: bool = True,
) -> tuple[Graph, np.ndarray]:
    """A graph from a CSV edge list with a header row (plain or ``.gz``): one edge ``source -> target`` per row.

    Columns are found by exact name, else as the only column starting with the name (``source="pre"`` finds
    FlyWire's ``pre_root_id``). Node ids may be any integers or strings; they are renumbered ``0..n-1`` in order
    of first appearance in the file (row by row, source before target), counting only nodes of kept edges, and
    returned as the second value (``ids[u]`` = original id of node ``u``; int64 when every id is an integer
    literal, else strings).

    With ``weight``, that column must be numeric; rows of the same ordered pair are summed (FlyWire lists each
    pair once per neuropil), and with ``threshold`` only pairs whose summed weight is ``>= threshold`` are kept
    (FlyWire's convention is ``>= 5`` synapses). ``directed=False`` thresholds the ordered pairs, then returns the
    underlying undirected graph (``u - v`` when either direction is kept). Self-loops are dropped.

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` naming the argument for a missing column, a
    non-numeric or non-finite weight, a ``threshold`` without ``weight``, a malformed row, or no edges left.
    """
    if threshold is not None:
        if weight is None:
            raise ValueError("threshold: needs a weight column (weight=None)")
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or not math.isfinite(threshold):
            raise ValueError(f"threshold: expected a finite real number, got {threshold!r}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no such file {str(path)!r}")
    with _open_text(path) as handle:
        reader = csv.reader(handle)
        header = [col.strip() for col in next(reader, [])]
        if not header or header == [""]:
            raise ValueError(f"path: {path} is empty (expected a header row naming the columns)")
        cols = [_resolve_column("source", source, header, path), _resolve_column("target", target, header, path)]
        if weight is not None:
            cols.append(_resolve_column("weight", weight, header, path))
        fields = [[] for _ in cols]
        for row in reader:
            if not row:
                continue
            try:
                for field, col in zip(fields, cols, strict=True):
                    field.append(row[col])
            except IndexError:
                raise ValueError(
                    f"path: line {reader.line_num} of {path} has {len(row)} fields, expected {len(header)}"
                ) from None
    src = np.char.strip(np.array(fields[0], dtype=str))
    dst = np.char.strip(np.array(fields[1], dtype=str))
    keep = np.ones(src.size, dtype=bool)
    if weight is not None:
        text = np.char.strip(np.array(fields[2], dtype=str))
        try:
            values = text.astype(np.float64) if text.size else np.empty(0)
        except ValueError:
            values = None
        if values is None or not np.all(np.isfinite(values)):
            bad = next(k for k, t in enumerate(text.tolist()) if not _is_finite_number(t))
            raise ValueError(
                f"weight: column {header[cols[2]]!r} of {path} must hold finite numbers; data row {bad + 1} has "
                f"{str(text[bad])!r}"
            )
    # number every id by first appearance (row by row, source then target)
    both = np.column_stack([src, dst]).ravel()
    uniq, first, inverse = np.unique(both, return_index=True, return_inverse=True)
    rank = np.empty(uniq.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(uniq.size)
    order = rank[inverse.ravel()].reshape(-1, 2)
    u, v = order[:, 0], order[:, 1]
    if weight is not None:
        pair = u * uniq.size + v
        pairs, pair_of_row = np.unique(pair, return_inverse=True)
        total = np.bincount(pair_of_row.ravel(), weights=values, minlength=pairs.size)
        if threshold is not None:
            keep = (total >= threshold)[pair_of_row.ravel()]
    keep &= u != v
    if not keep.any():
        what = f" with summed {header[cols[2]]} >= {threshold}" if threshold is not None else ""
        raise ValueError(f"path: no edges{what} in {path} (self-loops are dropped)")
    u, v = u[keep], v[keep]
    # renumber the nodes of kept edges, keeping their order of first appearance
    used = np.zeros(uniq.size, dtype=bool)
    used[u] = True
    used[v] = True
    new = np.cumsum(used) - 1
    ids = _as_ids(uniq[np.argsort(rank)][used])
    graph = Graph.from_edges(int(used.sum()), new[u], new[v], directed=bool(directed))
    return graph, ids


def _is_finite_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def load_graphml(path) -> Graph:
    """A graph from a GraphML file via ``networkx.read_graphml``; nodes numbered in the file's node order, directed
    when the file's ``edgedefault`` is directed. Parallel edges collapse and self-loops are dropped."""
    import networkx as nx

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no such file {str(path)!r}")
    try:
        graph = nx.read_graphml(path)
    except Exception as exc:  # networkx raises NetworkXError or an XML parse error
        raise ValueError(f"path: {path} is not a readable GraphML file ({exc})") from exc
    if graph.number_of_nodes() == 0:
        raise ValueError(f"path: {path} holds a graph with no nodes")
    return from_networkx(graph)
