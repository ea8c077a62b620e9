"""The interval Monte Carlo of causal SA+SWA (receptive.theory.interval) against a slow oracle of the same
process and against the exact no-shortcut case; its point model and result-file loader. Checks against the committed
engine measurements are in tests/analysis/test_causal_interval_results.py."""

from __future__ import annotations

import json
import math

import numba
import numpy as np
import pytest

from receptive.theory import (
    IntervalCostError,
    causal_failure_clumps,
    causal_interval_clumps,
    interval_event_rates,
)
from receptive.theory import interval as tci


def oracle_first_missed(p, a, layers, keys, cut, samples, rng):
    """``x_min`` per sample, layer and key by dense boolean matrices: ``reach[k, y]`` = key ``k`` (at position ``k``)
    reaches position ``y``; each layer ORs the causal window (offsets 0..a-1) and one Bernoulli(p) edge per
    unordered pair, used from the lower position to the higher."""
    length = keys + cut + 1
    big = np.iinfo(np.int64).max
    out = np.full((samples, layers, keys), big, dtype=np.int64)
    pos = np.arange(length)
    before = pos[None, :] >= np.arange(keys)[:, None]  # the positions each key must reach
    for s in range(samples):
        reach = np.zeros((keys, length), dtype=bool)
        reach[np.arange(keys), np.arange(keys)] = True
        for layer in range(layers):
            new = reach.copy()
            for d in range(1, a):
                new[:, d:] |= reach[:, :-d]
            edges = np.triu(rng.random((length, length)) < p, k=1)  # edges[u, v], u < v: u -> v
            new |= (reach.astype(np.int32) @ edges.astype(np.int32)) > 0
            reach = new
            missed = before & ~reach
            for k in range(keys):
                hit = np.flatnonzero(missed[k])
                if hit.size:
                    out[s, layer, k] = hit[0] - k
    return out


def test_no_shortcuts_is_the_window_alone():
    """Without shortcuts key k reaches offsets 0 .. L(a-1) after L layers: it fails exactly from horizon
    L(a-1) + 1, and no key starts an event (the key before it fails too, one horizon later)."""
    a, layers = 4, 5
    r = interval_event_rates(1e-15, a, layers, samples=3, keys=64, gaps=(8,))
    for layer in range(layers):
        reach = (layer + 1) * (a - 1)
        assert np.all(r["fail"][layer, : reach + 1] == 0)
        assert np.all(r["fail"][layer, reach + 1 :] == 1)
        assert np.all(r["start"][8][layer] == 0)


@pytest.mark.parametrize("p, a, layers", [(0.02, 3, 4), (0.3, 2, 2)])
def test_against_the_dense_oracle(p, a, layers):
    """First-missed offsets of the bitset kernel against dense matrices of the same process (one Bernoulli(p) edge per
    pair): the failure probability at every (layer, horizon) and the event starts agree within 4.5 standard errors
    (p = 0.3: where a pair present with probability 1 - exp(-p) = 0.26 instead of p would show)."""
    keys = 64
    fast = interval_event_rates(p, a, layers, samples=6000, keys=keys, gaps=(4,), seed=3)
    cut = fast["cut"]
    xmin = oracle_first_missed(p, a, layers, keys, cut, 400, np.random.default_rng(0))
    for layer in range(layers):
        for h in np.unique(np.linspace(0, cut, 9).astype(int)):
            q_oracle = float(np.mean(xmin[:, layer, :] <= h))
            q_fast = fast["fail"][layer, h]
            se = np.sqrt(max(q_fast * (1 - q_fast), 1e-4) / (400 * keys / 8))  # keys of a strip are correlated
            assert abs(q_fast - q_oracle) < 4.5 * se + 1e-9, (layer, h, q_fast, q_oracle)
        # event starts with gap 4 at the cut: key k fails and keys k-1..k-4 do not, with their longer horizons
        h = cut
        fails = xmin[:, layer, :] <= h
        ok = np.ones_like(fails[:, 4:])
        for i in range(1, 5):
            ok &= ~(xmin[:, layer, 4 - i : keys - i] <= h + i)
        s_oracle = float(np.mean(fails[:, 4:] & ok))
        s_fast = fast["start"][4][layer, h]
        se = np.sqrt(max(s_fast, 1e-4) / (400 * (keys - 4) / 8))
        assert abs(s_fast - s_oracle) < 4.5 * se + 1e-9, (layer, s_fast, s_oracle)


def test_reproducible_whatever_the_threads():
    """One random stream per strip: the same seed gives the same counts on one thread and on all of them."""
    args = dict(p=0.01, a=4, layers=6, samples=200, keys=128, gaps=(8, 32), seed=11)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = interval_event_rates(**args)
    finally:
        numba.set_num_threads(threads)
    many = interval_event_rates(**args)
    assert np.array_equal(one["fail"], many["fail"])
    assert np.array_equal(one["start"][32], many["start"][32])
    other = interval_event_rates(**{**args, "seed": 12})
    assert not np.array_equal(one["fail"], other["fail"])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(p=0.0, a=4, layers=3, samples=10), "p: expected"),
        (dict(p=0.1, a=0, layers=3, samples=10), r"^a: "),
        (dict(p=0.1, a=4, layers=0, samples=10), r"^layers: "),
        (dict(p=0.1, a=4, layers=3, samples=10, seed=-1), r"^seed: "),
        (dict(p=0.1, a=4, layers=3, samples=10, gaps=()), "gaps: expected a non-empty"),
        (dict(p=0.1, a=4, layers=3, samples=10, keys=100), "keys: expected a multiple of 64"),
        (dict(p=0.1, a=4, layers=3, samples=10, keys=64, gaps=(64,)), "gaps"),
    ],
)
def test_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        interval_event_rates(**kwargs)


def test_too_costly_is_refused_before_running():
    with pytest.raises(IntervalCostError, match="max_cost"):
        causal_interval_clumps(65536, 4, 60, events=300, max_cost=1e6)
    with pytest.raises(ValueError, match=r"^gap: "):
        causal_interval_clumps(1024, 8, 8, gap=256)
    with pytest.raises(ValueError, match=r"^max_cost: "):
        causal_interval_clumps(1024, 8, 8, max_cost=float("nan"))


def test_the_cut_grows_until_the_profile_leaves_little_beyond_it(monkeypatch):
    """The cut starts at 6 L_s (w - 1) + w and grows until the profile model's events beyond it are at most
    FAR_TOLERANCE at the deciding layers, as far as max_cost allows; the far part left to the profile shrinks with
    it."""
    base = tci.causal_interval_clumps(16384, 64, 8, events=10)
    assert base["cut"] == base["cut_wanted"] == tci._cut(64, base["simulated_layers"])
    monkeypatch.setattr(tci, "FAR_TOLERANCE", 1e-9)
    wide = tci.causal_interval_clumps(16384, 64, 8, events=10)
    assert wide["cut"] == wide["cut_wanted"] > base["cut"]
    assert np.all(wide["far"] <= base["far"])
    capped = tci.causal_interval_clumps(16384, 64, 8, events=10, max_cost=math.sqrt(base["cost"] * wide["cost"]))
    assert base["cut"] < capped["cut"] < capped["cut_wanted"] == wide["cut_wanted"]
    assert capped["cost"] <= math.sqrt(base["cost"] * wide["cost"])
    assert np.all(wide["far"] <= capped["far"]) and np.all(capped["far"] <= base["far"])


def test_far_clumps_are_the_profile_sums_beyond_each_cut():
    """_far_clumps(..., cuts)[L-1, c] = sum over x > cuts[c] of (n - x)(u_L(x) - u2_L(x)), the profile model's clumps
    beyond the cut, computed here by a direct sum per layer and cut."""
    from receptive.theory import CausalProfile

    n, w, layers = 4096, 16, 4
    cuts = np.array([0, 100, 1000, n - 2, n - 1])
    far = tci._far_clumps(n, w, layers, cuts)
    profile = CausalProfile(n, w, w)
    x = np.arange(n)
    for layer in range(layers):
        u, u2 = profile.step()
        clumps = (n - x) * np.maximum(u - u2, 0.0)
        direct = [clumps[c + 1 :].sum() for c in cuts]
        np.testing.assert_allclose(far[layer], direct, rtol=1e-9, atol=1e-12)
    assert far[0, -1] == 0.0 and far[0, 0] > far[0, 2] > 0


def test_predict_full_layer_with_the_interval_model_is_the_point_model():
    """theory.predict_full_layer(..., model="interval") uses the evaluation's settings: the probabilities of
    interval_point_model at its defaults, and their median L*, within a layer of the analytic model's."""
    from receptive import theory

    row = tci.interval_point_model(1024, 16, 12)
    assert row["method"] == "interval" and (row["n"], row["w"], row["targets"], row["max_layers"]) == (
        1024,
        16,
        None,
        12,
    )
    predicted, probs = theory.predict_full_layer("sa+swa", 1024, 16, True, max_layers=12, model="interval")
    np.testing.assert_allclose(probs, row["full_probability"], rtol=1e-12, atol=0)
    assert predicted == theory.median_layer(row["full_probability"])
    analytic, _ = theory.predict_full_layer("sa+swa", 1024, 16, True, max_layers=12)
    assert abs(predicted - analytic) <= 1


def test_point_model_keeps_the_analytic_model_where_the_simulation_is_too_costly():
    row = tci.interval_point_model(1024, 16, 12, max_cost=1.0)
    assert row["method"] == "analytic" and "max_cost" in row["why"]
    clumps = causal_failure_clumps(1024, 16, 12)
    np.testing.assert_allclose(row["full_probability"], np.maximum.accumulate(np.exp(-clumps)))


def test_load_interval_model_round_trip_and_bad_files(tmp_path):
    rows = [tci.interval_point_model(256, w, 8) for w in (4, 8)]
    doc = {"events": tci.EVALUATION_EVENTS, "seed": 0, "max_cost": 2e11, "points": rows}
    path = tmp_path / "interval.json"
    path.write_text(json.dumps(doc))
    table, settings = tci.load_interval_model(path)
    assert settings == {"events": tci.EVALUATION_EVENTS, "seed": 0, "max_cost": 2e11}
    assert table[256, 8, None, 8] == rows[1]["full_probability"] and len(table) == 2
    (tmp_path / "bad.json").write_text('{"points": []}')
    for bad in (tmp_path / "missing.json", tmp_path / "bad.json"):
        with pytest.raises(ValueError, match=r"^path: "):
            tci.load_interval_model(bad)
    with pytest.raises(TypeError, match=r"^path: "):
        tci.load_interval_model(3)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(name="sa", causal=True, model="interval"), "model: 'interval' covers causal, non-circular 'sa\\+swa'"),
        (dict(name="sa+swa", causal=False, model="interval"), "model: 'interval' covers"),
        (dict(name="sa+swa", causal=True, circular=True, model="interval"), "model: 'interval' covers"),
        (dict(name="sa+swa", causal=True, model="fitted"), "model: expected one of analytic, interval, got 'fitted'"),
    ],
)
def test_interval_model_option_bad_input(kwargs, message):
    from receptive import theory

    with pytest.raises(ValueError, match=message):
        theory.full_probability(n=1024, w=8, layers=8, **kwargs)
