"""benchmarks/bench_eval.py on a tiny random Llama: both scorers agree on every request, the row and the JSON."""

import json

import pytest

pytest.importorskip("transformers")
pytest.importorskip("lm_eval")
from benchmark_scripts import load_benchmark

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")


def test_tiny_run_compares_at_equal_scores_and_writes_only_where_asked(tmp_path, capsys):
    bench = load_benchmark("bench_eval")
    assert (
        bench.main(["--tiny", "--items", "3", "--repeats", "1", "--threads", "1", "--json", str(tmp_path / "e.json")])
        == 0
    )
    [row] = json.loads((tmp_path / "e.json").read_text())["rows"]
    assert row["items"] == 3 and row["requests"] == 12
    assert row["max_abs_ll_difference"] < 1e-4 and row["same_accuracy"]
    assert row["speedup"] == pytest.approx(row["hflm_seconds"] / row["harness_seconds"])
    assert "speedup" in capsys.readouterr().out


BAD = [(["--items", "0"], "--items"), (["--json", "/no/such/dir/x.json"], "--json"), (["--model", "/x"], "--model")]


@pytest.mark.parametrize(("argv", "flag"), BAD)
def test_bad_input_is_one_line(tmp_path, capsys, argv, flag):
    with pytest.raises(SystemExit) as exit:
        load_benchmark("bench_eval").main(argv)
    assert exit.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f" {flag}:" in err
