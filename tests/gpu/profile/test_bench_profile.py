"""benchmarks/bench_profile.py on a tiny random Llama: the three steps timed together, the ratios and the JSON."""

import json

import pytest

pytest.importorskip("transformers")
from benchmark_scripts import load_benchmark

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")


def test_tiny_run_writes_the_ratios(tmp_path, capsys):
    bench = load_benchmark("bench_profile")
    argv = [
        "--tiny",
        "--items",
        "3",
        "--repeats",
        "1",
        "--threads",
        "1",
        "--budget",
        "8",
        "--json",
        str(tmp_path / "p.json"),
    ]
    assert bench.main(argv) == 0
    data = json.loads((tmp_path / "p.json").read_text())
    [row] = data["rows"]
    assert row["items"] == 3 and row["patterns"] == ["sa-8", "swa+sink-8"] and row["harness_pattern"] == "sa-8"
    for step in ("forward", "profile_scored", "profile", "profile_kl"):
        assert row[f"{step}_over_harness"] == pytest.approx(row[f"{step}_seconds"] / row["harness_seconds"])
    assert row["profile_kl_seconds"] > 0 and data["command"].startswith("python benchmarks/bench_profile.py")
    assert "profile_scored/harness" in capsys.readouterr().out


BAD = [
    (["--items", "0"], "--items"),
    (["--json", "/no/such/dir/x.json"], "--json"),
    (["--patterns", "exact"], "--patterns"),
    (["--json", "x.csv"], "--json"),
]


@pytest.mark.parametrize(("argv", "flag"), BAD)
def test_bad_input_is_one_line(capsys, argv, flag):
    with pytest.raises(SystemExit) as exit:
        load_benchmark("bench_profile").main(argv)
    assert exit.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f" {flag}:" in err
