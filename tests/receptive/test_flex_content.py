"""FlexAttention interop (receptive.patterns.flex) and content-based layers (receptive.patterns.content).

Every fast path against a slow, obviously-correct definition: the registry's patterns through to_mask_mod and
from_mask_mod (and torch's create_mask / flex_attention), and the routers against per-query loops.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from receptive import coverage_by_layer
from receptive.patterns import registry
from receptive.patterns.content import (
    lsh_pattern,
    lsh_routing,
    moba_pattern,
    moba_routing,
    random_content_pattern,
    random_qk,
    topk_pattern,
    topk_routing,
)
from receptive.patterns.flex import CSRPattern, from_mask_mod, to_mask_mod

# small arguments for the parameter names of the layer-spec grammar (registry.PATTERNS), else the kind's default; a new
# kind with a required parameter missing here fails test_every_kind_has_small_arguments, so the round trip always
# covers every registered name
SMALL = {
    "w": 5,
    "w_swa": 3,
    "globals": 2,
    "sinks": 2,
    "k": 3,
    "block": 8,
    "window": 3,
    "random": 1,
    "dilation": 2,
    "segment": 8,
    "ratio": 2,
    "size": 8,
    "stride": 4,
    "summary": 1,
    "k_keys": 4,
    "top_blocks": 2,
    "buckets": 4,
    "rounds": 2,
    "chunk": 8,
}
N = 48


#: every registered name
NAMES = list(registry.PATTERNS)


def build(name: str, causal: bool, n: int = N):
    kind = registry.PATTERNS[name]
    return kind.build(n, causal, False, 3, *[SMALL.get(p.name, p.default) for p in kind.params])


def dense(mat) -> np.ndarray:
    return mat.toarray().astype(bool)


def test_every_kind_has_small_arguments():
    for kind in registry.PATTERNS.values():
        missing = [p.name for p in kind.params if p.name not in SMALL and p.default is None]
        assert not missing, f"add small test values for {kind.name}'s parameters {missing} to SMALL"


# ------------------------------------------------------------------------------------------------- FlexAttention


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_mask_mod_round_trip_every_registered_pattern(name, causal):
    pytest.importorskip("torch")
    pattern = build(name, causal)
    assert pattern.causal == causal
    layers = [1, 2] if pattern.max_layers is None or pattern.max_layers >= 2 else [1]
    for layer in layers:
        expected = dense(pattern.adjacency(layer))
        for lookup in ("dense", "bits", "csr") if layer == 1 else ("csr",):
            back = from_mask_mod(to_mask_mod(pattern, layer, lookup=lookup), N, causal=causal)
            np.testing.assert_array_equal(dense(back.adjacency(1)), expected, err_msg=f"{name} {layer} {lookup}")


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_create_mask_equals_dense_adjacency(name, causal):
    torch = pytest.importorskip("torch")
    from torch.nn.attention.flex_attention import create_mask

    pattern = build(name, causal)
    expected = dense(pattern.adjacency(1))
    lookup = "bits" if causal else "csr"  # every lookup is round-tripped above
    mask = create_mask(to_mask_mod(pattern, 1, lookup=lookup), 1, 2, N, N, device="cpu")
    assert mask.dtype == torch.bool and tuple(mask.shape) == (1, 2, N, N)
    for h in range(2):
        np.testing.assert_array_equal(mask[0, h].numpy(), expected, err_msg=name)


@pytest.mark.parametrize("name", ["sa", "bigbird", "swa"])
def test_flex_attention_equals_float64_masked_softmax(name):
    torch = pytest.importorskip("torch")
    import warnings

    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    from gpu.attention.oracle import dense_oracle

    n, d = 40, 8  # not a multiple of FlexAttention's block: the padded indices must be masked
    pattern = build(name, True, n)
    adj = torch.as_tensor(dense(pattern.adjacency(1)))
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, n, d, generator=gen, dtype=torch.float64) for _ in range(3))
    oracle = dense_oracle(q, k, v, adj)
    for lookup in ("dense", "bits", "csr"):
        block_mask = create_block_mask(to_mask_mod(pattern, 1, lookup=lookup), None, None, n, n, device="cpu")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # eager flex_attention warns that it is not compiled
            out = flex_attention(q, k, v, block_mask=block_mask)
        torch.testing.assert_close(out, oracle, rtol=1e-12, atol=1e-12)


def test_from_mask_mod_against_hand_written_masks():
    torch = pytest.importorskip("torch")
    from receptive.patterns import SlidingWindow

    n, w = 30, 7

    def band(b, h, q, kv):
        return (q - kv).abs() <= w // 2

    def causal_band(b, h, q, kv):
        return (q >= kv) & (q - kv < w)

    np.testing.assert_array_equal(dense(from_mask_mod(band, n).adjacency(1)), dense(SlidingWindow(n, w).adjacency(1)))
    causal = from_mask_mod(causal_band, n, causal=True, block=7)  # five blocks of query rows
    np.testing.assert_array_equal(dense(causal.adjacency(5)), dense(SlidingWindow(n, w, causal=True).adjacency(1)))
    assert causal.max_layers is None  # one mask_mod: the same layer at every depth

    # a document mask through a closed-over tensor (tensor[index] under vmap, as create_mask allows)
    doc = torch.tensor([0] * 10 + [1] * 12 + [2] * 8)

    def document(b, h, q, kv):
        return doc[q] == doc[kv]

    ids = doc.numpy()
    np.testing.assert_array_equal(dense(from_mask_mod(document, n).adjacency(1)), ids[:, None] == ids[None, :])

    # heads: the layer is the union of the heads' masks (plus the query itself)
    def per_head(b, h, q, kv):
        return torch.where(h == 0, kv == 0, kv == (q + 3) % n)

    got = dense(from_mask_mod(per_head, n, heads=2).adjacency(1))
    want = np.eye(n, dtype=bool)
    want[:, 0] = True
    want[np.arange(n), (np.arange(n) + 3) % n] = True
    np.testing.assert_array_equal(got, want)

    # layers: one mask_mod per layer
    stack = from_mask_mod(None, n, layers=[band, document])
    assert stack.max_layers == 2
    np.testing.assert_array_equal(dense(stack.adjacency(2)), ids[:, None] == ids[None, :])
    result = coverage_by_layer(stack)
    assert result.layers[0].mean > 0


@pytest.mark.parametrize("causal", [False, True])
def test_lookups_on_several_words_and_the_sign_bit(causal):
    """n = 130: three 64-bit words per row, keys 63 and 127 in bit 63 (the sign bit of an int64 word)."""
    torch = pytest.importorskip("torch")
    import scipy.sparse as sp
    from torch.nn.attention.flex_attention import create_mask

    n = 130
    a = np.random.default_rng(5).random((n, n)) < 0.2
    a[:, [0, 63, 64, 127, 128, 129]] = True
    if causal:
        a = np.tril(a)
    pattern = CSRPattern(n, [sp.csr_array(a)], causal)
    expected = a | np.eye(n, dtype=bool)
    for lookup in ("dense", "bits", "csr"):
        mask_mod = to_mask_mod(pattern, 1, lookup=lookup)
        np.testing.assert_array_equal(create_mask(mask_mod, 1, 1, n, n, device="cpu")[0, 0].numpy(), expected)
        np.testing.assert_array_equal(dense(from_mask_mod(mask_mod, n, causal=causal).adjacency(1)), expected)
        # padded indices beyond n (FlexAttention rounds up to its block) are masked
        q, kv = torch.tensor([n, n + 5, 3]), torch.tensor([0, 63, n + 1])
        assert not mask_mod(0, 0, q, kv).any()


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 70), density=st.floats(0.0, 1.0), causal=st.booleans(), seed=st.integers(0, 2**16))
def test_round_trip_of_random_neighbour_lists(n, density, causal, seed):
    pytest.importorskip("torch")
    import scipy.sparse as sp

    a = np.random.default_rng(seed).random((n, n)) < density
    a = np.tril(a) if causal else a
    pattern = CSRPattern(n, [sp.csr_array(a)], causal)
    expected = a | np.eye(n, dtype=bool)
    for lookup in ("dense", "bits", "csr"):
        back = from_mask_mod(to_mask_mod(pattern, 1, lookup=lookup), n, causal=causal, block=max(1, n // 3))
        np.testing.assert_array_equal(dense(back.adjacency(1)), expected)


def test_mask_mod_of_a_layer_stack():
    pytest.importorskip("torch")
    if not hasattr(registry, "stack_from_spec"):
        pytest.skip("no layer stacks in this registry")
    stack = registry.stack_from_spec("2*swa:5,chunk:8", N, 4, causal=True)
    for layer in range(1, 5):
        back = from_mask_mod(to_mask_mod(stack, layer), N, causal=True)
        np.testing.assert_array_equal(dense(back.adjacency(1)), dense(stack.adjacency(layer)))


def test_flex_bad_input_is_one_line_naming_the_argument():
    pytest.importorskip("torch")

    def band(b, h, q, kv):
        return (q - kv).abs() <= 1

    cases = [
        (lambda: from_mask_mod(3, 10), TypeError, "mask_mod"),
        (lambda: from_mask_mod(None, 10), TypeError, "mask_mod"),
        (lambda: from_mask_mod(band, 10, layers=[band]), ValueError, "mask_mod"),
        (lambda: from_mask_mod(None, 10, layers=[band, "x"]), TypeError, "layers"),
        (lambda: from_mask_mod(None, 10, layers=[]), ValueError, "layers"),
        (lambda: from_mask_mod(band, 0), ValueError, "n"),
        (lambda: from_mask_mod(band, 10, heads=0), ValueError, "heads"),
        (lambda: from_mask_mod(band, 10, block=11), ValueError, "block"),
        (lambda: from_mask_mod(band, 10, causal=True), ValueError, "mask_mod"),
        (lambda: from_mask_mod(lambda b, h, q, kv: q - kv, 10), ValueError, "mask_mod"),
        (lambda: from_mask_mod(lambda b, h, q, kv: bool(q > kv), 10), ValueError, "mask_mod"),
        (lambda: from_mask_mod(band, 10**5, max_memory=2**20), MemoryError, "max_memory"),
        (lambda: from_mask_mod(lambda b, h, q, kv: q >= 0, 3000, max_memory=2**26), MemoryError, "max_memory"),
        (lambda: to_mask_mod("swa", 1), TypeError, "pattern"),
        (lambda: to_mask_mod(build("swa", False), 1, lookup="yes"), ValueError, "lookup"),
        (lambda: to_mask_mod(registry.make_pattern("full", 2**15, 1), 1, max_memory=2**30), MemoryError, "max_memory"),
    ]
    for call, error, name in cases:
        with pytest.raises(error) as info:
            call()
        text = str(info.value)
        assert text.startswith(f"{name}:") and "\n" not in text, text
    stack = from_mask_mod(None, 10, layers=[band, band])
    with pytest.raises(ValueError, match=r"^layer:"):
        to_mask_mod(stack, 3)


def test_csr_pattern_checks_causality_and_adds_self():
    import scipy.sparse as sp

    mat = sp.csr_array(np.array([[0, 1], [1, 0]], dtype=bool))
    np.testing.assert_array_equal(dense(CSRPattern(2, [mat]).adjacency(1)), np.ones((2, 2), dtype=bool))
    with pytest.raises(ValueError, match=r"^layers: a causal pattern cannot attend to a key after its query"):
        CSRPattern(2, [mat], causal=True)


# --------------------------------------------------------------------------------------------- content: oracles


def oracle_topk(q, k, kk, causal):
    q3, k3 = (x[None] if x.ndim == 2 else x for x in (q, k))
    n = q3.shape[1]
    a = np.zeros((n, n), dtype=bool)
    for h in range(q3.shape[0]):
        for i in range(n):
            keys = list(range(i + 1)) if causal else list(range(n))
            scores = [float(q3[h, i] @ k3[h, j]) for j in keys]
            threshold = sorted(scores, reverse=True)[min(kk, len(keys)) - 1]
            for j, s in zip(keys, scores, strict=True):
                if s >= threshold:
                    a[i, j] = True
    return a


def oracle_moba(q, k, block, top, causal):
    q3, k3 = (x[None] if x.ndim == 2 else x for x in (q, k))
    n = q3.shape[1]
    nb = n // block
    a = np.zeros((n, n), dtype=bool)
    for h in range(q3.shape[0]):
        means = [k3[h, b * block : (b + 1) * block].mean(axis=0) for b in range(nb)]
        for i in range(n):
            own = i // block
            others = [b for b in range(nb) if b != own and (not causal or b < own)]
            others.sort(key=lambda b, i=i, h=h: -float(q3[h, i] @ means[b]))
            for b in [own, *others[: top - 1]]:
                for j in range(b * block, (b + 1) * block):
                    if not causal or j <= i:
                        a[i, j] = True
    return a


def _buckets(x, rot):
    return [int(np.argmax(np.concatenate([p, -p]))) for p in x @ rot]


def oracle_lsh(q, k, rotations, chunk, causal, wrap):
    """The joint sort: 2n items (query i, key j) by (bucket, position, query first), chunks of 2 chunk items; a query
    item meets the key items of its own chunk and the previous one."""
    q3 = q[None] if q.ndim == 2 else q
    k3 = q3 if k is None else (k[None] if k.ndim == 2 else k)
    n = q3.shape[1]
    size = 2 * chunk
    chunks = -(-2 * n // size)
    a = np.zeros((n, n), dtype=bool)
    for rot in rotations:
        for h in range(q3.shape[0]):
            bq, bk = _buckets(q3[h], rot), _buckets(k3[h], rot)
            items = sorted([(bq[t], t, 0) for t in range(n)] + [(bk[t], t, 1) for t in range(n)])
            slot = {(t, kind): s for s, (_, t, kind) in enumerate(items)}
            for i in range(n):
                for j in range(n):
                    ci, cj = slot[(i, 0)] // size, slot[(j, 1)] // size
                    near = cj == ci or cj == ci - 1 or (wrap and chunks > 1 and ci == 0 and cj == chunks - 1)
                    if near and (not causal or j <= i):
                        a[i, j] = True
    return a


def oracle_reformer_eq5(q, rotations, chunk, causal):
    """Reformer, shared QK, Eq. 5 as written: n tokens sorted by (bucket, position), chunks of ``chunk`` tokens,
    P_i = {j : floor(s_i/c) - 1 <= floor(s_j/c) <= floor(s_i/c)}, union over rounds (Eq. 6)."""
    n = q.shape[0]
    a = np.zeros((n, n), dtype=bool)
    for rot in rotations:
        b = _buckets(q, rot)
        s = {t: slot for slot, t in enumerate(sorted(range(n), key=lambda t: (b[t], t)))}
        for i in range(n):
            for j in range(n):
                if s[i] // chunk - 1 <= s[j] // chunk <= s[i] // chunk and (not causal or j <= i):
                    a[i, j] = True
    return a


SHAPES = [(16, 3, None), (24, 4, 2), (32, 8, None), (40, 2, 3)]  # (n, d, heads)
CASES = [(n, d, heads, seed) for seed, (n, d, heads) in enumerate(SHAPES)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("n", "d", "heads", "seed"), CASES)
def test_topk_against_oracle(n, d, heads, seed, causal):
    q, k = random_qk(n, d, seed, heads)
    for kk in (1, 3, n):
        np.testing.assert_array_equal(dense(topk_routing(q, k, kk, causal)), oracle_topk(q, k, kk, causal))


def test_topk_keeps_ties_at_the_threshold():
    q = np.ones((4, 1))
    k = np.array([[1.0], [2.0], [2.0], [0.0]])
    got = dense(topk_routing(q, k, 1))
    np.testing.assert_array_equal(got, np.tile([False, True, True, False], (4, 1)))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("n", "d", "heads", "seed"), CASES)
def test_moba_against_oracle(n, d, heads, seed, causal):
    q, k = random_qk(n, d, seed, heads)
    for block in (b for b in (1, 4, 8, n) if n % b == 0):
        for top in sorted({1, min(2, n // block), n // block}):
            got = dense(moba_routing(q, k, block, top, causal))
            np.testing.assert_array_equal(got, oracle_moba(q, k, block, top, causal), err_msg=f"{block} {top}")


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("n", "d", "heads", "seed"), CASES)
def test_lsh_against_oracle(n, d, heads, seed, causal):
    q, k = random_qk(n, d, seed, heads)
    rng = np.random.default_rng(seed + 100)
    for buckets, rounds, chunk in ((2, 1, 4), (4, 2, 5), (8, 3, n)):
        rotations = rng.standard_normal((rounds, d, buckets // 2))
        for wrap in (False, True):
            for keys in (k, None):  # distinct keys, and shared QK (k = q)
                got = lsh_routing(q, keys, buckets, rounds, chunk, causal, rotations=rotations, wrap=wrap)
                want = oracle_lsh(q, keys, rotations, chunk, causal, wrap)
                np.testing.assert_array_equal(dense(got), want, err_msg=f"{buckets} {rounds} {chunk} {wrap}")


@pytest.mark.parametrize("causal", [False, True])
def test_lsh_shared_qk_is_reformer_eq5(causal):
    for seed, (n, d, buckets, rounds, chunk) in enumerate([(16, 3, 2, 1, 4), (30, 4, 4, 2, 7), (32, 8, 8, 3, 32)]):
        q, _ = random_qk(n, d, seed)
        rotations = np.random.default_rng(seed).standard_normal((rounds, d, buckets // 2))
        want = oracle_reformer_eq5(q, rotations, chunk, causal)
        for keys in (None, q, 2.5 * q):  # shared QK; the hash is scale-free
            got = lsh_routing(q, keys, buckets, rounds, chunk, causal, rotations=rotations)
            np.testing.assert_array_equal(dense(got), want)


def test_lsh_default_rotations_are_seeded():
    q, _ = random_qk(32, 4, 1)
    a = lsh_routing(q, None, 4, 2, 8, seed=5)
    assert (lsh_routing(q, None, 4, 2, 8, seed=5) != a).nnz == 0
    assert (lsh_routing(q, None, 4, 2, 8, seed=6) != a).nnz > 0


@pytest.mark.parametrize("causal", [False, True])
def test_content_patterns_add_self_are_causal_and_run_coverage(causal):
    n, d, layers = 64, 8, 3
    pairs = [random_qk(n, d, seed, 2) for seed in range(layers)]
    qs, ks = [p[0] for p in pairs], [p[1] for p in pairs]
    patterns = [
        topk_pattern(qs, ks, 4, causal),
        moba_pattern(qs, ks, 8, 2, causal),
        lsh_pattern(qs, ks, 4, 2, 8, causal),
        random_content_pattern("moba", n, layers, d=d, seed=0, causal=causal, block=8, top_blocks=2),
    ]
    routing = [
        lambda a, b, _: topk_routing(a, b, 4, causal),
        lambda a, b, _: moba_routing(a, b, 8, 2, causal),
        lambda a, b, layer: lsh_routing(a, b, 4, 2, 8, causal, seed=layer),
        lambda a, b, _: moba_routing(a, b, 8, 2, causal),
    ]
    for pattern, route in zip(patterns, routing, strict=True):
        assert pattern.max_layers == layers and pattern.causal == causal
        for layer in range(1, layers + 1):
            q, k = (qs[layer - 1], ks[layer - 1]) if pattern is not patterns[3] else random_qk(n, d, layer - 1)
            want = dense(route(q, k, layer - 1)) | np.eye(n, dtype=bool)
            got = pattern.adjacency(layer)
            np.testing.assert_array_equal(dense(got), want)
            rows = np.repeat(np.arange(n), np.diff(got.indptr))
            if causal:  # the explicit edge list: no key after its query
                assert np.all(got.indices <= rows)
        result = coverage_by_layer(pattern, layers)
        assert len(result.layers) == layers and 0 < result.layers[-1].mean <= 1
    single = topk_pattern(qs[0], ks[0], 4, causal)
    assert single.max_layers is None  # one q, k: the same routing at every depth
    assert (single.adjacency(7) != patterns[0].adjacency(1)).nnz == 0


def test_content_union_over_heads():
    q, k = random_qk(24, 4, 3, heads=3)
    for route in (
        lambda a, b: topk_routing(a, b, 3),
        lambda a, b: moba_routing(a, b, 4, 2),
        lambda a, b: lsh_routing(a, b, 4, 1, 6, seed=2),
    ):
        union = np.zeros((24, 24), dtype=bool)
        for h in range(3):
            union |= dense(route(q[h], k[h]))
        np.testing.assert_array_equal(dense(route(q, k)), union)


def test_content_bad_input_is_one_line_naming_the_argument():
    q, k = random_qk(16, 4, 0)
    nan = q.copy()
    nan[0, 0] = np.nan
    cases = [
        (lambda: topk_routing(q, k, 0), "k_keys"),
        (lambda: topk_routing(q, k, 17), "k_keys"),
        (lambda: topk_routing(q, k[:, :3], 2), "k"),
        (lambda: topk_routing(q, k[:15], 2), "k"),
        (lambda: topk_routing(q[0], k, 2), "q"),
        (lambda: topk_routing(nan, k, 2), "q"),
        (lambda: topk_routing("abc", k, 2), "q"),
        (lambda: moba_routing(q, k, 5, 1), "block"),
        (lambda: moba_routing(q, k, 32, 1), "block"),
        (lambda: moba_routing(q, k, 0, 1), "block"),
        (lambda: moba_routing(q, k, 4, 5), "top_blocks"),
        (lambda: moba_routing(q, k, 4, 0), "top_blocks"),
        (lambda: lsh_routing(q, k, 3), "buckets"),
        (lambda: lsh_routing(q, k, 4, 0), "rounds"),
        (lambda: lsh_routing(q, k, 4, 1, 17), "chunk"),
        (lambda: lsh_routing(q, k, 4, 1, 4, seed=-1), "seed"),
        (lambda: lsh_routing(q, k, 4, 2, 4, rotations=np.zeros((1, 4, 2))), "rotations"),
        (lambda: topk_pattern([q, q], [k], 2), "k"),
        (lambda: topk_pattern([], [], 2), "q"),
        (lambda: topk_pattern(q, [k], 2), "k"),
        (lambda: random_qk(0, 4), "n"),
        (lambda: random_qk(4, 0), "d"),
        (lambda: random_content_pattern("bogus", 16, 2), "kind"),
        (lambda: random_content_pattern("moba", 16, 0, block=4, top_blocks=1), "layers"),
        (lambda: random_content_pattern("moba", 16, 2, chunk=4), "params"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError) as info:
            call()
        text = str(info.value)
        assert text.startswith(f"{name}:") and "\n" not in text, text


# ------------------------------------------------------------------------- content: agreement with gpu.approx


def test_routing_agrees_with_gpu_approx():
    """gpu.approx's top-k and MoBA (through approximate(), causal and not) and bidirectional Reformer equal exact
    softmax over the routed keys; gpu.approx's Reformer adds each query's own key and wraps the look-back (chunk 0
    sees the last chunk): lsh_routing with wrap=True, chunk = its items per chunk / 2, the same rotations, plus the
    diagonal. Its causal Reformer keeps the last c past keys of the query's bucket instead of chunks (so that the
    routing does not depend on future tokens); lsh_routing follows the paper (chunks, then the causal mask)."""
    torch = pytest.importorskip("torch")
    approx = pytest.importorskip("gpu.approx")
    from gpu.attention.oracle import dense_oracle

    n, d, m = 64, 8, 16
    q, k = random_qk(n, d, 7)
    v = np.random.default_rng(8).standard_normal((n, d))
    tq, tk, tv = (torch.as_tensor(x)[None, None] for x in (q, k, v))
    eye = np.eye(n, dtype=bool)
    for causal in (False, True):

        def check(name, routing, causal=causal, **options):
            out = approx.approximate(name, tq, tk, tv, m, seed=3, causal=causal, **options)
            mask = torch.as_tensor(routing)
            want = dense_oracle(tq, tk, tv, mask)
            torch.testing.assert_close(out, want, rtol=1e-10, atol=1e-10, msg=f"{name} causal={causal}")

        check("top-k", dense(topk_routing(q, k, m, causal)))
        check("moba", dense(moba_routing(q, k, m // 4, 4, causal)))
        for rounds in (1, 2) if not causal else ():  # gpu.approx's causal Reformer drops chunks (own bucket only)
            items = max(2, m // rounds)
            buckets = max(2, 2 * (2 * n // items // 2))
            gen = torch.Generator().manual_seed(3)
            rotations = np.stack(
                [torch.randn(d, buckets // 2, generator=gen, dtype=torch.float64).numpy() for _ in range(rounds)]
            )
            routing = lsh_routing(q, k, buckets, rounds, items // 2, causal, rotations=rotations, wrap=True)
            check("reformer", dense(routing) | eye, rounds=rounds)
