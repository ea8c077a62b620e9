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


def test_unknown_figure(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["nope", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "nope" in capsys.readouterr().err


def test_missing_benchmark_json(tmp_path):
    from figures.cost import make_per_layer

    with pytest.raises(FileNotFoundError, match=r"gpu\.bench"):
        make_per_layer(tmp_path, bench=tmp_path / "missing.json")


@pytest.mark.parametrize(
    "argv", [["coverage_vs_layer", "--quick"], ["coverage_vs_layer", "--quick", "--out", "FILE/sub"]]
)
def test_out_is_required_and_checked_before_drawing(tmp_path, capsys, argv):
    """No default output into the checkout; an --out below a file is one line naming --out."""
    (tmp_path / "FILE").write_text("not a folder")
    argv = [str(tmp_path / a) if a == "FILE/sub" else a for a in argv]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and "--out" in err, err
