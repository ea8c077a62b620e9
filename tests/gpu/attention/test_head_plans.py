"""Head plans: each head reads its own method's keys (float64 dense oracle), a plan of one method is that method,
incremental decoding through ``register`` equals the full forward, and the key count is the pairs attended."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gpu.attention.generation_keys import position_keys
from gpu.attention.generation_patterns import generation_attention, mean_keys_read
from gpu.attention.head_plans import PLAN_METHODS, HeadPlan, head_plan_attention, plan_mean_keys
from gpu.attention.oracle import dense_oracle

transformers = pytest.importorskip("transformers")
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM  # noqa: E402

from gpu.harness.scoring import EvalAttention  # noqa: E402
from gpu.hf import register  # noqa: E402

HEAD = st.tuples(st.sampled_from(PLAN_METHODS), st.integers(1, 9))


def plan_oracle(plan, layer, q, k, v, seed, max_length):
    """The float64 reference (:func:`gpu.attention.oracle.dense_oracle`) under each head's keys, listed by
    ``position_keys`` one head and one query at a time."""
    n, n_q = k.shape[2], q.shape[2]
    positions = torch.arange(n - n_q, n)
    keep = torch.zeros(len(plan.heads[layer]), n_q, n, dtype=torch.bool)
    for head, (method, budget) in enumerate(plan.heads[layer]):
        idx, valid = position_keys(method, positions, n, max(budget, 1), 1, seed, max_length)
        for row in range(n_q):
            keep[head, row, idx[0, row][valid[0, row]]] = True
    return dense_oracle(q, k, v, keep)


@given(
    heads=st.lists(HEAD, min_size=1, max_size=4),
    n=st.integers(1, 20),
    queries=st.integers(1, 20),
    seed=st.integers(0, 50),
    grouping=st.integers(0, 3),
)
def test_each_head_reads_its_own_keys_as_the_dense_oracle(heads, n, queries, seed, grouping):
    plan = HeadPlan("t", (tuple(heads),))
    n_q = min(n, queries)
    divisors = [d for d in range(1, len(heads) + 1) if len(heads) % d == 0]
    kv_heads = divisors[grouping % len(divisors)]
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, len(heads), n_q, 4, dtype=torch.float64, generator=g)
    k, v = torch.randn(2, 2, kv_heads, n, 4, dtype=torch.float64, generator=g).unbind(0)
    out = head_plan_attention(plan, 0, q, k, v, seed, 32)  # key heads read in place by their groups
    repeat = len(heads) // kv_heads
    expected = plan_oracle(plan, 0, q, k.repeat_interleave(repeat, 1), v.repeat_interleave(repeat, 1), seed, 32)
    assert torch.allclose(out, expected, atol=1e-12)
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("method", PLAN_METHODS)
def test_a_plan_of_one_method_is_that_method(method):
    q, k, v = torch.randn(3, 1, 3, 17, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2)).unbind(0)
    plan = HeadPlan("one", ((((method, 5),) * 3),))
    assert torch.allclose(
        head_plan_attention(plan, 0, q, k, v, 4, 32), generation_attention(method, q, k, v, 5, 4, 32), atol=1e-12
    )
    assert plan_mean_keys(plan, [17], 4, 32) == pytest.approx(mean_keys_read(method, 17, 5, 1, 4, 32))


def test_the_trace_is_the_union_of_the_heads_keys():
    plan = HeadPlan("t", ((("swa", 2), ("exact", 0)), (("swa", 2), ("swa+sink", 3))))
    q, k, v = torch.randn(3, 1, 2, 6, 4).unbind(0)
    seen = {}
    for layer in (0, 1):
        head_plan_attention(plan, layer, q, k, v, trace=lambda positions, keep, layer=layer: seen.update({layer: keep}))
    assert torch.equal(seen[0], torch.ones(6, 6, dtype=torch.bool).tril())
    expected = torch.ones(6, 6, dtype=torch.bool).tril() & ~torch.ones(6, 6, dtype=torch.bool).tril(-2)
    expected[:, 0] = True
    assert torch.equal(seen[1], expected)


def test_mean_keys_counts_the_pairs_attended():
    plan = HeadPlan("t", ((("swa", 2), ("exact", 0)), (("swa+sink", 3), ("swa", 1))))
    # n = 4: swa 2 -> 7 pairs, exact -> 10, swa+sink 3 -> 1 + 2 + 3 + 3 = 9, swa 1 -> 4; n = 1: one pair per head
    assert plan_mean_keys(plan, [4, 1]) == pytest.approx((7 + 10 + 9 + 4 + 4) / (5 * 4))


@pytest.fixture(scope="module")
def model():
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config).double().eval()


PLAN = HeadPlan(
    "mixed",
    (
        (("swa+sink", 4), ("exact", 0), ("sa", 5), ("swa+sink+sa", 6)),
        (("sa+swa-union", 4), ("swa", 3), ("sa+sink", 4), ("swa+sink", 8)),
    ),
)


def test_token_by_token_decoding_equals_the_full_forward(model):
    ids = torch.randint(0, 64, (2, 20), generator=torch.Generator().manual_seed(3))
    model.set_attn_implementation(register(PLAN, None, seed=1))
    with torch.no_grad():
        full = model(input_ids=ids).logits
        cache = DynamicCache(config=model.config)
        prefix = model(input_ids=ids[:, :6], cache=cache, use_cache=True).logits
        steps = [model(input_ids=ids[:, t : t + 1], cache=cache, use_cache=True).logits for t in range(6, 20)]
    assert torch.allclose(torch.cat([prefix, *steps], 1), full, atol=1e-10)


def test_the_registered_plan_runs_each_layer_with_its_own_seed(model):
    ids = torch.randint(0, 64, (1, 16), generator=torch.Generator().manual_seed(4))
    model.set_attn_implementation(register(PLAN, None, seed=1))
    with torch.no_grad():
        registered = model(input_ids=ids).logits
    calls = []

    def attention(module, query, key, value, attention_mask, **kwargs):
        layer = module.layer_idx
        groups = module.num_key_value_groups
        k, v = key.repeat_interleave(groups, 1), value.repeat_interleave(groups, 1)
        calls.append(layer)
        out = head_plan_attention(PLAN, layer, query, k, v, 1 * 2 + layer, 64)
        return out.transpose(1, 2).contiguous(), None

    transformers.AttentionInterface.register("test-plan-oracle", attention)
    model.set_attn_implementation("test-plan-oracle")
    with torch.no_grad():
        assert torch.allclose(model(input_ids=ids).logits, registered, atol=1e-10)
    assert calls == [0, 1]


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: HeadPlan("t", ((("nope", 3),),)), ValueError, "^heads: "),
        (lambda: HeadPlan("t", ((("swa", 0),),)), ValueError, "^heads: "),
        (lambda: HeadPlan("t", ((("swa", 3),), (("swa", 3), ("swa", 3)))), ValueError, "same number of heads"),
        (lambda: HeadPlan("a b", ((("swa", 3),),)), ValueError, "^name: "),
        (lambda: HeadPlan("t", "swa"), TypeError, "^heads: "),
        (lambda: HeadPlan.from_dict({"heads": []}), ValueError, "^plan: "),
        (lambda: register(PLAN, 64), ValueError, "^budget: "),
        (lambda: EvalAttention("sa", 64, plan=PLAN), ValueError, "^plan: "),
        (lambda: plan_mean_keys(PLAN, []), ValueError, "^lengths: "),
        (lambda: head_plan_attention(PLAN, 2, *torch.zeros(3, 1, 4, 3, 2).unbind(0)), ValueError, "^layer: "),
        (lambda: head_plan_attention(PLAN, 0, *torch.zeros(3, 1, 2, 3, 2).unbind(0)), ValueError, "^q: "),
        (
            lambda: head_plan_attention(PLAN, 0, torch.zeros(1, 4, 3, 2), *torch.zeros(2, 1, 3, 3, 2).unbind(0)),
            ValueError,
            "^k, v: ",
        ),
    ],
)
def test_bad_plans_are_one_line_errors(make, error, match):
    with pytest.raises(error, match=match) as info:
        make()
    assert "\n" not in str(info.value)


def test_a_plan_of_another_depth_is_refused_by_the_model(model):
    model.set_attn_implementation(register(HeadPlan("deep", ((("swa", 3),) * 4,) * 3), None))
    with pytest.raises(ValueError, match=r"^plan: deep has 3 layers, the model 2"):
        model(input_ids=torch.zeros(1, 4, dtype=torch.long))


def test_the_plan_survives_its_dict_and_names_its_content():
    same = HeadPlan.from_dict(PLAN.to_dict())
    assert same == PLAN and same.digest == PLAN.digest
    other = HeadPlan("mixed", ((("swa", 4),) * 4,) * 2)
    assert other.digest != PLAN.digest
    assert EvalAttention(plan=PLAN, seed=3).label == f"plan-mixed-{PLAN.digest}-s3"
    assert EvalAttention(plan=other, seed=3).seed == 0  # nothing random in a plan of windows
    assert "mixed" in repr(PLAN) and "2 layers x 4 heads" in repr(PLAN)


def test_a_plan_scores_under_inference_mode_as_under_no_grad(model):
    ids = torch.randint(0, 64, (2, 12), generator=torch.Generator().manual_seed(5))
    model.set_attn_implementation(register(PLAN, None, seed=1))
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
    with torch.inference_mode():
        got = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
    assert torch.allclose(got, expected, atol=1e-12)
