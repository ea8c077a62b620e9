"""Layer stacks on the command line, Hugging Face configs read offline, receptive fields, and the layouts study."""

import json

import numpy as np
import pytest

from receptive.coverage.cli import main as coverage_main
from receptive.fields import receptive_field, receptive_fields
from receptive.layouts import load_layout, matched_window
from receptive.layouts import main as layouts_main
from receptive.patterns.hf_config import layer_specs, pattern_from_config
from receptive.patterns.registry import pattern_from_spec, stack_from_spec
from receptive.presets import preset_dir

CONFIGS = preset_dir()


def specs_of(name):
    return layer_specs(json.loads((CONFIGS / f"{name}.json").read_text()))


@pytest.mark.parametrize(
    ("name", "expect", "causal"),
    [
        ("mistral-7b-v0.1", ["swa:4096"] * 32, True),
        ("gemma2-9b", ["swa:4096", "full"] * 21, True),
        ("gemma3-4b", (["swa:1024"] * 5 + ["full"]) * 5 + ["swa:1024"] * 4, True),
        ("gpt-oss-20b", ["swa:128", "full"] * 12, True),
        ("llama4-scout", (["chunk:8192"] * 3 + ["full"]) * 12, True),
        ("longformer-base-4096", ["swa:513"] * 12, False),
        ("bigbird-roberta-base", ["bigbird:64:3:3:2"] * 12, False),
    ],
)
def test_presets_equal_the_stacks_written_by_hand(name, expect, causal):
    specs, is_causal, _ = specs_of(name)
    assert specs == expect and is_causal == causal


def test_older_config_fields_give_the_same_stack():
    gemma3 = {"model_type": "gemma3_text", "num_hidden_layers": 12, "sliding_window": 512}
    listed = layer_specs(
        {**gemma3, "layer_types": ["full_attention" if (k + 1) % 6 == 0 else "sliding_attention" for k in range(12)]}
    )
    for field in ("sliding_window_pattern", "_sliding_window_pattern"):
        assert layer_specs({**gemma3, field: 6})[0] == listed[0]
    qwen = {"model_type": "qwen2", "num_hidden_layers": 6, "sliding_window": 64, "use_sliding_window": True}
    assert layer_specs({**qwen, "max_window_layers": 4})[0] == ["full"] * 4 + ["swa:64"] * 2
    assert layer_specs({**qwen, "use_sliding_window": False, "max_window_layers": 4})[0] == ["full"] * 6
    llama4 = {"model_type": "llama4", "text_config": {"num_hidden_layers": 8, "attention_chunk_size": 16}}
    assert layer_specs(llama4)[0] == ["chunk:16"] * 3 + ["full"] + ["chunk:16"] * 3 + ["full"]


def test_config_stack_equals_spec_stack_coverage():
    n = 1024
    from receptive import coverage_by_layer

    by_config = coverage_by_layer(pattern_from_config(CONFIGS / "gemma3-4b.json", n), 8, method="exact")
    by_hand = coverage_by_layer(stack_from_spec("5*swa:1024,full", n, 34, causal=True), 8, method="exact")
    np.testing.assert_array_equal(by_config.sizes, by_hand.sizes)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
        ({"hidden_size": 8}, "num_hidden_layers"),
        (
            {"num_hidden_layers": 2, "layer_types": ["sliding_attention", "linear_attention"], "sliding_window": 8},
            "layer_types",
        ),
        ({"num_hidden_layers": 2, "layer_types": ["full_attention"]}, "layer_types"),
        ({"num_hidden_layers": 2, "layer_types": ["sliding_attention"] * 2}, "sliding_window"),
        ({"num_hidden_layers": 2, "sliding_window": -3}, "sliding_window"),
        ({"num_hidden_layers": 2, "sliding_window": 8, "sliding_window_pattern": "x"}, "sliding_window_pattern"),
        ({"num_hidden_layers": 4, "attention_chunk_size": 8, "no_rope_layers": [1]}, "no_rope_layers"),
    ],
)
def test_uninterpretable_configs_name_the_field(config, message):
    with pytest.raises(ValueError, match=message):
        pattern_from_config(config, 64)


def test_bad_config_files(tmp_path, capsys):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    for path, message in [(bad, "not valid JSON"), (tmp_path / "missing.json", "cannot read")]:
        with pytest.raises(SystemExit) as exc:
            coverage_main(["--n", "64", "--hf-config", str(path)])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err and "error: --hf-config: " in err


def test_stack_cli_equals_patterns_cli(capsys):
    coverage_main(["--n", "2048", "--w", "16", "--patterns", "sa", "--json", "--no-progress"])
    plain = json.loads(capsys.readouterr().out)["patterns"]["sa"]
    coverage_main(["--n", "2048", "--stack", "sa:16", "--json", "--no-progress"])
    stacked = json.loads(capsys.readouterr().out)["patterns"]["sa:16"]
    assert plain["full_coverage_layer"] == stacked["full_coverage_layer"]
    assert plain["layers"] == stacked["layers"]


def test_stack_cli_json_has_costs(capsys):
    coverage_main(["--n", "512", "--causal", "--stack", "2*swa:64,full", "--layers", "5", "--json", "--no-progress"])
    doc = json.loads(capsys.readouterr().out)
    layers = doc["patterns"]["2*swa:64,full"]["layers"]
    assert [lc["kv_cache_entries"] for lc in layers] == [64, 64, 512, 64, 64]
    assert layers[2]["pairs_relative"] == 1.0
    assert doc["patterns"]["2*swa:64,full"]["full_coverage_layer"] == 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--stack", "nope:3"], "--stack: unknown pattern"),
        (["--stack", "swa"], "--stack: 'swa' needs W"),
        (["--stack", "swa:0"], "w: expected"),
        (["--stack", "chunk:5000"], "chunk: expected"),
        (["--stack", "global:8:999"], "globals: expected"),
        (["--stack", ","], "--stack"),
        (["--stack", "swa:8", "--layers", "0"], "--layers"),
        (["--patterns", "bigbird:7:999"], "window: expected"),
    ],
)
def test_stack_cli_errors_are_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        coverage_main(["--n", "512", *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_receptive_fields_equal_dense_products():
    rng = np.random.default_rng(0)
    for spec, causal in [("sa:5", False), ("bigbird:4:3:1:1", False), ("strided:6", True), ("sink:3:2", True)]:
        p = stack_from_spec(spec, 40, 3, causal)
        reach = np.eye(40, dtype=bool)
        for layer in (1, 2, 3):
            reach = (p.adjacency(layer).toarray().astype(int) @ reach.astype(int)) > 0
        targets = rng.choice(40, size=7, replace=False)
        for t, rf in zip(targets, receptive_fields(p, targets, 3), strict=True):
            np.testing.assert_array_equal(rf, np.flatnonzero(reach[t]))
    mistral = stack_from_spec("swa:4096", 131072, 32, causal=True)
    assert receptive_field(mistral, 131071, 32).size == 32 * 4095 + 1  # the "131K theoretical span"
    with pytest.raises(ValueError, match="targets"):
        receptive_fields(mistral, [131072], 1)


def test_matched_window_gives_matched_pairs():
    n = 4096
    for causal in (False, True):
        for kind in ("sa", "sa+swa"):
            target = 0.05 * n * n
            w = matched_window(kind, n, causal, target)
            got = pattern_from_spec(f"{kind}:{w}", n, causal).pair_count(1)
            assert abs(got / target - 1) < 0.05, (kind, causal, got / target)


def test_layouts_cli_small(tmp_path, capsys):
    out = tmp_path / "layouts.json"
    layouts_main(
        [
            "--n",
            "8192",
            "--only",
            "gemma3-4b,longformer-base-4096",
            "--targets",
            "64",
            "--json",
            str(out),
            "--no-progress",
        ]
    )
    doc = json.loads(out.read_text())
    by_name = {r["layout"]["name"]: r for r in doc["layouts"]}
    assert by_name["gemma3-4b"]["layout"]["full_coverage_layer"] == 6  # the first global layer
    assert by_name["longformer-base-4096"]["layout"]["last_token_span"] == 12 * 256 + 1
    for r in doc["layouts"]:
        assert len(r["layout"]["mean_coverage"]) == r["layout"]["depth"]
        assert set(r["matched"]) == {"sa", "sa+swa"}
    stack, _ = load_layout(CONFIGS / "streamingllm-llama2-7b.json", 4096)
    assert stack.causal and stack.max_layers == 32 and stack.kv_cache_entries(1) == 1024
    with pytest.raises(SystemExit):
        layouts_main(["--n", "64", "--only", "nope"])
    assert "--only" in capsys.readouterr().err


def test_a_layout_longer_than_n_is_left_out_and_named(tmp_path, capsys):
    """At an ``n`` shorter than a layout's segment (LongNet's 2048 at ``--n 1024``) the layouts that fit are run and
    the others named under the table with the ``n`` they fit from; named in ``--only``, such a layout is one line
    naming ``--only``; with no layout that fits, one line naming ``--n``."""
    import shutil

    configs = tmp_path / "configs"
    configs.mkdir()
    shutil.copy(CONFIGS / "longnet.json", configs / "longnet.json")
    (configs / "short.json").write_text(json.dumps({"name": "short", "stack": "swa:8", "layers": 2, "causal": True}))
    out = tmp_path / "out.json"
    argv = ["--configs", str(configs), "--targets", "8", "--no-progress"]
    assert layouts_main(["--n", "1024", *argv, "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [r["layout"]["name"] for r in doc["layouts"]] == ["short"]
    assert doc["skipped"] == [{"name": "longnet", "needs_n": 2048}]
    assert layouts_main(["--n", "1024", *argv]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("longnet (fits from --n 2048)")
    for extra, flag in ((["--only", "longnet"], "--only"), ([], "--n")):
        with pytest.raises(SystemExit) as exc:
            layouts_main(
                ["--n", "4", "--configs", str(configs), "--no-progress"]
                if flag == "--n"
                else ["--n", "1024", *argv, *extra]
            )
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 2 and len(err.splitlines()) == 1 and f"error: {flag}: " in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configs", "out.json"]


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ({"name": "x", "stack": "swa:16", "layers": "two", "causal": True}, "'layers' must be an integer"),
        ({"name": "x", "stack": "swa:16", "layers": 0, "causal": True}, "'layers' must be an integer"),
        ({"name": "x", "stack": "swa:16", "layers": 2, "causal": "false"}, "'causal' must be a JSON boolean"),
        ({"name": "x", "stack": "swa:16", "layers": 2, "causal": 0}, "'causal' must be a JSON boolean"),
        ({"name": 3, "stack": "swa:16", "layers": 2, "causal": True}, "'name' and 'stack' must be strings"),
        ({"model_type": "mistral", "num_hidden_layers": "two", "sliding_window": 8}, "num_hidden_layers"),
    ],
)
def test_a_layout_file_of_wrong_field_types_is_refused_before_any_work(tmp_path, capsys, monkeypatch, content, field):
    """``--configs DIR`` with a file whose fields have the wrong JSON types: one line naming --configs, the file and
    the field, before any layout is studied (a good file next to it is not studied first)."""
    import receptive.layouts as module

    (tmp_path / "a_good.json").write_text(json.dumps({"name": "g", "stack": "swa:8", "layers": 2, "causal": True}))
    (tmp_path / "b_bad.json").write_text(json.dumps(content))
    monkeypatch.setattr(module, "study", lambda *a, **k: pytest.fail("studied before every file was checked"))
    with pytest.raises(SystemExit) as exc:
        layouts_main(["--n", "64", "--configs", str(tmp_path), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1, err
    assert "error: --configs: " in err and "b_bad.json" in err and field in err, err
