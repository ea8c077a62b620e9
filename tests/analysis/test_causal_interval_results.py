"""The interval Monte Carlo of causal SA+SWA (receptive.theory.interval) against the engine's committed
measurements of the study analysis/causal (its results/), and the committed interval model file against the live
model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

from receptive.theory import causal_interval_clumps

RESULTS = Path(__file__).resolve().parents[2] / "analysis" / "causal" / "results"


def _pooled_point(n, w):
    doc = json.loads((RESULTS / "pooled.json").read_text())
    (point,) = [p for p in doc["points"] if p["pattern"] == "sa+swa" and p["causal"] and p["n"] == n and p["w"] == w]
    return point


@pytest.mark.parametrize("n, w, layer", [(1024, 8, 6), (4096, 4, 21), (8192, 4, 26)])
def test_full_probability_against_the_engine_seeds(n, w, layer):
    """P(full after L) at the deciding layer against the committed engine seeds (40 per point, every pair exact):
    a two-sided binomial check at 1%."""
    point = _pooled_point(n, w)
    full = sum(f is not None and f <= layer for f in point["full_layers"])
    seeds = len(point["full_layers"])
    prob = causal_interval_clumps(n, w, layer + 2, events=300)["full_probability"][layer - 1]
    tail = min(binom.cdf(full, seeds, prob), binom.sf(full - 1, seeds, prob))
    assert 2 * tail > 0.01, (n, w, layer, full, seeds, prob)


def test_failing_targets_against_the_engine():
    """Sampled targets at n = 2^18, w = 16 (analysis/causal/results/causal_clumps.json: 3 seeds x 8192 targets, each
    exact): the expected number of targets with a missed key after layers 15 and 16 within 20% of the engine's mean
    per seed (the file's ``mean_failing_targets``)."""
    rows = json.loads((RESULTS / "causal_clumps.json").read_text())["sampled_rows"]
    engine = {r["layer"]: r["mean_failing_targets"] for r in rows if r["n"] == 262144 and r["w"] == 16}
    model = causal_interval_clumps(262144, 16, 17, targets=8192, events=40)["clumps"]
    for layer in (15, 16):
        assert 0.8 < model[layer - 1] / engine[layer] < 1.2, (layer, model[layer - 1], engine[layer])


@pytest.mark.parametrize("n, w, layers, seed", [(64, 4, 2, 0), (200, 8, 3, 1), (256, 16, 2, 2)])
def test_far_offsets_backward_sets_against_dense_reachability(n, w, layers, seed):
    """analysis/causal/causal_far_offsets.py traces failing targets' backward sets from the pattern's edges; every
    target's set equals the dense product of the layers' adjacency matrices (query i attends key j), first layer
    last."""
    from analysis.causal.causal_far_offsets import backward_set
    from receptive import make_pattern

    pattern = make_pattern("sa+swa", n, w, True, seed=seed)
    reach = np.eye(n, dtype=bool)  # reach[i, j]: key j reaches query i
    for layer in range(1, layers + 1):
        reach = (pattern.adjacency(layer).toarray().astype(np.int64) @ reach.astype(np.int64)) > 0
    for target in range(n):
        assert np.array_equal(backward_set(pattern, target, layers), reach[target]), target


def test_predict_full_layer_with_the_interval_model():
    """theory.predict_full_layer(..., model="interval") is the committed evaluation's interval model (300 events,
    seed 0): the same probabilities as analysis/causal/results/interval_model.json at a cheap point, and its median
    L*."""
    from receptive import theory

    doc = json.loads((RESULTS / "interval_model.json").read_text())
    (row,) = [r for r in doc["points"] if (r["n"], r["w"]) == (4096, 16)]
    predicted, probs = theory.predict_full_layer(
        "sa+swa", 4096, 16, True, max_layers=row["max_layers"], model="interval"
    )
    np.testing.assert_allclose(probs, row["full_probability"], rtol=1e-9, atol=1e-12)
    assert predicted == 1 + int(np.argmax(np.array(row["full_probability"]) >= 0.5))
    analytic, _ = theory.predict_full_layer("sa+swa", 4096, 16, True)
    assert abs(predicted - analytic) <= 1
