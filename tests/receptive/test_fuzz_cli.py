"""Property tests of every CLI of receptive and of the public entry points: any input ends in exit 0, or exit 2 with
one line on stderr, or a ValueError naming the argument; never a traceback, never a partial output file."""

import csv
import json
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from receptive import coverage_by_layer, make_pattern

FUZZ = settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))

PATH_KINDS = ("new", "missing_dir", "under_file", "is_dir")


def output_path(tmp: Path, kind: str, name: str) -> Path:
    """A fresh file path, one in a missing directory, one below a regular file, or an existing directory."""
    (tmp / "plain_file").write_text("x")
    return {
        "new": tmp / name,
        "missing_dir": tmp / "missing" / name,
        "under_file": tmp / "plain_file" / name,
        "is_dir": tmp,
    }[kind]


def run_cli(main, argv, capsys):
    """(exit status, stdout, stderr) of ``main(argv)`` called in-process; any other exception fails the test."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code in (0, 1, 2), (argv, code)
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0], (argv, err)
    return code, out, err


def options(pools: dict, flags: tuple[str, ...]):
    """argv lists: a subset of the options, each with a value drawn from its pool, and a subset of the flags."""
    chosen = st.fixed_dictionaries({}, optional={k: st.sampled_from(v) for k, v in pools.items()})
    return st.tuples(chosen, st.lists(st.sampled_from(flags), unique=True, max_size=len(flags))).map(
        lambda t: [x for k, v in t[0].items() for x in (k, v)] + t[1]
    )


COVERAGE_OPTIONS = {
    "--n": ["64", "97", "0", "1", "-3", "abc", "1e3", "3.5", ""],
    "--w": ["4", "8", "0", "-1", "x", "100000"],
    "--patterns": ["sa", "swa", "sa,swa", "sa+swa,full", "sa,sa", "nope", "", ","],
    "--layers": ["1", "3", "0", "-2", "x"],
    "--max-layers": ["2", "40", "0", "x"],
    "--targets": ["5", "0", "1000", "x"],
    "--seed": ["0", "7", "-1", "x"],
    "--max-memory": ["1e9", "5GB", "0.5", "1KiB", "lots", "inf", "-1", "2GiB"],
}


@FUZZ
@given(
    argv=options(COVERAGE_OPTIONS, ("--causal", "--circular", "--exact", "--json")),
    csv_kind=st.sampled_from((None, *PATH_KINDS)),
)
def test_coverage_cli_never_escapes(argv, csv_kind, tmp_path_factory, capsys):
    from receptive.coverage.cli import main

    tmp = tmp_path_factory.mktemp("cov")
    target = None
    if csv_kind is not None:
        target = output_path(tmp, csv_kind, "cov.csv")
        argv = [*argv, "--csv", str(target)]
    # cheap defaults first (the CLI's own are a minute of work); drawn options come later and win
    code, out, _ = run_cli(main, ["--n", "64", "--w", "8", *argv, "--no-progress"], capsys)
    if target is not None and csv_kind != "is_dir":
        if code == 0:
            rows = list(csv.DictReader(target.open()))
            assert rows and set(rows[0]) >= {"pattern", "layer", "mean"}
        else:
            assert not target.exists()  # nothing written before a failure, nothing partial after one
    assert sorted(p.name for p in tmp.iterdir() if p.name.endswith(".tmp")) == []
    if code == 0 and "--json" in argv:
        json.loads(out)


def test_coverage_cli_output_paths(tmp_path, capsys):
    from receptive.coverage.cli import main

    """--csv and --plot take a file in a folder that exists (as gpu.bench.cli's --json and --plot): one line naming the
    flag otherwise, and nothing created."""
    for flag, name in (("--csv", "cov.csv"), ("--plot", "c.png")):
        folder = tmp_path / flag.lstrip("-")
        folder.mkdir()
        for kind in ("missing_dir", "under_file", "is_dir"):
            target = output_path(folder, kind, name)
            code, _, err = run_cli(main, ["--n", "64", "--w", "8", flag, str(target), "--no-progress"], capsys)
            assert code == 2 and err.split("error: ")[1].removeprefix("argument ").startswith(flag), (kind, err)
            assert not (target.parent.exists() and kind == "missing_dir"), target
    code, _, _ = run_cli(main, ["--n", "64", "--w", "8", "--plot", str(tmp_path / "c.png"), "--no-progress"], capsys)
    assert code == 0 and (tmp_path / "c.pdf").exists()


BOUND_OPTIONS = {
    "--n": ["256", "2^8", "2^-1", "abc", "0", "", ","],
    "--w": ["16", "64", "0", "x"],
    "--patterns": ["sa", "sa+swa", "nope"],
    "--causal": ["no", "yes", "both", "maybe"],
    "--seeds": ["1", "0", "x"],
    "--max-layers": ["8", "0"],
    "--exact-limit": ["2^26", "x", "0"],
    "--targets": ["16", "0"],
    "--max-memory": ["1GiB", "0.5", "x", "1e9"],
    "--retries": ["0", "-1"],
    "--workers": ["0", "1"],
}


@FUZZ
@given(
    argv=options(BOUND_OPTIONS, ("--resume", "--json", "--circular")),
    out_kind=st.sampled_from(("new", "under_file", "is_file", "holds_results", "corrupt")),
)
def test_bound_cli_never_escapes(argv, out_kind, tmp_path_factory, capsys):
    from receptive.bound.cli import main

    tmp = tmp_path_factory.mktemp("bound")
    out = tmp / "out"
    if out_kind == "under_file":
        (tmp / "plain_file").write_text("x")
        out = tmp / "plain_file" / "out"
    elif out_kind == "is_file":
        out.write_text("x")
    elif out_kind in ("holds_results", "corrupt"):
        out.mkdir()
        (out / "tasks.jsonl").write_text('{"key": "a"}\n' if out_kind == "holds_results" else "garbage\n{}\n")
    cheap = ["--n", "256", "--w", "16", "--seeds", "1", "--max-layers", "8"]  # the default grid takes hours
    code, _, _ = run_cli(main, [*cheap, *argv, "--out", str(out), "--no-progress"], capsys)
    if code == 2 and out.is_dir():
        assert not (out / "bound.json").exists() and not (out / "bound.csv").exists()
    if code == 0:
        json.loads((out / "bound.json").read_text())


@FUZZ
@given(
    names=st.lists(st.sampled_from(["nope", "", "coverage_vs_layer,hops", "ALL", "-x"]), min_size=1, max_size=3),
    quick=st.booleans(),
)
def test_figures_cli_never_escapes(names, quick, tmp_path_factory, capsys):
    from figures.cli import main

    out = tmp_path_factory.mktemp("fig")
    argv = [*names, "--out", str(out)] + (["--quick"] if quick else [])
    code, _, _ = run_cli(main, argv, capsys)
    assert code == 2  # none of these names is a figure
    assert list(out.iterdir()) == []


ARGUMENT = st.one_of(
    st.integers(-5, 300), st.floats(allow_nan=True), st.text(max_size=4), st.none(), st.booleans(), st.just([1, 2])
)


@FUZZ
@given(
    name=st.sampled_from(["sa", "swa", "sa+swa", "full", "nope", 3]),
    n=ARGUMENT,
    w=ARGUMENT,
    layers=ARGUMENT,
    method=st.sampled_from(["auto", "exact", "sampled", "closed-form", "bogus"]),
    targets=st.one_of(st.none(), ARGUMENT, st.just(np.array([0, 1, 2]))),
    max_memory=st.one_of(ARGUMENT, st.sampled_from(["1GiB", "5GB", "0.5", "1e9"])),
    seed=ARGUMENT,
)
def test_entry_points_raise_value_errors_naming_the_argument(name, n, w, layers, method, targets, max_memory, seed):
    """make_pattern and coverage: a result, or a TypeError (wrong type) or ValueError (bad value) whose one-line
    message starts with the argument's name."""
    names = ("name", "n", "w", "layers", "method", "targets", "max_memory", "seed", "pattern", "causal", "max_layers")
    try:
        pat = make_pattern(name, n, w, seed=seed)
        if pat.n > 300:
            return
        coverage_by_layer(pat, layers, method=method, targets=targets, max_memory=max_memory, seed=seed, progress=False)
    except (TypeError, ValueError) as exc:
        message = str(exc)
        assert "\n" not in message and message.split(":")[0].strip() in names, message
    except MemoryError as exc:
        assert str(exc).startswith("max_memory"), str(exc)
