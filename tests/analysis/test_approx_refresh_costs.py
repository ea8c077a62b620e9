"""``python -m analysis.numerical_methods.refresh_costs``: recomputes only the cost fields of approx-lab result
files, agrees with the
commands that write them, is idempotent, and the committed results are up to date with the cost model."""

import copy
import json
from dataclasses import asdict
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from analysis.numerical_methods import refresh_costs as rc  # noqa: E402
from analysis.numerical_methods.decoder import DecoderConfig, _cost  # noqa: E402
from analysis.numerical_methods.real import costs as minilm_costs  # noqa: E402
from gpu.approx import cli as study_cli  # noqa: E402

RESULTS = Path(__file__).resolve().parents[2] / "analysis" / "numerical_methods" / "results"
COMMITTED = sorted(RESULTS.glob("approx_*.json"))


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _stale(doc, section):
    """A copy with every cost field of every row changed (as a formula change would), and the rows' fresh values."""
    stale = copy.deepcopy(doc)
    for row in stale[section]:
        for field in rc.COST_FIELDS:
            if isinstance(row.get(field), float):
                row[field] = row[field] * 0.5 + 1.0
    return stale


def _check_refresh_of(tmp_path, fresh, section, extra_fields=()):
    """Write a stale copy of ``fresh``, refresh it with the CLI, and compare field by field; then refresh again."""
    stale = _stale(fresh, section)
    path = tmp_path / "result.json"
    path.write_text(json.dumps(stale, indent=1) + "\n")
    assert rc.main(["--check", str(path)]) == 1
    assert json.loads(path.read_text()) == stale  # --check writes nothing
    assert rc.main([str(path), "--note", "test"]) == 0
    after = json.loads(path.read_text())
    assert set(after) == set(stale) | {rc.NOTE_FIELD}
    for key in stale:
        if key != section:
            assert after[key] == stale[key], key  # parameters, measurements, timings untouched
    assert len(after[section]) == len(stale[section])
    changed = 0
    for old, new, want in zip(stale[section], after[section], fresh[section], strict=True):
        assert set(new) == set(old)
        for field in old:
            if field in rc.COST_FIELDS:
                assert new[field] == want[field], (old["method"], field)
                changed += new[field] != old[field]
            else:
                assert new[field] == old[field], (old["method"], field)  # errors, ppl, measured_* stay
        for field in extra_fields:
            assert field in new
    assert changed > 0
    (entry,) = after[rc.NOTE_FIELD]
    assert (
        entry["command"] == f"python -m analysis.numerical_methods.refresh_costs {path} --note test"
        and entry["note"] == "test"
    )
    assert entry["rows"] == len(fresh[section]) and set(entry["fields"]) <= set(rc.COST_FIELDS)
    text = path.read_text()
    assert rc.main([str(path)]) == 0 and path.read_text() == text  # idempotent: nothing rewritten, no second note
    assert rc.main(["--check", str(path)]) == 0
    return after


def test_synthetic_study_file(tmp_path):
    out = tmp_path / "study.json"
    argv = [
        "--n",
        "48",
        "--d",
        "8",
        "--budgets",
        "8,16",
        "--seeds",
        "1",
        "--kinds",
        "random,spiky",
        "--methods",
        "swa,sa,sa+sink,performer,nystromformer,tpa",
        "--json",
        str(out),
    ]
    assert study_cli.main(argv) == 0
    fresh = json.loads(out.read_text())
    assert rc.refresh(fresh, "cmd") == (fresh, [])  # the study writes exactly what the refresh computes
    assert any(r["flops_vs_swa"] is None for r in fresh["rows"])  # TPA's budgets 1, 2, 4 are not the study's
    _check_refresh_of(tmp_path, fresh, "rows", extra_fields=("mean", "std", "flops_vs_swa"))


def test_causal_cost_table_keeps_the_measurements(tmp_path):
    out = tmp_path / "costs.json"
    argv = [
        "--costs",
        "--measure",
        "--causal",
        "--n",
        "32",
        "--d",
        "8",
        "--budgets",
        "8",
        "--methods",
        "swa,sa-band+sink",
        "--json",
        str(out),
    ]
    assert study_cli.main(argv) == 0
    fresh = json.loads(out.read_text())
    assert rc.layout(fresh) == "cost-table"
    assert rc.refresh(fresh, "cmd")[1] == []
    after = _check_refresh_of(tmp_path, fresh, "rows", extra_fields=("measured_flops", "measured_peak_bytes"))
    assert after["rows"][0]["method"] == "exact" and after["rows"][0]["flops_share"] == 1.0


def _decoder_doc():
    config = DecoderConfig(n=32, hidden=16, layers=2, heads=2, steps=5, warmup=1, eval_windows=2)
    rows = [{"method": "full", "budget": 32, "ppl": 4.5, "ppl_tail": 4.4, **_cost("full", config, 32)}]
    rows += [
        {"method": m, "budget": b, "ppl": 5.0 + b, "draws": 1, **_cost(m, config, b)}
        for m in ("swa", "sa-band", "mla", "performer")
        for b in (4, 8)
    ]
    fresh = {
        "config": asdict(config),
        "parameters": {"methods": ["swa"], "budgets": [4, 8]},
        "training": {"seconds": 12.5, "loss": [{"step": 1, "loss": 3.0}]},
        "rows": rows,
    }
    return fresh


def test_decoder_file(tmp_path):
    fresh = _decoder_doc()
    assert rc.layout(fresh) == "decoder" and rc.refresh(fresh, "cmd")[1] == []
    _check_refresh_of(tmp_path, fresh, "rows", extra_fields=("ppl",))


def test_minilm_file(tmp_path):
    fresh = {
        "parameters": {"n": 64, "budgets": [8, 16], "substitution_budgets": [16]},
        "errors": [{"layer": 1, "head": 0, "method": "swa", "budget": 8, "mean": 0.5, "std": 0.1}],
        "costs": minilm_costs(["swa", "sa+swa", "mla", "linformer"], [8, 16], 64),
        "seconds": {"structure": 1.5, "errors": 2.5},
    }
    assert rc.layout(fresh) == "minilm" and rc.refresh(fresh, "cmd")[1] == []
    _check_refresh_of(tmp_path, fresh, "costs")


def test_refresh_leaves_its_argument_alone_and_replaces_only_what_differs():
    fresh = _decoder_doc()
    stale = copy.deepcopy(fresh)
    stale["rows"][1]["peak_bytes"] += 8.0
    before = copy.deepcopy(stale)
    new, changes = rc.refresh(stale, "cmd")
    assert stale == before
    (change,) = changes
    assert change == (1, "swa", 4, "peak_bytes", fresh["rows"][1]["peak_bytes"] + 8.0, fresh["rows"][1]["peak_bytes"])
    assert new["rows"] == fresh["rows"]
    assert new[rc.NOTE_FIELD] == [{"command": "cmd", "fields": ["peak_bytes"], "methods": ["swa"], "rows": 1}]
    again, none = rc.refresh(new, "other")
    assert none == [] and again == new


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_committed_results_hold_the_current_cost_model(path):
    changes = rc.refresh_file(path, "check", check=True)
    assert changes == [], (
        f"stale costs in {path.name}: run python -m analysis.numerical_methods.refresh_costs {path.name}"
    )


def test_bad_arguments(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"^doc: expected the JSON"):
        rc.refresh({"parameters": {}, "rows": []}, "cmd")
    with pytest.raises(ValueError, match=r"^doc: expected a JSON object"):
        rc.layout([1, 2])
    with pytest.raises(ValueError, match=r"^command: "):
        rc.refresh(_decoder_doc(), " ")
    with pytest.raises(ValueError, match=r"^doc: rows\[0\] lacks 'method'; expected the JSON of python -m analysis"):
        rc.refresh({"config": asdict(DecoderConfig()), "parameters": {}, "rows": [{"ppl": 1.0}]}, "cmd")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"rows": []}))
    for argv, match in [
        ([str(tmp_path / "missing.json")], "FILE: no such file"),
        ([str(bad)], "is not JSON"),
        ([str(other)], "expected the JSON of"),
        ([str(other), "--note", ""], "--note: expected"),
        ([], "required"),
    ]:
        with pytest.raises(SystemExit) as info:
            rc.main(argv)
        assert info.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert match in err[-1], argv
    assert other.read_text() == json.dumps({"rows": []})


@pytest.mark.parametrize("second", ["missing", "not json", "not a lab result", "row without method"])
def test_a_bad_later_file_leaves_the_earlier_files_untouched(tmp_path, capsys, second):
    """Every file is read and refreshed before any is written: a stale first file stays as it was when the second
    one fails; with two good files both are refreshed."""
    stale = _stale(_decoder_doc(), "rows")
    first = tmp_path / "first.json"
    first.write_text(json.dumps(stale, indent=1) + "\n")
    text = first.read_text()
    bad = tmp_path / "second.json"
    if second == "not json":
        bad.write_text("{not json")
    elif second == "not a lab result":
        bad.write_text(json.dumps({"rows": []}))
    elif second == "row without method":
        bad.write_text(json.dumps({"config": asdict(DecoderConfig()), "parameters": {}, "rows": [{"ppl": 1.0}]}))
    with pytest.raises(SystemExit) as info:
        rc.main([str(first), str(bad), "--note", "test"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "FILE: " in err and str(bad) in err
    assert first.read_text() == text
    good = tmp_path / "good.json"
    good.write_text(text)
    assert rc.main([str(first), str(good)]) == 0
    for path in (first, good):
        assert json.loads(path.read_text())["rows"] == _decoder_doc()["rows"]
