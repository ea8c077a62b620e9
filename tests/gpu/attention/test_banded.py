"""gpu.attention.banded.banded_attention in chunks against one shot and against the float64 dense masked oracle.

The oracle is :func:`gpu.attention.oracle.dense_oracle` with the explicit ``(batch, heads, n, n)`` mask
``-left <= key - query <= right`` and ``extra_mask``."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gpu.attention.banded  # noqa: E402
from gpu import sa_attention  # noqa: E402
from gpu.attention.banded import _block_size, banded_attention, chunk_plan  # noqa: E402
from gpu.attention.oracle import dense_oracle, oracle_mask  # noqa: E402

ONE_SHOT = 1 << 62


def band_mask(n, left, right):
    rel = torch.arange(n)[None, :] - torch.arange(n)[:, None]
    return (rel >= -left) & (rel <= right)


def table_mask(table, n):
    """extra_mask reading a (mb, mh, n + 1, n + 1) boolean table (row n: the padding queries past n - 1)."""

    def extra(qpos, kpos):
        return table[:, :, qpos.clamp(max=n)[:, :, None], kpos[:, None, :]]

    return extra


def random_case(rng):
    b, h = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    n, d = int(rng.integers(1, 90)), int(rng.integers(1, 5))
    left, right = int(rng.integers(0, 40)), int(rng.integers(0, 40))
    g = torch.Generator().manual_seed(int(rng.integers(1 << 30)))
    q, k, v = (torch.randn(b, h, n, d, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))
    return q, k, v, left, right


def chunk_sizes(rows, n, left, right, rng):
    """Budgets that cut the work every way: one shot, blocks of every row (boundaries inside a head), one block of
    some rows, a unit alone, and a random one."""
    bq = _block_size(n, left, right)
    nb, unit = -(-n // bq), bq * (bq + left + right)
    return sorted(
        {
            ONE_SHOT,
            rows * unit,
            2 * rows * unit,
            3 * rows * unit - 1,
            unit,
            2 * unit,
            1,
            int(rng.integers(1, rows * nb * unit + 2)),
        }
    )


@pytest.mark.parametrize("seed", range(40))
def test_chunked_equals_one_shot_and_oracle(seed):
    rng = np.random.default_rng(seed)
    q, k, v, left, right = random_case(rng)
    b, h, n, _ = q.shape
    table = None
    if seed % 2:  # an extra mask per batch and head (odd seeds), per head only, or shared
        shape = [(b, h), (1, h), (1, 1)][(seed // 2) % 3]
        gen = torch.Generator().manual_seed(seed)
        table = torch.rand(*shape, n + 1, n + 1, generator=gen) < 0.6
        table |= torch.eye(n + 1, dtype=torch.bool)  # every row keeps its own key
    extra = None if table is None else table_mask(table, n)
    mask = band_mask(n, left, right).expand(b, h, n, n)
    if table is not None:
        mask = mask & table[:, :, :n, :n]
    ref = dense_oracle(q, k, v, mask)
    go = torch.randn(ref.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    ref_grads = torch.autograd.grad(ref, (q, k, v), go)
    one = banded_attention(q, k, v, left, right, extra, chunk_scores=ONE_SHOT)
    one_grads = torch.autograd.grad(one, (q, k, v), go)
    torch.testing.assert_close(one, ref)
    for got, want in zip(one_grads, ref_grads, strict=True):
        torch.testing.assert_close(got, want)
    for chunk_scores in chunk_sizes(b * h, n, left, right, rng):
        out = banded_attention(q, k, v, left, right, extra, chunk_scores=chunk_scores)
        grads = torch.autograd.grad(out, (q, k, v), go)
        torch.testing.assert_close(out, one, rtol=1e-12, atol=1e-12)
        for got, want in zip(grads, one_grads, strict=True):
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_default_cpu_budget_chunks_inside_a_head():
    """At n = 2048, w = 64 the default chunk_scores cuts each head's 32 blocks into several chunks: same as one shot."""
    n, left, right = 2048, 32, 31
    bq = _block_size(n, left, right)
    rows, blocks = chunk_plan(2, -(-n // bq), bq * (bq + left + right), gpu.attention.banded.CHUNK_SCORES)
    assert rows == 2 and 1 < blocks < n // bq
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, 2, n, 4, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))
    out, one = banded_attention(q, k, v, left, right), banded_attention(q, k, v, left, right, chunk_scores=ONE_SHOT)
    torch.testing.assert_close(out, one, rtol=1e-12, atol=1e-12)
    for got, want in zip(
        torch.autograd.grad(out.sum(), (q, k, v)), torch.autograd.grad(one.sum(), (q, k, v)), strict=True
    ):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("per_head", [False, True])
def test_causal_sa_in_small_chunks_matches_oracle(monkeypatch, per_head):
    """sa_attention's causal extra mask (original positions, shared or per-head permutation) through tiny chunks."""
    monkeypatch.setattr(gpu.attention.banded, "CHUNK_SCORES", 700)
    n, w, heads = 45, 5, 3
    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(2, heads, n, 4, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))
    perm = torch.stack([torch.randperm(n, generator=g) for _ in range(heads)]) if per_head else torch.randperm(n)
    out = sa_attention(q, k, v, w, perm=perm, causal=True, backend="torch")
    ref = dense_oracle(q, k, v, oracle_mask("sa", n, w, True, perm))
    torch.testing.assert_close(out, ref)
    go = torch.randn(ref.shape, generator=g, dtype=torch.float64)
    for got, want in zip(torch.autograd.grad(out, (q, k, v), go), torch.autograd.grad(ref, (q, k, v), go), strict=True):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("chunk_scores", [ONE_SHOT, 1, 3000])
def test_fully_masked_rows_are_zero_without_nan(chunk_scores):
    n, left, right = 50, 4, 3
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 2, n, 3, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))

    def extra(qpos, kpos):  # queries 10 and 37 see no key at all
        return ((qpos != 10) & (qpos != 37))[:, :, None] & (kpos >= 0)[:, None, :]

    out = banded_attention(q, k, v, left, right, extra, chunk_scores=chunk_scores)
    assert not out.isnan().any()
    assert torch.equal(out[:, :, [10, 37]], torch.zeros(1, 2, 2, 3, dtype=torch.float64))
    grads = torch.autograd.grad(out.square().sum(), (q, k, v))
    assert all(torch.isfinite(t).all() for t in grads)
    assert torch.equal(grads[0][:, :, [10, 37]], torch.zeros(1, 2, 2, 3, dtype=torch.float64))
    keep = torch.ones(n, dtype=torch.bool)
    keep[[10, 37]] = False
    torch.testing.assert_close(out, dense_oracle(q, k, v, band_mask(n, left, right) & keep[:, None]))


def test_extra_mask_receives_the_positions_of_each_chunk():
    n, left, right = 100, 6, 2
    bq = _block_size(n, left, right)
    nb, span = -(-n // bq), bq + left + right
    calls = []

    def extra(qpos, kpos):
        calls.append((qpos.clone(), kpos.clone()))
        return torch.ones((), dtype=torch.bool)

    q = torch.randn(2, 3, n, 4)
    rows, blocks = chunk_plan(6, nb, bq * span, 2 * 6 * bq * span)
    assert (rows, blocks) == (6, 2)
    banded_attention(q, q, q, left, right, extra, chunk_scores=2 * 6 * bq * span)
    assert len(calls) == -(-nb // 2)
    qall = torch.cat([c[0] for c in calls])
    assert torch.equal(qall, torch.arange(nb * bq).view(nb, bq))  # unclamped, consecutive blocks
    for qpos, kpos in calls:
        first = int(qpos[0, 0]) // bq
        raw = (torch.arange(first, first + qpos.shape[0])[:, None] * bq - left) + torch.arange(span)
        assert torch.equal(kpos, raw.clamp(0, n - 1))
    calls.clear()  # one unit per chunk: every (row, block) separately, the positions of one block each time
    banded_attention(q, q, q, left, right, extra, chunk_scores=1)
    assert len(calls) == 6 * nb and all(c[0].shape == (1, bq) and c[1].shape == (1, span) for c in calls)


def test_chunk_plan_bounds_and_covers():
    rng = np.random.default_rng(0)
    for _ in range(500):
        rows, blocks, unit = (int(x) for x in rng.integers(1, 40, 3))
        chunk_scores = int(rng.integers(1, rows * blocks * unit * 2))
        r, c = chunk_plan(rows, blocks, unit, chunk_scores)
        assert 1 <= r <= rows and 1 <= c <= blocks
        assert r * c * unit <= chunk_scores or (r, c) == (1, 1)
        assert c == 1 or r == rows  # blocks are cut only when every row is in the chunk
        if (r, c) != (rows, blocks):  # a larger chunk of the same shape would exceed the chunk_scores
            assert (r < rows and (r + 1) * unit > chunk_scores) or (c < blocks and rows * (c + 1) * unit > chunk_scores)
    assert chunk_plan(4, 512, 8128, None) == (4, 512)
    assert chunk_plan(4, 512, 8128, 1 << 18) == (4, 8)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda q: banded_attention(q, q, q, -1, 0), "left"),
        (lambda q: banded_attention(q, q, q, 1, 1, chunk_scores=0), "chunk_scores"),
        (lambda q: banded_attention(q, q, q, 1, 1, scale=0.0), "scale"),
        (lambda q: banded_attention(q, q[:, :1], q[:, :1], 1, 1), "heads"),
        (lambda q: banded_attention(q[0], q[0], q[0], 1, 1), "q"),
        (lambda q: banded_attention(q, q, q, 1, 1, lambda a, b: torch.ones(3, 1, 1, 1, 1, dtype=torch.bool)), "extra"),
        (lambda q: chunk_plan(0, 1, 1, 1), "rows"),
        (lambda q: chunk_plan(1, 1, 1, -5), "chunk_scores"),
    ],
)
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call(torch.randn(1, 2, 9, 3))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda q: banded_attention(q, q, q, 0, 1.5), "^right:"),
        (lambda q: banded_attention(q, q, q, 1, 1, chunk_scores=True), "^chunk_scores:"),
        (lambda q: banded_attention([1.0], q, q, 1, 1), "^q:"),
    ],
)
def test_wrong_types(call, match):
    with pytest.raises(TypeError, match=match):
        call(torch.randn(1, 2, 9, 3))
