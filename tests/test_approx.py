"""The approximation lab's methods: exact at full budget, convergent where theory says so, validated input."""

import pytest

torch = pytest.importorskip("torch")

from gpu.approx import METHODS, approximate, exact_attention, relative_error  # noqa: E402


def inputs(n=96, d=16, scale=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k = (scale * torch.randn(2, 3, n, d, generator=g, dtype=torch.float64) for _ in range(2))
    return q, k, torch.randn(2, 3, n, d, generator=g, dtype=torch.float64) + 0.5


@pytest.mark.parametrize(
    ("method", "budget", "tol"),
    [("swa", 191, 1e-12), ("sa", 191, 1e-12), ("sa+swa", 382, 1e-12), ("top-k", 96, 1e-12), ("svd", 96, 1e-9),
     ("moba", 4 * 96, 1e-12), ("reformer", 4 * 96, 1e-12), ("nystromformer", 96, 0.05), ("swa+sink", 192, 1e-12),
     ("sa+sink", 192, 1e-12)],
)  # fmt: skip
def test_full_budget_is_exact(method, budget, tol):
    """Nystromformer keeps the paper's 6 Newton-Schulz iterations, which do not fully converge at full rank."""
    q, k, v = inputs()
    assert relative_error(approximate(method, q, k, v, budget), exact_attention(q, k, v)) < tol


@pytest.mark.parametrize("method", ["performer", "nystromformer", "svd", "top-k", "sa", "moba"])
def test_error_falls_with_budget(method):
    q, k, v = inputs(n=128, scale=0.5, seed=1)
    ref = exact_attention(q, k, v)
    small, large = (
        relative_error(approximate(method, q, k, v, m), ref) for m in (8, 128 if method != "performer" else 2048)
    )
    assert large < small


def test_every_method_runs_and_is_finite():
    q, k, v = inputs(n=50, seed=2)
    for name in METHODS:
        out = approximate(name, q, k, v, 12, seed=3)
        assert out.shape == v.shape and torch.isfinite(out).all(), name


@pytest.mark.parametrize("name", list(METHODS))
def test_randomized_flag_says_whether_the_seed_matters(name):
    q, k, v = inputs(n=64, seed=4)
    same = torch.equal(approximate(name, q, k, v, 16, seed=0), approximate(name, q, k, v, 16, seed=1))
    assert same != METHODS[name].randomized


def test_sink_variants_keep_the_first_key_and_one_fewer_window_key():
    """With a sink, row i attends to position 0 and a window of m - 1 keys: a tiny budget differs from the plain
    window exactly by the first key."""
    from gpu.approx.methods import _masked, _pattern_mask

    q, k, v = inputs(n=40, seed=5)
    mask = _pattern_mask("swa", 40, 3, 0, "cpu")
    mask[:, 0] = True
    assert torch.allclose(approximate("swa+sink", q, k, v, 4), _masked(q, k, v, mask))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"method": "magic"}, "method"), ({"budget": 0}, "budget"), ({"budget": 2.5}, "budget")],
)
def test_bad_input(kwargs, match):
    q, k, v = inputs(n=8)
    args = {"method": "sa", "budget": 4, **kwargs}
    with pytest.raises(ValueError, match=match):
        approximate(args["method"], q, k, v, args["budget"])
    with pytest.raises(ValueError, match="q, k, v"):
        approximate("sa", q[0], k, v, 4)


def test_synthetic_study_cli(tmp_path, capsys):
    import json

    from gpu.approx.__main__ import main

    out = tmp_path / "rows.json"
    assert main(["--n", "64", "--d", "8", "--budgets", "8,16", "--seeds", "2", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 3 * 2 * len(METHODS)
    lowrank_svd = [r["mean"] for r in rows if r["kind"] == "lowrank" and r["method"] == "svd"]
    assert lowrank_svd[1] < lowrank_svd[0]
    assert "relative error" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--kinds", "nope"])
