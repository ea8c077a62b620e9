"""The attention-profile study's commands on the committed results: derived files equal to what their functions
compute from the profile, the figure written, bad input refused in one line."""

import importlib
import json
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
RESULTS = Path(__file__).resolve().parents[2] / "analysis" / "attention_profile" / "results"


def test_heads_file_is_the_profile_s():
    from analysis.attention_profile.heads import heads_summary

    heads = json.loads((RESULTS / "heads.json").read_text())
    profile = json.loads((RESULTS / "profile.json").read_text())
    assert {k: v for k, v in heads.items() if k != "command"} == json.loads(json.dumps(heads_summary(profile)))


def test_predict_chooses_on_the_search_tasks_and_reports_the_held_out_ones():
    from analysis.attention_profile.predict import chosen

    predict = json.loads((RESULTS / "predict.json").read_text())
    assert chosen(predict["correlations"]) == predict["chosen"]["any"]
    assert {r["task"] for r in predict["held_out"]} == {"hellaswag", "lambada"}
    assert all(r["measure"] in {c for x in predict["chosen"].values() for c in x.values()} for r in predict["held_out"])


def test_figure_writes_png_and_pdf(tmp_path):
    from analysis.attention_profile.figure import main

    assert main(["--out", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig.png").stat().st_size > 0 and (tmp_path / "fig.pdf").stat().st_size > 0


@pytest.mark.parametrize(
    ("module", "argv", "flag"),
    [
        ("study", ["--items", "0", "--out", "x.json"], "--items"),
        ("study", ["--items", "4", "--kl-items", "5", "--out", "x.json"], "--kl-items"),
        ("study", ["--tasks", "boolq", "--out", "x.json"], "--tasks"),
        ("study", ["--out", "x.csv"], "--out"),
        ("predict", ["--profile", "{bad}", "--out", "x.json"], "--profile"),
        ("predict", ["--reach", "{empty}", "--out", "x.json"], "--reach"),
        ("predict", ["--store", "{store}", "--out", "x.json"], "--store"),
        ("heads", ["--profile", "{bad}", "--out", "x.json"], "--profile"),
        ("heads", ["--out", "/proc/x.json"], "--out"),
        ("figure", ["--results", "{folder}", "--out", "f"], "--results"),
    ],
)
def test_bad_input_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch, module, argv, flag):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_bytes(b"\x00\x01binary")
    (tmp_path / "empty.json").write_text("{}")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "tasks.jsonl").write_text('{"key": "a"}\n')
    argv = [
        a.format(bad=tmp_path / "bad.json", empty=tmp_path / "empty.json", folder=tmp_path, store=tmp_path / "store")
        for a in argv
    ]
    before = sorted(tmp_path.iterdir())
    main = importlib.import_module(f"analysis.attention_profile.{module}").main
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f" {flag}:" in err, err
    assert sorted(tmp_path.iterdir()) == before
