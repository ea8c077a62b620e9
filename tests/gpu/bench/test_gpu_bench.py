"""``python -m gpu.bench``: rows per backend with their peer, one plotting path with ``figures.cost``, clean errors."""

import json

import pytest

torch = pytest.importorskip("torch")

from gpu.bench.cli import main  # noqa: E402
from gpu.bench.plot import KIND_COLORS, KIND_LABELS, kind_and_backend  # noqa: E402

ARGS = ["--n", "64,128", "--w", "16", "--heads", "2", "--d", "16", "--repeats", "1"]


def test_cost_benchmark_rows_and_peers(tmp_path, capsys):
    out = tmp_path / "bench.json"
    argv = [*ARGS, "--backends", "torch,flex", "--json", str(out), "--plot", str(tmp_path / "cost.png")]
    assert main(argv) == 0
    assert (tmp_path / "cost.png").exists() and (tmp_path / "cost.pdf").exists()
    doc = json.loads(out.read_text())
    assert doc["command"].startswith("python -m gpu.bench ") and "--backends torch,flex" in doc["command"]
    assert len(doc["load_average_before"]) == 3 and doc["torch_threads"] >= 1
    rows = {(r["n"], r["path"]): r for r in doc["rows"]}
    labels = {"full", "swa", "sa", "sa+swa", "swa flex", "sa flex", "sa+swa flex"}
    assert {path for _, path in rows} == labels
    for (n, _), row in rows.items():
        assert (row["kind"], row["backend"]) == kind_and_backend(row)
        assert row["seconds"] > 0 and row["speedup_over_full"] == pytest.approx(
            rows[n, "full"]["seconds"] / row["seconds"]
        )
        peer = "full" if row["kind"] == "full" else row["kind"] + " flex"
        assert row["peer"] == peer
        assert row["time_over_peer"] == pytest.approx(row["seconds"] / rows[n, peer]["seconds"])
        if row["kind"] == "sa":
            swa = "swa" if row["backend"] == "torch" else "swa flex"
            assert row["sa_over_swa"] == pytest.approx(row["seconds"] / rows[n, swa]["seconds"])
    cost = {(c["n"], c["path"]): c["full_coverage_layer"] for c in doc["cost_to_full_coverage"]}
    assert cost[128, "full"] == 1 and cost[128, "swa"] > cost[128, "sa"] >= cost[128, "sa+swa"] >= 1
    assert cost[128, "sa flex"] == cost[128, "sa"]
    text = capsys.readouterr().out
    assert "torch: SA speedup over full" in text and "flex: SA speedup over full" in text


def test_cpu_default_is_the_torch_path(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("CPU default")
    out = tmp_path / "bench.json"
    assert main([*ARGS, "--n", "64", "--json", str(out), "--plot", str(tmp_path / "c.png")]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["path"] for r in rows] == ["full", "swa", "sa", "sa+swa"]
    assert [r["peer"] for r in rows] == ["full", None, None, None]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--n", "64,x"], "--n: expected comma-separated integers >= 2"),
        (["--n", "1"], "--n: expected comma-separated integers >= 2"),
        (["--w", "200"], "--w: expected at most 127 for n = 64"),
        (["--heads", "0"], "--heads"),
        (["--backends", "torch,cuda"], "--backends: expected comma-separated names"),
        (["--json", "/proc/nope/x.json"], "--json: "),
    ],
)
def test_bad_arguments_one_line(tmp_path, capsys, extra, message):
    argv = [*ARGS, "--n", "64", "--json", str(tmp_path / "b.json"), "--plot", str(tmp_path / "c.png"), *extra]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and message in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only refusals")
@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--backends", "triton"], "triton needs a CUDA GPU"), (["--backends", "flex", "--backward"], "no backward")],
)
def test_cpu_refusals(capsys, extra, message):
    with pytest.raises(SystemExit) as exc:
        main([*ARGS, *extra])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_one_palette_for_the_cost_figure():
    """``gpu.bench.cli --plot`` and ``figures.cost`` draw with the same function; the colours and labels per kind
    agree."""
    from figures.style import COLORS, LABELS

    assert KIND_COLORS == {kind: COLORS[kind] for kind in KIND_COLORS}
    assert KIND_LABELS == {kind: LABELS[kind] for kind in KIND_LABELS}


def test_rows_written_before_backends():
    assert kind_and_backend({"path": "sa fused"}) == ("sa", "triton")
    assert kind_and_backend({"path": "full"}) == ("full", "sdpa")
    assert kind_and_backend({"path": "sa+swa"}) == ("sa+swa", "torch")


def test_figures_cost_draws_backend_rows(tmp_path):
    from figures.cost import make_per_layer, make_to_coverage

    bench = tmp_path / "bench.json"
    assert main([*ARGS, "--backends", "torch,flex", "--json", str(bench), "--plot", str(tmp_path / "p.png")]) == 0
    for make in (make_per_layer, make_to_coverage):
        for path in make(tmp_path / "figs", bench=bench):
            assert path.stat().st_size > 2000


def test_replot_from_json(tmp_path, capsys):
    bench = tmp_path / "bench.json"
    assert main([*ARGS, "--n", "64", "--json", str(bench), "--plot", str(tmp_path / "a.png")]) == 0
    assert main(["--replot", str(bench), "--plot", str(tmp_path / "again.png")]) == 0
    assert (tmp_path / "again.png").stat().st_size > 2000 and (tmp_path / "again.pdf").exists()
    (tmp_path / "broken.json").write_text("{}")
    for bad in (tmp_path / "missing.json", tmp_path / "broken.json"):
        capsys.readouterr()
        with pytest.raises(SystemExit) as exc:
            main(["--replot", str(bad), "--plot", str(tmp_path / "x.png")])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and err.count("\n") == 1 and "--replot: cannot read" in err


def test_variants_rows_time_multiscale_sa(tmp_path, capsys):
    """--variants adds multi-scale SA and dilated heads (banded, per backend) and Kleinberg keys (key table) rows,
    each through gpu.attention.variants as the modules run them, with their ratio to SA."""
    out = tmp_path / "b.json"
    main(["--n", "256", "--w", "8", "--repeats", "1", "--variants", "--json", str(out), "--plot", str(tmp_path / "p")])
    doc = json.loads(out.read_text())
    rows = [r for r in doc["rows"] if r["kind"] == "sa-ms"]
    assert len(rows) == 1 and rows[0]["over_sa"] > 0
    printed = capsys.readouterr().out
    # CPU inference: neighbour_attention's auto path takes its numba kernel, as the module does
    assert "multi-scale SA / SA" in printed and "dilated / SA" in printed and "kleinberg (kernel) / SA" in printed
    for kind, path in (("kleinberg", "kleinberg kernel"), ("dilated", "dilated")):
        (row,) = [r for r in doc["rows"] if r["kind"] == kind]
        assert row["path"] == path
        assert row["over_sa"] == pytest.approx(
            row["seconds"] / next(r["seconds"] for r in doc["rows"] if r["path"] == "sa")
        )
        stars = [c for c in doc["cost_to_full_coverage"] if c["kind"] == kind]
        assert stars and stars[0]["full_coverage_layer"] >= 1


def test_swa_layer_cap_reaches_its_full_coverage_layer():
    """SWA's L* passes coverage's default cap of 64 layers from n = 2048 at w = 64; the cost rows must still get it."""
    from gpu.bench.patterns import _layer_cap
    from receptive import coverage_by_layer, make_pattern

    for n, w in ((2048, 64), (1000, 7), (300, 4)):
        pattern = make_pattern("swa", n, w, seed=0)
        star = coverage_by_layer(pattern, max_layers=_layer_cap("swa", n, w)).full_coverage_layer
        assert star is not None and star > 64
        assert star == -(-(n - 1) // ((w - 1) // 2))


def test_missing_json_folder_is_refused_and_nothing_is_written_by_default(tmp_path, capsys, monkeypatch):
    """--json into a missing folder is refused with one line (as ``receptive.coverage --csv``); without --json or
    --plot a run writes nothing, in the checkout or elsewhere."""
    with pytest.raises(SystemExit) as exc:
        main([*ARGS, "--n", "64", "--json", str(tmp_path / "missing" / "b.json")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "--json: " in err and "does not exist" in err
    assert not (tmp_path / "missing").exists()
    monkeypatch.chdir(tmp_path)
    assert main([*ARGS, "--n", "64"]) == 0
    assert list(tmp_path.iterdir()) == []


def test_replot_needs_plot(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--replot", "bench.json"])
    assert exc.value.code == 2 and "--replot: needs --plot" in capsys.readouterr().err


def test_help_shows_the_defaults_and_examples(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and "(default: 64)" in out and "examples:" in out
    assert "(default: None)" not in out and "(default: not written)" in " ".join(out.split())  # None: not given


@pytest.mark.parametrize(("umask", "expected"), [(0o022, 0o644), (0o077, 0o600)])
def test_written_files_follow_the_umask(tmp_path, umask, expected):
    """--json and --plot are written atomically (through a temporary file) yet get ``0o666`` less the umask, as a
    plain ``open(path, "w")`` would give them."""
    import os

    old = os.umask(umask)
    try:
        assert main([*ARGS, "--n", "64", "--json", str(tmp_path / "b.json"), "--plot", str(tmp_path / "c.png")]) == 0
    finally:
        os.umask(old)
    for name in ("b.json", "c.png", "c.pdf"):
        assert (tmp_path / name).stat().st_mode & 0o777 == expected, name


@pytest.mark.parametrize(
    "rows",
    [
        [],
        [{"w": 64}],
        [{"path": "sa", "n": 64}, {"kind": "sa", "n": 128}],
        [{"kind": "sa", "backend": "torch", "n": "64", "seconds": 1.0}],
        [{"kind": "sa", "backend": "torch", "n": 64, "seconds": "fast"}],
        "nope",
    ],
)
def test_replot_of_foreign_rows_is_one_line_before_drawing(tmp_path, capsys, rows):
    """A result with the four top-level keys but rows the figure cannot draw: one line naming --replot, and no
    figure written."""
    bench = tmp_path / "bench.json"
    doc = {"device": "cpu", "parameters": {"w": 8}, "rows": rows, "cost_to_full_coverage": []}
    bench.write_text(json.dumps(doc))
    with pytest.raises(SystemExit) as exc:
        main(["--replot", str(bench), "--plot", str(tmp_path / "x.png")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "--replot: cannot read" in err and "rows" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json"]
