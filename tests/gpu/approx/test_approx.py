"""The approximation lab's interface: registry metadata, argument checks, costs and the synthetic-study CLI. The
methods' numerics are in ``test_approx_methods.py``."""

import json

import pytest

torch = pytest.importorskip("torch")

from gpu.approx import METHODS, Cost, approximate, exact_cost, method_cost  # noqa: E402
from gpu.approx.cli import budgets_for, main  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def inputs(n=64, d=16, seed=0, heads=3):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(2, heads, n, d, generator=g, dtype=torch.float64) for _ in range(3))


def budget_for(name, n=64, d=16, heads=3, wanted=12):
    top = METHODS[name].max_budget(n, d, heads)
    return wanted if top is None else min(wanted, top)


def test_every_method_runs_and_is_finite():
    q, k, v = inputs(n=50, seed=2)
    for name in METHODS:
        out = approximate(name, q, k, v, budget_for(name, n=50), seed=3, causal=not METHODS[name].bidirectional)
        assert out.shape == v.shape and torch.isfinite(out).all(), name


@pytest.mark.parametrize("name", list(METHODS))
def test_randomized_flag_says_whether_the_seed_matters(name):
    q, k, v = inputs(seed=4)
    b = budget_for(name, wanted=16)
    causal = not METHODS[name].bidirectional
    same = torch.equal(*(approximate(name, q, k, v, b, seed=s, causal=causal) for s in (0, 1)))
    assert same != METHODS[name].randomized


def test_metadata():
    for name, spec in METHODS.items():
        assert spec.name == name and spec.budget_meaning
        assert spec.budget_kind in ("keys", "rank", "features")
        assert (
            isinstance(spec.randomized, bool) and isinstance(spec.causal, bool) and (spec.causal or spec.bidirectional)
        )
    causal = {n for n, s in METHODS.items() if s.causal}
    assert {"swa", "sa-band", "sa-band+swa", "performer", "top-k", "reformer", "mla"} <= causal
    only = {
        n: "causal" if not s.bidirectional else "bidirectional"
        for n, s in METHODS.items()
        if s.causal != s.bidirectional
    }
    assert {only[n] for n in ("sa", "sa+swa", "sa+sink")} == {"bidirectional"}  # the causal SA is sa-band
    assert {only[n] for n in ("sa-band", "sa-band+swa", "sa-band+sink")} == {"causal"}


@pytest.mark.parametrize(
    ("method", "budget", "kwargs", "match"),
    [
        ("magic", 4, {}, "^method"),
        ("sa", 0, {}, "^budget"),
        ("tpa", 4, {}, "^budget: the TPA rank"),
        ("mla", 97, {}, "^budget: the MLA latent width"),
        ("transmla", 97, {}, "^budget"),
        ("polysketch", 16, {"degree": 3}, "^degree"),
        ("polysketch", 16, {"degree": 0}, "^degree"),
        ("loki", 8, {"rank": 17}, "^rank"),
        ("loki", 8, {"rank": 0}, "^rank"),
        ("reformer", 8, {"rounds": 0}, "^rounds"),
        ("moba", 8, {"blocks_per_query": 0}, "^blocks_per_query"),
        ("svd", 8, {"causal": True}, "^causal: svd has no causal version"),
        ("mla", 8, {"causal": True}, "^calibration"),
        ("loki", 8, {"causal": True}, "^calibration"),
        ("sa", 8, {"window": 3}, "^options"),
        ("mla", 8, {"calibration": 3}, "^calibration"),
    ],
)
def test_bad_input_is_one_line_naming_the_argument(method, budget, kwargs, match):
    q, k, v = inputs(n=8)
    with pytest.raises(ValueError, match=match) as info:
        approximate(method, q, k, v, budget, **kwargs)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("method", "budget", "kwargs", "match"),
    [
        (3, 4, {}, "^method"),
        ("sa", 2.5, {}, "^budget"),
        ("sa", True, {}, "^budget"),
        ("sa", 4, {"seed": 1.0}, "^seed"),
        ("sa", 4, {"causal": "yes"}, "^causal"),
    ],
)
def test_wrong_types_are_type_errors_naming_the_argument(method, budget, kwargs, match):
    q, k, v = inputs(n=8)
    with pytest.raises(TypeError, match=match) as info:
        approximate(method, q, k, v, budget, **kwargs)
    assert "\n" not in str(info.value)
    with pytest.raises(TypeError, match=r"^q"):
        approximate("sa", q.numpy(), k, v, 4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_inputs_with_overflowing_scores_give_finite_rows(dtype):
    """q = k = 300 with d = 8 overflows float16 scores: every method runs in float32 and returns finite rows, in the
    input's dtype; a large random input too."""
    flat = torch.full((1, 2, 32, 8), 300.0, dtype=dtype)
    rough = (torch.randn(1, 2, 32, 8, generator=torch.Generator().manual_seed(0)) * 300).to(dtype)
    for name in METHODS:
        for x in (flat, rough):
            b, causal = budget_for(name, n=32, d=8, heads=2, wanted=8), not METHODS[name].bidirectional
            out = approximate(name, x, x, x, b, seed=1, causal=causal)
            assert out.dtype == dtype and torch.isfinite(out).all(), name
    for name in ("swa", "sa-band", "top-k"):
        assert torch.isfinite(approximate(name, flat, flat, flat, 8, causal=True)).all(), name


@pytest.mark.parametrize(("which", "bad"), [("q", float("nan")), ("k", float("inf")), ("v", float("-inf"))])
def test_non_finite_input_is_refused_naming_the_tensor(which, bad):
    tensors = dict(zip("qkv", inputs(n=8), strict=True))
    tensors[which][0, 1, 2, 3] = bad
    with pytest.raises(ValueError, match=rf"^{which}: holds NaN or inf") as info:
        approximate("sa", *tensors.values(), 4)
    assert "\n" not in str(info.value)
    assert torch.isnan(approximate("swa", *tensors.values(), 4, check_finite=False)).any()
    with pytest.raises(TypeError, match=r"^check_finite: "):
        approximate("sa", *inputs(n=8), 4, check_finite="no")


def test_bad_tensors():
    q, k, v = inputs(n=8)
    with pytest.raises(ValueError, match=r"^q, k, v"):
        approximate("sa", q[0], k, v, 4)
    with pytest.raises(ValueError, match=r"^q, k, v"):
        approximate("sa", q, k.float(), v, 4)
    with pytest.raises(ValueError, match=r"^q, k, v"):
        approximate("sa", q, k, v[..., :3], 4)
    with pytest.raises(ValueError, match=r"^seed"):
        approximate("sa", q, k, v, 4, seed=-1)


def test_costs():
    n, d, h = 512, 32, 4
    full = exact_cost(n, d, h)
    assert isinstance(full, Cost) and full.flops == h * (4 * n * n * d + 5 * n * n)
    assert full.kv_cache_bytes_per_token == 2 * h * d * 4 and set(full.to_dict()) == {
        "flops",
        "peak_bytes",
        "kv_cache_bytes_per_token",
    }
    assert exact_cost(n, d, h, causal=True).flops == full.flops / 2
    for name, spec in METHODS.items():
        b = budgets_for(name, [64], n, d, h)[0]
        for causal in (c for c in (False, True) if spec.has_version(c)):
            cost = method_cost(name, n, d, b, heads=h, causal=causal)
            assert cost.flops > 0 and cost.peak_bytes > 0 and cost.kv_cache_bytes_per_token > 0, name
    swa = method_cost("swa", n, d, 64, heads=h)
    assert swa.flops == h * (4 * n * 64 * d + 5 * n * 64) and swa.kv_cache_bytes_per_token == 2 * h * d * 4 * 64 / n
    assert method_cost("mla", n, d, 16, heads=h).kv_cache_bytes_per_token == 16 * 4
    assert method_cost("tpa", n, d, 2, heads=h).kv_cache_bytes_per_token == 2 * 2 * (h + d) * 4
    assert (
        method_cost("performer", 2 * n, d, 64).kv_cache_bytes_per_token
        < method_cost("performer", n, d, 64).kv_cache_bytes_per_token
    )
    assert method_cost("reformer", n, d, 64, rounds=4).flops > method_cost("reformer", n, d, 64).flops
    assert method_cost("polysketch", n, d, 64, degree=8).flops > method_cost("polysketch", n, d, 64).flops
    assert method_cost("mla", n, d, 8, causal=True, calibration=None) == method_cost("mla", n, d, 8, causal=True)
    with pytest.raises(ValueError, match=r"^options"):
        method_cost("sa", n, d, 8, rounds=2)
    with pytest.raises(ValueError, match=r"^n"):
        method_cost("sa", 0, d, 8)
    with pytest.raises(TypeError, match=r"^d"):
        method_cost("sa", n, 32.0, 8)
    with pytest.raises(ValueError, match=r"^causal"):
        method_cost("svd", n, d, 8, causal=True)
    with pytest.raises(ValueError, match=r"^causal: sa-band is causal only"):
        method_cost("sa-band", n, d, 8)


@pytest.mark.parametrize(
    "name",
    [
        "exact",
        "routing",
        "hyperattention",
        "kdeformer",
        "linformer",
        "linformer-jl",
        "nystromformer",
        "cholesky",
        "loki",
        "performer",
        "polysketch",
        "tpa",
    ],
)
def test_cost_formulas_match_the_products_torch_counts(name):
    """Where the lab's code is the algorithm, the FLOPs formula agrees with ``torch.utils.flop_counter`` (products
    only; the formula adds softmax and exponentials, torch skips decompositions: LevAttention's ``pinv`` of
    ``K^T K`` and Skyformer's of the landmark kernel are most of the gap there)."""
    from gpu.approx.measure import measured_flops

    n, d, h, m = 256, 32, 2, 2 if name == "tpa" else 32
    formula = exact_cost(n, d, h).flops if name == "exact" else method_cost(name, n, d, m, heads=h).flops
    assert 0.85 < formula / measured_flops(name, n, d, m, heads=h) < 1.2


def test_peak_memory_formulas_match_the_profiled_allocations():
    """Every method's peak-bytes formula is within a factor of about 2 of what torch's profiler records (plus the
    inputs); the formulas omit short-lived temporaries."""
    from gpu.approx.measure import measured_peak_bytes

    n, d, h = 256, 32, 2
    for name, spec in METHODS.items():
        b, causal = budgets_for(name, [32], n, d, h)[0], not spec.bidirectional
        measured = measured_peak_bytes(name, n, d, b, heads=h, causal=causal) + 3 * 4 * n * d * h
        assert 0.7 < measured / method_cost(name, n, d, b, heads=h, causal=causal).peak_bytes < 2.2, name


def test_causal_cost_formulas_match_the_products_torch_counts():
    from gpu.approx.measure import measured_flops

    for name in ("exact", "performer", "loki", "tpa"):
        m = 2 if name == "tpa" else 32
        formula = (
            exact_cost(256, 32, 2, causal=True).flops
            if name == "exact"
            else method_cost(name, 256, 32, m, heads=2, causal=True).flops
        )
        measured = measured_flops(name, 256, 32, m, heads=2, causal=True)
        assert 0.4 < formula / measured < 1.2, name  # the lab's causal masks still multiply the whole square


def test_synthetic_study_cli(tmp_path, capsys):
    out = tmp_path / "rows.json"
    assert main(["--n", "48", "--d", "8", "--budgets", "8,16", "--seeds", "2", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    expected = sum(len(budgets_for(name, [8, 16], 48, 8)) for name, m in METHODS.items() if m.bidirectional)
    assert len(rows) == 3 * expected
    lowrank_svd = [r["mean"] for r in rows if r["kind"] == "lowrank" and r["method"] == "svd"]
    assert lowrank_svd[1] < lowrank_svd[0]
    assert {r["budget"] for r in rows if r["method"] == "tpa"} == {1, 2, 4}
    assert all({"flops", "flops_share", "kv_cache_bytes_per_token"} <= set(r) for r in rows)
    assert "relative error" in capsys.readouterr().out
    assert main(["--n", "48", "--d", "8", "--budgets", "8", "--seeds", "1", "--kinds", "spiky", "--causal"]) == 0
    assert "causal" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--kinds", "nope"])


@pytest.mark.parametrize("where", ["folder", "missing parent"])
def test_json_path_is_checked_before_the_study(where, tmp_path, capsys, monkeypatch):
    import gpu.approx.cli as cli

    monkeypatch.setattr(cli, "study", lambda *a: pytest.fail("the study ran before --json was checked"))
    target = tmp_path if where == "folder" else tmp_path / "missing" / "rows.json"
    with pytest.raises(SystemExit) as exit_:
        main(["--n", "48", "--json", str(target)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--json" in err[0]
    assert list(tmp_path.iterdir()) == []


def test_costs_cli(capsys):
    assert main(["--costs", "--n", "256", "--budgets", "32"]) == 0
    text = capsys.readouterr().out
    assert "KV B/token" in text and "linformer" in text
    assert main(["--costs", "--n", "64", "--budgets", "8", "--measure", "--methods", "sa,linformer"]) == 0
    assert "lab MiB" in capsys.readouterr().out
    assert main(["--costs", "--n", "256", "--budgets", "32", "--causal", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    names = {r["method"] for r in doc["rows"]}
    assert "svd" not in names and {"exact", "performer", "swa"} <= names
    with pytest.raises(SystemExit) as info:
        main(["--costs", "--budgets", "0"])
    assert info.value.code == 2
