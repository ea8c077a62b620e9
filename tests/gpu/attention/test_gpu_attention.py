"""The torch attention backend against a float64 dense masked oracle built from receptive's pattern definitions."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gpu import full_attention, permute_sequence, sa_attention, swa_attention  # noqa: E402
from gpu.attention.functional import inverse_permutation  # noqa: E402
from gpu.attention.oracle import dense_oracle, oracle_mask  # noqa: E402
from receptive.permutations import layer_permutation  # noqa: E402
from receptive.windows import max_window  # noqa: E402


def inputs(b, h, hkv, n, d, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(b, heads, n, d, generator=g, dtype=dtype) + 0.1 for heads in (h, hkv, hkv)]


CASES = [
    (n, w, causal)
    for n in (1, 7, 37, 64)
    for causal in (False, True)
    for w in sorted({1, 2, 3, 8, max_window(n, causal, False)})
    if w <= max_window(n, causal, False)
]


@pytest.mark.parametrize(("n", "w", "causal"), CASES)
def test_swa_matches_dense_oracle(n, w, causal):
    q, k, v = inputs(2, 4, 2, n, 8)
    out = swa_attention(q, k, v, w, causal=causal)
    ref = dense_oracle(q, k, v, oracle_mask("swa", n, w, causal))
    torch.testing.assert_close(out, ref)
    assert not torch.isnan(out).any()


@pytest.mark.parametrize(("n", "w", "causal"), [(n, w, c) for n, w, c in CASES if w <= max_window(n, False, False)])
def test_sa_matches_dense_oracle(n, w, causal):
    q, k, v = inputs(2, 4, 1, n, 8, seed=1)
    perm = torch.as_tensor(layer_permutation(n, 3, 1))
    out, used = sa_attention(q, k, v, w, seed=3, causal=causal, return_perm=True)
    assert torch.equal(used, perm)
    ref = dense_oracle(q, k, v, oracle_mask("sa", n, w, causal, perm))
    torch.testing.assert_close(out, ref)


def test_sa_per_head_permutations():
    n, w = 40, 6
    q, k, v = inputs(1, 3, 3, n, 4, seed=2)
    g = torch.Generator().manual_seed(0)
    out, perm = sa_attention(q, k, v, w, causal=True, per_head=True, generator=g, return_perm=True)
    assert perm.shape == (3, n)
    torch.testing.assert_close(out, dense_oracle(q, k, v, oracle_mask("sa", n, w, True, perm)))


def test_identities():
    n, w = 33, 7
    q, k, v = inputs(2, 2, 2, n, 8, seed=4)
    ident = torch.arange(n)
    torch.testing.assert_close(sa_attention(q, k, v, w, perm=ident), swa_attention(q, k, v, w))
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(1))
    inv = torch.argsort(perm)
    swa_permuted = swa_attention(q[:, :, perm], k[:, :, perm], v[:, :, perm], w)[:, :, inv]
    torch.testing.assert_close(sa_attention(q, k, v, w, perm=perm), swa_permuted)
    torch.testing.assert_close(swa_attention(q, k, v, n, causal=True), full_attention(q, k, v, causal=True))
    torch.testing.assert_close(swa_attention(q, k, v, 2 * n - 1), full_attention(q, k, v))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_low_precision_close_to_float64(dtype):
    q, k, v = inputs(1, 2, 1, 50, 16, dtype=dtype, seed=5)
    out = sa_attention(q, k, v, 8, seed=0, causal=True)
    ref = dense_oracle(q, k, v, oracle_mask("sa", 50, 8, True, layer_permutation(50, 0, 1)))
    tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}[dtype]
    assert out.dtype == dtype
    torch.testing.assert_close(out.double(), ref, atol=tol, rtol=tol)


def test_gradients():
    q, k, v = (t.requires_grad_() for t in inputs(1, 2, 1, 9, 3, seed=6))
    assert torch.autograd.gradcheck(lambda a, b, c: swa_attention(a, b, c, 4, causal=True), (q, k, v))
    perm = torch.tensor([3, 0, 8, 5, 1, 7, 2, 6, 4])
    assert torch.autograd.gradcheck(lambda a, b, c: sa_attention(a, b, c, 3, perm=perm, causal=True), (q, k, v))
    x = torch.randn(1, 1, 9, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: permute_sequence(a, perm), (x,))
    heads = torch.stack([perm, perm.flip(0)])  # per-head permutations
    x = torch.randn(1, 2, 9, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: permute_sequence(a, heads), (x,))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("shape", [(1,), (7,), (1000,), (4, 257), (2, 3, 65)])
def test_inverse_permutation_is_argsort(shape, dtype):
    """The O(n) scatter inverse equals argsort's on random permutations, shared (n,), per head (heads, n) and with
    more leading axes (batch, heads, n), int64 and int32; it undoes the permutation, matches receptive's numpy
    inverse row by row, and permute_sequence accepts either dtype."""
    from receptive import inverse_permutation as numpy_inverse

    gen = torch.Generator().manual_seed(shape[-1])
    rows = int(np.prod(shape[:-1]))
    perm = torch.stack([torch.randperm(shape[-1], generator=gen) for _ in range(rows)]).reshape(shape).to(dtype)
    inverse = inverse_permutation(perm)
    assert inverse.dtype == dtype and inverse.shape == perm.shape
    assert torch.equal(inverse, torch.argsort(perm, dim=-1).to(dtype))
    assert torch.equal(torch.gather(perm, -1, inverse.long()), torch.arange(shape[-1], dtype=dtype).expand(shape))
    flat, flat_inverse = perm.reshape(rows, -1).numpy(), inverse.reshape(rows, -1).numpy()
    assert all((numpy_inverse(row) == want).all() for row, want in zip(flat, flat_inverse, strict=True))
    if len(shape) <= 2:
        x = torch.randn(1, shape[0] if len(shape) > 1 else 2, shape[-1], 3)
        torch.testing.assert_close(permute_sequence(x, perm), permute_sequence(x, perm.long()))


@pytest.mark.parametrize(
    ("perm", "error"),
    [([2, 0, 1], TypeError), (torch.tensor([2.0, 0.0, 1.0]), TypeError), (torch.tensor(0), ValueError)],
)
def test_inverse_permutation_rejects_bad_input(perm, error):
    with pytest.raises(error, match=r"^perm: "):
        inverse_permutation(perm)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda q, k, v: swa_attention(q, k, v, 0), "w:"),
        (lambda q, k, v: swa_attention(q, k, v, 11, causal=True), "w:"),
        (lambda q, k, v: swa_attention(q[0], k, v, 3), "q:"),
        (lambda q, k, v: swa_attention(q, k[:, :, :5], v, 3), "k, v"),
        (lambda q, k, v: swa_attention(q, k, v.float(), 3), "dtype"),
        (lambda q, k, v: swa_attention(q, k, v, 3, backend="cuda-magic"), "backend"),
        (lambda q, k, v: sa_attention(q, k, v, 3, perm=torch.zeros(10, dtype=torch.long)), "perm"),
        (lambda q, k, v: sa_attention(q, k, v, 3, perm=torch.arange(9)), "perm"),
    ],
)
def test_bad_input(call, match):
    q, k, v = inputs(1, 2, 1, 10, 4)
    with pytest.raises(ValueError, match=match):
        call(q, k, v)


def test_gqa_heads_must_divide():
    q, _, _ = inputs(1, 3, 1, 10, 4)
    k, v = inputs(1, 2, 2, 10, 4)[1:]
    with pytest.raises(ValueError, match="GQA"):
        swa_attention(q, k, v, 3)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("per_head", [False, True])
def test_flex_backend_matches_dense_oracle(causal, per_head):
    n, w = 45, 7
    q, k, v = inputs(1, 4, 2, n, 16, dtype=torch.float32, seed=9)
    torch.testing.assert_close(
        swa_attention(q, k, v, w, causal=causal, backend="flex"),
        dense_oracle(q, k, v, oracle_mask("swa", n, w, causal)).float(),
        atol=1e-5,
        rtol=1e-5,
    )
    g = torch.Generator().manual_seed(3)
    perm = (
        torch.stack([torch.randperm(n, generator=g) for _ in range(4)]) if per_head else torch.randperm(n, generator=g)
    )
    out = sa_attention(q, k, v, w, perm=perm, causal=causal, backend="flex")
    mask = oracle_mask("sa", n, w, causal, perm)
    torch.testing.assert_close(out, dense_oracle(q, k, v, mask).float(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    ("dtype", "cuda", "has_triton", "expect"),
    [
        (torch.float32, True, True, "triton"),
        (torch.bfloat16, True, True, "triton"),
        (torch.float64, True, True, "torch"),  # the kernel has no fp64 path
        (torch.float16, True, False, "torch"),  # triton not installed
        (torch.float32, False, True, "torch"),
    ],
)
def test_auto_backend_resolution(monkeypatch, dtype, cuda, has_triton, expect):
    """Both branches of ``auto``, with a stand-in tensor that reports a CUDA device (no GPU needed)."""
    import builtins
    import types

    from gpu.attention.functional import _resolve_backend

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "triton" and not has_triton:
            raise ImportError("no triton")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    q = types.SimpleNamespace(is_cuda=cuda, dtype=dtype)
    assert _resolve_backend("auto", q) == expect
    for explicit in ("torch", "flex", "triton"):
        assert _resolve_backend(explicit, q) == explicit


@pytest.mark.parametrize("causal", [False, True])
def test_full_attention_backends(causal):
    n = 23
    q, k, v = inputs(1, 4, 2, n, 8, dtype=torch.float32, seed=11)
    ref = dense_oracle(q, k, v, oracle_mask("full", n, n, causal)).float()
    for backend in ("auto", "torch", "flex"):
        torch.testing.assert_close(full_attention(q, k, v, causal=causal, backend=backend), ref, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match=r"^backend: expected one of"):
        full_attention(q, k, v, backend="sdpa")


def test_no_host_reads_per_call():
    """On the meta device any read of a tensor's values fails: drawn, seeded and unvalidated permutations run end
    to end without one (so none synchronises with a GPU); validating a device-resident permutation does read."""
    q = torch.empty(1, 2, 50, 8, device="meta")
    for kwargs in ({}, {"per_head": True}, {"seed": 3, "causal": True}):
        out, perm = sa_attention(q, q, q, 7, return_perm=True, check_finite=False, **kwargs)
        assert out.device.type == perm.device.type == "meta"
    perm = torch.randperm(50).to("meta")
    assert sa_attention(q, q, q, 7, perm=perm, causal=True, validate=False, check_finite=False).device.type == "meta"
    with pytest.raises(NotImplementedError):
        sa_attention(q, q, q, 7, perm=perm, check_finite=False)
    with pytest.raises(RuntimeError, match="meta"):  # check_finite (the default) reads one boolean per tensor back
        sa_attention(q, q, q, 7, seed=3)


def test_seeded_permutation_copied_once():
    from gpu.attention.functional import _seeded_permutation

    _seeded_permutation.cache_clear()
    q, k, v = inputs(1, 2, 2, 30, 4, seed=12)
    first = sa_attention(q, k, v, 5, seed=7, layer=2)
    torch.testing.assert_close(sa_attention(q, k, v, 5, seed=7, layer=2), first)
    info = _seeded_permutation.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    _, perm = sa_attention(q, k, v, 5, seed=7, layer=2, return_perm=True)
    perm[0] = perm[1]  # the caller's copy: the cached permutation stays intact
    torch.testing.assert_close(sa_attention(q, k, v, 5, seed=7, layer=2), first)


@pytest.mark.parametrize(
    ("perm", "validate", "error", "match"),
    [
        (np.zeros(10, dtype=np.int64), True, ValueError, "permutation"),
        (torch.tensor([1, 1, 2, 3, 4, 5, 6, 7, 8, 9]), True, ValueError, "permutation"),
        (torch.arange(10).flip(0)[None].expand(3, -1), True, ValueError, "shape"),
        (torch.arange(10.0), True, TypeError, "integer"),
        (np.arange(10.0), False, TypeError, "integer"),
        (torch.arange(9), False, ValueError, "shape"),
    ],
)
def test_perm_checks(perm, validate, error, match):
    q, k, v = inputs(1, 2, 1, 10, 4)
    with pytest.raises(error, match=f"^perm: .*{match}"):
        sa_attention(q, k, v, 3, perm=perm, validate=validate)


def test_host_permutations_accepted():
    q, k, v = inputs(1, 2, 1, 10, 4)
    perm = np.random.default_rng(0).permutation(10)
    ref = sa_attention(q, k, v, 3, perm=torch.as_tensor(perm))
    torch.testing.assert_close(sa_attention(q, k, v, 3, perm=perm), ref)
    torch.testing.assert_close(sa_attention(q, k, v, 3, perm=perm.tolist()), ref)
    unchecked = sa_attention(q, k, v, 3, perm=np.zeros(10, dtype=np.int64), validate=False)  # the caller's promise
    assert unchecked.shape == q.shape


def _qkv():
    return inputs(1, 2, 1, 10, 4)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda q, k, v: full_attention([[1.0]], k, v), "q"),
        (lambda q, k, v: full_attention(q, k, v, causal="yes"), "causal"),
        (lambda q, k, v: full_attention(q, k, v, backend=3), "backend"),
        (lambda q, k, v: swa_attention(q, k, v, 4.0), "w"),
        (lambda q, k, v: swa_attention(q, k, v, "4"), "w"),
        (lambda q, k, v: swa_attention(q, k, v, 4, causal=1), "causal"),
        (lambda q, k, v: swa_attention(q.numpy(), k, v, 4), "q"),
        (lambda q, k, v: sa_attention(q, k, v, 4.0), "w"),
        (lambda q, k, v: sa_attention(q, k, v, 4, causal="no"), "causal"),
        (lambda q, k, v: sa_attention(q, k, v, 4, perm="abc"), "perm"),
        (lambda q, k, v: sa_attention(q, k, v, 4, seed=1.0), "seed"),
        (lambda q, k, v: sa_attention(q, k, v, 4, seed=1, layer=1.0), "layer"),
        (lambda q, k, v: sa_attention(q, k, v, 4, generator=3), "generator"),
        (lambda q, k, v: sa_attention(q, k, v, 4, per_head=1), "per_head"),
        (lambda q, k, v: sa_attention(q, k, v, 4, return_perm="yes"), "return_perm"),
        (lambda q, k, v: sa_attention(q, k, v, 4, validate=None), "validate"),
        (lambda q, k, v: permute_sequence(q, [0, 1]), "perm"),
        (lambda q, k, v: full_attention(q, k, v, check_finite="yes"), "check_finite"),
        (lambda q, k, v: swa_attention(q, k, v, 4, check_finite=1), "check_finite"),
        (lambda q, k, v: sa_attention(q, k, v, 4, check_finite=None), "check_finite"),
    ],
)
def test_wrong_types_are_type_errors_naming_the_argument(call, name):
    """A wrong type is a one-line ``TypeError`` that starts with the argument's name, raised before any work."""
    with pytest.raises(TypeError, match=rf"^{name}: ") as info:
        call(*_qkv())
    assert "\n" not in str(info.value)


#: the worst error of a result rounded to the dtype, relative to the values' scale
OUTPUT_EPS = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def _attend(kind, q, k, v, w, causal):
    """(output of the torch backend, float64 oracle on the same rounded inputs)."""
    n = q.shape[2]
    if kind == "full":
        mask = oracle_mask("full", n, n, causal)
        return full_attention(q, k, v, causal=causal, backend="torch"), dense_oracle(q, k, v, mask)
    if kind == "swa":
        w = min(w, max_window(n, causal, False))
        return swa_attention(q, k, v, w, causal=causal, backend="torch"), dense_oracle(
            q, k, v, oracle_mask("swa", n, w, causal)
        )
    w = min(w, max_window(n, False, False))
    out, perm = sa_attention(q, k, v, w, causal=causal, seed=1, backend="torch", return_perm=True)
    return out, dense_oracle(q, k, v, oracle_mask("sa", n, w, causal, perm))


@given(
    kind=st.sampled_from(["full", "swa", "sa"]),
    dtype=st.sampled_from([torch.float16, torch.bfloat16, torch.float32]),
    magnitude=st.sampled_from([1.0, 30.0, 300.0, 3000.0]),
    n=st.integers(1, 40),
    w=st.integers(1, 12),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_finite_input_gives_finite_rows_close_to_float64(kind, dtype, magnitude, n, w, causal, seed):
    """Large finite inputs in every dtype: finite rows inside the values' range, and as close to the float64 oracle
    as scores accumulated in float32 allow (scores off by ``delta`` move the output by at most ``~2 delta max|v|``)."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (
        (torch.randn(1, 2, n, 8, generator=g, dtype=torch.float64) * magnitude).clamp(-6e4, 6e4).to(dtype)
        for _ in range(3)
    )
    out, ref = _attend(kind, q, k, v, w, causal)
    assert out.dtype == dtype and torch.isfinite(out).all()
    vmax = v.double().abs().max().item()
    eps = OUTPUT_EPS[dtype]
    assert out.double().abs().max().item() <= vmax * (1 + eps)
    qk = q.double().abs().max().item() * k.double().abs().max().item()
    delta = 8 * qk / 8**0.5 * 2.0**-22  # worst float32 error of one score (d = 8 products, scaled)
    assert (out.double() - ref).abs().max().item() <= (4 * delta + eps) * (1 + vmax)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize(
    "call",
    [
        lambda q: swa_attention(q, q, q, 3, backend="torch"),
        lambda q: swa_attention(q, q, q, 3, causal=True, backend="torch"),
        lambda q: sa_attention(q, q, q, 3, seed=0, backend="torch"),
        lambda q: sa_attention(q, q, q, 3, seed=0, causal=True, backend="torch"),
        lambda q: full_attention(q, q, q, backend="torch"),
    ],
)
def test_overflowing_half_scores_are_not_nan(call, dtype):
    """q = k = 300 with d = 8: q.k = 720000 overflows float16; the output is v itself, as SDPA returns."""
    q = torch.full((1, 2, 16, 8), 300.0, dtype=dtype)
    out = call(q)
    assert out.dtype == dtype
    torch.testing.assert_close(out, q)


@pytest.mark.parametrize(
    "call",
    [
        lambda q, k, v: full_attention(q, k, v),
        lambda q, k, v: full_attention(q, k, v, backend="flex"),
        lambda q, k, v: swa_attention(q, k, v, 3),
        lambda q, k, v: sa_attention(q, k, v, 3, seed=0),
        lambda q, k, v: sa_attention(q, k, v, 3, perm=torch.arange(10)),
    ],
)
@pytest.mark.parametrize(("which", "bad"), [("q", float("nan")), ("k", float("inf")), ("v", float("-inf"))])
def test_non_finite_input_is_refused_naming_the_tensor(call, which, bad):
    q, k, v = _qkv()
    tensors = {"q": q, "k": k, "v": v}
    tensors[which] = tensors[which].clone()
    tensors[which][0, 0, 3, 1] = bad
    with pytest.raises(ValueError, match=rf"^{which}: holds NaN or inf") as info:
        call(*tensors.values())
    assert "\n" not in str(info.value)


def test_check_finite_false_skips_the_check():
    q, k, v = _qkv()
    q = q.clone()
    q[0, 0, 3] = float("nan")
    out = swa_attention(q, k, v, 3, check_finite=False)
    assert torch.isnan(out[0, 0, 3]).all() and torch.isfinite(out[0, 1]).all()
