"""Theory against simulation: mean field, sharp L* models, SWA closed forms, bounds."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import ndimage

from graphs.ops import apply_layer
from receptive import coverage_by_layer, make_pattern, theory
from receptive.bound.analysis import binomial_checks, typical_layer
from receptive.windows import max_window


def measured_full_layers(name, n, w, causal, seeds, max_layers=64):
    return [
        coverage_by_layer(
            make_pattern(name, n, w, causal, seed=s), method="exact", max_layers=max_layers
        ).full_coverage_layer
        for s in range(seeds)
    ]


def test_mean_field_matches_simulated_mean_coverage():
    """Circular SA at n = 4096, w = 8: the recursion u_L = u_{L-1}^w is within 1% of the engine's mean coverage."""
    n, w = 4096, 8
    sim = np.mean(
        [
            [
                lc.mean
                for lc in coverage_by_layer(make_pattern("sa", n, w, circular=True, seed=s), 6, method="exact").layers
            ]
            for s in range(3)
        ],
        axis=0,
    )
    np.testing.assert_allclose(theory.sa_mean_coverage(n, w, 6), sim, rtol=0.01, atol=1e-4)


def test_growth_rates_of_sa_and_sa_swa():
    """While fields are small SA grows by w per layer and SA+SWA by the run model's Perron root (within 10%)."""
    n, w = 2**16, 16
    sa = coverage_by_layer(make_pattern("sa", n, w, seed=0), 3, method="exact").sizes.mean(axis=1)
    union = coverage_by_layer(make_pattern("sa+swa", n, w, seed=0), 3, method="exact").sizes.mean(axis=1)
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
    assert predicted == typical_layer(full)
    for check in binomial_checks(full, probs):
        assert check["p_value"] > 0.001, check


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
    result = coverage_by_layer(make_pattern("swa", n, w, causal, circular), layers, method="exact")
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


def engine_missed_pairs(n, w, seed, layers):
    """The boolean matrix of missed (key, query) pairs ``j <= i`` after each layer of causal SA+SWA, every pair exact
    (bitsets through the engine's operators), one matrix per layer."""
    pattern = make_pattern("sa+swa", n, w, True, seed=seed)
    idx = np.arange(n)
    bits = np.zeros((n, -(-n // 64)), dtype=np.uint64)
    bits[idx, idx // 64] = np.uint64(1) << (idx % 64).astype(np.uint64)
    out = np.empty_like(bits)
    lower = idx[None, :] <= idx[:, None]
    for layer in range(1, layers + 1):
        apply_layer(pattern.layer_ops(layer), bits, out)
        bits, out = out, bits
        reach = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, :n].astype(bool)
        yield lower & ~reach


def engine_missed_clumps(n, w, seed, layers):
    """8-connected clumps of missed pairs after each layer (scipy.ndimage labels them)."""
    return np.array([ndimage.label(m, structure=np.ones((3, 3)))[1] for m in engine_missed_pairs(n, w, seed, layers)])


@pytest.mark.parametrize(("n", "w", "layers"), [(2048, 4, 16), (2048, 8, 8)])
def test_causal_failure_clumps_count_the_engines_clumps(n, w, layers):
    """The model's expected clump count N_L (P(full) = exp(-N_L)) against the engine's clumps of missed pairs, 4
    seeds, at the layers that decide L*: past the peak of the engine's clump count and with 5 .. 1000 clumps per
    seed (before, the missed pairs form a few giant clumps and P(full) is nil anyway): within a factor 1.4."""
    seeds = 4
    engine = np.mean([engine_missed_clumps(n, w, s, layers) for s in range(seeds)], axis=0)
    model = theory.causal_failure_clumps(n, w, layers)
    deciding = (np.arange(layers) > np.argmax(engine)) & (engine >= 5) & (engine <= 1000)
    assert deciding.sum() >= 2
    ratio = engine[deciding] / model[deciding]
    assert np.all((ratio > 0.7) & (ratio < 1.4)), ratio


def engine_missed_by_distance(n, w, seed, layers):
    """Missed pairs ``(i - x, i)`` per distance ``x`` after each layer of causal SA+SWA (every pair exact)."""
    rows = []
    for missed in engine_missed_pairs(n, w, seed, layers):
        query, key = np.nonzero(missed)
        rows.append(np.bincount(query - key, minlength=n))
    return np.array(rows)


def interval_process_misses(p, a, layers, depth, samples, seed=0):
    """Monte Carlo of the interval process that ``psi_L(x)`` is about: a key at 0, the causal window of ``a`` keys,
    and an independent Bernoulli(p) shortcut from every reached token to every later position in every layer (the
    pair ``(0, x)`` sees nothing beyond ``x``, so one run over ``0..depth`` gives every ``x``). Row ``L`` holds
    ``P(x missed after L layers)``."""
    rng = np.random.default_rng(seed)
    reached = np.zeros((samples, depth + 1), dtype=bool)
    reached[:, 0] = True
    out = [np.zeros(depth + 1)]
    for _ in range(layers):
        count = np.cumsum(reached, axis=1)
        before = np.concatenate([np.zeros((samples, 1), dtype=int), count[:, :-1]], axis=1)
        window = count - np.concatenate([np.zeros((samples, a), dtype=int), count[:, :-a]], axis=1)
        shortcut = rng.random(reached.shape) < -np.expm1(before * math.log1p(-p))
        reached = (window > 0) | shortcut
        out.append(1 - reached.mean(axis=0))
    return np.array(out)


def test_pair_miss_probability_engine_interval_process_and_branching_model():
    """The per-pair miss probability psi_L(x) three ways at n = 2048, w = 8, layers 5 and 6, in distance bins beyond
    the window's reach L (w - 1): the engine (every pair, 6 seeds) agrees with the interval process (Monte Carlo,
    independent shortcuts) within 25% where it counts >= 1000 missed pairs (failures come in clumps, so the
    engine's counts are noisier than they look), so reducing a pair to its interval is sound; the
    run-branching model (causal_run_miss_table) never has more misses than the interval process (it treats
    overlapping runs as independent) and is within 25% of it just beyond the reach, but 1.5-3x below it at 2-4
    times the reach."""
    n, w, layers, depth = 2048, 8, 6, 200
    p = (w - 1) / (n - 1)
    seeds = 6
    engine = sum(engine_missed_by_distance(n, w, s, layers) for s in range(seeds))
    interval = interval_process_misses(p, w, layers, depth, 30000)
    model = theory.causal_run_miss_table(p, w, layers, depth)
    x = np.arange(depth + 1)
    for layer in (5, 6):
        reach = layer * (w - 1)
        edges = [reach + 1, int(1.4 * reach), int(2 * reach), int(3 * reach), depth + 1]
        for k, (lo, hi) in enumerate(itertools.pairwise(edges)):
            pairs = seeds * (n - x[lo:hi]).sum()
            eng = engine[layer - 1, lo:hi].sum() / pairs
            mc, tree = interval[layer, lo:hi].mean(), model[layer, lo:hi].mean()
            if engine[layer - 1, lo:hi].sum() >= 1000:
                assert 0.75 < eng / mc < 1.25, (layer, lo, hi, eng, mc)
            assert tree <= 1.05 * mc, (layer, lo, hi, tree, mc)
            if k == 0:
                assert tree > 0.75 * mc, (layer, lo, hi, tree, mc)


def test_median_layer():
    """The first layer with P(full) >= 1/2, 1-based; None if never reached; what predict_full_layer returns."""
    assert theory.median_layer([0.0, 0.2, 0.5, 0.9]) == 3
    assert theory.median_layer([0.6]) == 1
    assert theory.median_layer([0.1, 0.49]) is None
    with pytest.raises(ValueError, match="probabilities: expected a 1-d array"):
        theory.median_layer([[0.2, 0.7]])
    predicted, probs = theory.predict_full_layer("sa+swa", 4096, 16, causal=True)
    assert theory.median_layer(probs) == predicted


@given(st.integers(1, 40), st.integers(1, 45), st.integers(0, 2**32 - 1))
def test_window_miss_probability_is_its_product(n, length, seed):
    """The profile model's P(a window of ``length`` offsets ending at x is missed), computed by slices of the prefix
    sums, against the product ``u(x) prod_{y=max(x-length+2, 0)..x} u2(y)/u(y)`` written out."""
    from receptive.theory.causal import _window_missed

    rng = np.random.default_rng(seed)
    u = rng.uniform(0.05, 1.0, n)
    ratio = rng.uniform(0.05, 1.0, n)
    log_cum = np.concatenate([[0.0], np.cumsum(np.log(ratio))])
    expected = [u[x] * math.prod(ratio[max(x - length + 2, 0) : x + 1]) for x in range(n)]
    np.testing.assert_allclose(_window_missed(u, log_cum, length), expected, rtol=1e-12)
