"""The causal decoder study: a tiny Llama byte LM trained for seconds, then every layer replaced by causal methods
through transformers' AttentionInterface."""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from analysis.numerical_methods import decoder  # noqa: E402


def test_quick_study_writes_json_with_exact_rows_at_full_budget(tmp_path, capsys):
    out = tmp_path / "decoder.json"
    argv = [
        "--quick",
        "--methods",
        "swa,sa-band,top-k,mla,tpa",
        "--budgets",
        "8,64",
        "--seeds",
        "2",
        "--json",
        str(out),
    ]
    assert decoder.main(argv) == 0
    result = json.loads(out.read_text())
    rows = {(r["method"], r["budget"]): r for r in result["rows"]}
    full = rows[("full", 64)]
    assert 1 < full["ppl"] < 128 and full["kv_cache_bytes_per_token"] > 0
    for exact in [("swa", 64), ("top-k", 64), ("tpa", 2)]:  # every key, or the full rank min(heads, d) = 2
        assert rows[exact]["ppl"] == pytest.approx(full["ppl"], rel=1e-4), exact
    assert rows[("swa", 8)]["kv_cache_bytes_per_token"] < full["kv_cache_bytes_per_token"]
    assert rows[("mla", 8)]["kv_cache_bytes_per_token"] < full["kv_cache_bytes_per_token"]
    assert rows[("sa-band", 8)]["draws"] == 2 and rows[("sa-band", 8)]["ppl_min"] <= rows[("sa-band", 8)]["ppl_max"]
    assert rows[("tpa", 1)]["budget"] == 1 and ("tpa", 8) not in rows  # TPA's rank is at most min(heads, d)
    assert result["training"]["loss"][-1]["loss"] < result["training"]["loss"][0]["loss"]
    assert "ppl" in capsys.readouterr().out


def test_training_is_reproducible_from_the_seed():
    from analysis.training.tasks import load_corpus

    config = decoder.DecoderConfig(
        n=16, hidden=16, layers=1, heads=1, intermediate=16, steps=3, batch=2, warmup=1, max_chars=20_000
    )
    corpus = load_corpus(config.max_chars)
    a, log_a = decoder.train(config, corpus)
    b, log_b = decoder.train(config, corpus)
    assert log_a == log_b
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--budgets", "0"], "--budgets"),
        (["--methods", "svd"], "--methods"),
        (["--seeds", "0"], "--seeds"),
        (["--steps", "0"], "--steps"),
        (["--threads", "0"], "--threads"),
    ],
)
def test_bad_arguments_are_one_line_errors(argv, match, capsys):
    with pytest.raises(SystemExit) as exc:
        decoder.main(["--quick", *argv])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and match in err and err.count("\n") == 1


@pytest.mark.parametrize(("field", "value"), [("n", 4), ("heads", 3), ("lr", 2.0), ("steps", True)])
def test_config_validates(field, value):
    with pytest.raises(ValueError, match=f"^{field}: expected"):
        decoder.DecoderConfig(**{field: value})
