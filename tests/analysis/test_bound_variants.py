"""``python -m analysis.causal.variants`` and ``python -m analysis.causal.refresh_keys``: deterministic patterns
measured once, their sampled causal L* exact, the search's starting guess taken from the rows already measured, every
invocation recorded, and the keys of a log recounted."""

import importlib
import json
from pathlib import Path

import numpy as np
import pytest

from analysis.causal import refresh_keys
from analysis.causal.variants import deterministic, initial_guess, main, measure, row_keys, summarise
from graphs.cli_common import run_command
from receptive.bound.analysis import typical_layer

ROOT = Path(__file__).resolve().parents[2]
VARIANTS_LOG = ROOT / "analysis" / "causal" / "results" / "variants" / "variants.jsonl"


def test_deterministic_patterns_are_the_seed_free_ones():
    assert deterministic("dilated+swa-eq", 8, True) and deterministic("dilated-eq", 64, False)
    assert deterministic("swa", 8, True)
    for name in ("sa", "sa+swa", "sa-ms+swa-eq", "kleinberg+swa-eq"):
        assert not deterministic(name, 8, True)


def test_causal_dilated_sampled_equals_exact():
    for name in ("dilated+swa-eq", "dilated-eq"):
        for n, w in ((256, 4), (1024, 8), (512, 16)):
            exact = measure(name, n, w, True, 0, max_layers=64, exact_max=n, targets=8)
            sampled = measure(name, n, w, True, 3, max_layers=64, exact_max=n - 1, targets=8)
            assert sampled.method == "sampled 8" and exact.method == "exact"
            assert sampled.full_layer == exact.full_layer


def test_initial_guess_from_done_rows():
    rows = [
        {"pattern": "sa+swa", "causal": True, "n": 256, "w": 8, "full_layer": 4},
        {"pattern": "sa+swa", "causal": True, "n": 1024, "w": 8, "full_layer": 6},
        {"pattern": "sa+swa", "causal": True, "n": 1024, "w": 8, "full_layer": 7},
        {"pattern": "sa+swa", "causal": True, "n": 4096, "w": 8, "full_layer": None},
        {"pattern": "sa+swa", "causal": False, "n": 2048, "w": 8, "full_layer": 3},
        {"pattern": "sa", "causal": True, "n": 2048, "w": 8, "full_layer": 40},
    ]
    assert initial_guess(rows, "sa+swa", True, 2048, 8) == 7
    assert initial_guess(rows, "sa+swa", True, 512, 8) == 4
    assert initial_guess(rows, "sa+swa", True, 128, 8) is None
    assert initial_guess(rows, "sa+swa", True, 2048, 16) is None


def test_summary_typical_is_the_shared_rule():
    # receptive.bound.analysis.typical_layer: with 4 seeds, 2 full is "at least half"; with 5 seeds 3 are needed
    def row(seed, full, n=256):
        return {"pattern": "sa", "causal": False, "n": n, "w": 8, "seed": seed, "method": "exact"} | {
            "full_layer": full,
            "keys_per_query": 8.0,
            "seconds": 0.1,
        }

    rows = [row(s, f) for s, f in enumerate([6, None, 4, None])]
    rows += [row(s, f, n=512) for s, f in enumerate([5, None, 7, None, 9])]
    points = {p["n"]: p for p in summarise(rows)}
    assert points[256]["full_layers"] == [6, None, 4, None] and points[256]["typical"] == 6
    assert points[512]["typical"] == 9 == typical_layer([5, None, 7, None, 9])
    assert summarise([row(0, None)])[0]["typical"] is None


def test_deterministic_pattern_runs_one_seed_and_runs_are_recorded(tmp_path):
    out = tmp_path / "v"
    argv = ["--patterns", "dilated+swa-eq,sa+swa", "--n", "256", "--w", "8", "--seeds", "3", "--causal", "yes"]
    assert main([*argv, "--out", str(out)]) == 0
    doc = json.loads((out / "variants.json").read_text())
    points = {p["pattern"]: p for p in doc["points"]}
    assert points["dilated+swa-eq"]["seeds"] == [0] and points["dilated+swa-eq"]["deterministic"]
    assert "exact for every seed" in points["dilated+swa-eq"]["note"]
    assert points["sa+swa"]["seeds"] == [0, 1, 2] and not points["sa+swa"]["deterministic"]
    assert main([*argv, "--n", "256,512", "--out", str(out), "--resume"]) == 0
    doc = json.loads((out / "variants.json").read_text())
    assert [r["n"] for r in doc["runs"]] == ["256", "256,512"]
    assert {(p["pattern"], p["n"]) for p in doc["points"]} == {
        (name, n) for name in ("dilated+swa-eq", "sa+swa") for n in (256, 512)
    }
    assert len((out / "variants.jsonl").read_text().splitlines()) == 2 * (1 + 3)


def test_redo_replaces_stale_rows_instead_of_keeping_them_twice(tmp_path, capsys):
    out = tmp_path / "v"
    argv = ["--patterns", "dilated-eq,sa+swa", "--n", "48,64", "--w", "4", "--seeds", "2", "--causal", "no"]
    assert main([*argv, "--out", str(out)]) == 0
    log = out / "variants.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    fresh = {(r["pattern"], r["n"], r["seed"]): r for r in rows}
    assert fresh["dilated-eq", 64, 0]["config"].startswith("dilated-eq w=4 head_w=3")
    # stale rows as an older pattern left them: another L*, and a second seed of a deterministic pattern
    stale = [dict(fresh["dilated-eq", 64, 0], full_layer=None, config="")]
    stale.append(dict(stale[0], seed=1))
    kept = [r for r in rows if (r["pattern"], r["n"]) != ("dilated-eq", 64)]
    log.write_text("".join(json.dumps(r) + "\n" for r in kept + stale))
    redo = ["--patterns", "dilated-eq", "--n", "64", "--w", "4", "--causal", "no", "--out", str(out)]
    assert main([*redo, "--resume", "--redo"]) == 0
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) == len(kept) + 1
    assert rows[: len(kept)] == kept  # the rest of the log untouched, in order
    assert rows[-1]["seed"] == 0 and rows[-1]["full_layer"] == fresh["dilated-eq", 64, 0]["full_layer"]
    points = {(p["pattern"], p["n"]): p for p in json.loads((out / "variants.json").read_text())["points"]}
    assert points["dilated-eq", 64]["seeds"] == [0] and points["dilated-eq", 64]["typical"] is not None
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main([*redo[:-1], str(tmp_path / "new"), "--redo"])
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("--redo: expected together with --resume (it replaces rows of an existing log) (see --help)")
    )


def test_committed_causal_dilated_rows_are_reproduced():
    """The committed causal rows of the dilated heads measured in under half a second come out the same again: L*,
    keys per query (the closed form at the row's n) and configuration."""
    rows = [json.loads(line) for line in VARIANTS_LOG.read_text().splitlines()]
    cheap = [r for r in rows if r["pattern"].startswith("dilated") and r["causal"] and r["seconds"] < 0.5]
    assert len(cheap) >= 15 and max(r["n"] for r in cheap) >= 2**16
    for r in cheap:
        got = measure(r["pattern"], r["n"], r["w"], True, r["seed"], max_layers=64, exact_max=2**14, targets=1024)
        assert got.method == r["method"] and got.full_layer == r["full_layer"], r
        assert abs(got.keys_per_query - r["keys_per_query"]) < 1e-9 and got.config == r["config"], r


def _log(out):
    return [json.loads(line) for line in (out / "variants.jsonl").read_text().splitlines()]


def test_keys_are_counted_at_the_rows_own_n():
    from receptive.bound.keys import mean_distinct_keys
    from receptive.patterns import make_pattern
    from receptive.patterns.causal_variants import keys_per_query

    for name in ("sa-ms+swa-eq", "kleinberg+swa-eq", "sa+swa"):
        n = 2**15
        row = measure(name, n, 8, True, 0, max_layers=64, exact_max=2**14, targets=2)
        pat = make_pattern(name, n, 8, True, seed=0)
        assert row.keys_per_query == keys_per_query(pat, 1) == mean_distinct_keys(pat, 1)
        assert row.keys_per_query != keys_per_query(make_pattern(name, 2**14, 8, True, seed=0), 1)


def test_refresh_keys_changes_only_stale_keys_and_is_idempotent(tmp_path, capsys):
    out = tmp_path / "v"
    grid = ["--patterns", "sa+swa,sa-ms+swa-eq,kleinberg+swa-eq,dilated-eq", "--n", "128,512", "--w", "8"]
    assert main([*grid, "--seeds", "2", "--causal", "both", "--out", str(out)]) == 0
    measured = _log(out)
    # stale keys: counted at a smaller n (here 128) for the larger rows
    small = {(r["pattern"], r["causal"], r["w"], r["seed"]): r["keys_per_query"] for r in measured if r["n"] == 128}
    stale = [dict(r, keys_per_query=small[r["pattern"], r["causal"], r["w"], r["seed"]]) for r in measured]
    stale_changed = sum(a != b for a, b in zip(stale, measured, strict=True))
    assert stale_changed >= 8
    (out / "variants.jsonl").write_text("".join(json.dumps(r) + "\n" for r in stale))
    runs_before = json.loads((out / "variants.json").read_text())["runs"]
    capsys.readouterr()
    assert refresh_keys.main(["--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["rows"] == len(measured) and report["rows_changed"] == stale_changed
    refreshed = _log(out)
    assert refreshed == measured  # every field, keys included, as the measuring run wrote them; order kept
    for old, new in zip(stale, refreshed, strict=True):
        assert {k for k in old if old[k] != new[k]} <= {"keys_per_query"}
    doc = json.loads((out / "variants.json").read_text())
    assert doc["points"] == summarise(refreshed)
    assert doc["runs"][:-1] == runs_before
    record = doc["runs"][-1]
    assert record["rows_changed"] == stale_changed and record["refresh_keys"]
    assert "patterns" not in record and record["peak_rss_bytes"] > 0  # no grid option: a refresh measures no grid
    assert record["command"] == f"python -m analysis.causal.refresh_keys --out {out} --json"
    assert record["points_changed"] == len({(c["pattern"], c["causal"], c["n"], c["w"]) for c in report["changes"]})
    files = {p: p.read_bytes() for p in (out / "variants.jsonl", out / "variants.json")}
    assert refresh_keys.main(["--out", str(out)]) == 0
    assert capsys.readouterr().out.strip().endswith(f"0 of {len(measured)} rows changed, 0 points")
    assert all(p.read_bytes() == data for p, data in files.items())


def test_refresh_keys_rejects_bad_input(tmp_path, capsys):
    out = tmp_path / "v"
    assert main(["--patterns", "sa+swa", "--n", "64", "--w", "4", "--seeds", "1", "--out", str(out)]) == 0
    rows = _log(out)
    cases = [
        (["--out", str(tmp_path / "none")], "--out: expected an existing"),
        (["--out", str(out), "--resume"], "unrecognized arguments: --resume"),
        ([], "--out"),
    ]
    (out / "variants.jsonl").write_text(json.dumps(dict(rows[0], config="sa+swa w=5")) + "\n")
    cases.append((["--out", str(out)], "was measured on 'sa+swa w=5'"))
    before = (out / "variants.jsonl").read_bytes()
    capsys.readouterr()
    for argv, message in cases:
        with pytest.raises(SystemExit) as exc:
            refresh_keys.main(argv)
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 2 and len(err.splitlines()) == 1 and message in err, err
    assert (out / "variants.jsonl").read_bytes() == before


def test_committed_keys_are_counted_at_each_rows_n():
    """The committed log: every row's keys per query is its pattern's at its own n (a seeded sample of the rows up to
    2^16 with w <= 64, all patterns and modes)."""
    from receptive.patterns import make_pattern

    rows = [json.loads(line) for line in VARIANTS_LOG.read_text().splitlines()]
    cheap = [r for r in rows if r["n"] <= 2**16 and r["w"] <= 64]
    picked = [cheap[i] for i in np.random.default_rng(0).choice(len(cheap), 40, replace=False)]
    picked += [r for r in rows if (r["pattern"], r["n"], r["w"], r["seed"]) == ("sa-ms+swa-eq", 2**16, 8, 0)]
    assert any(r["n"] > 2**14 and not r["pattern"].startswith("dilated") for r in picked)
    for r in picked:
        pat = make_pattern(r["pattern"], r["n"], r["w"], r["causal"], seed=r["seed"])
        assert r["keys_per_query"] == row_keys(pat), r


@pytest.mark.parametrize("script", ["analysis.causal.variants", "analysis.causal.refresh_keys"])
def test_scripts_run_through_their_entry_point(script, tmp_path, capsys):
    """Each script's ``__main__`` entry point (``run_command(main)``, what ``python -m`` runs; the subprocess itself
    is exercised by tests/analysis/test_causal_commands.py) runs, refuses a missing folder in one line with status 2,
    and documents --out."""
    module = importlib.import_module(script)
    argv = ["--out", str(tmp_path / "none")]
    if script.endswith("variants"):
        argv += ["--patterns", "sa+swa", "--n", "64", "--w", "4", "--seeds", "1", "--causal", "yes"]
    with pytest.raises(SystemExit) as done:
        run_command(module.main, argv)
    if script.endswith("variants"):
        assert done.value.code == 0, capsys.readouterr().err
        assert json.loads((tmp_path / "none" / "variants.json").read_text())["points"]
    else:
        err = capsys.readouterr().err
        assert done.value.code == 2 and "--out: expected an existing" in err and len(err.strip().splitlines()) == 1
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        run_command(module.main, ["--help"])
    assert done.value.code == 0 and "--out" in capsys.readouterr().out
