"""The graphs layer on its own: it imports nothing of receptive, its CLI answers every input with a result or
exit 2 and one line naming the option, and its public entry points fail with a ValueError naming the argument."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphs.cli_common import save_png_pdf, write_atomic
from graphs.graph import Graph
from graphs.io import load_edge_list
from graphs.smallworld.cli import build_parser, main

GRAPHS = Path(__file__).resolve().parents[2] / "graphs"

ISOLATION = """
import sys
import graphs, graphs.io, graphs.edgelist, graphs.cli_common, graphs.generators, graphs.rewire, graphs.paths
import graphs.smallworld, graphs.smallworld.cli
from graphs.smallworld.cli import main
import importlib, pkgutil
for module in pkgutil.walk_packages(graphs.__path__, "graphs."):
    if not module.name.endswith("__main__"):  # every module of graphs, also those the CLI does not load
        importlib.import_module(module.name)
csv = sys.argv[1]
main(["--graph", "er", "--n", "60", "--k", "4", "--json", "--no-progress"])
main(["--graph", "ws", "--n", "60", "--k", "4", "--no-progress"])
main(["--graph", "connectome", "--n", "600", "--sources", "16", "--no-progress"])
main(["--edges", csv, "--weight", "syn_count", "--threshold", "5", "--json", "--no-progress"])
try:
    main(["--graph", "sa+swa", "--n", "60", "--w", "4", "--no-progress"])
except SystemExit as stop:
    assert stop.code == 2, stop.code
else:
    raise AssertionError("graphs.smallworld built an attention graph")
loaded = sorted(m for m in sys.modules if m == "receptive" or m.startswith("receptive."))
assert not loaded, loaded
"""


def test_graphs_does_not_import_receptive(tmp_path):
    """Dependencies point one way (graphs <- receptive): importing graphs and running every graph model of its CLI
    (and refusing an attention model) loads no receptive module."""
    csv = tmp_path / "edges.csv"
    csv.write_text("pre_root_id,post_root_id,syn_count\n10,11,6\n11,12,9\n12,10,5\n")
    out = subprocess.run([sys.executable, "-c", ISOLATION, str(csv)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "receptive.smallworld" in out.stderr  # the refusal names the command that has the attention graphs
    assert out.stdout.count("sigma") >= 2 and out.stdout.count('"n": ') == 2


def _receptive_imports(path: Path) -> list[str]:
    """Every ``import receptive...`` / ``from receptive... import`` (at any depth, also inside functions) and every
    ``importlib.import_module("receptive...")`` / ``__import__("receptive...")`` with a literal name in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if node.level == 0 else []
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            names = [str(node.args[0].value)] if called in ("import_module", "__import__") else []
        else:
            continue
        found += [f"{path}:{node.lineno}: {name}" for name in names if name.split(".")[0] == "receptive"]
    return found


def test_no_module_under_graphs_imports_receptive(tmp_path):
    """Static check over the source: no file under graphs/ names receptive in an import."""
    sources = sorted(GRAPHS.rglob("*.py"))
    assert len(sources) > 10 and GRAPHS / "smallworld" / "cli.py" in sources
    offenders = [hit for path in sources for hit in _receptive_imports(path)]
    assert not offenders, offenders
    # the check sees each form of import it looks for
    probe = tmp_path / "probe.py"
    for text in (
        "import receptive",
        "import numpy, receptive.attention_graphs as ag",
        "def f():\n    from receptive.attention_graphs import union_graph",
        "from receptive import make_pattern",
        "import importlib\nimportlib.import_module('receptive.smallworld')",
        "__import__('receptive')",
    ):
        probe.write_text(text + "\n")
        assert _receptive_imports(probe), text
    probe.write_text("from . import receptive_fields\nimport receptivity\nfrom .receptive import x\n")
    assert not _receptive_imports(probe)


def test_attention_models_name_their_command(capsys):
    """graphs.smallworld offers no attention graph: --graph swa/sa/sa+swa is one line naming receptive.smallworld."""
    for model in ("swa", "sa", "sa+swa"):
        with pytest.raises(SystemExit) as stop:
            main(["--graph", model, "--n", "100", "--no-progress"])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and err.count("\n") == 1, err
        assert "--graph" in err and "python -m receptive.smallworld" in err, err
    assert "python -m receptive.smallworld" in build_parser().format_help()


def test_receptive_reexports_the_shared_helpers():
    from graphs.cli_common import OneLineErrorParser as base
    from receptive.cli_parser import OneLineErrorParser
    from receptive.plotting import save_png_pdf as reexported

    assert OneLineErrorParser is base and reexported is save_png_pdf


def test_er_below_mean_degree_one_is_a_defined_result(capsys):
    """<k> <= 1: the ER reference has no giant component, L_r is infinite, sigma and omega undefined (not a
    ZeroDivisionError)."""
    assert main(["--graph", "er", "--n", "100", "--k", "0.5", "--json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["L_r"] is None and doc["sigma"] is None and doc["omega"] is None and doc["C_r"] > 0
    assert main(["--graph", "er", "--n", "100", "--k", "0.5", "--no-progress"]) == 0
    report = capsys.readouterr().out
    assert "L_r                    undefined (infinite" in report and "sigma                  undefined" in report


OPTIONS = {
    "--graph": st.sampled_from(["connectome", "er", "ws", "swa", "sa", "sa+swa", "nope"]),
    "--n": st.one_of(st.integers(-5, 260).map(str), st.sampled_from(["1e3", "x", ""])),
    "--k": st.one_of(st.floats(-2, 40).map(repr), st.sampled_from(["nan", "inf", "-inf", "four", "0.5"])),
    "--beta": st.sampled_from(["0", "0.3", "1", "1.5", "-0.1", "nan"]),
    "--seed": st.integers(-2, 3).map(str),
    "--sources": st.integers(-1, 40).map(str),
    "--reference": st.sampled_from(["analytic", "rewired", "lattice"]),
    "--threshold": st.sampled_from(["5", "nan", "inf", "-1"]),
}
FLAGS = ["--directed", "--undirected", "--exact", "--json", "--calibrate"]


def check_exit(argv, capsys):
    """Exit 0, or exit 2 with exactly one line on stderr that names an option; never another exception."""
    try:
        code = main([*argv, "--no-progress"])
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err
    assert code in (0, 2), (argv, code, err)
    if code == 2:
        lines = err.strip("\n").split("\n")
        assert len(lines) == 1 and lines[0].startswith("python -m graphs.smallworld: error:"), (argv, err)
        assert " --" in lines[0] or "argument" in lines[0] or "unrecognized" in lines[0], (argv, err)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    options=st.dictionaries(st.sampled_from(sorted(OPTIONS)), st.none(), max_size=5).flatmap(
        lambda keys: st.fixed_dictionaries({k: OPTIONS[k] for k in keys})
    ),
    flags=st.lists(st.sampled_from(FLAGS), max_size=3, unique=True),
)
def test_cli_fuzz(options, flags, capsys):
    options.setdefault("--n", "120")  # keep every run small
    argv = [token for pair in options.items() for token in pair] + flags
    check_exit(argv, capsys)


@pytest.mark.parametrize("flag", ["--source", "--target", "--weight", "--threshold"])
@pytest.mark.parametrize("edges", [None, "edges.graphml"])
def test_edge_file_options_need_an_edge_list(tmp_path, capsys, flag, edges):
    """The columns, weight and threshold of an edge list are refused, naming the flag, where no edge list is read
    (a generated model, or GraphML, whose weights are its own), instead of being ignored."""
    argv = ["--graph", "er", "--n", "120", flag, "5"]
    if edges:
        (tmp_path / edges).write_text("<graphml/>")
        argv = [flag, "5", "--edges", str(tmp_path / edges)]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--no-progress"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.split("error: ")[1].startswith(f"{flag}: only read from"), err


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    content=st.one_of(
        st.binary(max_size=60),
        st.lists(
            st.sampled_from(["pre,post,syn", "1,2,3", "2,3,x", "3,1", "a b", "# c", "", "4\t5", "1,1,9", ",,"]),
            max_size=6,
        ).map("\n".join),
    ),
    weight=st.sampled_from([[], ["--weight", "syn"], ["--weight", "syn", "--threshold", "5"], ["--weight", "2"]]),
    suffix=st.sampled_from([".csv", ".txt", ".csv.gz", ".graphml"]),
)
def test_cli_fuzz_edge_files(tmp_path_factory, content, weight, suffix, capsys):
    path = tmp_path_factory.mktemp("fuzz") / f"edges{suffix}"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    check_exit(["--edges", str(path), "--exact", *weight], capsys)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    content=st.lists(
        st.sampled_from(["pre,post,w", "7,8,1", "8,9,2.5", "9,7,nan", "x,y", "1", " 3 , 4 ,5", "#", "", "5 6 7"]),
        max_size=6,
    ).map("\n".join),
    kwargs=st.fixed_dictionaries(
        {
            "weight": st.sampled_from([None, "w", 2, "zzz"]),
            "format": st.sampled_from(["auto", "csv", "plain"]),
            "engine": st.sampled_from(["auto", "pandas", "python"]),
        }
    ),
)
def test_load_edge_list_fuzz(tmp_path_factory, content, kwargs):
    """A graph, or a ValueError (a bad value) or TypeError (a column named by an integer on a file with a header)
    whose single line starts with the argument it is about."""
    path = tmp_path_factory.mktemp("fuzz") / "edges.csv"
    path.write_text(content)
    try:
        graph, ids = load_edge_list(path, **kwargs)
    except (TypeError, ValueError) as exc:
        message = str(exc)
        assert "\n" not in message
        assert message.split(":")[0] in {"path", "source", "target", "weight", "threshold", "engine", "format"}
    else:
        assert graph.n == len(ids) and graph.indices.size > 0


@given(
    n=st.integers(-1, 5),
    indptr=st.lists(st.integers(-1, 6), max_size=7),
    indices=st.lists(st.integers(-1, 6), max_size=7),
    directed=st.booleans(),
)
def test_graph_constructor_fuzz(n, indptr, indices, directed):
    try:
        graph = Graph(n, np.array(indptr, dtype=np.int64), np.array(indices, dtype=np.int64), directed)
    except ValueError as exc:
        assert str(exc).split(":")[0] in {"n", "indptr", "indices", "directed"}
    else:  # what was accepted is a valid graph: the same as from_edges builds from its edges
        rows = np.repeat(np.arange(graph.n), graph.out_degree)
        again = Graph.from_edges(graph.n, rows, graph.indices, directed=True)
        assert np.array_equal(again.indptr, graph.indptr) and np.array_equal(again.indices, graph.indices)


def test_write_atomic_leaves_nothing_behind(tmp_path):
    target = tmp_path / "out.json"
    write_atomic(target, "{}\n")
    assert target.read_text() == "{}\n"
    with pytest.raises(ValueError, match=r"^--json: directory .* does not exist"):
        write_atomic(tmp_path / "missing" / "out.json", "{}", option="--json")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ValueError, match=r"^--out: .* is not a directory"):
        write_atomic(blocker / "x.json", "{}", option="--out")

    class Boom:
        def __str__(self):
            raise RuntimeError("boom")

    with pytest.raises(TypeError):
        write_atomic(target, Boom())  # not text: the old file stays whole, no temporary file is left
    assert target.read_text() == "{}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "out.json"]


def test_save_png_pdf_is_atomic(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1])
    written = save_png_pdf(fig, tmp_path / "sub" / "fig.png")
    assert [p.rsplit(".", 1)[1] for p in written] == ["png", "pdf"]
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["fig.pdf", "fig.png"]
    fig, _ = plt.subplots()
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    with pytest.raises(ValueError, match=r"^--plot: .* (is not a directory|cannot create directory)"):
        save_png_pdf(fig, blocker / "fig", option="--plot")


@pytest.mark.parametrize("engine", ["auto", "pandas", "python"])
def test_a_row_cut_short_is_refused(tmp_path, engine):
    path = tmp_path / "edges.csv"
    path.write_text("pre,post\n0,1\n1,")  # the last row of a killed write
    with pytest.raises(ValueError, match=r"^path: column 'post' of .* has no id in data row 2$"):
        load_edge_list(path, engine=engine)


@pytest.mark.parametrize(
    ("argv", "flag", "other"),
    [
        (["--graph", "er", "--beta", "0.2"], "--beta", "--graph er"),
        (["--graph", "ws", "--calibrate"], "--calibrate", "--graph ws"),
        (["--graph", "er", "--n", "100", "--sources", "200"], "--sources", "--n = 100"),
        (["--graph", "er", "--n", str(10**11)], "--n", "TiB"),
        (["--edges", "{edges}", "--k", "3"], "--k", "--edges"),
        (["--edges", "{edges}", "--sources", "9"], "--sources", "3 nodes"),
    ],
)
def test_smallworld_options_that_do_not_apply_are_refused(tmp_path, capsys, argv, flag, other):
    from graphs.smallworld.cli import main

    edges = tmp_path / "edges.csv"
    edges.write_text("pre,post\na,b\nb,c\n")
    with pytest.raises(SystemExit) as exit:
        main([a.format(edges=edges) for a in argv] + ["--no-progress"])
    err = capsys.readouterr().err.strip()
    assert exit.value.code == 2 and len(err.splitlines()) == 1 and f" {flag}:" in err and other in err, err
