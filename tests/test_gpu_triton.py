"""The fused Triton SA forward against the torch path (and so the float64 oracle), on the CPU interpreter."""

import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton compiles anything: run kernels on the CPU
pytest.importorskip("triton")

from gpu import sa_attention, swa_attention  # noqa: E402
from gpu.triton_sa import triton_sa_attention  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def inputs(b, h, hkv, n, d, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(b, x, n, d, generator=g) + 0.1).to(DEVICE, dtype) for x in (h, hkv, hkv)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize(
    ("n", "w", "causal", "hkv"),
    [(37, 5, False, 2), (37, 5, True, 1), (20, 39, False, 4), (64, 16, True, 4), (9, 1, True, 2)],
)
def test_fused_sa_matches_torch_path(dtype, n, w, causal, hkv):
    q, k, v = inputs(2, 4, hkv, n, 16, dtype)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(n)).to(DEVICE)
    ref = sa_attention(q.double(), k.double(), v.double(), w, perm=perm, causal=causal)
    out = triton_sa_attention(q, k, v, w, perm=perm, causal=causal)
    tol = 1e-5 if dtype == torch.float32 else 3e-3
    torch.testing.assert_close(out.double(), ref, atol=tol, rtol=tol)


def test_fused_swa_and_per_head_permutations():
    q, k, v = inputs(1, 2, 2, 30, 8, torch.float32, seed=1)
    torch.testing.assert_close(triton_sa_attention(q, k, v, 7, causal=True), swa_attention(q, k, v, 7, causal=True))
    perm = torch.stack([torch.randperm(30, generator=torch.Generator().manual_seed(s)) for s in range(2)])
    ref = sa_attention(q, k, v, 6, perm=perm, causal=True)
    torch.testing.assert_close(triton_sa_attention(q, k, v, 6, perm=perm, causal=True), ref, atol=1e-5, rtol=1e-5)


def test_fused_bad_input():
    q, k, v = inputs(1, 2, 2, 10, 8, torch.float32)
    with pytest.raises(ValueError, match="w:"):
        triton_sa_attention(q, k, v, 0)
    with pytest.raises(ValueError, match="perm"):
        triton_sa_attention(q, k, v, 3, perm=torch.arange(9))
    with pytest.raises(ValueError, match="dtype"):
        triton_sa_attention(q.double(), k.double(), v.double(), 3)


@pytest.mark.parametrize(
    ("n", "w", "causal", "hkv", "per_head"),
    [(37, 5, False, 2, False), (37, 6, True, 1, False), (30, 59, True, 4, False), (40, 8, True, 2, True)],
)
def test_fused_backward_matches_torch_path(n, w, causal, hkv, per_head):
    q, k, v = inputs(2, 4, hkv, n, 16, torch.float32, seed=7)
    g = torch.Generator().manual_seed(n)
    perm = (
        torch.stack([torch.randperm(n, generator=g) for _ in range(4)]) if per_head else torch.randperm(n, generator=g)
    )
    perm = perm.to(DEVICE)
    upstream = torch.randn(q.shape, generator=torch.Generator().manual_seed(1)).to(DEVICE)
    grads = []
    for fn, dtype in ((triton_sa_attention, torch.float32), (sa_attention, torch.float64)):
        leaves = [t.detach().to(dtype).requires_grad_() for t in (q, k, v)]
        (fn(*leaves, w, perm=perm, causal=causal) * upstream.to(dtype)).sum().backward()
        grads.append([t.grad.double() for t in leaves])
    for ours, ref in zip(*grads, strict=True):
        torch.testing.assert_close(ours, ref, atol=1e-4, rtol=1e-4)


def test_fused_swa_backward():
    q, k, v = inputs(1, 2, 1, 33, 16, torch.float32, seed=8)
    grads = []
    for fn in (triton_sa_attention, swa_attention):
        leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
        fn(*leaves, 9, causal=True).square().sum().backward()
        grads.append([t.grad for t in leaves])
    for ours, ref in zip(*grads, strict=True):
        torch.testing.assert_close(ours, ref, atol=1e-4, rtol=1e-4)


def test_backend_override_reaches_the_fused_kernel():
    q, k, v = inputs(1, 2, 1, 25, 16, torch.float32, seed=9)
    perm = torch.randperm(25, generator=torch.Generator().manual_seed(2)).to(DEVICE)
    torch.testing.assert_close(
        sa_attention(q, k, v, 5, perm=perm, causal=True, backend="triton"),
        sa_attention(q, k, v, 5, perm=perm, causal=True, backend="torch"),
        atol=1e-5,
        rtol=1e-5,
    )
    torch.testing.assert_close(
        swa_attention(q, k, v, 6, backend="triton"), swa_attention(q, k, v, 6), atol=1e-5, rtol=1e-5
    )
