"""``benchmarks/bench_generation.py`` at its smallest: every row timed, checked and written; bad flags are one line."""

import json

import pytest
from benchmark_scripts import load_benchmark

pytest.importorskip("transformers")
bench = load_benchmark("bench_generation")


def test_rows_for_every_attention_and_length(tmp_path, capsys):
    out = tmp_path / "generation.json"
    argv = ["--tiny", "--n", "48,96", "--methods", "sa,swa,moba", "--budget", "8", "--prefill", "40", "--new", "6",
            "--repeats", "2", "--json", str(out)]  # fmt: skip
    assert bench.main(argv) == 0
    doc = json.loads(out.read_text())
    assert doc["command"].endswith(" ".join(argv))
    forward = {(row["n"], row["attention"]): row for row in doc["forward"]}
    assert set(forward) == {(n, a) for n in (48, 96) for a in ("sdpa", "sa", "swa", "moba")}
    for (n, _), row in forward.items():
        assert len(row["runs"]) == 2 and row["seconds"] > 0
        assert row["over_sdpa"] == pytest.approx(row["seconds"] / forward[n, "sdpa"]["seconds"])
    assert [row["attention"] for row in doc["decode"]] == ["sdpa", "sa", "swa", "moba"]
    for row in doc["decode"]:
        assert len(row["step_seconds"]) == 6 and row["growth"] > 0 and row["recompute_seconds"] > 0
    assert "x sdpa" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--methods", "sa,nope"], "--methods"),
        (["--budget", "0"], "--budget"),
        (["--n", "1"], "--n"),
        (["--json", "/nonexistent/x.json"], "--json"),
        (["--prefill", "0"], "--prefill: expected an integer >= 1, got 0"),
        (["--new", "-1"], "--new: expected an integer >= 0, got -1"),
    ],
)
def test_bad_flags_are_one_line_errors(argv, flag, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--tiny", "--repeats", "1", *(["--new", "0"] if "--new" not in argv else []), *argv])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0]


def test_json_naming_a_folder_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bench, "tiny_model", lambda *a: pytest.fail("the model was built before --json was checked"))
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--tiny", "--new", "0", "--repeats", "1", "--json", str(tmp_path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--json" in err[0] and "is a directory" in err[0]
    assert list(tmp_path.iterdir()) == []
