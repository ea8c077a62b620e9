"""The pattern zoo against dense definitions: every pattern's adjacency, receptive fields (forward and backward
through the engine), closed forms, pair counts, and the layer-spec / stack grammar."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import rf_sizes

from graphs import backward_counts, forward_counts
from receptive import coverage_by_layer
from receptive.patterns import base
from receptive.patterns.blocks import BigBird, Chunked
from receptive.patterns.dilated import DilatedWindow, LongNet
from receptive.patterns.global_tokens import SinkWindow, WindowGlobal
from receptive.patterns.random_keys import RandomKeys
from receptive.patterns.registry import PATTERNS, parse_layer, parse_stack, pattern_from_spec, stack_from_spec
from receptive.patterns.sparse_transformer import Fixed, Strided


def offsets(w, causal):
    return (w - 1, 0) if causal else (w // 2, (w - 1) // 2)


def grid(n):
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return i, j


def window_def(n, w, causal):
    left, right = offsets(w, causal)
    i, j = grid(n)
    return (j >= i - left) & (j <= i + right)


def causal_cut(a, causal):
    return a & np.tril(np.ones_like(a)) if causal else a


def global_def(n, w, tokens, causal):
    i, j = grid(n)
    g = np.zeros(n, dtype=bool)
    g[tokens] = True
    return causal_cut(window_def(n, w, causal) | g[j] | g[i], causal)


def sink_def(n, w, sinks, causal):
    _, j = grid(n)
    return causal_cut(window_def(n, w, causal) | (j < sinks), causal)


def chunk_def(n, c, causal):
    i, j = grid(n)
    return causal_cut(i // c == j // c, causal)


def dilated_def(n, w, r, causal):
    left, right = offsets(w, causal)
    i, j = grid(n)
    d = j - i
    return (d % r == 0) & (d >= -left * r) & (d <= right * r)


def longnet_def(n, segments, dilations, causal):
    i, j = grid(n)
    a = np.zeros((n, n), dtype=bool)
    for s, r in zip(segments, dilations, strict=True):
        a |= (i // s == j // s) & ((i % s - j % s) % r == 0)
    return causal_cut(a, causal)


def strided_def(n, stride, causal):
    i, j = grid(n)
    return causal_cut(window_def(n, stride, causal) | ((i - j) % stride == 0), causal)


def fixed_def(n, block, summary, causal):
    i, j = grid(n)
    return causal_cut((i // block == j // block) | (j % block >= block - summary), causal)


def bigbird_def(p: BigBird, layer):
    """The layer's block lists (drawn by the pattern) checked against BigBird's rules, expanded to tokens."""
    (op,) = p.layer_ops(layer)
    nb, n = p.n_blocks, p.n
    allowed = np.zeros((nb, nb), dtype=bool)
    for b in range(nb):
        keys = op.indices[op.indptr[b] : op.indptr[b + 1]]
        assert b not in keys
        allowed[b, keys] = True
        if b in p.global_blocks:
            expect = np.arange(b) if p.causal else np.setdiff1d(np.arange(nb), [b])
            assert set(keys) == set(expect)
            continue
        lo = b - (p.window - 1 if p.causal else (p.window - 1) // 2)
        hi = b if p.causal else b + p.window // 2
        near = set(range(max(0, lo), min(nb - 1, hi) + 1)) - {b}
        glob = {g for g in p.global_blocks if not p.causal or g < b}
        assert near <= set(keys) and glob <= set(keys)
        extra = set(keys) - near - glob
        candidates = set(range(b if p.causal else nb)) - near - glob - {b}
        assert len(extra) == min(p.random, len(candidates))
        if p.causal:
            assert all(k < b for k in keys)
    blk = np.arange(n) // p.block
    i, j = grid(n)
    a = allowed[blk[i], blk[j]] | (blk[i] == blk[j])
    return causal_cut(a, p.causal) if p.causal else a


@st.composite
def zoo_cases(draw):
    n = draw(st.integers(2, 48))
    causal = draw(st.booleans())
    kind = draw(st.sampled_from(["global", "sink", "chunk", "dilated", "longnet", "strided", "fixed", "bigbird"]))
    if kind == "global":
        w = draw(st.integers(1, n))
        tokens = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=3)))
        return WindowGlobal(n, w, causal=causal, tokens=tokens), global_def(n, w, tokens, causal)
    if kind == "sink":
        w, s = draw(st.integers(1, n)), draw(st.integers(1, n))
        return SinkWindow(n, w, s, causal), sink_def(n, w, s, causal)
    if kind == "chunk":
        c = draw(st.integers(1, n))
        return Chunked(n, c, causal), chunk_def(n, c, causal)
    if kind == "dilated":
        r = draw(st.integers(1, n))
        group = -(-n // r)
        w = draw(st.integers(1, group if causal else 2 * group - 1))
        return DilatedWindow(n, w, r, causal), dilated_def(n, w, r, causal)
    if kind == "longnet":
        levels = draw(st.integers(1, 3))
        segments = [draw(st.integers(1, n)) for _ in range(levels)]
        dilations = [draw(st.integers(1, s)) for s in segments]
        p = LongNet(n, causal=causal, segments=segments, dilations=dilations)
        return p, longnet_def(n, segments, dilations, causal)
    if kind == "strided":
        stride = draw(st.integers(1, n))
        return Strided(n, stride, causal), strided_def(n, stride, causal)
    if kind == "fixed":
        block = draw(st.integers(1, n))
        summary = draw(st.integers(1, block))
        return Fixed(n, block, summary, causal), fixed_def(n, block, summary, causal)
    block = draw(st.integers(1, n))
    nb = -(-n // block)
    p = BigBird(
        n,
        block,
        draw(st.integers(1, 2 * nb - 1)),
        draw(st.integers(0, nb)),
        draw(st.integers(0, nb)),
        causal,
        draw(st.integers(0, 99)),
    )
    return p, None


def definition(pattern, dense, layer):
    return bigbird_def(pattern, layer) if dense is None else dense


@settings(max_examples=150, deadline=None)
@given(zoo_cases(), st.integers(1, 4))
def test_zoo_adjacency_and_receptive_fields_equal_definitions(case, layers):
    pattern, dense = case
    n = pattern.n
    mats = [definition(pattern, dense, layer) for layer in range(1, layers + 1)]
    for layer, mat in enumerate(mats, start=1):
        np.testing.assert_array_equal(pattern.adjacency(layer).toarray(), mat)
        assert mat.diagonal().all()  # every pattern includes the query itself
        if pattern.causal:
            assert not np.triu(mat, 1).any()
    expect = rf_sizes(mats)
    reach = forward_counts(pattern.layer_ops, n, max_layers=layers, causal=pattern.causal, stop_when_full=False)
    np.testing.assert_array_equal(reach.counts, expect)
    targets = np.arange(0, n, 3)
    back = backward_counts(
        pattern.layer_ops, n, targets, max_layers=layers, causal=pattern.causal, stop_when_full=False
    )
    np.testing.assert_array_equal(back.counts, expect[:, targets])
    if pattern.has_closed_form:
        for layer in range(1, layers + 1):
            np.testing.assert_array_equal(pattern.closed_form_counts(layer), expect[layer - 1])
    for layer in range(1, layers + 1):
        per_op = sum(base._edges(op, n)[0].size for op in pattern.layer_ops(layer))
        assert pattern.pair_count(layer) == per_op


@settings(max_examples=60, deadline=None)
@given(zoo_cases())
def test_closed_form_full_layer_equals_engine(case):
    pattern, _ = case
    if not pattern.has_closed_form:
        return
    result = coverage_by_layer(pattern, method="exact", max_layers=3 * pattern.n)
    assert pattern.closed_form_full_layer() == result.full_coverage_layer


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 60), st.integers(1, 8), st.booleans(), st.integers(0, 50), st.integers(1, 3))
def test_random_keys(n, k, causal, seed, layers):
    k = min(k, n - 1) or 1
    p = RandomKeys(n, k, causal, seed)
    mats = []
    for layer in range(1, layers + 1):
        mat = p.adjacency(layer).toarray()
        assert mat.diagonal().all()
        assert (mat.sum(axis=1) <= k + 1).all()
        if causal:
            assert not np.triu(mat, 1).any()
            assert (mat.sum(axis=1)[1:] >= 2).all()  # every query past the first draws at least one key
        mats.append(mat)
    reach = forward_counts(p.layer_ops, n, max_layers=layers, causal=causal, stop_when_full=False)
    np.testing.assert_array_equal(reach.counts, rf_sizes(mats))
    np.testing.assert_array_equal(RandomKeys(n, k, causal, seed).adjacency(1).toarray(), mats[0])


def test_random_keys_are_uniform():
    """Distinct keys per query match m (1 - (1 - 1/m)^k) and key positions are uniform (chi-square)."""
    n, k = 2000, 16
    mat = RandomKeys(n, k, False, 3).adjacency(1)
    m = n - 1
    expect = m * (1 - (1 - 1 / m) ** k) + 1
    assert abs(np.diff(mat.indptr).mean() - expect) < 0.02
    counts = np.bincount(mat.indices, minlength=n) - 1  # minus self
    chi2 = ((counts - counts.mean()) ** 2 / counts.mean()).sum()
    assert chi2 < n + 5 * np.sqrt(2 * n)  # chi-square with n - 1 dof, 5 sigma


def test_classic_layout_facts():
    n = 4096
    assert coverage_by_layer(Strided(n, 64, causal=True), method="exact").full_coverage_layer == 2
    assert coverage_by_layer(WindowGlobal(n, 65, 1), method="exact").full_coverage_layer == 2
    assert coverage_by_layer(Chunked(n, 512, causal=True), layers=8, method="exact").full_coverage_layer is None
    assert DilatedWindow(n, 8, 4).closed_form_full_layer() is None
    mistral = stack_from_spec("swa:4096", 131072, 32, causal=True)
    assert mistral.kv_cache_entries(1) == 4096
    assert Chunked(n, 512, causal=True).kv_cache_entries(3) == 512


def test_spec_grammar():
    kind, values = parse_layer("bigbird:32")
    assert kind.name == "bigbird" and values == (32, 3, 3, 2)
    assert parse_layer("swa", default_w=16)[1] == (16,)
    assert parse_stack("5*swa:1024, full") == ["swa:1024"] * 5 + ["full"]
    stack = stack_from_spec("2*swa:8,full", 64, 7, causal=True)
    assert [p.name for p in (stack.pattern_of(layer) for layer in range(1, 8))] == ["swa", "swa", "full"] * 2 + ["swa"]
    assert set(PATTERNS) >= {"swa", "sa", "sa+swa", "full", "global", "sink", "random", "bigbird", "chunk", "longnet"}


def test_one_registry_names_every_pattern():
    """make_pattern and the layer specs read one registry: a name set by a window builds the same pattern both ways
    (``make_pattern(name, n, w)`` is the spec ``name:w``); make_pattern refuses the others with their spec's form."""
    from receptive import make_pattern

    windowed = [name for name, kind in PATTERNS.items() if kind.windowed]
    assert {"swa", "sa", "sa+swa", "full", "global", "sink", "sa-ms", "kleinberg", "dilated"} <= set(windowed)
    assert not {"bigbird", "chunk", "random", "top-k"} & set(windowed)
    for name in windowed:
        for causal in (False, True):
            by_name = make_pattern(name, 256, 8, causal, seed=2)
            by_spec = pattern_from_spec(name if name == "full" else f"{name}:8", 256, causal, seed=2)
            for layer in (1, 2):
                assert (by_name.adjacency(layer) != by_spec.adjacency(layer)).nnz == 0, (name, causal, layer)
    with pytest.raises(ValueError, match=r"^name: chunk is not set by a window; .*chunk:SIZE"):
        make_pattern("chunk", 256, 8)
    with pytest.raises(ValueError, match=r"^permutations: swa takes none"):
        make_pattern("swa", 16, 4, permutations=[np.arange(16)])


def test_stack_of_sa_is_sa():
    from receptive import make_pattern

    n, w = 1024, 8
    sa = coverage_by_layer(make_pattern("sa", n, w, seed=3), method="exact")
    stack = coverage_by_layer(stack_from_spec("sa:8", n, 64, seed=3), method="exact")
    assert sa.full_coverage_layer == stack.full_coverage_layer
    np.testing.assert_array_equal(sa.sizes, stack.sizes)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope:3", "unknown pattern 'nope'"),
        ("swa", "needs W"),
        ("swa:0", "w: expected"),
        ("swa:x", "must be an integer"),
        ("chunk:100", "chunk: expected"),
        ("global:8:100", "globals: expected"),
        ("swa:8:9", "takes at most 1"),
        ("0*swa:8", "K >= 1"),
        ("", "got nothing"),
        ("swa:8,,full", "K >= 1"),
    ],
)
def test_bad_specs(spec, message):
    with pytest.raises(ValueError, match=message):
        stack_from_spec(spec, 64, 4)


def test_every_kind_builds_causal_and_not():
    for name, kind in PATTERNS.items():
        args = ":".join(["4"] * sum(p.default is None for p in kind.params))
        spec = f"{name}:{args}" if args else name
        for causal in (False, True):
            pattern = pattern_from_spec(spec, 512 if name in ("top-k", "moba", "reformer") else 4096, causal)
            assert pattern.causal == causal
            assert pattern.pair_count(1) > 0


def test_content_specs_route_synthetic_queries():
    """top-k/moba/reformer in a stack: causal routing never reads a future key; one seed gives one layer."""
    for spec in ("top-k:4", "moba:8:2", "reformer:4:2:16"):
        for causal in (False, True):
            a = pattern_from_spec(spec, 128, causal, seed=5)
            mat = a.adjacency(2).toarray()
            assert mat.diagonal().all() and (not causal or not np.triu(mat, 1).any())
            np.testing.assert_array_equal(mat, pattern_from_spec(spec, 128, causal, seed=5).adjacency(2).toarray())
