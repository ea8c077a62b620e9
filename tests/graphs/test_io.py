"""Edge-list loading: every format (CSV with a header, plain SNAP-style, gzip), every engine (pyarrow, pandas,
the standard library) against a slow dictionary oracle, and one-line errors for bad files."""

import gzip

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphs.edgelist import available
from graphs.io import load_edge_list

ENGINES = [e for e in ("numba", "pyarrow", "pandas", "python") if available(e)]


def oracle(rows, threshold=None):
    """Rows ``(src, dst, w)`` of id strings -> (ids in order, set of (src id, dst id)), straight from the
    definition: ids by first appearance, weights summed per ordered pair, kept if >= threshold, no self-loops."""
    order = {}
    for s, d, _ in rows:
        order.setdefault(s, len(order))
        order.setdefault(d, len(order))
    total = {}
    for s, d, w in rows:
        total[(s, d)] = total.get((s, d), 0.0) + w
    kept = {p for p, w in total.items() if p[0] != p[1] and (threshold is None or w >= threshold)}
    used = sorted({x for p in kept for x in p}, key=order.get)
    return used, kept


def loaded_edges(graph, ids):
    rows = np.repeat(np.arange(graph.n), graph.out_degree)
    return {(str(ids[a]), str(ids[b])) for a, b in zip(rows.tolist(), graph.indices.tolist(), strict=True)}


ids_strategy = st.one_of(
    st.integers(0, 2**62).map(str),
    st.sampled_from(["a", "b", "node_7", "x y"]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.integers(1, 9)), min_size=1, max_size=30),
    labels=st.lists(st.integers(0, 2**62), min_size=8, max_size=8, unique=True),
    strings=st.booleans(),
    threshold=st.one_of(st.none(), st.integers(1, 12)),
    plain=st.booleans(),
)
def test_engines_match_the_oracle(tmp_path_factory, rows, labels, strings, threshold, plain):
    names = [f"n{x}" for x in labels] if strings else [str(x) for x in labels]
    table = [(names[s], names[d], float(w)) for s, d, w in rows]
    used, kept = oracle(table, threshold)
    folder = tmp_path_factory.mktemp("edges")
    if plain:
        path = folder / "edges.txt"
        path.write_text("# a comment\n" + "".join(f"{s}\t{d}  {int(w)}\n" for s, d, w in table))
        kwargs = dict(weight="2")
    else:
        path = folder / "edges.csv"
        path.write_text("pre_root_id,post_root_id,syn_count\n" + "".join(f"{s},{d},{int(w)}\n" for s, d, w in table))
        kwargs = dict(weight="syn_count")
    for engine in ENGINES:
        if plain and engine in ("numba", "pyarrow"):
            continue
        if not kept:
            with pytest.raises(ValueError, match=r"^path: no edges"):
                load_edge_list(path, threshold=threshold, engine=engine, **kwargs)
            continue
        graph, ids = load_edge_list(path, threshold=threshold, engine=engine, **kwargs)
        assert [str(x) for x in ids] == used, engine
        assert ids.dtype == (np.dtype(str) if strings else np.int64) or ids.dtype.kind == ("U" if strings else "i")
        assert loaded_edges(graph, ids) == kept, engine
        assert graph.directed


SNAP = """# Directed graph (each unordered pair of nodes is saved once): Example.txt
# Nodes: 4 Edges: 5
# FromNodeId\tToNodeId
0\t1
0\t2
1\t2

2\t0   # trailing comment
3 3
2 3
"""


@pytest.mark.parametrize("engine", ["auto", *[e for e in ENGINES if e not in ("numba", "pyarrow")]])
def test_plain_snap_file(tmp_path, engine):
    path = tmp_path / "example.txt"
    path.write_text(SNAP)
    graph, ids = load_edge_list(path, engine=engine)
    np.testing.assert_array_equal(ids, [0, 1, 2, 3])
    assert loaded_edges(graph, ids) == {("0", "1"), ("0", "2"), ("1", "2"), ("2", "0"), ("2", "3")}
    gz = tmp_path / "example.txt.gz"
    with gzip.open(gz, "wt") as handle:
        handle.write(SNAP)
    graph_gz, _ = load_edge_list(gz, engine=engine, directed=False)
    assert not graph_gz.directed and graph_gz.edges == 4
    same, _ = load_edge_list(path, source=0, target=1, format="plain", engine=engine)
    assert np.array_equal(same.indices, graph.indices)
    swapped, ids2 = load_edge_list(path, source="1", target="0", engine=engine)
    assert loaded_edges(swapped, ids2) == {(b, a) for a, b in loaded_edges(graph, ids)}


@pytest.mark.parametrize("engine", ENGINES)
def test_csv_gz_and_defaults_agree_with_the_cli(tmp_path, engine):
    """The API's defaults pre/post find FlyWire's columns, and the CLI without --source / --target reads the same."""
    from graphs.smallworld.cli import build_graph, build_parser

    text = "pre_root_id,post_root_id,neuropil,syn_count\n11,12,AL,3\n11,12,MB,4\n12,13,AL,2\n"
    gz = tmp_path / "c.csv.gz"
    with gzip.open(gz, "wt") as handle:
        handle.write(text)
    graph, ids = load_edge_list(gz, weight="syn", threshold=5, engine=engine)
    assert ids.tolist() == [11, 12] and loaded_edges(graph, ids) == {("11", "12")}
    cli_graph, _ = build_graph(build_parser().parse_args(["--edges", str(gz), "--weight", "syn", "--threshold", "5"]))
    assert (cli_graph.n, cli_graph.indptr.tolist(), cli_graph.indices.tolist()) == (
        graph.n,
        graph.indptr.tolist(),
        graph.indices.tolist(),
    )


def write(tmp_path, text, name="edges.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("engine", ["auto", *ENGINES])
def test_bad_files_give_one_line_naming_the_argument(tmp_path, engine):
    def fails(match, path, **kwargs):
        if engine in ("numba", "pyarrow") and (kwargs.get("format") == "plain" or path.suffix == ".txt"):
            match = f"^engine: {engine} reads csv only"  # a plain file (or an explicit format) it cannot read
        with pytest.raises(ValueError, match=match) as info:
            load_edge_list(path, engine=engine, **kwargs)
        assert "\n" not in str(info.value)

    fails(r"^path: line 3 .* 1 fields", write(tmp_path, "pre,post\n1,2\n3\n"))
    fails(r"^weight: .*'many'", write(tmp_path, "pre,post,syn\n1,2,3\n2,3,many\n"), weight="syn")
    fails(r"^weight: .*data row 1", write(tmp_path, "pre,post,syn\n1,2,inf\n"), weight="syn")
    fails(r"^source: no column", write(tmp_path, "a,b\n1,2\n"))
    fails(r"^path: .* is empty", write(tmp_path, "\n\n"))
    fails(r"^path: no edges", write(tmp_path, "# only comments\n", "c.txt"))
    fails(r"^path: line 2 .* 1 fields", write(tmp_path, "1 2\n3\n", "short.txt"))
    fails(r"^source: a plain edge list has no header", write(tmp_path, "1 2\n", "p.txt"), source="from")
    fails(r"^target: the same column", write(tmp_path, "1 2\n", "p.txt"), source=1, target="1")
    fails(r"^path: .* not a text edge list", write_bytes(tmp_path, b"\xff\xfe\x00\x81pre,post\n"))


def write_bytes(tmp_path, data):
    path = tmp_path / "binary.csv"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("kwargs", "name", "error"),
    [
        (dict(format="tsv"), "format", ValueError),
        (dict(format=None), "format", TypeError),
        (dict(engine="polars"), "engine", ValueError),
        (dict(directed="yes"), "directed", TypeError),
        (dict(threshold=5), "threshold", ValueError),
        (dict(weight="pre", threshold="5"), "threshold", TypeError),
        (dict(source=3.5), "source", TypeError),
        (dict(source=""), "source", ValueError),
    ],
)
def test_bad_arguments(tmp_path, kwargs, name, error):
    with pytest.raises(error, match=f"^{name}:"):
        load_edge_list(write(tmp_path, "pre,post\n1,2\n"), **kwargs)
    with pytest.raises(TypeError, match=r"^path:"):
        load_edge_list(12)


def test_without_pandas_or_pyarrow(tmp_path, monkeypatch):
    """The numpy fallbacks (standard-library reader, ``numpy.unique`` numbering) give the same graph."""
    import graphs.edge_csr as edge_csr
    import graphs.edgelist as edgelist

    path = write(tmp_path, "src,dst,w\nb,a,1\na,c,2.5\n c ,b,1e1\n\n07,7,1\n")
    fast = load_edge_list(path, source="src", target="dst", weight="w", threshold=2)
    for module in (edgelist, edge_csr):  # the readers, and the numbering of text ids
        monkeypatch.setattr(module, "available", lambda engine: engine == "python")
    slow = load_edge_list(path, source="src", target="dst", weight="w", threshold=2)
    assert slow[1].tolist() == fast[1].tolist() == ["b", "a", "c"]
    assert np.array_equal(slow[0].indptr, fast[0].indptr) and np.array_equal(slow[0].indices, fast[0].indices)
    with pytest.raises(ValueError, match=r"^engine: pandas is not installed"):
        load_edge_list(path, source="src", target="dst", engine="pandas")


@pytest.mark.parametrize("engine", ENGINES)
def test_ids_beyond_int64_stay_exact(tmp_path, engine):
    """Ids above 2**63 - 1 (unsigned 64-bit) are kept as text, never wrapped to negative integers."""
    big = 2**64 - 5
    graph, ids = load_edge_list(write(tmp_path, f"pre,post\n{big},1\n1,{big - 1}\n"), engine=engine)
    assert ids.tolist() == [str(big), "1", str(big - 1)] and graph.edges == 2


@pytest.mark.parametrize("engine", ENGINES)
def test_integer_and_text_columns_compare_as_text(tmp_path, engine):
    """A source column of integers and a target column of text: 7 and "7" are one node."""
    graph, ids = load_edge_list(write(tmp_path, "pre,post\n7,x\n8,7\n"), engine=engine)
    assert ids.tolist() == ["7", "x", "8"] and loaded_edges(graph, ids) == {("7", "x"), ("8", "7")}


# ------------------------------------------------------------------------------------------ the numba reader


def slow_rows(text, cols):
    """Data rows of a CSV text with a header, straight from the definition: split lines and commas, skip blank
    lines, ids as Python ints, weight as float."""
    rows = []
    for line in text.splitlines()[1:]:
        if not line:
            continue
        fields = line.split(",")
        rows.append((int(fields[cols[0]]), int(fields[cols[1]]), float(fields[cols[2]]) if len(cols) > 2 else 1.0))
    return rows


big_ids = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(2**63 - 40, 2**63 - 1),
    st.integers(-(2**63), -(2**63) + 40),
    st.integers(-3, 40),
)
weights = st.one_of(
    st.integers(0, 10**6).map(str),
    st.integers(-50, 50).map(str),
    st.decimals(min_value=-1000, max_value=1000, places=3, allow_nan=False, allow_infinity=False).map(str),
    st.sampled_from(["0.1", "2.5", "0", "-0", "000012", "7.", "123456789012345"]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pool=st.lists(big_ids, min_size=1, max_size=8, unique=True),
    rows=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), weights), min_size=0, max_size=40),
    threshold=st.one_of(st.none(), st.integers(-5, 12), st.floats(-5, 12)),
    order=st.sampled_from([(0, 1, 2), (1, 0, 2), (2, 0, 1), (0, 2, 3)]),
    ncols=st.integers(4, 5),
    blank=st.lists(st.integers(0, 40), max_size=3),
    crlf=st.booleans(),
    final_newline=st.booleans(),
    parts=st.integers(1, 5),
    rows_per_byte=st.sampled_from([None, 0.0, 1.0]),
)
def test_numba_reader_matches_the_oracle(
    tmp_path_factory, pool, rows, threshold, order, ncols, blank, crlf, final_newline, parts, rows_per_byte
):
    """The numba reader against a slow line-by-line oracle, pieces cut anywhere (``parts``), rows placed by an
    estimate or (``rows_per_byte=0``: 16 rows a piece) by a count after an overflow, then the whole load
    against the dictionary oracle: ids near 2**63 and -2**63, self-loops, repeated pairs, decimal weights,
    blank lines, CRLF, no final newline, empty tables."""
    from graphs.csv_reader import _numba_csv

    cs, cd, cw = order
    lines = []
    for s, d, w in rows:
        fields = ["AL_R"] * ncols
        fields[cs], fields[cd], fields[cw] = str(pool[s % len(pool)]), str(pool[d % len(pool)]), w
        lines.append(",".join(fields))
    for at in blank:
        lines.insert(min(at, len(lines)), "")
    end = "\r\n" if crlf else "\n"
    header = ",".join(f"c{k}" for k in range(ncols))
    text = end.join([header, *lines]) + (end if final_newline else "")
    path = tmp_path_factory.mktemp("numba") / "edges.csv"
    path.write_bytes(text.encode())
    got = _numba_csv(path, [cs, cd, cw], ncols, parts=parts, rows_per_byte=rows_per_byte)  # 0: rows overflow
    want = slow_rows(text.replace("\r\n", "\n"), [cs, cd, cw])
    assert got is not None
    assert got[0].tolist() == [r[0] for r in want] and got[1].tolist() == [r[1] for r in want]
    assert got[2].tolist() == [r[2] for r in want]  # exactly float(text): correctly rounded
    table = [(str(s), str(d), w) for s, d, w in want]
    used, kept = oracle(table, threshold)
    if not kept:
        with pytest.raises(ValueError, match=r"^path: no edges"):
            load_edge_list(path, source=f"c{cs}", target=f"c{cd}", weight=f"c{cw}", threshold=threshold)
        return
    graph, ids = load_edge_list(path, source=f"c{cs}", target=f"c{cd}", weight=f"c{cw}", threshold=threshold)
    assert ids.dtype == np.int64 and [str(x) for x in ids] == used
    assert loaded_edges(graph, ids) == kept
    slow, slow_ids = load_edge_list(
        path, source=f"c{cs}", target=f"c{cd}", weight=f"c{cw}", threshold=threshold, engine="python"
    )
    assert np.array_equal(slow.indptr, graph.indptr) and np.array_equal(slow.indices, graph.indices)
    assert slow_ids.tolist() == ids.tolist()


@pytest.mark.parametrize(
    "data",
    [
        'a,b,w\n1,2,3\n"4",5,6\n',  # a quote
        "a,b,w\n1,2,3\n4, 5,6\n",  # a space
        "a,b,w\n1,2,3\n4,5\n",  # a short row
        "a,b,w\n1,2,3\n4,5,6,7\n",  # a long row
        "a,b,w\n1,2,3\n4,x,6\n",  # a text id
        "a,b,w\n1,2,3\n4,5,1e3\n",  # an exponent
        "a,b,w\n1,2,3\n4,5,\n",  # an empty weight
        "a,b,w\n1,,3\n",  # an empty id
        "a,b,w\n9223372036854775808,2,3\n",  # beyond int64
        "a,b,w\n-9223372036854775809,2,3\n",
        "a,b,w\n+1,2,3\n",
        "a,b,w\n1,2,1234567890123456\n",  # 16 digits: float(text) might not be m / 10**k
        "a,b,w\n1,2,3\r4,5,6\n",  # a lone carriage return
        "a,b,w\n1,2,nan\n",
        '"a",b,w\n1,2,3\n',  # a quoted header
    ],
)
def test_numba_reader_hands_other_files_on(tmp_path, data):
    """Outside its grammar the numba reader returns None (the other readers judge), and load_edge_list gives what
    the standard library gives: the same graph or the same one-line error."""
    from graphs.csv_reader import _numba_csv

    path = tmp_path / "odd.csv"
    path.write_bytes(data.encode())
    for parts in (1, 2, 3):
        assert _numba_csv(path, [0, 1, 2], 3, parts=parts) is None
    outcomes = []
    for engine in ("numba", "auto", "python"):
        try:
            graph, ids = load_edge_list(path, source="a", target="b", weight="w", engine=engine)
            outcomes.append((graph.indptr.tolist(), graph.indices.tolist(), [str(x) for x in ids]))
        except ValueError as exc:
            outcomes.append(str(exc).split(";")[0].split(" (")[0])
    assert outcomes[0] == outcomes[2], outcomes
    assert outcomes[1] == outcomes[2] or 'a,b,w\n1,2,3\n"4' in data, outcomes  # pyarrow reads quotes itself


def test_numba_reader_ids_at_the_int64_ends_and_gzip(tmp_path):
    lo, hi = -(2**63), 2**63 - 1
    text = f"pre,post,syn\n{hi},{lo},3\n{lo},{hi},4\n{hi},{lo},2\n{hi},{hi},9\n0,{hi},1\n"
    for name in ("e.csv", "e.csv.gz"):
        path = tmp_path / name
        if name.endswith(".gz"):
            with gzip.open(path, "wt") as handle:
                handle.write(text)
        else:
            path.write_text(text)
        graph, ids = load_edge_list(path, weight="syn", threshold=4, engine="numba")
        assert ids.tolist() == [hi, lo] and loaded_edges(graph, ids) == {(str(hi), str(lo)), (str(lo), str(hi))}


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(1, 12),
    data=st.data(),
    weighted=st.booleans(),
    threshold=st.one_of(st.none(), st.floats(-3, 20)),
    parallel=st.booleans(),
)
def test_aggregate_matches_a_dictionary(n, data, weighted, threshold, parallel):
    """``aggregate`` (both twins of the per-row merge; rows of 33+ entries take the argsort branch) against a
    dictionary: summed weights per ordered pair, self-loops dropped, sums below the threshold dropped, only the
    nodes of kept pairs, CSR rows sorted."""
    import graphs.edge_csr as edge_csr

    m = data.draw(st.integers(0, 120))  # n <= 12 and m up to 120: some rows hold more than 32 entries
    u = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)), dtype=np.int32)
    v = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)), dtype=np.int32)
    w = np.array(data.draw(st.lists(st.integers(-2, 9), min_size=m, max_size=m)), dtype=np.float64)
    if threshold is not None and not weighted:
        threshold = None
    old = edge_csr.PARALLEL_ROWS, edge_csr.idle_cores
    edge_csr.PARALLEL_ROWS = 0 if parallel else 1 << 40
    edge_csr.idle_cores = lambda: parallel  # the parallel twin whatever the load of this machine
    try:
        indptr, indices, used = edge_csr.aggregate(n, u, v, w if weighted else None, threshold)
    finally:
        edge_csr.PARALLEL_ROWS, edge_csr.idle_cores = old
    total = {}
    for a, b, x in zip(u.tolist(), v.tolist(), w.tolist(), strict=True):
        total[(a, b)] = total.get((a, b), 0.0) + (x if weighted else 1.0)
    kept = {p for p, x in total.items() if p[0] != p[1] and (threshold is None or x >= threshold)}
    nodes = sorted({x for p in kept for x in p})
    assert np.flatnonzero(used).tolist() == nodes
    rows = np.repeat(np.arange(len(nodes)), np.diff(indptr))
    got = {(nodes[a], nodes[b]) for a, b in zip(rows.tolist(), indices.tolist(), strict=True)}
    assert got == kept and len(got) == indices.size
    assert all(np.all(np.diff(indices[indptr[r] : indptr[r + 1]]) > 0) for r in range(len(nodes)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_factorize_pairs_grows_its_table(seed):
    """``factorize_pairs`` past several doublings of its hash table (2**16 slots at first) against a dictionary:
    codes by first appearance, source before target, ids over the whole int64 range."""
    from graphs.edge_csr import factorize_pairs

    rng = np.random.default_rng(seed)
    pool = np.concatenate([rng.integers(-(2**63), 2**63 - 1, 90_000, dtype=np.int64), [2**63 - 1, -(2**63), 0]])
    src = pool[rng.integers(0, pool.size, 60_000)]
    dst = pool[rng.integers(0, pool.size, 60_000)]
    u, v, uniques = factorize_pairs(src, dst)
    order = {}
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        order.setdefault(a, len(order))
        order.setdefault(b, len(order))
    assert uniques.tolist() == list(order) and len(order) > 2**16
    assert u.tolist() == [order[a] for a in src.tolist()] and v.tolist() == [order[b] for b in dst.tolist()]


def test_idle_cores_needs_two_threads():
    import numba

    from graphs.csv_reader import idle_cores

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        assert idle_cores() is False
    finally:
        numba.set_num_threads(threads)
    assert isinstance(idle_cores(), bool)
