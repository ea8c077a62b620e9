"""The numba gathered-attention kernel against float64 dense masked attention, and its torch fallback."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gpu.attention.gathered import gathered_attention
from gpu.attention.key_lists import dedupe
from gpu.attention.oracle import dense_oracle

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def case(seed, batch, kv_heads, groups, n_q, n, width, share_rows, share_heads, dtype):
    g = torch.Generator().manual_seed(seed)
    heads = kv_heads * groups
    q = torch.randn(batch, heads, n_q, 8, generator=g, dtype=dtype)
    k = torch.randn(batch, kv_heads, n, 8, generator=g, dtype=dtype)
    v = torch.randn(batch, kv_heads, n, 5, generator=g, dtype=dtype)
    shape = (1 if share_rows else batch, 1 if share_heads else heads, n_q, width)
    idx = torch.randint(0, n, shape, generator=g)
    valid = torch.rand(shape, generator=g) < 0.7
    return q, k, v, idx, valid


def oracle(q, k, v, idx, valid):
    """The dense mask of each (row, head, query): its distinct valid keys, then float64 dense attention."""
    batch, heads, n_q, _ = q.shape
    keep = np.zeros((batch, heads, n_q, k.shape[2]), dtype=bool)
    full_idx = idx.expand(batch, heads, -1, -1).numpy()
    full_valid = valid.expand(batch, heads, -1, -1).numpy()
    for b, h, i in np.ndindex(batch, heads, n_q):
        keep[b, h, i, full_idx[b, h, i][full_valid[b, h, i]]] = True
    return dense_oracle(q, k, v, torch.from_numpy(keep))


@given(
    seed=st.integers(0, 10**6),
    batch=st.integers(1, 2),
    kv_heads=st.integers(1, 2),
    groups=st.integers(1, 3),
    n=st.integers(1, 30),
    width=st.integers(1, 9),
    share_rows=st.booleans(),
    share_heads=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_kernel_equals_float64_dense_attention(seed, batch, kv_heads, groups, n, width, share_rows, share_heads,
                                               dtype):  # fmt: skip
    n_q = 1 + seed % n
    q, k, v, idx, valid = case(seed, batch, kv_heads, groups, n_q, n, width, share_rows, share_heads, dtype)
    valid = dedupe(idx, valid)  # repeats count twice in the kernel
    out = gathered_attention(q, k, v, idx, valid)
    assert out.dtype == dtype and not out.isnan().any()
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(out.double(), oracle(q, k, v, idx, valid), atol=tol, rtol=tol)


def test_autograd_takes_the_torch_form_with_the_same_values():
    q, k, v, idx, valid = case(3, 2, 2, 2, 6, 10, 4, False, False, torch.float64)
    fast = gathered_attention(q, k, v, idx, valid)
    q.requires_grad_(True)
    slow = gathered_attention(q, k, v, idx, valid)
    assert slow.requires_grad and not fast.requires_grad
    torch.testing.assert_close(slow.detach(), fast)
    slow.sum().backward()
    assert q.grad is not None and not q.grad.isnan().any()


def test_a_query_without_keys_gives_zeros():
    q, k, v, idx, _ = case(0, 1, 1, 1, 3, 4, 2, True, True, torch.float32)
    out = gathered_attention(q, k, v, idx, torch.zeros_like(idx, dtype=torch.bool))
    assert torch.equal(out, torch.zeros_like(out))


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda a: a.update(k=a["k"][:, :, :, :3]), "k, v: expected"),
        (lambda a: a.update(idx=a["idx"][0]), "idx, valid: expected"),
        (lambda a: a.update(valid=a["valid"][..., :1]), "idx, valid: expected"),
        (lambda a: a.update(idx=a["idx"] + 100), "idx: a valid index lies outside 0..9"),
    ],
)
def test_bad_shapes_are_one_line_errors(change, match):
    q, k, v, idx, valid = case(1, 1, 1, 2, 4, 10, 3, True, False, torch.float32)
    args = {"q": q, "k": k, "v": v, "idx": idx, "valid": valid | True}
    change(args)
    with pytest.raises(ValueError, match=match):
        gathered_attention(**args)
