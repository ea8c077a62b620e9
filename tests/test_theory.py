"""Theory against simulation: mean field, sharp L* models, SWA closed forms, bounds."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from receptive import coverage, make_pattern, theory
from receptive.windows import max_window


def measured_full_layers(name, n, w, causal, seeds, max_layers=64):
    return [
        coverage(make_pattern(name, n, w, causal, seed=s), method="exact", max_layers=max_layers).full_coverage_layer
        for s in range(seeds)
    ]


def test_mean_field_matches_simulated_mean_coverage():
    """Circular SA at n = 4096, w = 8: the recursion u_L = u_{L-1}^w is within 1% of the engine's mean coverage."""
    n, w = 4096, 8
    sim = np.mean(
        [
            [lc.mean for lc in coverage(make_pattern("sa", n, w, circular=True, seed=s), 6, method="exact").layers]
            for s in range(3)
        ],
        axis=0,
    )
    np.testing.assert_allclose(theory.sa_mean_coverage(n, w, 6), sim, rtol=0.01, atol=1e-4)


def test_growth_rates_of_sa_and_sa_swa():
    """While fields are small SA grows by w per layer and SA+SWA by the run model's Perron root (within 10%)."""
    n, w = 2**16, 16
    sa = coverage(make_pattern("sa", n, w, seed=0), 3, method="exact").sizes.mean(axis=1)
    union = coverage(make_pattern("sa+swa", n, w, seed=0), 3, method="exact").sizes.mean(axis=1)
    assert sa[1] / sa[0] == pytest.approx(w, rel=0.05)
    rate = theory.sa_swa_growth_rate(w, w)
    assert rate == pytest.approx((1 + math.sqrt(5)) / 2 * w, rel=0.1)
    assert union[1] / union[0] == pytest.approx(rate, rel=0.1)
    assert union[1] / union[0] > math.sqrt(w * w) * 1.3  # faster than the geometric mean of the two paths


@pytest.mark.parametrize(
    ("name", "n", "w", "causal"),
    [("sa", 4096, 8, False), ("sa", 2048, 64, False), ("sa+swa", 4096, 8, False), ("sa+swa", 2048, 16, True)],
)
def test_sharp_model_predicts_typical_full_layer_and_its_probability(name, n, w, causal):
    seeds = 12
    full = measured_full_layers(name, n, w, causal, seeds)
    predicted, probs = theory.predict_full_layer(name, n, w, causal)
    typical = next(layer for layer in range(1, 65) if np.mean([f <= layer for f in full]) >= 0.5)
    assert predicted == typical
    for layer in range(1, max(full) + 1):
        k = sum(f <= layer for f in full)
        p = min(max(probs[layer - 1], 1e-9), 1 - 1e-9)
        assert binomtest(k, seeds, p).pvalue > 0.001, (layer, k, probs[layer - 1])


def test_causal_sa_bottleneck_estimate():
    """Pure causal SA needs the direct edges i-1 -> i: the median L* is ln((n-1)/ln 2) / -ln(1 - pi)."""
    full = measured_full_layers("sa", 256, 32, True, 15, max_layers=400)
    median = theory.causal_sa_full_layer_estimate(256, 32)
    assert np.median(full) == pytest.approx(median, rel=0.2)
    predicted, _ = theory.predict_full_layer("sa", 256, 32, causal=True, max_layers=400)
    assert abs(predicted - median) <= 3


@given(st.integers(2, 400), st.data())
def test_swa_theory_is_exact(n, data):
    causal, circular = data.draw(st.booleans()), data.draw(st.booleans())
    w = data.draw(st.integers(1, max_window(n, causal, circular)))
    star = theory.swa_full_layer(n, w, causal, circular)
    layers = min(star, 300) if star else 5
    result = coverage(make_pattern("swa", n, w, causal, circular), layers, method="exact")
    if star is not None and star <= 300:
        assert result.full_coverage_layer == star
    last = theory.swa_coverage(n, w, layers, causal, circular)
    assert last["mean"] == pytest.approx(result.layers[-1].mean)
    assert last["min"] == pytest.approx(result.layers[-1].min)
    assert last["full_fraction"] == pytest.approx(result.layers[-1].full_fraction)


def test_closed_forms_match_their_definitions():
    for n, w in [(1000, 4), (2**16, 64), (2**20, 512)]:
        q = 1 - 1 / n
        cc = theory.sa_full_layer_estimate(n, w)
        assert n * n * q ** (w**cc) < 1 <= n * n * q ** (w ** (cc - 1))
        half = theory.sa_half_layer(n, w)
        assert q ** (w**half) <= 0.5 < q ** (w ** (half - 1))
        bound = theory.sa_union_bound_layer(n, w, 0.05)
        assert n * n * math.exp(-(w**bound) / n) <= 0.05 < n * n * math.exp(-(w ** (bound - 1)) / n)
        assert bound <= math.log(n, w) + math.log(2 * math.log(n) + math.log(20), w) + 1
    assert theory.sa_half_layer(100, 1) is None and theory.sa_union_bound_layer(100, 1) is None


def test_probabilities_are_monotone_and_bounded():
    """The sharp models themselves (before full_probability's running maximum, which makes its output monotone by
    construction) must be non-decreasing in depth, within [0, 1], and reach certainty."""
    models = {
        ("sa", False): lambda n, layers: theory.sa_full_probability(n, 16, layers),
        ("sa+swa", False): lambda n, layers: theory.sa_swa_full_probability(n, 16, layers),
        ("sa+swa", True): lambda n, layers: theory.causal_full_probability(n, 16, layers, swa=True),
        ("sa", True): lambda n, layers: theory.causal_full_probability(n, 16, layers, swa=False),
    }
    for (name, causal), model in models.items():
        slow = name == "sa" and causal  # pure causal SA needs ~ (n/w) ln n layers
        n, layers = (256, 400) if slow else (1024, 30)
        probs = model(n, layers)
        assert np.all((probs >= 0) & (probs <= 1))
        assert np.all(np.diff(probs) >= -1e-9), (name, causal)
        assert probs[0] < 0.01 and probs[-1] > 0.99
        np.testing.assert_array_equal(theory.full_probability(name, n, 16, layers, causal), probs)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: theory.sa_union_bound_layer(100, 4, delta=1.5), "delta"),
        (lambda: theory.full_probability("swa", 100, 4, 3), "name"),
        (lambda: theory.sa_full_probability(1, 4, 3), "n:"),
        (lambda: theory.sa_swa_full_probability(100, 0, 3), "w:"),
        (lambda: theory.causal_full_probability(100, 4, 0), "layers"),
        (lambda: theory.sa_swa_growth_rate(0, 4), "w_sa"),
    ],
)
def test_theory_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()
