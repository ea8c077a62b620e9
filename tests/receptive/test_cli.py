"""``python -m receptive.coverage``: output formats, method selection and one-line errors naming the argument."""

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from receptive.coverage.cli import main


def run_json(capsys, *argv):
    assert main([*argv, "--json", "--no-progress"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_document(capsys):
    doc = run_json(capsys, "--n", "2048", "--w", "16")
    assert {"n", "w", "causal", "seed", "method", "patterns", "theory"} <= set(doc)
    assert doc["n"] == 2048 and doc["w"] == 16 and doc["causal"] is False and doc["method"] == "exact"
    assert list(doc["patterns"]) == ["swa", "sa", "sa+swa"]
    for name, p in doc["patterns"].items():
        layers = p["layers"]
        assert [lc["layer"] for lc in layers] == list(range(1, len(layers) + 1))
        assert set(layers[0]) == {"layer", "mean", "min", "full_fraction", "pairs", "pairs_relative"}, name
    sa, both = doc["patterns"]["sa"], doc["patterns"]["sa+swa"]
    # default layers run until SA and SA+SWA are both full: the table ends at the later of the two L*
    assert sa["full_coverage_layer"] is not None and both["full_coverage_layer"] is not None
    assert len(sa["layers"]) == max(sa["full_coverage_layer"], both["full_coverage_layer"])
    assert sa["layers"][-1]["min"] == 1.0 and sa["layers"][sa["full_coverage_layer"] - 2]["min"] < 1.0
    # SWA is not full within those layers: L* = None (as exact would say), its closed-form L* in the note
    swa = doc["patterns"]["swa"]
    assert swa["method"] == "closed-form" and swa["full_coverage_layer"] is None
    assert f"L* = {-(-2047 // 7)}" in swa["note"]
    assert doc["theory"]["swa_full_coverage_layer"] == -(-2047 // 7)
    assert doc["theory"]["sa_full_coverage_layer_prediction"] >= 1


def test_sampled_targets_and_csv(tmp_path, capsys):
    path = tmp_path / "cov.csv"
    doc = run_json(capsys, "--n", "3000", "--w", "8", "--targets", "100", "--csv", str(path), "--patterns", "sa")
    assert doc["method"] == "sampled" and doc["patterns"]["sa"]["targets"] == 100
    assert "sampled targets" in doc["patterns"]["sa"]["note"]
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == len(doc["patterns"]["sa"]["layers"])
    assert float(rows[0]["mean_ci_low"]) <= float(rows[0]["mean"]) <= float(rows[0]["mean_ci_high"])


def test_table_and_plot(tmp_path, capsys):
    assert main(["--n", "512", "--w", "8", "--causal", "--plot", str(tmp_path / "fig.png"), "--layers", "5"]) == 0
    out = capsys.readouterr().out
    assert "L* = first layer" in out and "log_w n" in out
    assert len([line for line in out.splitlines() if line.strip().startswith(("1 ", "5 "))]) == 2
    assert (tmp_path / "fig.png").stat().st_size > 1000 and (tmp_path / "fig.pdf").stat().st_size > 1000


def test_exact_flag_runs_swa_through_the_engine(capsys):
    doc = run_json(capsys, "--n", "300", "--w", "20", "--exact", "--patterns", "swa,full")
    assert doc["patterns"]["swa"]["method"] == "exact"
    assert doc["patterns"]["swa"]["full_coverage_layer"] == -(-299 // 9)
    assert doc["patterns"]["full"]["full_coverage_layer"] == 1


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--n", "1"], "--n"),
        (["--n", "3.5"], "--n"),
        (["--w", "0"], "--w"),
        (["--n", "100", "--w", "200"], "--w"),
        (["--n", "100", "--w", "101", "--causal", "--patterns", "swa"], "--w"),
        (["--n", "100", "--w", "x"], "--w"),
        (["--patterns", "sa,nope"], "--patterns"),
        (["--patterns", "sa,sa"], "--patterns"),
        (["--layers", "0"], "--layers"),
        (["--max-layers", "0"], "--max-layers"),
        (["--n", "100", "--targets", "101"], "--targets"),
        (["--seed", "-1"], "--seed"),
        (["--hf-config", "no-such-config"], "--hf-config"),
        (["--max-memory", "lots"], "--max-memory"),
        (["--n", "100000", "--max-memory", "1KiB", "--exact", "--patterns", "sa"], "--max-memory"),
        (
            ["--n", "16384", "--w", "4", "--causal", "--patterns", "swa", "--exact", "--max-layers", "5500"],
            "--max-memory",
        ),
        (["--exact", "--targets", "5"], "--targets"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag(argv, flag, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--no-progress"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    message = err.split("error: ", 1)[1]
    assert len(err.splitlines()) == 1 and message.startswith((f"{flag}:", f"argument {flag}:")), err


def test_help_explains():
    out = subprocess.run(
        [sys.executable, "-m", "receptive.coverage", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for word in ("receptive", "coverage", "--targets", "--causal", "examples"):
        assert word in out


def test_main_module_runs_end_to_end():
    proc = subprocess.run(
        [sys.executable, "-m", "receptive.coverage", "--n", "1024", "--w", "32", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(proc.stdout)
    assert np.isclose(doc["theory"]["log_w_n"], 2.0)


def test_comma_separated_option_helpers():
    from receptive.cli_parser import comma_ints, comma_names

    assert comma_names("--p", " sa, swa ", ("sa", "swa")) == ["sa", "swa"]
    assert comma_ints("--b", "16,32") == [16, 32]
    for text in ("", "sa,full", ","):
        with pytest.raises(ValueError, match="--p: expected comma-separated names from sa, swa"):
            comma_names("--p", text, ("sa", "swa"))
    for text in ("", "a", "16,0", "1.5"):
        with pytest.raises(ValueError, match="--b: expected comma-separated integers >= 1"):
            comma_ints("--b", text)


@pytest.mark.parametrize(("umask", "expected"), [(0o022, 0o644), (0o077, 0o600)])
def test_written_files_follow_the_umask(tmp_path, capsys, umask, expected):
    """--csv and --plot are written atomically (a temporary file, then a rename) and get ``0o666`` less the umask."""
    import os

    old = os.umask(umask)
    try:
        argv = ["--n", "256", "--w", "8", "--layers", "3", "--csv", str(tmp_path / "c.csv")]
        assert main([*argv, "--plot", str(tmp_path / "p.png"), "--no-progress"]) == 0
    finally:
        os.umask(old)
    capsys.readouterr()
    for name in ("c.csv", "p.png", "p.pdf"):
        assert (tmp_path / name).stat().st_mode & 0o777 == expected, name
