"""``python -m receptive.smallworld``: the small-world command of graphs plus the attention graphs, through the model
hook of ``graphs.smallworld.cli`` (graphs itself imports nothing of receptive: tests/test_graphs_cli.py)."""

import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphs.generators import ring_lattice
from graphs.smallworld import small_world
from graphs.smallworld.cli import GRAPH_MODELS, ModelFamily, build_parser
from graphs.smallworld.cli import main as graphs_main
from receptive.attention_graphs import union_graph
from receptive.smallworld import ATTENTION_MODELS, FAMILIES, PROG, main


def run_json(cli, argv, capsys) -> dict:
    assert cli([*argv, "--json", "--no-progress"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("case", range(12))
def test_attention_models_measure_the_union_graph(case, capsys):
    """The command's numbers are those of small_world(union_graph(...)) for the options it was given."""
    import numpy as np

    rng = np.random.default_rng(case)
    model = ["swa", "sa", "sa+swa"][case % 3]
    n, w, layers = int(rng.integers(40, 300)), int(rng.integers(2, 12)), int(rng.integers(1, 4))
    causal, undirected, seed = bool(rng.integers(2)), bool(rng.integers(2)), int(rng.integers(0, 5))
    argv = ["--graph", model, "--n", str(n), "--w", str(w), "--layers", str(layers), "--seed", str(seed)]
    argv += ["--causal"] * causal + ["--undirected"] * undirected
    doc = run_json(main, argv, capsys)
    graph = union_graph(model, n, w, layers, causal=causal, seed=seed, directed=not undirected)
    expected = small_world(graph, seed=seed, progress=False).to_dict()
    assert doc["n"] == n and doc["edges"] == expected["edges"]
    for key in ("mean_degree", "C", "transitivity", "L", "C_directed", "L_directed", "C_r", "L_r", "sigma"):
        value = expected.get(key)
        if value is None or not np.isfinite(value):  # undefined: JSON null (or left out)
            assert doc.get(key) is None, key
        else:
            assert doc[key] == pytest.approx(value, rel=1e-12), key
    assert "relabelled" in doc["note"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--graph", "er", "--n", "200", "--k", "6", "--seed", "3"],
        ["--graph", "ws", "--n", "300", "--k", "8", "--beta", "0.2"],
        ["--graph", "connectome", "--n", "800", "--sources", "32"],
    ],
)
def test_graph_models_are_the_same_in_both_commands(argv, capsys):
    assert run_json(main, argv, capsys) == run_json(graphs_main, argv, capsys)


def test_same_options_plus_the_attention_ones():
    def options(parser):
        return {opt for action in parser._actions for opt in action.option_strings}

    ours, base = options(build_parser(FAMILIES, PROG)), options(build_parser())
    assert base < ours and ours - base == {"--w", "--layers", "--causal"}
    text = build_parser(FAMILIES, PROG).format_help()
    assert "{connectome,er,ws,swa,sa,sa+swa}" in text and f"{PROG} --graph sa+swa" in text
    assert "python -m graphs.smallworld" not in text  # it names no other command: it has every model


def test_module_runs_as_a_command():
    out = subprocess.run(
        [sys.executable, "-m", "receptive.smallworld", "--graph", "sa+swa", "--n", "256", "--w", "8", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    assert doc["n"] == 256 and doc["L_method"] == "exact" and doc["sigma"] > 1


def test_model_families_are_a_hook_without_global_state(capsys):
    """Another package adds a model by passing a family; the graphs command and the attention command are unchanged."""

    def ring(args):
        return ring_lattice(args.n or 100, int(args.k or 4)), {"note": "ring"}

    extra = ModelFamily(builders={"ring": ring}, description="ring (a ring lattice)")
    doc = run_json(lambda argv: graphs_main(argv, families=(GRAPH_MODELS, extra)), ["--graph", "ring"], capsys)
    assert doc["n"] == 100 and doc["edges"] == 200 and doc["note"] == "ring" and doc["C"] == pytest.approx(0.5)
    with pytest.raises(SystemExit):
        graphs_main(["--graph", "ring", "--no-progress"])
    assert "ring" not in capsys.readouterr().out
    for bad, name, error in (
        (lambda: ModelFamily(builders={}), "builders", ValueError),
        (lambda: ModelFamily(builders={"x": 3}), "builders", TypeError),
        (lambda: ModelFamily(builders={"x": ring}, check="no"), "check", TypeError),
        (lambda: graphs_main([], families=(GRAPH_MODELS, GRAPH_MODELS)), "families", ValueError),
        (lambda: graphs_main([], families=(ATTENTION_MODELS, "x")), "families", TypeError),
        (lambda: graphs_main([], families=()), "families", ValueError),
    ):
        with pytest.raises(error, match=f"^{name}:"):
            bad()


OPTIONS = {
    "--graph": st.sampled_from(["connectome", "er", "ws", "swa", "sa", "sa+swa", "nope"]),
    "--n": st.one_of(st.integers(-5, 260).map(str), st.sampled_from(["1e3", "x", ""])),
    "--k": st.one_of(st.floats(-2, 40).map(repr), st.sampled_from(["nan", "inf", "0.5"])),
    "--w": st.one_of(st.integers(-1, 20).map(str), st.sampled_from(["600", "w"])),
    "--layers": st.integers(-1, 3).map(str),
    "--seed": st.integers(-2, 3).map(str),
    "--sources": st.integers(-1, 40).map(str),
    "--reference": st.sampled_from(["analytic", "rewired"]),
}
FLAGS = ["--causal", "--directed", "--undirected", "--exact", "--json"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    options=st.dictionaries(st.sampled_from(sorted(OPTIONS)), st.none(), max_size=5).flatmap(
        lambda keys: st.fixed_dictionaries({k: OPTIONS[k] for k in keys})
    ),
    flags=st.lists(st.sampled_from(FLAGS), max_size=3, unique=True),
)
def test_cli_fuzz(options, flags, capsys):
    """Exit 0, or exit 2 with exactly one line on stderr that names an option; never another exception."""
    options.setdefault("--n", "120")
    argv = [token for pair in options.items() for token in pair] + flags
    try:
        code = main([*argv, "--no-progress"])
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err
    assert code in (0, 2), (argv, code, err)
    if code == 2:
        lines = err.strip("\n").split("\n")
        assert len(lines) == 1 and lines[0].startswith(f"{PROG}: error:"), (argv, err)
        assert " --" in lines[0] or "argument" in lines[0], (argv, err)
