"""``python -m receptive.bound.variants``: deterministic patterns measured once, their sampled causal L* exact, the
search's starting guess taken from the rows already measured, and every invocation recorded."""

import json

from receptive.bound.variants import deterministic, initial_guess, main, measure


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
