"""L* of the closed form beyond the layers computed, and the sweep's result store (torn lines, bad rows, paths)."""

import json
import warnings

import pytest

from receptive import coverage_by_layer, make_pattern
from receptive.sweep import ResultStore


def test_closed_form_reports_no_full_layer_beyond_the_layers_computed():
    pat = make_pattern("swa", 1000, 10)
    star = pat.closed_form_full_layer()
    short = coverage_by_layer(pat, star - 1, method="closed-form")
    assert short.full_coverage_layer is None and f"L* = {star}" in short.note
    assert coverage_by_layer(pat, star, method="closed-form").full_coverage_layer == star
    capped = coverage_by_layer(pat, method="closed-form", max_layers=star - 5)
    assert capped.full_coverage_layer is None and len(capped.layers) == star - 5
    assert coverage_by_layer(pat, star - 1, method="exact").full_coverage_layer is None


def rows(*keys):
    return "".join(json.dumps({"key": k, "full_layer": 3}) + "\n" for k in keys)


def test_result_store_skips_only_a_torn_last_line(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(rows("a", "b") + '{"key": "c", "full_')
    with pytest.warns(UserWarning, match="tasks.jsonl:3: skipping a torn last line"):
        store = ResultStore(tmp_path, resume=True)
    with warnings.catch_warnings():  # the file unchanged: its rows and its warning are not repeated
        warnings.simplefilter("error")
        assert store.done() == {"a", "b"}
    store.add({"key": "d"})  # the torn line is cut off before appending
    assert store.done() == {"a", "b", "d"}
    assert path.read_text() == rows("a", "b") + json.dumps({"key": "d"}) + "\n"


def test_result_store_keeps_a_complete_last_row_without_newline(tmp_path):
    (tmp_path / "tasks.jsonl").write_text(rows("a") + json.dumps({"key": "b"}))
    store = ResultStore(tmp_path, resume=True)
    store.add({"key": "c"})
    assert store.done() == {"a", "b", "c"}


@pytest.mark.parametrize("bad", ["not json", "[1, 2]", '{"no_key": 1}', ""])
def test_result_store_refuses_a_malformed_line_inside(tmp_path, bad):
    (tmp_path / "tasks.jsonl").write_text(rows("a") + bad + "\n" + rows("b"))
    with pytest.raises(ValueError, match=r"tasks.jsonl:2: not a result row"):
        ResultStore(tmp_path, resume=True)


def test_result_store_names_an_unwritable_directory(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="--out: cannot create directory"):
        ResultStore(tmp_path / "file" / "sub")
