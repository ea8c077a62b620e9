"""The causal SA+SWA model against the committed measurements of the studies (analysis/bound, analysis/causal), and
the study scripts analysis/causal/causal_clumps.py and causal_model_attempts.py against slow oracles."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage

from analysis.causal import causal_clumps, causal_model_attempts
from receptive import theory
from receptive.permutations import layer_permutation

ROOT = Path(__file__).resolve().parents[2]
BOUND = ROOT / "analysis" / "bound" / "results" / "bound.json"
CLUMPS = ROOT / "analysis" / "causal" / "results" / "causal_clumps.json"


def committed_points():
    doc = json.loads(BOUND.read_text())
    return [p for p in doc["points"] if p["pattern"] == "sa+swa" and p["causal"] and p["n"] <= 16384]


def test_causal_model_predicts_the_committed_measurements():
    points = committed_points()
    assert len(points) >= 25
    exact = []
    for p in points:
        predicted, _ = theory.predict_full_layer("sa+swa", p["n"], p["w"], True, max_layers=64)
        assert abs(predicted - p["typical"]) <= 1, (p["n"], p["w"], predicted, p["typical"])
        if p["n"] >= 1024:
            exact.append(predicted == p["typical"])
    assert np.mean(exact) >= 0.9, np.mean(exact)


def test_scaling_law_of_causal_sa_swa():
    # L* ~ (6 n ln(n^2 / w^3))^(1/3) / (w - 1) in the branching regime w^3 < n: the committed measurements at w <= 16
    doc = json.loads(BOUND.read_text())
    for p in doc["points"]:
        if p["pattern"] == "sa+swa" and p["causal"] and p["w"] <= 16 and p["w"] ** 3 < p["n"] and p["typical"]:
            law = theory.causal_swa_scaling_law(p["n"], p["w"])
            assert 0.7 < p["typical"] / law < 1.3, (p["n"], p["w"], p["typical"], law)


def dense_missed_pairs(n, w, seed, layers):
    """Slow oracle: causal SA+SWA from its definition as dense boolean matrices (query i reads key j <= i if j is in
    i's causal window or within the two-sided band of w around i in layer l's permuted order), reach by matrix
    products; yields the missed (query, key) pairs after each layer."""
    left, right = w // 2, (w - 1) // 2
    idx = np.arange(n)
    reach = np.eye(n, dtype=bool)  # reach[i, j]: key j reaches query i
    lower = idx[None, :] <= idx[:, None]
    for layer in range(1, layers + 1):
        inv = np.argsort(layer_permutation(n, seed, layer))  # inv[i]: where i sits in permuted order
        band = (inv[None, :] >= inv[:, None] - left) & (inv[None, :] <= inv[:, None] + right)
        window = (idx[:, None] - idx[None, :]) < w
        edges = lower & (band | window)
        reach = (edges.astype(np.int64) @ reach.astype(np.int64)) > 0
        yield lower & ~reach


@pytest.mark.parametrize(("n", "w", "layers"), [(64, 4, 5), (97, 3, 6), (128, 8, 3)])
def test_clump_script_counts_like_a_dense_oracle(n, w, layers):
    script = causal_clumps
    for seed in range(4):
        counts = script.seed_counts(n, w, seed, list(range(1, layers + 1)))
        for layer, missed in enumerate(dense_missed_pairs(n, w, seed, layers), 1):
            expected = {
                "pairs": int(missed.sum()),
                "clumps": int(ndimage.label(missed, structure=np.ones((3, 3)))[1]),
                "queries": int(missed.any(axis=1).sum()),
            }
            assert counts[layer] == expected, (n, w, seed, layer, counts[layer], expected)


@pytest.mark.parametrize("text", ["8192:16", "8192:16:0", "8192:1:5", "99999999:16:5", "a:b:c", "64:4:6-5"])
def test_clump_script_rejects_bad_points(text):
    with pytest.raises(ValueError, match="point"):
        causal_clumps.parse_point(text)


@pytest.mark.parametrize(
    ("n", "w", "layers", "targets"), [(2048, 4, 18, None), (4096, 8, 11, None), (8192, 16, 7, 512)]
)
def test_attempt_harness_reproduces_the_model(n, w, layers, targets):
    # the variants of docs/theory.md Sec. 5 ("All seeds pooled") change one step each of the model's computation;
    # their harness with no change must be the model itself
    attempts = causal_model_attempts
    model = theory.causal_failure_clumps(n, w, layers, targets=targets)
    np.testing.assert_allclose(attempts.variant_clumps(n, w, layers, targets, "model"), model, rtol=1e-12, atol=1e-300)
    events = attempts.variant_clumps(n, w, layers, targets, "events")
    assert np.all(events <= model * (1 + 1e-12)) and np.any(events < 0.99 * model)  # f <= r: fewer, larger events
    with pytest.raises(ValueError, match="variant"):
        attempts.variant_clumps(n, w, layers, targets, "nope")


def slow_capped_psi(p, a, layers, depth, m):
    """The lead-capped run-branching table (analysis/causal/causal_model_attempts.py, ``_CappedRows``) as plain loops:
    psi(d, t) = [d > t(a-1) + m - 1] (tree(d, t) + sum_{b = c_1}^{c_{t-1} - 1} G(b) H(b, d) (X_cap - X_tree))."""
    psi = [[0.0 if d < m else 1.0 for d in range(depth + 1)]]
    for t in range(1, layers + 1):
        c = [k * (a - 1) + 1 for k in range(t + 1)]
        row = []
        for d in range(depth + 1):
            if d <= t * (a - 1) + m - 1:
                row.append(0.0)
                continue
            total = sum(c[k] * (1 - psi[t - k - 1][d - e]) for k in range(t) for e in range(c[k + 1], d + 1))
            value = math.exp(-p * total)
            for b in range(c[1], min(c[t - 1], depth + 1)):
                g = math.exp(-p * sum(c[k] * max(b - c[k + 1], 0) for k in range(t)))
                h = sum(p * c[s] * psi[t - s - 1][d - b] for s in range(t) if c[s + 1] <= b and d >= b)
                x_cap = x_tree = 0.0
                for k in range(t):
                    for e in range(max(b + 1, c[k + 1]), d + 1):
                        x_cap += min(c[k], b) * (1 - psi[t - k - 1][d - e])
                        x_tree += c[k] * (1 - psi[t - k - 1][d - e])
                value += g * h * (math.exp(-p * x_cap) - math.exp(-p * x_tree))
            row.append(min(value, 1.0))
        psi.append(row)
    return np.array(psi)


@pytest.mark.parametrize(("p", "a", "m"), [(0.01, 4, 1), (0.01, 4, 2), (0.03, 3, 1), (0.005, 6, 2)])
def test_lead_capped_table_matches_its_formula_and_only_adds_misses(p, a, m):
    attempts = causal_model_attempts
    layers, depth = 6, 45
    table = attempts._CappedRows(p, a, depth, m)
    fast = np.array([table.psi[0]] + [table.next() for _ in range(layers)])
    np.testing.assert_allclose(fast, slow_capped_psi(p, a, layers, depth, m), rtol=1e-12, atol=1e-15)
    tree = theory.causal_run_miss_table(p, a, layers, depth, m)
    assert np.all(fast >= tree - 1e-15) and np.any(fast > 1.01 * tree)  # capping removes duplicate tokens only


def test_lead_cap_moves_the_missed_pairs_toward_the_engine():
    # analysis/causal/results/causal_clumps.json: the engine's missed pairs (every pair exact) and failing sampled
    # targets; the tree undercounts them, the lead cap removes part of that (the siblings' overlap is left), and its
    # failing targets are within 25% of the engine's
    attempts = causal_model_attempts
    doc = json.loads(CLUMPS.read_text())
    for row in doc["rows"]:
        n, w, layer = row["n"], row["w"], row["layer"]
        engine = float(np.mean(row["pairs"]))
        tree = attempts.missed_pairs(n, w, layer, capped=False)[-1]
        capped = attempts.missed_pairs(n, w, layer, capped=True)[-1]
        assert 1.0 < engine / capped < 1.75 and engine / capped < engine / tree, (n, w, layer, engine, tree, capped)
    for row in doc["sampled_rows"]:
        capped = attempts.variant_clumps(row["n"], row["w"], row["layer"], row["targets"], "lead-cap")[-1]
        assert 0.75 < row["mean_failing_targets"] / capped < 1.25, (row["layer"], row["mean_failing_targets"], capped)
    with pytest.raises(ValueError, match="w"):
        attempts.missed_pairs(1024, 1, 3, capped=True)
