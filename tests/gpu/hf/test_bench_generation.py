"""``benchmarks/bench_generation.py`` at its smallest: every row timed beside its floor, checked and written; bad
flags are one line."""

import json

import pytest
from benchmark_scripts import load_benchmark

pytest.importorskip("transformers")
bench = load_benchmark("bench_generation")


def test_rows_for_every_attention_length_and_context_with_their_floors(tmp_path, capsys):
    from gpu.attention.head_plans import HeadPlan

    plan = HeadPlan("toy", tuple(tuple(("swa+sink", 4) if h % 2 else ("sa", 4) for h in range(9)) for _ in range(2)))
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps({"plan": plan.to_dict()}))
    out = tmp_path / "generation.json"
    argv = [
        "--tiny",
        "--n",
        "48",
        "--long",
        "64",
        "--contexts",
        "40,56",
        "--methods",
        "sa,swa",
        "--plan",
        str(plan_file),
        "--budget",
        "8",
        "--new",
        "2",
        "--repeats",
        "2",
        "--decode-rounds",
        "1",
        "--profile-rows",
        "3",
        "--json",
        str(out),
    ]
    assert bench.main(argv) == 0
    doc = json.loads(out.read_text())
    assert doc["command"].endswith(" ".join(argv)) and doc["plan"]["name"] == "toy"
    labels = ["sdpa", "one-key", "sa", "swa", "plan:toy"]
    forward = {(row["n"], row["attention"]): row for row in doc["forward"]}
    assert list(forward) == [(n, a) for n in (48, 64) for a in labels]
    for (n, label), row in forward.items():
        assert len(row["runs"]) == (2 if n == 48 else 1) and row["logits"] == ("all" if n == 48 else "last")
        assert row["over_sdpa"] == pytest.approx(row["seconds"] / forward[n, "sdpa"]["seconds"])
        one = forward[n, "one-key"]["seconds"]
        assert row["floor_seconds"] > one and row["over_floor"] == pytest.approx(row["seconds"] / row["floor_seconds"])
        assert row["keys_per_query"] == {"sdpa": (n + 1) / 2, "one-key": 1.0}.get(label, row["keys_per_query"])
    assert 1 < forward[64, "sa"]["keys_per_query"] <= 8
    decode = {(row["context"], row["attention"]): row for row in doc["decode"]}
    assert list(decode) == [(c, a) for c in (40, 56) for a in labels]
    for (_, label), row in decode.items():
        assert len(row["step_seconds"]) == 2 and row["ms_per_step"] == pytest.approx(1e3 * row["seconds"])
        assert row["growth"] == pytest.approx(decode[56, label]["seconds"] / decode[40, label]["seconds"])
    assert decode[56, "sdpa"]["keys_per_query"] == 57 and decode[56, "sa"]["keys_per_query"] == 8
    assert doc["profile"]["context"] == 40 and set(doc["profile"]["steps"]) == set(labels)
    assert all(len(step["rows"]) == 3 for step in doc["profile"]["steps"].values())
    assert [rate.get("n", rate.get("decode_context")) for rate in doc["dense_rates"]] == [48, 64, 40, 56]
    printed = capsys.readouterr().out
    assert "x floor" in printed and "ms/step" in printed


def test_a_dynamic_cache_decodes_every_row_from_one_filled_cache(tmp_path):
    out = tmp_path / "dynamic.json"
    argv = [
        "--tiny",
        "--n",
        "none",
        "--contexts",
        "30",
        "--cache",
        "dynamic",
        "--methods",
        "sa",
        "--budget",
        "4",
        "--new",
        "3",
        "--decode-rounds",
        "2",
        "--profile-rows",
        "0",
        "--json",
        str(out),
    ]
    assert bench.main(argv) == 0
    doc = json.loads(out.read_text())
    assert doc["forward"] == [] and doc["profile"] == {} and doc["decode_cache"].startswith("one DynamicCache")
    assert [row["attention"] for row in doc["decode"]] == ["sdpa", "one-key", "sa"]
    assert all(len(row["step_seconds"]) == 6 and row["growth"] == 1.0 for row in doc["decode"])


def test_the_one_key_attention_returns_each_querys_own_value():
    import torch

    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(1, 4, 5, 2, generator=g), torch.randn(1, 2, 5, 2, generator=g), torch.randn(1, 2, 5, 2)
    out = bench.one_key_attention(None, q, k, v, None)[0]
    assert torch.equal(out, v.repeat_interleave(2, 1).transpose(1, 2))
    mask = torch.ones(1, 1, 1, 5, dtype=torch.bool)
    mask[..., 3:] = False  # a static cache: 3 filled slots, the query at slot 2
    step = bench.one_key_attention(None, q[:, :, :1], k, v, mask)[0]
    assert torch.equal(step[0, 0], v[0, :, 2].repeat_interleave(2, 0))


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--methods", "sa,nope"], "--methods"),
        (["--methods", "moba"], "--methods: unknown or data-dependent"),
        (["--budget", "0"], "--budget"),
        (["--n", "1"], "--n"),
        (["--json", "/nonexistent/x.json"], "--json"),
        (["--new", "-1"], "--new: expected an integer >= 0, got -1"),
        (["--long", "-1"], "--long: expected an integer >= 0, got -1"),
        (["--plan", "/nonexistent/plan.json"], "--plan: "),
        (["--cache", "lru"], "--cache"),
    ],
)
def test_bad_flags_are_one_line_errors(argv, flag, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--tiny", "--repeats", "1", "--n", "none", "--contexts", "none", *argv])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0]


def test_json_naming_a_folder_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bench, "tiny_model", lambda *a: pytest.fail("the model was built before --json was checked"))
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--tiny", "--contexts", "none", "--repeats", "1", "--json", str(tmp_path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--json" in err[0] and "is a directory" in err[0]
    assert list(tmp_path.iterdir()) == []
