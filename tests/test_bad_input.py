"""Sizes in bytes, L* of the closed form, the sweep's result store and atomic output files."""

import json
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphs import parse_bytes
from graphs._atomic import atomic_write, check_writable
from receptive import coverage, make_pattern
from receptive.sweep import ResultStore


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1e9", 10**9),
        ("5GB", 5 * 10**9),
        ("5 gb", 5 * 10**9),
        ("2GiB", 2 * 2**30),
        ("512M", 512 * 10**6),
        ("512Mi", 512 * 2**20),
        ("1.5GiB", 3 * 2**29),
        ("1kB", 1000),
        ("1KiB", 1024),
        ("4096", 4096),
        (4096, 4096),
        (1e9, 10**9),
        ("1.5", 1),
    ],
)
def test_parse_bytes_has_dask_semantics(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["0.5", "0", "-1", "lots", "1 XB", "", "GiB", "nan", "inf", "1e400", True, None, [1]])
def test_parse_bytes_rejects_with_one_line_naming_the_argument(text):
    with pytest.raises(ValueError, match=r"^--mem: expected") as exc:
        parse_bytes(text, "--mem")
    assert "\n" not in str(exc.value)


@given(
    number=st.one_of(st.integers(1, 10**6), st.floats(1.0, 1e6, allow_nan=False)),
    unit=st.sampled_from(["", "B", "k", "kB", "KiB", "Ki", "M", "MB", "MiB", "g", "GB", "GiB", "T", "TiB", "PB"]),
    space=st.booleans(),
    lower=st.booleans(),
)
def test_parse_bytes_agrees_with_dask(number, unit, space, lower):
    dask_utils = pytest.importorskip("dask.utils")
    text = f"{number}{' ' if space else ''}{unit.lower() if lower else unit}"
    assert parse_bytes(text) == dask_utils.parse_bytes(text)


def test_closed_form_reports_no_full_layer_beyond_the_layers_computed():
    pat = make_pattern("swa", 1000, 10)
    star = pat.closed_form_full_layer()
    short = coverage(pat, star - 1, method="closed-form")
    assert short.full_coverage_layer is None and f"L* = {star}" in short.note
    assert coverage(pat, star, method="closed-form").full_coverage_layer == star
    capped = coverage(pat, method="closed-form", max_layers=star - 5)
    assert capped.full_coverage_layer is None and len(capped.layers) == star - 5
    assert coverage(pat, star - 1, method="exact").full_coverage_layer is None


def rows(*keys):
    return "".join(json.dumps({"key": k, "full_layer": 3}) + "\n" for k in keys)


def test_result_store_skips_only_a_torn_last_line(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(rows("a", "b") + '{"key": "c", "full_')
    with pytest.warns(UserWarning, match="tasks.jsonl:3: skipping a torn last line"):
        store = ResultStore(tmp_path, resume=True)
    with pytest.warns(UserWarning):
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


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_write(target, "--csv") as fh:
        fh.write("partial")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["out.csv"]
    with atomic_write(target, "--csv") as fh:
        fh.write("new\n")
    assert target.read_text() == "new\n" and os.listdir(tmp_path) == ["out.csv"]


def test_unwritable_paths_are_one_line_errors(tmp_path):
    with pytest.raises(ValueError, match=r"--csv: directory .* does not exist"):
        check_writable(tmp_path / "missing" / "x.csv", "--csv")
    with pytest.raises(ValueError, match=r"--csv: .* is a directory"):
        check_writable(tmp_path, "--csv")
    assert check_writable(tmp_path / "new" / "x.csv", "--plot", make_parents=True).parent.is_dir()
    np.testing.assert_equal((tmp_path / "new").is_dir(), True)
