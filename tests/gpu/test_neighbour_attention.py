"""gpu.attention.neighbour: explicit key lists against float64 dense attention with the pattern's own mask."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gpu.attention.neighbour import (  # noqa: E402
    PatternAttention,
    keys_table,
    neighbour_attention,
    pattern_keys,
    resolved_method,
    variant_window,
)
from receptive import make_pattern  # noqa: E402
from receptive.patterns.causal_variants import make_variant, variant_names  # noqa: E402


def dense_oracle(q, k, v, mask):
    """float64 ``softmax(q k^T / sqrt(d) masked) v``; rows without a key give 0. ``mask``: ``(n, n)`` or
    ``(heads, n, n)`` bool."""
    q, k, v = (t.double() for t in (q, k, v))
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    scores = q @ k.transpose(-1, -2) / np.sqrt(q.shape[-1])
    mask = torch.as_tensor(mask)
    scores = scores.masked_fill(~mask, float("-inf"))
    probs = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return probs @ v


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("name", variant_names())
def test_every_variant_matches_the_dense_oracle(name, causal):
    rng = np.random.default_rng(abs(hash((name, causal))) % 2**32)
    for trial in range(4):
        n = int(rng.choice([16, 27, 32, 64]))
        w = int(rng.integers(2, 9))
        if name.startswith("sa-ms") and n % w:
            w = 4 if n % 4 == 0 else 3
        pattern = make_variant(name, n, w, causal, seed=trial)
        mask = pattern.adjacency(1).toarray()
        keys = pattern_keys(pattern, 1)
        valid = keys >= 0
        assert torch.equal(valid.sum(1), torch.as_tensor(mask.sum(1)))  # every pair listed once
        rows = torch.arange(n)[:, None].expand_as(keys)
        assert mask[rows[valid].numpy(), keys[valid].numpy()].all()
        if causal:
            assert (keys[valid] <= rows[valid]).all()  # no key after its query
        heads, kv_heads = (4, 2) if trial % 2 else (2, 2)
        g = torch.Generator().manual_seed(trial)
        q = torch.randn(2, heads, n, 8, generator=g)
        k, v = (torch.randn(2, kv_heads, n, 8, generator=g) for _ in range(2))
        expected = dense_oracle(q, k, v, mask)
        for method in ("gather", "dense", "auto"):
            got = neighbour_attention(q, k, v, keys, method=method).double()
            torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("kind", ["sa", "sa+swa", "swa", "full"])
def test_other_patterns_and_per_head_lists(kind, causal):
    n, w = 40, 6
    pattern = make_pattern(kind, n, w, causal=causal, seed=3)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 2, n, 4, generator=g, dtype=torch.float64) for _ in range(3))
    torch.testing.assert_close(neighbour_attention(q, k, v, pattern_keys(pattern, 2)),
                               dense_oracle(q, k, v, pattern.adjacency(2).toarray()))  # fmt: skip
    # per-head lists: head 0 on layer 1, head 1 on layer 2 (padded to one width)
    a, b = pattern_keys(pattern, 1), pattern_keys(pattern, 2)
    width = max(a.shape[1], b.shape[1])
    both = torch.stack([torch.nn.functional.pad(t, (0, width - t.shape[1]), value=-1) for t in (a, b)])
    mask = np.stack([pattern.adjacency(1).toarray(), pattern.adjacency(2).toarray()])
    for method in ("gather", "dense"):
        torch.testing.assert_close(neighbour_attention(q, k, v, both, method=method), dense_oracle(q, k, v, mask))


def test_random_key_lists_with_padding_gqa_and_gradients():
    rng = np.random.default_rng(7)
    for trial in range(20):
        n, big = int(rng.integers(1, 20)), int(rng.integers(1, 7))
        heads, kv = [(1, 1), (2, 1), (4, 2), (3, 3)][trial % 4]
        per_head = trial % 3 == 0
        shape = (heads, n, big) if per_head else (n, big)
        keys = rng.integers(-1, n, size=shape)
        keys = np.sort(keys, axis=-1)  # duplicates are allowed and count twice: make the oracle count them too
        mask = np.zeros((*shape[:-1], n), dtype=np.int64)
        for idx in np.ndindex(*shape[:-1]):
            for j in keys[idx]:
                if j >= 0:
                    mask[(*idx, j)] += 1
        g = torch.Generator().manual_seed(trial)
        q = torch.randn(2, heads, n, 4, generator=g, dtype=torch.float64, requires_grad=True)
        k = torch.randn(2, kv, n, 4, generator=g, dtype=torch.float64, requires_grad=True)
        v = torch.randn(2, kv, n, 4, generator=g, dtype=torch.float64, requires_grad=True)
        method = ("gather", "dense")[trial % 2]
        out = neighbour_attention(q, k, v, torch.as_tensor(keys), method=method)
        # oracle with multiplicities: log(count) added to the scores
        groups = heads // kv
        kk, vv = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
        scores = q @ kk.transpose(-1, -2) / 2.0 + torch.as_tensor(np.log(np.maximum(mask, 1e-300)))
        expected = torch.softmax(scores, -1).nan_to_num(0.0) @ vv
        expected = torch.where(torch.as_tensor(mask.sum(-1) > 0)[..., None], expected, 0.0)
        torch.testing.assert_close(out, expected)
        out.square().sum().backward()
        for t in (q, k, v):
            assert torch.isfinite(t.grad).all()


@pytest.mark.parametrize("method", ["gather", "dense"])
def test_all_padding_row_is_zero_without_nan(method):
    q, k, v = (torch.randn(1, 2, 3, 4, requires_grad=True) for _ in range(3))
    keys = torch.tensor([[-1, -1], [0, 1], [2, -1]])
    out = neighbour_attention(q, k, v, keys, method=method)
    assert torch.equal(out[:, :, 0], torch.zeros(1, 2, 4))
    out.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))
    assert torch.equal(q.grad[:, :, 0], torch.zeros(1, 2, 4))


def test_keys_table_pads_csr_rows():
    table = keys_table(np.array([0, 2, 2, 5]), np.array([0, 1, 0, 1, 2]), 3)
    assert table.tolist() == [[0, 1, -1], [-1, -1, -1], [0, 1, 2]]


def test_pattern_attention_eval_is_the_seeded_pattern_and_training_is_fresh():
    torch.manual_seed(0)
    n = 32
    for name in ("sa-ms+swa", "kleinberg-eq", "dilated"):
        module = PatternAttention(16, 2, 4, variant=name, causal=True, seed=5, layer=2)
        x = torch.randn(2, n, 16)
        module.eval()
        module(x)
        assert torch.equal(module.last_keys, pattern_keys(make_variant(name, n, 4, True, seed=5), 2))
        module.train()
        module(x)
        first = module.last_keys
        module(x)
        assert torch.equal(first, module.last_keys) == name.startswith("dilated")


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda q: neighbour_attention(q, q, q, torch.zeros(4, 1, dtype=torch.int64)), "keys: expected shape"),
        (lambda q: neighbour_attention(q, q, q, torch.full((5, 1), 5)), "keys: expected key indices"),
        (lambda q: neighbour_attention(q, q, q, torch.full((5, 1), -2)), "keys: expected key indices"),
        (lambda q: neighbour_attention(q, q, q, torch.zeros(5, 1, dtype=torch.int64), scale=0), "scale"),
        (lambda q: neighbour_attention(q, q[:, :1, :4], q, torch.zeros(5, 1, dtype=torch.int64)), "k, v"),
        (lambda q: neighbour_attention(q, q, q, torch.zeros(5, 1, dtype=torch.int64), method="sparse"), "method"),
        (lambda q: pattern_keys(make_variant("dilated", 8, 2), 0), "layer"),
        (lambda q: PatternAttention(8, 2, 4, variant="sa"), "variant"),
        (lambda q: resolved_method(8, 2, "sparse"), "^method: expected one of"),
        (lambda q: resolved_method(-1, 2), "^n:"),
        (lambda q: variant_window(0, 4), "^n:"),
        (lambda q: variant_window(8, 0), "^w:"),
    ],
)
def test_bad_arguments_are_one_line_errors(call, needle):
    q = torch.randn(1, 2, 5, 4)
    with pytest.raises(ValueError, match=needle) as info:
        call(q)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda q: neighbour_attention(q, q, q, [[0]]), "keys: expected an int64 tensor"),
        (lambda q: neighbour_attention(q, q, q, torch.zeros(5, 1, dtype=torch.int32)), "keys: expected dtype"),
        (lambda q: pattern_keys("sa", 1), "pattern"),
        (lambda q: PatternAttention(8, 2, 4, variant=3), "^variant: expected one of"),
        (lambda q: resolved_method(8, 2, method=3), "^method:"),
        (lambda q: resolved_method(8, 2.0, method="gather"), "^width:"),
        (lambda q: variant_window("4", 8), "^n:"),
        (lambda q: variant_window(8, "4"), "^w:"),
        (lambda q: PatternAttention(8, 2, 4, variant="sa-ms", rope="yes"), "rope"),
    ],
)
def test_wrong_types_are_one_line_type_errors(call, needle):
    q = torch.randn(1, 2, 5, 4)
    with pytest.raises(TypeError, match=needle) as info:
        call(q)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("shared", [True, False])
def test_gather_in_blocks_of_queries_equals_one_gather(shared):
    """``chunk`` queries at a time (GQA, padding, non-contiguous k and v as the modules make them): the same
    outputs and gradients as gathering every query at once, for blocks that do and do not divide n."""
    g = torch.Generator().manual_seed(11)
    n, heads, kv_heads, width = 29, 4, 2, 6
    q = torch.randn(2, heads, n, 8, generator=g, dtype=torch.float64, requires_grad=True)
    kv = torch.randn(2, n, 2, kv_heads, 8, generator=g, dtype=torch.float64, requires_grad=True)
    k, v = kv.permute(2, 0, 3, 1, 4)  # non-contiguous, as AttentionProjections.qkv returns them
    shape = (n, width) if shared else (heads, n, width)
    keys = torch.randint(-1, n, shape, generator=g)
    whole = neighbour_attention(q, k, v, keys, method="gather", chunk=n)
    (grad_q, grad_kv) = torch.autograd.grad(whole.square().sum(), (q, kv))
    for chunk in (1, 3, 7, 28):
        got = neighbour_attention(q, k, v, keys, method="gather", chunk=chunk)
        torch.testing.assert_close(got, whole, rtol=1e-12, atol=1e-12)
        for a, b in zip(torch.autograd.grad(got.square().sum(), (q, kv)), (grad_q, grad_kv), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match=r"^chunk:"):
        neighbour_attention(q, k, v, keys, chunk=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("method", ["gather", "dense"])
@pytest.mark.parametrize("per_head", [False, True])
def test_overflowing_half_scores_are_not_nan(dtype, method, per_head):
    """q = k = 300 with d = 8: q.k = 720000 overflows float16; scores and softmax run in float32, the output is v."""
    n = 12
    q = torch.full((1, 2, n, 8), 300.0, dtype=dtype)
    keys = torch.tensor([[j if j <= i else -1 for j in range(n)] for i in range(n)])
    if per_head:
        keys = keys.expand(2, n, n).clone()
    out = neighbour_attention(q, q, q, keys, method=method)
    assert out.dtype == dtype
    torch.testing.assert_close(out, q)
