"""Property tests of the backend's entry points: any input gives a result of the right shape, a ``ValueError`` whose
message starts with the argument's name, or (CLI) exit status 2 with one line; never another exception."""

import contextlib
import io
import re
import tempfile

import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gpu import full_attention, sa_attention, swa_attention  # noqa: E402
from gpu.bench.cli import _parse  # noqa: E402
from receptive.cli_parser import OneLineErrorParser  # noqa: E402

NAMES = ("w", "perm", "backend", "q", "k, v", "k", "q, k, v", "per_head")
OUT = tempfile.mkdtemp(prefix="gpu-fuzz-")

values = st.one_of(
    st.integers(-3, 40),
    st.booleans(),
    st.floats(-2, 40) | st.just(float("nan")),
    st.none(),
    st.sampled_from(["3", "auto", "torch", "flex", "cuda"]),
)
perms = st.one_of(
    st.none(),
    st.permutations(range(10)).map(torch.tensor),
    st.lists(st.integers(-2, 12), min_size=0, max_size=12).map(lambda xs: torch.tensor(xs, dtype=torch.long)),
    st.lists(st.permutations(range(10)), min_size=2, max_size=2).map(torch.tensor),
    st.just(torch.arange(10.0)),
)


@settings(max_examples=150)
@given(
    w=values,
    perm=perms,
    causal=st.booleans(),
    backend=st.sampled_from(["auto", "torch", "cuda-magic", 3]),
    kv_heads=st.sampled_from([1, 2, 3]),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.int64]),
    per_head=st.booleans(),
    which=st.sampled_from(["sa", "swa", "full"]),
)
def test_attention_entry_points(w, perm, causal, backend, kv_heads, dtype, per_head, which):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, 10, 4, generator=g).to(dtype)
    k = torch.randn(1, kv_heads, 10, 4, generator=g).to(dtype)
    try:
        if which == "sa":
            out = sa_attention(q, k, k, w, perm=perm, causal=causal, backend=backend, per_head=per_head)
        elif which == "swa":
            out = swa_attention(q, k, k, w, causal=causal, backend=backend)
        else:
            out = full_attention(q, k, k, causal=causal, backend=backend)
    except (TypeError, ValueError) as exc:
        assert any(str(exc).startswith(name + ":") for name in NAMES), str(exc)
        return
    assert out.shape == q.shape and torch.isfinite(out).all()


tokens = st.sampled_from(
    ["--n", "--w", "--heads", "--d", "--batch", "--repeats", "--backends", "--dtype", "--backward", "--nope"]
)
texts = st.one_of(
    st.sampled_from(
        ["", "0", "1", "2", "64", "-5", "1e3", "64,128", "64,,128", "torch", "torch,flex", "triton", "float32", "x"]
    ),
    st.text(alphabet="0123456789,-xe ", max_size=8),
)


@settings(max_examples=150)
@given(pairs=st.lists(st.tuples(tokens, texts), max_size=4))
def test_bench_cli_arguments(pairs):
    argv = [x for pair in pairs for x in pair] + ["--json", f"{OUT}/b.json", "--plot", f"{OUT}/c.png"]
    parser = OneLineErrorParser(prog="python -m gpu.bench")
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            args = _parse(parser, argv)
    except SystemExit as exc:
        err = stderr.getvalue()
        assert exc.code == 2 and err.count("\n") == 1 and re.search(r"error: ", err), err
        return
    assert all(n >= 2 for n in args.n) and args.w <= 2 * min(args.n) - 1
    assert set(args.backends) <= {"torch", "flex", "triton"}


@pytest.mark.parametrize(
    "shape", [(1, 2, 8, 0), (0, 2, 8, 4), (1, 0, 8, 4), (1, 2, 0, 4)], ids=["head_dim-0", "batch-0", "heads-0", "seq-0"]
)
@pytest.mark.parametrize("which", ["swa", "sa", "full"])
def test_degenerate_shapes_are_refused_naming_the_tensor(shape, which):
    """An empty axis is a ValueError naming q, k or v (never a division by zero or an empty result)."""
    from refusals import assert_refused

    q = torch.zeros(shape)
    call = {
        "swa": lambda: swa_attention(q, q, q, 4),
        "sa": lambda: sa_attention(q, q, q, 4, seed=0),
        "full": lambda: full_attention(q, q, q),
    }[which]
    name = "k" if shape[1] == 0 else "q"
    assert_refused(call, ValueError, name)
