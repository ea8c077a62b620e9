"""``python -m analysis.causal.variants`` at its smallest size: it measures, and bad flags fail in one line."""

import json

import pytest

from analysis.causal.variants import main


def test_variants_cli_measures_and_rejects_bad_input(tmp_path, capsys):
    out = tmp_path / "v"
    assert (
        main(
            [
                "--patterns",
                "sa+swa,sa-ms+swa-eq",
                "--n",
                "256",
                "--w",
                "8",
                "--seeds",
                "2",
                "--causal",
                "yes",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    doc = json.loads((out / "variants.json").read_text())
    points = {p["pattern"]: p for p in doc["points"]}
    assert points["sa+swa"]["full_layers"] == [4, 4] and points["sa+swa"]["method"] == "exact"
    assert 9 < points["sa-ms+swa-eq"]["keys_per_query"] < 12
    capsys.readouterr()
    for argv in (["--patterns", "nope"], ["--seeds", "0"], ["--n", "2^x"], ["--out", str(out)]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 2 and len(err.splitlines()) == 1, err


@pytest.mark.parametrize(("flag", "value"), [("--max-layers", "32"), ("--targets", "16"), ("--exact-max", "2^20")])
def test_a_resume_with_another_measurement_is_refused(tmp_path, capsys, flag, value):
    out = tmp_path / "v"
    base = ["--patterns", "sa+swa", "--n", "256", "--w", "8", "--seeds", "1", "--causal", "yes", "--out", str(out)]
    assert main(base) == 0
    rows = (out / "variants.jsonl").read_text()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main([*base, "--resume", "--n", "256,512", flag, value])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1 and f" {flag}:" in err, err
    assert (out / "variants.jsonl").read_text() == rows  # nothing measured, nothing mixed
    assert main([*base, "--resume", "--n", "256,512"]) == 0  # the same measurement extends the log


def test_a_resume_after_a_refresh_of_the_keys_checks_the_last_measurement(tmp_path, capsys):
    """A refresh of the keys appends a run that measured nothing: the resume compares with the run before it."""
    out = tmp_path / "v"
    base = ["--patterns", "sa+swa", "--n", "256", "--w", "8", "--seeds", "1", "--causal", "yes", "--out", str(out)]
    assert main(base) == 0
    doc = json.loads((out / "variants.json").read_text())
    doc["runs"].append({"refresh_keys": True, "command": "python -m analysis.causal.refresh_keys --out v", "rows": 1})
    (out / "variants.json").write_text(json.dumps(doc))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main([*base, "--resume", "--max-layers", "32"])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1 and " --max-layers: " in err, err
