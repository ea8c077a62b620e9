"""The causal SA+SWA model (receptive.theory) against the committed sweeps of the studies analysis/bound and
analysis/causal: typical L*, the calibrated exact count, the binomial checks and the hold-out seeds."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from receptive import theory
from receptive.bound import models
from receptive.bound.analysis import binomial_checks, calibrated_exact_probability, typical_layer

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "analysis" / "causal" / "results"
#: committed measurements of causal SA+SWA: the default grid (n = 2^8 .. 2^20, 5 seeds) and n = 2^22 (3 seeds)
CAUSAL_RESULTS = [ROOT / "analysis" / "bound" / "results" / "bound.json", RESULTS / "n2p22" / "bound.json"]

# the model's probabilities per point cost seconds at n = 2^22: this module and test_pooled_causal compute them once,
# in one worker, through the cache of receptive.bound.models.model_probabilities
pytestmark = pytest.mark.xdist_group("causal_model")


def predict(n: int, w: int, targets: int | None):
    """``theory.predict_full_layer("sa+swa", n, w, causal=True, targets=targets)`` (64 layers), from the cache."""
    probs = models.model_probabilities("sa+swa", n, w, True, False, 64, targets)
    return theory.median_layer(probs), np.array(probs)


# ------------------------------------------------------------------ causal SA+SWA: the model against the engine


@pytest.fixture(scope="module")
def causal_predictions():
    """Every committed causal SA+SWA grid point with the model's P(full after L), L = 1..64 (sampled points for
    their K targets), and the first layer where it reaches 1/2."""
    rows = []
    for path in CAUSAL_RESULTS:
        doc = json.loads(path.read_text())
        for p in doc["points"]:
            if p["pattern"] == "sa+swa" and p["causal"]:
                targets = doc["parameters"]["targets"] if p["method"] == "sampled" else None
                predicted, probs = predict(p["n"], p["w"], targets)
                rows.append((p, predicted, probs))
    return rows


def test_causal_model_predicts_the_committed_typical_full_layer(causal_predictions):
    """The parameter-free causal model (run branching near the window's reach, profile beyond) against every
    committed point of the sweeps: within one layer everywhere, exact at >= 80% of the points with n >= 1024 (the
    next test says why 5 seeds cannot show more)."""
    want = sum(
        p["pattern"] == "sa+swa" and p["causal"]
        for path in CAUSAL_RESULTS
        for p in json.loads(path.read_text())["points"]
    )
    assert len(causal_predictions) == want > 0
    far = [(p["n"], p["w"], p["typical"], pred) for p, pred, _ in causal_predictions if abs(pred - p["typical"]) > 1]
    assert not far, far
    big = [(p["n"], p["w"], p["typical"], pred) for p, pred, _ in causal_predictions if p["n"] >= 1024]
    misses = [row for row in big if row[2] != row[3]]
    assert big and len(big) - len(misses) >= 0.8 * len(big), misses  # (n, w, measured, predicted)


def test_causal_model_exact_share_is_what_its_own_probabilities_expect(causal_predictions):
    """With s seeds the typical L* (first layer that >= half the seeds reach) is itself random: a calibrated model
    is exact at a point with probability P(Bin(s, P_pred) >= s/2) - P(Bin(s, P_{pred-1}) >= s/2). Summed over the
    points with n >= 1024 that is what a calibrated model expects at these seeds (well below 95% at 5 seeds); the
    observed count must lie within 2.5 sd of that expectation."""
    expected, variance, observed, points = 0.0, 0.0, 0, 0
    for p, pred, probs in causal_predictions:
        if p["n"] < 1024:
            continue
        q = calibrated_exact_probability(probs, len(p["full_layers"]))
        expected += q
        variance += q * (1 - q)
        observed += pred == p["typical"]
        points += 1
    assert 0.8 < expected / points < 0.95, expected
    assert abs(observed - expected) < 2.5 * math.sqrt(variance), (observed, expected, math.sqrt(variance))


def test_causal_model_probabilities_pass_the_binomial_checks(causal_predictions):
    """Per layer where the outcome is uncertain (some seeds full, or 0.01 < P < 0.99): the fraction of full seeds
    against P(full after L), two-sided binomial test; none below 0.001 and at most 1 in 50 below 0.01."""
    pvalues = []
    for p, _, probs in causal_predictions:
        checks = binomial_checks(p["full_layers"], probs)
        pvalues += [(c["p_value"], p["n"], p["w"], c["layer"]) for c in checks]
    assert len(pvalues) >= 60
    assert min(pvalues)[0] > 0.001, min(pvalues)
    assert sum(pv < 0.01 for pv, *_ in pvalues) <= len(pvalues) / 50


def holdout_points():
    """Causal SA+SWA measured after the model was fixed (``analysis/causal/results/seeds/*/bound.json``): more seeds of
    committed grid points and new grid points (n = 2^13, 2^15), one row per file and point, each with the L* of every
    seed of that point in any committed file (``pooled``, seeds counted once) and the K targets of their method."""
    pooled = {}
    files = CAUSAL_RESULTS + sorted((RESULTS / "seeds").rglob("bound.json"))
    for path in files:
        for p in json.loads(path.read_text())["points"]:
            if p["pattern"] == "sa+swa" and p["causal"]:
                pooled.setdefault((p["n"], p["w"]), {}).update(zip(p["seeds"], p["full_layers"], strict=True))
    rows = []
    for path in sorted((RESULTS / "seeds").rglob("bound.json")):
        doc = json.loads(path.read_text())
        for p in doc["points"]:
            targets = doc["parameters"]["targets"] if p["method"] == "sampled" else None
            rows.append((p, list(pooled[(p["n"], p["w"])].values()), targets))
    return rows


#: (n, w, layer) whose binomial check the model fails at 0.1% on the hold-out seeds; the diagnosis (failure clumps
#: that come in groups, not as independent events, at 8192/16; the far part at 2^20/256, unexplained) is in
#: docs/theory.md Sec. 5
KNOWN_REJECTED = {(8192, 16, 6), (1048576, 256, 3)}


def test_causal_model_on_holdout_seeds():
    """Hold-out: runs made after the model (which has no fitted constant) was fixed, one row per file and point (more
    seeds of the committed points, new points at n = 2^13, 2^15, more seeds at 2^22 and the 40-seed extension). On
    each row's own seeds the prediction is within one layer everywhere and the exact count within 2.5 sd of what the
    model's own probabilities expect; with every seed of the point pooled, within one layer everywhere and exact at
    >= 80% of the rows. The binomial checks show some miscalibration: at most 5% of them below 0.01 (a calibrated
    model: about 1%), and none below 0.001 outside KNOWN_REJECTED (docs/theory.md Sec. 5)."""
    rows = holdout_points()
    assert rows
    expected = variance = 0.0
    exact_new = exact_all = 0
    pvalues = []
    predictions = {}  # a point appears in several hold-out files: its model is computed once
    for new, pooled, targets in rows:
        point = (new["n"], new["w"], targets)
        if point not in predictions:
            predictions[point] = predict(*point)
        predicted, probs = predictions[point]
        assert abs(new["typical"] - predicted) <= 1, (new["n"], new["w"], new["typical"], predicted)
        combined = typical_layer(pooled)
        assert abs(combined - predicted) <= 1, (new["n"], new["w"], combined, predicted)
        q = calibrated_exact_probability(probs, len(new["full_layers"]))
        expected += q
        variance += q * (1 - q)
        exact_new += new["typical"] == predicted
        exact_all += combined == predicted
        checks = binomial_checks(new["full_layers"], probs)
        pvalues += [(c["p_value"], new["n"], new["w"], c["layer"]) for c in checks]
    assert abs(exact_new - expected) < 2.5 * math.sqrt(variance), (exact_new, expected, math.sqrt(variance))
    assert exact_all >= 0.8 * len(rows)
    assert sum(pv < 0.01 for pv, *_ in pvalues) <= 0.05 * len(pvalues)
    assert {row[1:] for row in pvalues if row[0] < 0.001} <= KNOWN_REJECTED
