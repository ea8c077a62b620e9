"""Sizes in bytes (``graphs.memory.parse_bytes``) and atomic output files (``graphs._atomic``): one-line errors,
umask."""

import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphs._atomic import atomic_write, check_writable
from graphs.memory import parse_bytes


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
    error = TypeError if text is True or text is None or isinstance(text, list) else ValueError
    with pytest.raises(error, match=r"^--mem: expected") as exc:
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


@pytest.mark.parametrize(("umask", "expected"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_write_follows_the_umask(tmp_path, umask, expected):
    """A new file gets ``0o666`` less the umask (not mkstemp's 0600); a replaced file keeps its own mode."""
    from graphs._atomic import current_umask, write_text_atomic

    old = os.umask(umask)
    try:
        assert current_umask() == umask
        target = write_text_atomic(tmp_path / "new.json", "{}\n", "--json")
        assert target.stat().st_mode & 0o777 == expected
        with atomic_write(tmp_path / "new.bin", "--out", mode="wb") as fh:
            fh.write(b"x")
        assert (tmp_path / "new.bin").stat().st_mode & 0o777 == expected
        kept = tmp_path / "kept.txt"
        kept.write_text("old\n")
        kept.chmod(0o640)
        write_text_atomic(kept, "new\n", "--out")
        assert kept.stat().st_mode & 0o777 == 0o640 and kept.read_text() == "new\n"
    finally:
        os.umask(old)
