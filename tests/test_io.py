"""Edge-list loading: every format (CSV with a header, plain SNAP-style, gzip), every engine (pyarrow, pandas,
the standard library) against a slow dictionary oracle, and one-line errors for bad files."""

import gzip

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphs.edgelist import available
from graphs.io import load_edge_list

ENGINES = [e for e in ("pyarrow", "pandas", "python") if available(e)]


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
        if plain and engine == "pyarrow":
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


@pytest.mark.parametrize("engine", ["auto", *[e for e in ENGINES if e != "pyarrow"]])
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
    """The API's defaults pre/post find FlyWire's columns, as the CLI's do."""
    from graphs.smallworld.cli import build_parser

    args = build_parser().parse_args([])
    assert (args.source, args.target) == ("pre", "post")
    text = "pre_root_id,post_root_id,neuropil,syn_count\n11,12,AL,3\n11,12,MB,4\n12,13,AL,2\n"
    gz = tmp_path / "c.csv.gz"
    with gzip.open(gz, "wt") as handle:
        handle.write(text)
    graph, ids = load_edge_list(gz, source=args.source, target=args.target, weight="syn", threshold=5, engine=engine)
    assert ids.tolist() == [11, 12] and loaded_edges(graph, ids) == {("11", "12")}


def write(tmp_path, text, name="edges.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("engine", ["auto", *ENGINES])
def test_bad_files_give_one_line_naming_the_argument(tmp_path, engine):
    def fails(match, path, **kwargs):
        if engine == "pyarrow" and (kwargs.get("format") == "plain" or path.suffix == ".txt"):
            match = r"^engine: pyarrow reads csv only"  # a plain file (or an explicit format) it cannot read
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
    ("kwargs", "name"),
    [
        (dict(format="tsv"), "format"),
        (dict(engine="polars"), "engine"),
        (dict(directed="yes"), "directed"),
        (dict(threshold=5), "threshold"),
    ],
)
def test_bad_arguments(tmp_path, kwargs, name):
    with pytest.raises(ValueError, match=f"^{name}:"):
        load_edge_list(write(tmp_path, "pre,post\n1,2\n"), **kwargs)
    with pytest.raises(ValueError, match=r"^path:"):
        load_edge_list(12)


def test_without_pandas_or_pyarrow(tmp_path, monkeypatch):
    """The numpy fallbacks (standard-library reader, ``numpy.unique`` numbering) give the same graph."""
    import graphs.edgelist as edgelist

    path = write(tmp_path, "src,dst,w\nb,a,1\na,c,2.5\n c ,b,1e1\n\n07,7,1\n")
    fast = load_edge_list(path, source="src", target="dst", weight="w", threshold=2)
    monkeypatch.setattr(edgelist, "available", lambda engine: engine == "python")
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
