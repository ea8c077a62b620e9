"""Each command's JSON is the result of the API it wraps, computed here by calling that API directly on the same small
case: ``receptive.coverage`` (``coverage_by_layer``, the patterns' pair counts, ``receptive.theory``), ``gpu.bench``
(every field but the timings: the FLOPs from the patterns' pairs, L* from ``coverage_by_layer``), ``receptive.layouts``
(``study``), ``graphs.smallworld`` and ``receptive.smallworld`` (``small_world`` of the model graph),
``gpu.approx`` (``relative_error`` of ``approximate`` against ``exact_attention``, ``method_cost``),
``receptive.bound`` (``coverage_by_layer`` per seed, ``theory.predict_full_layer``) and ``gpu.harness.cli``
(``score_items`` and ``task_scores``)."""

import argparse
import contextlib
import csv
import io
import json
import math
import os
import runpy
import sys
from pathlib import Path

import pytest

from receptive import coverage_by_layer, make_pattern, theory

ROOT = Path(__file__).resolve().parents[1]
COST_FIELDS = ("pairs", "pairs_relative", "kv_cache_entries")


def command(module, *argv):
    """``python -m module argv`` from the checkout root, run in this process the way the interpreter runs it (the
    module as ``__main__`` with ``sys.argv`` set; the commands' own ``python -m`` runs are tests/test_install.py's):
    its stdout, once it exits with status 0 (a failure shows stderr)."""
    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    sys.argv = [module, *map(str, argv)]
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exit_:
            runpy.run_module(module, run_name="__main__")  # a package: its __main__
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
    assert exit_.value.code in (0, None), err.getvalue()
    return out.getvalue()


def finite(value):
    """``value`` with non-finite floats as ``None``, as the commands write JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def same(a, b):
    """Equal as JSON: ``b`` through a JSON round trip (tuples as lists), floats to 1e-12."""
    assert json.loads(json.dumps(a)) == pytest.approx(json.loads(json.dumps(b)), rel=1e-12, abs=1e-12)


# --- receptive.coverage ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "causal", "targets"),
    [
        (["--n", "512", "--w", "8"], False, None),
        (["--n", "256", "--w", "8", "--causal"], True, None),
        (["--n", "1024", "--w", "16", "--targets", "32", "--seed", "3", "--patterns", "sa,sa+swa"], False, 32),
    ],
    ids=["bidirectional", "causal", "sampled"],
)
def test_coverage_json_is_coverage_by_layer(argv, causal, targets):
    doc = json.loads(command("receptive.coverage", *argv, "--json", "--no-progress"))
    n, w, seed = doc["n"], doc["w"], doc["seed"]
    assert (doc["causal"], doc["circular"]) == (causal, False)
    shown = {len(p["layers"]) for p in doc["patterns"].values()}
    assert len(shown) == 1
    layers = shown.pop()
    for name, got in doc["patterns"].items():
        pattern = make_pattern(name, n, w, causal=causal, seed=seed)
        method = "sampled" if targets else "auto"
        # a closed form gives the rows shown; the engine runs until every field is full (at most 64 layers)
        depth = layers if pattern.has_closed_form else None
        api = coverage_by_layer(pattern, depth, method=method, targets=targets, seed=seed, progress=False).to_dict()
        rows = got["layers"]
        for row in rows:
            layer = row["layer"]
            assert row["pairs"] == pattern.pair_count(layer)
            assert row["pairs_relative"] == pytest.approx(pattern.pair_count(layer) / pattern.full_pairs)
            assert ("kv_cache_entries" in row) == causal
            if causal:
                assert row["kv_cache_entries"] == pattern.kv_cache_entries(layer)
        rows = [{k: v for k, v in row.items() if k not in COST_FIELDS} for row in rows]
        computed = len(api["layers"])
        same({**got, "layers": rows[:computed]}, api)
        if computed < layers:  # the table runs on past L*: every field stays full
            assert api["full_coverage_layer"] is not None
            assert all((r["mean"], r["min"], r["full_fraction"]) == (1.0, 1.0, 1.0) for r in rows[computed:])
    th = doc["theory"]
    assert th["log_w_n"] == pytest.approx(theory.log_w_n(n, w))
    for name in ("sa", "sa+swa"):
        assert th["sharp_full_coverage_layer"][name] == theory.predict_full_layer(name, n, w, causal, False, 64)[0]


def stack(kind, n):
    """The layer stack ``--stack "2*swa:8,sa:8" --seed 2`` or ``--hf-config mistral-7b-v0.1`` builds, by the API."""
    from receptive.patterns.hf_config import pattern_from_config
    from receptive.patterns.registry import stack_from_spec

    if kind == "stack":
        return stack_from_spec("2*swa:8,sa:8", n, 6, seed=2)
    return pattern_from_config(ROOT / "receptive" / "layout_configs" / "mistral-7b-v0.1.json", n)


@pytest.mark.parametrize(
    ("kind", "flags"),
    [
        ("stack", ["--stack", "2*swa:8,sa:8", "--layers", "6", "--seed", "2"]),
        ("hf-config", ["--hf-config", "mistral-7b-v0.1", "--layers", "3"]),
    ],
)
def test_coverage_json_of_a_stack_and_its_csv_are_coverage_by_layer(kind, flags, tmp_path):
    csv_path = tmp_path / "rows.csv"
    doc = json.loads(command("receptive.coverage", "--n", "256", *flags, "--json", "--csv", csv_path, "--no-progress"))
    [(name, got)] = doc["patterns"].items()
    layers = len(got["layers"])
    pattern = stack(kind, 256)
    api = coverage_by_layer(pattern, layers, seed=doc["seed"], progress=False).to_dict()
    assert [row["pairs"] for row in got["layers"]] == [pattern.pair_count(layer) for layer in range(1, layers + 1)]
    same({**got, "layers": [{k: v for k, v in r.items() if k not in COST_FIELDS} for r in got["layers"]]}, api)
    with csv_path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["pattern"], r["method"], int(r["layer"])) for r in rows] == [
        (name, api["method"], row["layer"]) for row in api["layers"]
    ]
    for r, row in zip(rows, api["layers"], strict=True):
        assert (float(r["mean"]), float(r["min"]), float(r["full_fraction"])) == (
            row["mean"],
            row["min"],
            row["full_fraction"],
        )


# --- gpu.bench: everything but the timings --------------------------------------------------------------------------


def bench_expectations(doc, heads, d, w):
    """Per row the FLOPs implied by its TFLOP/s and seconds equal ``4 d`` per pair of the pattern it times (SA+SWA
    runs both paths), and the cost rows' L* is ``coverage_by_layer``'s."""
    rows = {(r["n"], r["path"]): r for r in doc["rows"]}
    for (n, _), row in rows.items():
        kind = row["kind"]
        if kind == "full":
            pairs = n * n
        else:
            pairs = make_pattern("swa" if kind == "sa+swa" else kind, n, w, seed=0).pair_count(1)
            pairs *= 2 if kind == "sa+swa" else 1
        assert row["tflops"] * row["seconds"] * 1e12 == pytest.approx(4 * d * pairs * heads, rel=1e-9)
        assert row["seconds"] == pytest.approx(sorted(row["repeat_seconds"])[len(row["repeat_seconds"]) // 2])
        assert row["speedup_over_full"] == pytest.approx(rows[n, "full"]["seconds"] / row["seconds"])
    for cost in doc["cost_to_full_coverage"]:
        n, kind = cost["n"], cost["kind"]
        star = (
            1
            if kind == "full"
            else coverage_by_layer(make_pattern(kind, n, w, seed=0), max_layers=200).full_coverage_layer
        )
        assert cost["full_coverage_layer"] == star
        assert cost["seconds_to_full_coverage"] == pytest.approx(star * rows[n, cost["path"]]["seconds"])


def non_timing(doc):
    timing = {
        "seconds",
        "tflops",
        "repeat_seconds",
        "speedup_over_full",
        "time_over_peer",
        "sa_over_swa",
        "over_sa",
        "seconds_to_full_coverage",
        "peak_memory_bytes",
    }
    return {
        "parameters": doc["parameters"],
        "rows": [{k: v for k, v in r.items() if k not in timing} for r in doc["rows"]],
        "cost": [{k: v for k, v in c.items() if k not in timing} for c in doc["cost_to_full_coverage"]],
    }


def test_bench_json_is_its_run_and_the_patterns_it_times(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("the CPU's default backends")
    from gpu.bench.cli import run

    out = tmp_path / "bench.json"
    command("gpu.bench", "--n", "64,128", "--w", "8", "--heads", "2", "--d", "8", "--repeats", "1", "--json", out)
    doc = json.loads(out.read_text())
    assert doc["parameters"] == {
        "n": [64, 128],
        "w": 8,
        "heads": 2,
        "d": 8,
        "batch": 1,
        "dtype": "float32",
        "backward": False,
        "repeats": 1,
        "variants": False,
        "backends": ["torch"],
        "replot": None,
    }
    assert [(r["n"], r["path"]) for r in doc["rows"]] == [
        (n, p) for n in (64, 128) for p in ("full", "swa", "sa", "sa+swa")
    ]
    bench_expectations(doc, heads=2, d=8, w=8)
    args = argparse.Namespace(**doc["parameters"], json=None, plot=None)
    with torch.no_grad():
        api = run(args)
    assert non_timing(api) == non_timing(doc)


# --- receptive.layouts ----------------------------------------------------------------------------------------------


def test_layouts_json_is_study(capsys):
    from receptive.layouts import main, study
    from receptive.presets import preset_dir

    assert (
        main(
            ["--n", "256", "--targets", "8", "--seed", "1", "--only", "mistral-7b-v0.1", "--json", "-", "--no-progress"]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    paths = [preset_dir() / "mistral-7b-v0.1.json"]
    same(doc["layouts"], [r.to_dict() for r in study(paths, 256, 8, seed=1, progress=False)])
    assert (doc["n"], doc["targets"], doc["seed"]) == (256, 8, 1)


# --- graphs.smallworld and receptive.smallworld ----------------------------------------------------------------------


def test_graphs_smallworld_json_is_small_world_of_the_model(capsys):
    from graphs.generators import watts_strogatz
    from graphs.smallworld import small_world
    from graphs.smallworld.cli import main

    assert (
        main(["--graph", "ws", "--n", "300", "--k", "6", "--beta", "0.2", "--seed", "2", "--json", "--no-progress"])
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    api = small_world(watts_strogatz(300, 6, 0.2, seed=2), seed=2, progress=False)
    same(doc, finite(api.to_dict()))


def test_receptive_smallworld_json_is_small_world_of_the_attention_graph(capsys):
    from graphs.smallworld import small_world
    from receptive.attention_graphs import union_graph
    from receptive.smallworld import NOTE, main

    argv = ["--graph", "sa+swa", "--n", "256", "--w", "8", "--layers", "2", "--seed", "1", "--json", "--no-progress"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    api = small_world(union_graph("sa+swa", 256, 8, 2, seed=1), seed=1, progress=False)
    same(doc, finite(api.to_dict()) | {"note": NOTE})


# --- gpu.approx -----------------------------------------------------------------------------------------------------


def test_approx_json_is_the_error_and_cost_of_each_method(capsys):
    pytest.importorskip("torch")
    from gpu.approx import approximate, exact_attention, exact_cost, method_cost, relative_error
    from gpu.approx.cli import HEADS, main, synthetic

    n, d, seeds = 32, 8, 2
    argv = [
        "--kinds",
        "random,spiky",
        "--methods",
        "swa,top-k,performer",
        "--n",
        n,
        "--d",
        d,
        "--budgets",
        "4,8",
        "--seeds",
        seeds,
        "--json",
    ]
    assert main(list(map(str, argv))) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["rows"]) == 2 * 3 * 2
    reference = exact_cost(n, d, HEADS, False)
    for row in doc["rows"]:
        errors = []
        for s in range(seeds):
            q, k, v = synthetic(row["kind"], n, d, s)
            approx = approximate(row["method"], q, k, v, row["budget"], seed=s, causal=False)
            errors.append(relative_error(approx, exact_attention(q, k, v, causal=False)))
        mean = sum(errors) / seeds
        assert row["mean"] == pytest.approx(mean, rel=1e-12)
        assert row["std"] == pytest.approx(math.sqrt(sum((e - mean) ** 2 for e in errors) / (seeds - 1)), abs=1e-12)
        cost = method_cost(row["method"], n, d, row["budget"], heads=HEADS, causal=False)
        assert {k: row[k] for k in cost.to_dict()} == cost.to_dict()
        assert row["flops_share"] == pytest.approx(cost.flops / reference.flops)


def test_approx_costs_json_is_method_cost(capsys):
    pytest.importorskip("torch")
    from gpu.approx import exact_cost, method_cost
    from gpu.approx.cli import main

    assert (
        main(
            [
                "--costs",
                "--methods",
                "swa,performer,mla",
                "--n",
                "64",
                "--d",
                "16",
                "--heads",
                "2",
                "--budgets",
                "8",
                "--causal",
                "--json",
                "-",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    rows = {(r["method"], r["budget"]): r for r in doc["rows"]}
    exact = exact_cost(64, 16, 2, True)
    assert {k: rows["exact", 64][k] for k in exact.to_dict()} == exact.to_dict()
    for name in ("swa", "performer", "mla"):
        cost = method_cost(name, 64, 16, 8, heads=2, causal=True)
        assert {k: rows[name, 8][k] for k in cost.to_dict()} == cost.to_dict()
        assert rows[name, 8]["flops_share"] == pytest.approx(cost.flops / exact.flops)


# --- receptive.bound ------------------------------------------------------------------------------------------------


def test_bound_json_points_are_coverage_by_layer_per_seed(tmp_path):
    doc = json.loads(
        command(
            "receptive.bound",
            "--n",
            "256,1024",
            "--w",
            "16",
            "--patterns",
            "sa,sa+swa",
            "--causal",
            "no",
            "--seeds",
            "3",
            "--out",
            tmp_path / "out",
            "--json",
            "--no-progress",
        )
    )
    points = {(p["pattern"], p["n"]): p for p in doc["points"]}
    assert sorted(points) == [("sa", 256), ("sa", 1024), ("sa+swa", 256), ("sa+swa", 1024)]
    max_layers = doc["parameters"]["max_layers"]
    for (name, n), point in points.items():
        stars = [
            coverage_by_layer(make_pattern(name, n, 16, seed=s), max_layers=max_layers).full_coverage_layer
            for s in range(3)
        ]
        assert point["full_layers"] == stars
        assert point["predicted"] == theory.predict_full_layer(name, n, 16, False, False, max_layers)[0]


# --- gpu.harness.cli ------------------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning", "ignore::FutureWarning")
def test_eval_cli_json_is_task_scores_of_score_items(tmp_path):
    pytest.importorskip("transformers")
    import torch
    from hf_eval_models import FIXTURES, tiny_llama, tiny_tokenizer

    from gpu.harness.cli import main
    from gpu.harness.scoring import EvalAttention, score_items, task_scores
    from gpu.harness.tasks import load_requests

    model, tokenizer = tiny_llama(dtype=torch.float32), tiny_tokenizer()
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    tasks = {name: FIXTURES / f"{name}.jsonl" for name in ("arc_easy_rc_5shot", "lambada_bpb_0shot")}
    argv = [
        "--model",
        tmp_path / "model",
        "--tasks",
        ",".join(map(str, tasks.values())),
        "--attention",
        "exact,sa",
        "--budgets",
        "4",
        "--seed",
        "1",
        "--decode",
        "sparse,exact",
        "--out",
        tmp_path / "out",
        "--json",
        tmp_path / "eval.json",
        "--quiet",
        "--threads",
        "1",
    ]
    assert main(list(map(str, argv))) == 0
    rows = {(r["attention"], r["task"]): r for r in json.loads((tmp_path / "eval.json").read_text())["rows"]}
    attentions = [EvalAttention("exact", 0), EvalAttention("sa", 4, 1), EvalAttention("sa", 4, 1, decode="exact")]
    assert sorted(rows) == sorted((a.label, str(path)) for a in attentions for path in tasks.values())
    for name, path in tasks.items():
        kind = "target" if name.startswith("lambada") else "choice"
        items = load_requests(path, kind=kind)
        for attention in attentions:
            records = score_items(model, tokenizer, items, attention, progress=False)
            expected = {"attention": attention.label, "task": str(path)} | task_scores(records, kind)
            assert rows[attention.label, str(path)] == pytest.approx(expected, rel=1e-9, abs=1e-9)
