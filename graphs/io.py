"""Loading real networks: edge-list CSV files (the FlyWire connections table and the like) and GraphML.

The FlyWire whole-brain connectome [1]_ ships its synapse table as CSV with columns ``pre_root_id, post_root_id,
neuropil, syn_count, nt_type``: one row per (pre, post, neuropil), so the rows of a neuron pair are summed before
thresholding, and the usual graph keeps pairs with ``>= 5`` synapses [2]_::

    graph, ids = load_edge_list("connections.csv.gz", weight="syn_count", threshold=5)

References
----------
.. [1] S. Dorkenwald et al., "Neuronal wiring diagram of an adult brain", Nature 634, 124-138 (2024).
.. [2] P. Schlegel et al., "Whole-brain annotation and multi-connectome cell typing of Drosophila", Nature 634,
   139-152 (2024).
"""

from __future__ import annotations

import csv
import gzip
import os
from pathlib import Path

import numpy as np

from .graph import Graph
from .validation import check_bool, check_choice, check_real

#: a networkx (Di)Graph as a :class:`Graph`, nodes numbered in ``list(graph.nodes)`` order
from_networkx = Graph.from_networkx


def _resolve_column(kind: str, name, header: list[str], path: Path) -> int:
    """Index of column ``name``: an exact match, else the only column that starts with ``name`` (``pre`` finds
    ``pre_root_id``)."""
    if not isinstance(name, str):
        raise TypeError(f"{kind}: expected a column name (a string), got {name!r} ({type(name).__name__})")
    if not name:
        raise ValueError(f"{kind}: expected a column name (a non-empty string), got {name!r}")
    if name in header:
        return header.index(name)
    matches = [i for i, col in enumerate(header) if col.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    why = "no column" if not matches else f"{len(matches)} columns"
    raise ValueError(f"{kind}: {why} of {path} named or starting with {name!r}; columns are {', '.join(header)}")


#: the default column names, and the columns they mean in a plain file without a header (FlyWire's and SNAP's order)
_PLAIN_DEFAULTS = {"pre": 0, "post": 1}


def _plain_column(kind: str, name) -> int:
    """A column of a header-less file: a number (``2`` or ``"2"``), or a default name (``pre`` 0, ``post`` 1)."""
    if isinstance(name, str) and name in _PLAIN_DEFAULTS and kind != "weight":
        return _PLAIN_DEFAULTS[name]
    if isinstance(name, str) and name.strip().isdigit():
        return int(name)
    if isinstance(name, int | np.integer) and not isinstance(name, bool) and name >= 0:
        return int(name)
    if not isinstance(name, str | int | np.integer) or isinstance(name, bool):
        raise TypeError(f"{kind}: expected a column number or name, got {name!r} ({type(name).__name__})")
    raise ValueError(f"{kind}: a plain edge list has no header; expected a column number >= 0, got {name!r}")


def load_edge_list(
    path,
    *,
    source: str | int = "pre",
    target: str | int = "post",
    weight: str | int | None = None,
    threshold: float | None = None,
    directed: bool = True,
    format: str = "auto",
    engine: str = "auto",
) -> tuple[Graph, np.ndarray]:
    """A graph from an edge list (plain or ``.gz``): one edge ``source -> target`` per row.

    Two formats (``format="auto"`` tells them apart by the first line that is not blank):

    * ``csv``: comma-separated with a header row (FlyWire's connections table). Columns are found by exact name,
      else as the only column starting with the name: the defaults ``pre`` / ``post`` find FlyWire's
      ``pre_root_id`` / ``post_root_id`` (the CLI ``python -m graphs.smallworld --edges`` has the same defaults).
    * ``plain``: whitespace-separated, ``#`` comments, no header (the SNAP format). Columns are numbers from 0;
      the default names mean columns 0 (``pre``) and 1 (``post``). ``auto`` picks it when the first line starts
      with ``#`` or has no comma.

    Node ids may be any integers or strings; they are renumbered ``0..n-1`` in order of first appearance in the
    file (row by row, source before target), counting only nodes of kept edges, and returned as the second value
    (``ids[u]`` = original id of node ``u``; int64 when every id is an integer literal, else strings; a column the
    fast readers parse as integers is read as integers, so leading zeros are not significant there).

    With ``weight``, that column must be numeric; rows of the same ordered pair are summed (FlyWire lists each
    pair once per neuropil), and with ``threshold`` only pairs whose summed weight is ``>= threshold`` are kept
    (FlyWire's convention is ``>= 5`` synapses). ``directed=False`` thresholds the ordered pairs, then returns the
    underlying undirected graph (``u - v`` when either direction is kept). Self-loops are dropped.

    ``engine``: ``numba`` (csv only: the toolkit's reader of integer ids and plain numeric weights, the fastest;
    a file outside that grammar, e.g. text ids or quoted fields, goes to ``python``), ``pyarrow`` (csv only),
    ``pandas``, ``python`` (the standard library, always available, slow) or ``auto`` (``numba`` for csv files
    it can read, else the fastest installed; all give the same graph). pandas and pyarrow are optional (the
    ``bench`` extra installs them).

    Parameters
    ----------
    path : str or os.PathLike
        The edge list, optionally gzip-compressed.
    source, target : str or int, optional
        The columns of the edges' end points: names (csv) or numbers from 0 (plain).
    weight : str or int or None, optional
        A numeric column summed per ordered pair.
    threshold : float or None, optional
        Keep the pairs whose summed weight is ``>= threshold`` (needs ``weight``).
    directed : bool, optional
        ``False``: return the underlying undirected graph.
    format : {"auto", "csv", "plain"}, optional
        The file's format.
    engine : {"auto", "numba", "pyarrow", "pandas", "python"}, optional
        The reader.

    Returns
    -------
    graph : Graph
        Nodes renumbered ``0..n-1`` in order of first appearance.
    ids : numpy.ndarray
        ``ids[u]``: the original id of node ``u`` (int64, or strings).

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    TypeError
        If an argument has the wrong type (``path`` not a path, a column not a name or number, ``threshold`` not
        a real number, ``directed`` not a bool).
    ValueError
        Naming the argument: a missing column, a non-numeric or non-finite weight, a ``threshold`` without
        ``weight``, an unknown ``format`` or ``engine``, a malformed row, or no edges left.

    References
    ----------
    - S. Dorkenwald et al., "Neuronal wiring diagram of an adult brain", Nature 634, 124-138 (2024).
    - J. Leskovec and A. Krevl, "SNAP Datasets: Stanford large network dataset collection" (2014),
      https://snap.stanford.edu/data (the plain format).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder) / "connections.csv"
    ...     _ = path.write_text("pre_root_id,post_root_id,syn_count\\n7,9,3\\n7,9,4\\n9,8,2\\n")
    ...     graph, ids = load_edge_list(path, weight="syn_count", threshold=5)
    >>> graph.edges, ids.tolist()
    (1, [7, 9])
    """
    from . import edge_csr, edgelist

    if threshold is not None:
        if weight is None:
            raise ValueError("threshold: needs a weight column (weight=None)")
        threshold = check_real("threshold", threshold)
    directed = check_bool("directed", directed)
    fmt = check_choice("format", format, edgelist.FORMATS)
    engine = check_choice("engine", engine, edgelist.ENGINES)
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path: expected a file name, got {type(path).__name__}")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"path: {str(path)!r} is a folder; expected a file")
    if not path.is_file():
        raise FileNotFoundError(f"path: no such file {str(path)!r}")
    if engine != "auto" and not edgelist.available(engine):
        raise ValueError(f"engine: {engine} is not installed (pip install {engine}, or engine='auto')")
    try:
        line = edgelist.first_line(path)
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise ValueError(f"path: {path} is not a text edge list ({exc})") from None
    if line is None:
        raise ValueError(f"path: {path} is empty (expected a header row naming the columns, or edges)")
    if fmt == "auto":
        fmt = edgelist.sniff(line)
    if fmt == "csv":
        header = [col.strip() for col in next(csv.reader([line]))]
        cols = [_resolve_column("source", source, header, path), _resolve_column("target", target, header, path)]
        if weight is not None:
            cols.append(_resolve_column("weight", weight, header, path))
        names = [header[c] for c in cols]
    else:
        if engine in ("numba", "pyarrow"):
            raise ValueError(f"engine: {engine} reads csv only; use pandas or python for a plain edge list")
        cols = [_plain_column("source", source), _plain_column("target", target)]
        if weight is not None:
            cols.append(_plain_column("weight", weight))
        header = names = [f"column {c}" for c in cols]
    if len(set(cols[:2])) < 2:
        raise ValueError(f"target: the same column as source ({names[0]})")
    is_id = [True, True, False][: len(cols)]
    try:
        columns = edgelist.read_columns(path, fmt, cols, names, is_id, engine, len(header))
    except UnicodeDecodeError as exc:
        raise ValueError(f"path: {path} is not a text edge list ({exc})") from None
    src, dst = columns[0], columns[1]
    if src.size == 0:
        raise ValueError(f"path: no edges in {path}")
    values = None
    if weight is not None:
        bad = edgelist.first_bad_number(columns[2])
        if bad is not None:
            raise ValueError(
                f"weight: column {names[2]!r} of {path} must hold finite numbers; data row {bad + 1} has "
                f"{str(columns[2][bad])!r}"
            )
        values = columns[2].astype(np.float64, copy=False)
    if src.dtype.kind not in "iu" or dst.dtype.kind not in "iu":
        src, dst = src.astype(str), dst.astype(str)  # text ids (one column of integers and one of text: as text)
        for name, ids in ((names[0], src), (names[1], dst)):
            empty = np.flatnonzero(np.char.str_len(ids) == 0)  # a row cut short (a killed write) or a missing id
            if empty.size:
                raise ValueError(f"path: column {name!r} of {path} has no id in data row {int(empty[0]) + 1}")
    u, v, uniques = edge_csr.factorize_pairs(src, dst)
    indptr, indices, used = edge_csr.aggregate(uniques.size, u, v, values, threshold)
    if indices.size == 0:
        what = f" with summed {names[2]} >= {threshold}" if threshold is not None else ""
        raise ValueError(f"path: no edges{what} in {path} (self-loops are dropped)")
    ids = edge_csr.as_ids(uniques[used])
    graph = Graph._trusted(int(used.sum()), indptr, indices, True)
    return (graph.undirected() if not directed else graph), ids


def load_graphml(path) -> Graph:
    """Load a graph from a GraphML file via ``networkx.read_graphml``.

    Nodes are numbered in the file's node order; the graph is directed when the file's ``edgedefault`` is.
    Parallel edges collapse and self-loops are dropped.

    Parameters
    ----------
    path : str or os.PathLike
        The GraphML file.

    Returns
    -------
    Graph

    Raises
    ------
    TypeError
        If ``path`` is not a path.
    FileNotFoundError
        If ``path`` is not a file.
    ValueError
        If the file is not readable GraphML or holds no nodes.

    References
    ----------
    - U. Brandes et al., "GraphML progress report: structural layer proposal", Graph Drawing 2001, LNCS 2265,
      501-512.

    Examples
    --------
    >>> import pathlib, tempfile, networkx as nx
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder) / "ring.graphml"
    ...     nx.write_graphml(nx.cycle_graph(5), path)
    ...     load_graphml(path).edges
    5
    """
    import networkx as nx

    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path: expected a file name, got {type(path).__name__}")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"path: {str(path)!r} is a folder; expected a file")
    if not path.is_file():
        raise FileNotFoundError(f"path: no such file {str(path)!r}")
    try:
        graph = nx.read_graphml(path)
    except Exception as exc:  # networkx raises NetworkXError or an XML parse error
        raise ValueError(f"path: {path} is not a readable GraphML file ({exc})") from exc
    if graph.number_of_nodes() == 0:
        raise ValueError(f"path: {path} holds a graph with no nodes")
    return from_networkx(graph)
