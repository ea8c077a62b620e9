"""gpu.attention.neighbour: attention over explicit key lists, every path (the numba kernel, the torch gather, the
dense masked form) against the float64 dense oracle of gpu.attention.oracle, with the pattern's own mask or the
lists' multiplicities."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import gpu.attention.neighbour as neighbour  # noqa: E402
from gpu.attention.neighbour import (  # noqa: E402
    PatternAttention,
    dedupe,
    keys_table,
    neighbour_attention,
    pattern_keys,
    resolved_method,
    variant_window,
)
from gpu.attention.oracle import dense_oracle  # noqa: E402
from receptive import make_pattern  # noqa: E402
from receptive.patterns.causal_variants import make_variant, variant_names  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PATHS = ("kernel", "gather", "dense")
#: the shapes a key table may have: (batch or 1, heads or 1) ahead of (m, K), or fewer leading axes
FORMS = ("shared", "per-head", "one-head", "per-row", "per-row-and-head", "one-row-per-head")


def table_shape(form, batch, heads, m, width):
    return {
        "shared": (m, width),
        "per-head": (heads, m, width),
        "one-head": (1, m, width),
        "per-row": (batch, 1, m, width),
        "per-row-and-head": (batch, heads, m, width),
        "one-row-per-head": (1, heads, m, width),
    }[form]


def list_oracle(q, k, v, keys, bias=None, scale=None):
    """float64 attention over the lists: the dense oracle with the listed pairs as the mask and ``log`` of each
    pair's multiplicity (times ``exp(bias)`` of its slots) added to the scores; a row without a key gives 0."""
    batch, heads, m, _ = q.shape
    n = k.shape[2]

    def full(t):  # (batch, heads, m, K) from any accepted form
        return t.reshape((1,) * (4 - t.dim()) + tuple(t.shape)).expand(batch, heads, m, -1)

    keys = full(keys)
    weight = torch.ones(keys.shape, dtype=torch.float64) if bias is None else torch.exp(full(bias).double())
    count = torch.zeros(batch, heads, m, n + 1, dtype=torch.float64)
    count.scatter_add_(-1, torch.where(keys >= 0, keys, n), weight)  # padding lands in the dropped column n
    count = count[..., :n]
    return dense_oracle(q, k, v, count > 0, scale=scale, bias=torch.log(count).clamp(min=-1e300))


def random_case(g, batch, kv_heads, groups, m, n, width, form, dtype, padding=0.3, d=8, d_v=5):
    heads = kv_heads * groups
    q = torch.randn(batch, heads, m, d, generator=g, dtype=dtype)
    k = torch.randn(batch, kv_heads, n, d, generator=g, dtype=dtype)
    v = torch.randn(batch, kv_heads, n, d_v, generator=g, dtype=dtype)
    shape = table_shape(form, batch, heads, m, width)
    keys = torch.randint(0, n, shape, generator=g).masked_fill(torch.rand(shape, generator=g) < padding, -1)
    return q, k, v, keys


@given(
    seed=st.integers(0, 10**6),
    batch=st.integers(1, 2),
    kv_heads=st.integers(1, 2),
    groups=st.integers(1, 3),
    n=st.integers(1, 30),
    width=st.integers(1, 9),
    form=st.sampled_from(FORMS),
    with_bias=st.booleans(),
    scale=st.sampled_from([None, 0.3]),
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_every_path_equals_the_float64_oracle(seed, batch, kv_heads, groups, n, width, form, with_bias, scale, dtype):
    """Random lists (padding, repeats counted twice) shared, per head or per batch row, GQA, fewer queries than
    keys, a score bias and a scale: the kernel, the gather and the dense path all give the oracle's values."""
    g = torch.Generator().manual_seed(seed)
    m = 1 + seed % n
    q, k, v, keys = random_case(g, batch, kv_heads, groups, m, n, width, form, dtype)
    bias = torch.randn(keys.shape, generator=g, dtype=dtype) if with_bias else None
    expected = list_oracle(q, k, v, keys, bias, scale)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for method in (*PATHS, "auto"):
        out = neighbour_attention(q, k, v, keys, scale=scale, bias=bias, method=method)
        assert out.dtype == dtype and out.shape == (batch, kv_heads * groups, m, 5) and not out.isnan().any()
        torch.testing.assert_close(out.double(), expected, atol=tol, rtol=tol, msg=f"{method} {form}")


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
        for method in (*PATHS, "auto"):
            got = neighbour_attention(q, k, v, keys, method=method).double()
            torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("kind", ["sa", "sa+swa", "swa", "full"])
def test_other_patterns_and_per_head_lists(kind, causal):
    n, w = 40, 6
    pattern = make_pattern(kind, n, w, causal=causal, seed=3)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 2, n, 4, generator=g, dtype=torch.float64) for _ in range(3))
    torch.testing.assert_close(
        neighbour_attention(q, k, v, pattern_keys(pattern, 2)), dense_oracle(q, k, v, pattern.adjacency(2).toarray())
    )
    # per-head lists: head 0 on layer 1, head 1 on layer 2 (padded to one width)
    a, b = pattern_keys(pattern, 1), pattern_keys(pattern, 2)
    width = max(a.shape[1], b.shape[1])
    both = torch.stack([torch.nn.functional.pad(t, (0, width - t.shape[1]), value=-1) for t in (a, b)])
    mask = np.stack([pattern.adjacency(1).toarray(), pattern.adjacency(2).toarray()])
    for method in PATHS:
        torch.testing.assert_close(neighbour_attention(q, k, v, both, method=method), dense_oracle(q, k, v, mask))


@pytest.mark.parametrize("method", ["gather", "dense"])
def test_gradients_equal_the_oracles(method):
    """The torch paths under autograd: outputs and the gradients of q, k, v and the bias equal float64 autograd
    through the oracle (padding, repeats, GQA, per-head lists, fewer queries than keys)."""
    rng = np.random.default_rng(7)
    for trial in range(12):
        n, width = int(rng.integers(1, 20)), int(rng.integers(1, 7))
        m = int(rng.integers(1, n + 1))
        kv_heads, groups = [(1, 1), (1, 2), (2, 2), (3, 1)][trial % 4]
        form = FORMS[trial % len(FORMS)]
        g = torch.Generator().manual_seed(trial)
        q, k, v, keys = random_case(g, 2, kv_heads, groups, m, n, width, form, torch.float64)
        bias = torch.randn(keys.shape, generator=g, dtype=torch.float64) if trial % 2 else None
        leaves = [t.requires_grad_() for t in (q, k, v) + (() if bias is None else (bias,))]
        out = neighbour_attention(q, k, v, keys, bias=bias, method=method)
        expected = list_oracle(q, k, v, keys, bias)
        torch.testing.assert_close(out, expected)
        upstream = torch.randn(out.shape, generator=g, dtype=torch.float64)
        ours = torch.autograd.grad((out * upstream).sum(), leaves)
        theirs = torch.autograd.grad((expected * upstream).sum(), leaves)
        for a, b in zip(ours, theirs, strict=True):
            torch.testing.assert_close(a, b)


def test_auto_takes_the_kernel_for_inference_on_the_cpu_and_the_torch_form_under_autograd(monkeypatch):
    """The numba kernel is the CPU inference path (float32, float64, no gradient to record); with gradients, on
    another dtype, ``auto`` takes a torch path, and both give the same values."""
    g = torch.Generator().manual_seed(3)
    q, k, v, keys = random_case(g, 2, 2, 2, 6, 10, 4, "per-row-and-head", torch.float64)
    calls = []
    real = neighbour._kernel
    monkeypatch.setattr(neighbour, "_kernel", lambda *a: calls.append(1) or real(*a))
    fast = neighbour_attention(q, k, v, keys)
    assert calls == [1] and not fast.requires_grad
    neighbour_attention(q.float(), k.float(), v.float(), keys)
    with torch.no_grad():
        neighbour_attention(q.requires_grad_(), k, v, keys)
    assert len(calls) == 3
    slow = neighbour_attention(q, k, v, keys)  # q records a gradient: the torch form
    half = neighbour_attention(q.detach().bfloat16(), k.bfloat16(), v.bfloat16(), keys)
    assert len(calls) == 3 and slow.requires_grad and half.dtype == torch.bfloat16
    torch.testing.assert_close(slow.detach(), fast)
    torch.testing.assert_close(half.double(), fast, atol=3e-2, rtol=3e-2)
    slow.sum().backward()
    assert q.grad is not None and not q.grad.isnan().any()
    assert resolved_method(10, 4, kernel=True) == "kernel" and resolved_method(10, 4) == "dense"


def test_random_key_lists_with_padding_gqa_and_gradients():
    """Repeats count twice (the oracle adds ``log`` of each pair's multiplicity); gradients stay finite."""
    rng = np.random.default_rng(7)
    for trial in range(20):
        n, big = int(rng.integers(1, 20)), int(rng.integers(1, 7))
        heads, kv = [(1, 1), (2, 1), (4, 2), (3, 3)][trial % 4]
        per_head = trial % 3 == 0
        shape = (heads, n, big) if per_head else (n, big)
        keys = torch.as_tensor(np.sort(rng.integers(-1, n, size=shape), axis=-1))
        g = torch.Generator().manual_seed(trial)
        q = torch.randn(2, heads, n, 4, generator=g, dtype=torch.float64, requires_grad=True)
        k = torch.randn(2, kv, n, 4, generator=g, dtype=torch.float64, requires_grad=True)
        v = torch.randn(2, kv, n, 4, generator=g, dtype=torch.float64, requires_grad=True)
        method = ("gather", "dense")[trial % 2]
        out = neighbour_attention(q, k, v, keys, method=method)
        torch.testing.assert_close(out, list_oracle(q, k, v, keys))
        with torch.no_grad():
            torch.testing.assert_close(neighbour_attention(q, k, v, keys, method="kernel"), out.detach())
        out.square().sum().backward()
        for t in (q, k, v):
            assert torch.isfinite(t.grad).all()


def test_dedupe_switches_repeats_off():
    idx = torch.tensor([[[3, 1, 3, 0, 1]], [[2, 2, 2, 2, 2]]])
    valid = torch.tensor([[[True, True, True, True, False]], [[False, True, True, True, True]]])
    assert dedupe(idx, valid).tolist() == [[[True, True, False, True, False]], [[False, True, False, False, False]]]


@pytest.mark.parametrize("method", PATHS)
def test_all_padding_row_is_zero_without_nan(method):
    q, k, v = (torch.randn(1, 2, 3, 4, requires_grad=method != "kernel") for _ in range(3))
    keys = torch.tensor([[-1, -1], [0, 1], [2, -1]])
    out = neighbour_attention(q, k, v, keys, method=method)
    assert torch.equal(out[:, :, 0], torch.zeros(1, 2, 4))
    assert not out.isnan().any()
    if method == "kernel":
        empty = neighbour_attention(q, k, v, torch.full((3, 2), -1), bias=torch.zeros(3, 2), method=method)
        assert torch.equal(empty, torch.zeros_like(empty))
        return
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


def _zeros(*shape):
    return torch.zeros(*shape, dtype=torch.int64)


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda q: neighbour_attention(q, q, q, _zeros(4, 1)), "keys: expected shape"),
        (lambda q: neighbour_attention(q, q, q, _zeros(3, 1, 5, 1)), "keys: expected shape"),
        (lambda q: neighbour_attention(q, q, q, _zeros(3, 5, 1)), "keys: expected shape"),
        (lambda q: neighbour_attention(q, q, q, torch.full((5, 1), 5)), "keys: expected key indices"),
        (lambda q: neighbour_attention(q, q, q, torch.full((5, 1), -2)), "keys: expected key indices"),
        (lambda q: neighbour_attention(q, q, q, torch.full((5, 1), 5), validate=False, method="kernel"), "keys: exp"),
        (lambda q: neighbour_attention(q, q, q, _zeros(5, 1), scale=0), "scale"),
        (lambda q: neighbour_attention(q, q[:, :1, :4], q, _zeros(5, 1)), "k, v"),
        (lambda q: neighbour_attention(q, q[..., :3], q[..., :3], _zeros(5, 1)), "k, v"),
        (lambda q: neighbour_attention(q, q, q, _zeros(5, 1), method="sparse"), "method"),
        (lambda q: neighbour_attention(q, q, q, _zeros(5, 2), bias=torch.zeros(5, 1)), "bias: expected the shape"),
        (lambda q: neighbour_attention(q.requires_grad_(), q, q, _zeros(5, 1), method="kernel"), "^method: 'kernel'"),
        (lambda q: neighbour_attention(q.half(), q.half(), q.half(), _zeros(5, 1), method="kernel"), "^method:"),
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
        (lambda q: neighbour_attention(q, q, q, _zeros(5, 1), bias=_zeros(5, 1)), "^bias: expected a floating"),
        (lambda q: neighbour_attention(q, q, q, _zeros(5, 1), bias=[[0.0]]), "^bias:"),
        (lambda q: neighbour_attention(q, q, q, _zeros(5, 1), chunk=2.0), "^chunk:"),
        (lambda q: pattern_keys("sa", 1), "pattern"),
        (lambda q: PatternAttention(8, 2, 4, variant=3), "^variant: expected one of"),
        (lambda q: resolved_method(8, 2, method=3), "^method:"),
        (lambda q: resolved_method(8, 2.0, method="gather"), "^width:"),
        (lambda q: resolved_method(8, 2, kernel="yes"), "^kernel:"),
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


@pytest.mark.parametrize("form", ["shared", "per-head", "per-row"])
def test_gather_in_blocks_of_queries_equals_one_gather(form):
    """``chunk`` queries at a time (GQA, padding, a bias, non-contiguous k and v as the modules make them): the
    same outputs and gradients as gathering every query at once, for blocks that do and do not divide n."""
    g = torch.Generator().manual_seed(11)
    n, heads, kv_heads, width = 29, 4, 2, 6
    q = torch.randn(2, heads, n, 8, generator=g, dtype=torch.float64, requires_grad=True)
    kv = torch.randn(2, n, 2, kv_heads, 8, generator=g, dtype=torch.float64, requires_grad=True)
    k, v = kv.permute(2, 0, 3, 1, 4)  # non-contiguous, as AttentionProjections.qkv returns them
    keys = torch.randint(-1, n, table_shape(form, 2, heads, n, width), generator=g)
    bias = torch.randn(keys.shape, generator=g, dtype=torch.float64)
    whole = neighbour_attention(q, k, v, keys, bias=bias, method="gather", chunk=n)
    (grad_q, grad_kv) = torch.autograd.grad(whole.square().sum(), (q, kv))
    for chunk in (1, 3, 7, 28):
        got = neighbour_attention(q, k, v, keys, bias=bias, method="gather", chunk=chunk)
        torch.testing.assert_close(got, whole, rtol=1e-12, atol=1e-12)
        for a, b in zip(torch.autograd.grad(got.square().sum(), (q, kv)), (grad_q, grad_kv), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match=r"^chunk:"):
        neighbour_attention(q, k, v, keys, chunk=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("method", ["auto", "gather", "dense"])
@pytest.mark.parametrize("per_head", [False, True])
def test_overflowing_half_scores_are_finite(dtype, method, per_head):
    """q = k = 300 with d = 8: q.k = 720000 overflows float16; scores and softmax run in float32, the output is v."""
    n = 12
    q = torch.full((1, 2, n, 8), 300.0, dtype=dtype)
    keys = torch.tensor([[j if j <= i else -1 for j in range(n)] for i in range(n)])
    if per_head:
        keys = keys.expand(2, n, n).clone()
    out = neighbour_attention(q, q, q, keys, method=method)
    assert out.dtype == dtype and torch.isfinite(out).all()
    torch.testing.assert_close(out, q)


def test_float16_random_lists_are_finite_and_close_to_the_oracle():
    g = torch.Generator().manual_seed(5)
    q, k, v, keys = random_case(g, 2, 2, 2, 9, 17, 5, "per-row-and-head", torch.float16, padding=0.5)
    bias = torch.randn(keys.shape, generator=g, dtype=torch.float16)
    for method in ("auto", "gather", "dense"):
        out = neighbour_attention(q, k, v, keys, bias=bias, method=method)
        assert out.dtype == torch.float16 and torch.isfinite(out).all()
        torch.testing.assert_close(out.double(), list_oracle(q, k, v, keys, bias), atol=5e-3, rtol=5e-3)
