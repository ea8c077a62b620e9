"""``python -m figures``: every figure is written as PNG and PDF; unknown names get a one-line error."""

import pytest

from figures import FIGURES
from figures.cli import main


def with_committed(argv: list[str], leave_out: str) -> list[str]:
    """``argv`` and the committed result files its figures read (``analysis.figures``), but for ``leave_out``."""
    from analysis.figures import committed_inputs

    extra = committed_inputs(argv)
    return [*argv, *(a for i in range(0, len(extra), 2) if extra[i] != leave_out for a in extra[i : i + 2])]


def test_all_quick_figures(tmp_path, capsys):
    """Every figure, those of result files from the committed ones (``python -m analysis.figures``)."""
    from analysis.figures import main as committed

    assert committed(["all", "--quick", "--out", str(tmp_path)]) == 0
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


@pytest.mark.parametrize(
    ("names", "flag", "source"),
    [
        (["cost_per_layer"], "--bench", "the JSON of `python -m gpu.bench --json FILE`"),
        (["approx_kv_cache"], "--decoder-json", "the JSON of the numerical-methods study's causal decoder"),
        (["coverage_vs_layer", "layouts"], "--layouts-json", "`python -m receptive.layouts"),
        (["training"], "--training-dir", "the results of the training study"),
        (["causal"], "--pooled-json", "the causal study's pooled evaluation"),
    ],
)
@pytest.mark.parametrize("given", [True, False])
def test_missing_result_file_names_its_flag_and_what_it_is(tmp_path, capsys, names, flag, source, given):
    """A result file that is not given, or not there, is refused before any figure is drawn: one line naming the
    flag that gives it and what the file is (no default path: ``figures`` reads no checkout)."""
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        main(with_committed([*names, "--out", str(out), *([flag, str(tmp_path / "missing")] if given else [])], flag))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.split("error: ")[1].startswith(f"{flag}: ") and source in err, err
    assert not out.exists()


def test_result_flags_reach_the_figures(tmp_path, capsys):
    """``--bench`` and ``--layouts-json`` are the files the figures read (a copy elsewhere draws the same figure),
    so ``python -m figures`` runs from any folder given its inputs."""
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    bench, layouts = tmp_path / "b.json", tmp_path / "l.json"
    shutil.copy(root / "benchmarks/results/gpu_bench.json", bench)
    shutil.copy(root / "analysis/layouts/results/layouts.json", layouts)
    argv = ["cost_to_coverage", "layouts", "--out", str(tmp_path / "out"), "--bench", str(bench)]
    assert main([*argv, "--layouts-json", str(layouts)]) == 0
    for name in ("cost_to_coverage", "layouts"):
        assert (tmp_path / "out" / f"{name}.png").stat().st_size > 2000
    assert str(tmp_path / "out") in capsys.readouterr().out


def test_figures_do_not_read_the_checkout_through_their_own_path():
    """``figures`` is installed: no module finds result files from ``__file__``; inputs are arguments."""
    import ast
    from pathlib import Path

    import figures

    offenders = []
    for path in sorted(Path(figures.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text())
        if any(isinstance(node, ast.Name) and node.id == "__file__" for node in ast.walk(tree)):
            offenders.append(path.name)
    assert offenders == []


def test_figure_functions_take_their_inputs_as_arguments(tmp_path):
    """No figure function has a default path: without its input it is a TypeError, not a read of the checkout."""
    from figures import FIGURES

    for name in ("cost_per_layer", "approx_spectra", "layouts", "training", "causal"):
        with pytest.raises(TypeError, match="required keyword-only argument"):
            FIGURES[name](tmp_path)


@pytest.mark.parametrize(("umask", "expected"), [(0o022, 0o644), (0o077, 0o600)])
def test_figure_files_follow_the_umask(tmp_path, umask, expected):
    """The PNG and PDF are written atomically and get ``0o666`` less the caller's umask (not a temporary file's
    0600)."""
    import os

    import matplotlib.figure

    from figures.style import save

    old = os.umask(umask)
    try:
        paths = save(matplotlib.figure.Figure(), tmp_path, "empty")
    finally:
        os.umask(old)
    assert [p.name for p in paths] == ["empty.png", "empty.pdf"]
    for path in paths:
        assert path.stat().st_mode & 0o777 == expected, path


BENCH = '{"device": "cpu", "parameters": {"w": 8}, "cost_to_full_coverage": [], "rows": %s}'


@pytest.mark.parametrize(
    ("name", "flag", "content"),
    [
        ("cost_per_layer", "--bench", ""),
        ("cost_to_coverage", "--bench", '{"rows": []}'),
        ("layouts", "--layouts-json", '{"a": 1}'),
        ("approx_kv_cache", "--decoder-json", "[1, 2]"),
        ("causal", "--pooled-json", '{"runs": []}'),
        # the top-level keys are there, the rows inside are not what the figures read
        ("cost_per_layer", "--bench", BENCH % "[]"),
        ("cost_per_layer", "--bench", BENCH % '[{"w": 1}]'),
        ("cost_per_layer", "--bench", BENCH % '[{"path": "sa", "n": "many", "seconds": 1.0}]'),
        ("cost_to_coverage", "--bench", BENCH % '[{"kind": "nope", "backend": "torch", "n": 8}]'),
        ("layouts", "--layouts-json", '{"n": 64, "layouts": "nope"}'),
        ("layouts", "--layouts-json", '{"n": 64, "layouts": []}'),
        ("layouts", "--layouts-json", '{"n": 64, "layouts": [{"layout": {"name": "x"}}]}'),
    ],
)
def test_an_input_that_is_not_its_commands_output_is_one_line(tmp_path, capsys, name, flag, content):
    """A result file that is not JSON, or lacks what the figure reads, is one line naming the flag that gave it and
    what such a file is, before --out is made or anything drawn."""
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(SystemExit) as exc:
        main(with_committed([name, "--out", str(tmp_path / "out"), flag, str(bad)], flag))
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.split("error: ")[1].startswith(f"{flag}: {bad}") and "; expected " in err, err
    assert not (tmp_path / "out").exists()  # refused before any figure is drawn


@pytest.mark.parametrize(
    ("argv", "flag", "other"),
    [
        (["coverage_vs_layer", "--bench", "b.json"], "--bench", "coverage_vs_layer"),
        (["hops", "lstar_vs_n", "--pooled-json", "p.json"], "--pooled-json", "hops, lstar_vs_n"),
        (["approx_methods", "training", "--quick"], "--quick", "approx_methods, training"),
    ],
)
def test_an_option_no_named_figure_reads_is_refused_naming_both(tmp_path, capsys, argv, flag, other):
    """An input flag that none of the named figures reads, or --quick for figures that only read results: one line
    naming the flag and the figures, before anything is read or drawn."""
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.split("error: ")[1].startswith(f"{flag}: does not apply to {other}"), err
    assert not (tmp_path / "out").exists()
