"""``python -m figures``: every figure is written as PNG and PDF; unknown names get a one-line error."""

import pytest

from figures import FIGURES
from figures.__main__ import main


def test_all_quick_figures(tmp_path, capsys):
    assert main(["all", "--quick", "--out", str(tmp_path)]) == 0
    for name in FIGURES:
        for suffix in ("png", "pdf"):
            assert (tmp_path / f"{name}.{suffix}").stat().st_size > 2000, name
    assert "coverage_vs_layer" in capsys.readouterr().out


def test_unknown_figure(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["nope"])
    assert exc.value.code == 2 and "nope" in capsys.readouterr().err


def test_missing_benchmark_json(tmp_path):
    from figures.cost import make_per_layer

    with pytest.raises(FileNotFoundError, match=r"gpu\.bench"):
        make_per_layer(tmp_path, bench=tmp_path / "missing.json")
