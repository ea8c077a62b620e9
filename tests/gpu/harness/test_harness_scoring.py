"""The evaluation harness against the obvious computation: each request's full-sequence forward (the pattern at every
position) or its prefill-then-decode under the library's ``decode="exact"`` protocol, in float64 on a tiny Llama."""

import math

import pytest
import torch

pytest.importorskip("transformers")
from hf_eval_models import FIXTURES, TEXT, tiny_llama, tiny_tokenizer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers import DynamicCache

from gpu.attention.generation_patterns import GENERATION_METHODS
from gpu.harness.scoring import (
    EvalAttention,
    encode_pair,
    item_scores,
    prefill_method,
    score_items,
    shared_prefixes,
    task_scores,
)
from gpu.harness.tasks import EvalItem, EvalRequest, load_requests
from gpu.hf import register

WORDS = " ".join(TEXT).split()


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def model():
    return tiny_llama(positions=1024)


def oracle_loglikelihood(model, tokenizer, context, continuation, attention):
    """The continuation's log-likelihood from one full forward, or a prefill and one decode call (exact decode)."""
    c, x = encode_pair(tokenizer, context, continuation)
    ids = torch.tensor([c + x])
    if attention.method == "exact":
        name = "sdpa"
    elif attention.prefill_only:
        name = register(prefill_method(attention.method), attention.budget, attention.seed)
    else:
        name = register(
            attention.method,
            attention.budget,
            attention.seed,
            decode=attention.decode,
            exact_layers=attention.exact_layers,
        )
    model.set_attn_implementation(name)
    with torch.no_grad():
        if attention.decode == "exact" and attention.method != "exact":
            cache = DynamicCache()
            head = model(input_ids=ids[:, : len(c)], cache=cache, use_cache=True).logits
            model.set_attn_implementation("sdpa" if attention.prefill_only else name)
            tail = model(input_ids=ids[:, len(c) :], cache=cache, use_cache=True).logits
            logits = torch.cat([head, tail], 1)
        else:
            logits = model(input_ids=ids).logits
    model.set_attn_implementation("sdpa")
    logp = logits[0, len(c) - 1 : -1].log_softmax(-1)
    return float(logp.gather(1, torch.tensor(x)[:, None]).sum()), bool((logp.argmax(-1) == torch.tensor(x)).all())


def phrase(draw, low, high):
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=low, max_size=high)))


@st.composite
def items_strategy(draw):
    shots = phrase(draw, 0, 30)
    items = []
    for doc in range(draw(st.integers(1, 5))):
        question = shots + "\nQ: " + phrase(draw, 1, 8) + "\nA:"
        own_contexts = draw(st.booleans())  # WinoGrande's choices come with contexts of their own
        requests = []
        for choice in range(draw(st.integers(1, 4))):
            context = question + (" " + phrase(draw, 1, 3) if own_contexts else "") + draw(st.sampled_from(["", " "]))
            requests.append(EvalRequest(choice, context, " " + phrase(draw, 1, 6)))
        items.append(EvalItem("t", doc, draw(st.integers(0, len(requests) - 1)), tuple(requests), "t"))
    return items


attentions = st.builds(
    EvalAttention,
    method=st.sampled_from(sorted(GENERATION_METHODS)),
    budget=st.integers(1, 9),
    seed=st.integers(0, 3),
    decode=st.sampled_from(["sparse", "exact"]),
    exact_layers=st.sampled_from([(), (1,)]),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=items_strategy(), attention=attentions, batch_size=st.sampled_from([1, 2, 8]))
def test_each_choice_scores_as_its_own_forward(model, tokenizer, items, attention, batch_size):
    records = score_items(model, tokenizer, items, attention, batch_size=batch_size, progress=False)
    for item, record in zip(items, records, strict=True):
        assert record["doc_id"] == item.doc_id and record["label"] == item.label
        for request, choice in zip(item.requests, record["choices"], strict=True):
            ll, greedy = oracle_loglikelihood(model, tokenizer, request.context, request.continuation, attention)
            assert math.isclose(choice["ll"], ll, rel_tol=0, abs_tol=1e-9)
            assert choice["greedy"] == greedy
            assert choice["tokens"] == len(encode_pair(tokenizer, request.context, request.continuation)[1])
            assert choice["chars"] == len(request.continuation)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    items=items_strategy(),
    attention=st.builds(
        EvalAttention,
        method=st.sampled_from(["sa-band", "sa-band+swa", "performer"]),
        budget=st.integers(1, 9),
        seed=st.integers(0, 3),
        decode=st.just("exact"),
    ),
    batch_size=st.sampled_from([1, 2, 8]),
)
def test_prefill_only_forms_score_each_whole_context_then_the_exact_decode(
    model, tokenizer, items, attention, batch_size
):
    """The lab's forms draw or fit over the sequence they see: each context runs whole (right-padded rows of a batch
    are each the context alone), and the continuation attends exactly over that cache."""
    records = score_items(model, tokenizer, items, attention, batch_size=batch_size, progress=False)
    for item, record in zip(items, records, strict=True):
        for request, choice in zip(item.requests, record["choices"], strict=True):
            ll, greedy = oracle_loglikelihood(model, tokenizer, request.context, request.continuation, attention)
            assert math.isclose(choice["ll"], ll, rel_tol=0, abs_tol=1e-9)
            assert choice["greedy"] == greedy


def test_the_papers_causal_sa_is_not_the_generation_form():
    """``sa-band`` masks a band of the whole context's permutation (about (m + 1) / 2 keys per query); ``sa`` ranks
    the keys before each query (about m): different patterns, different scores."""
    item = EvalItem("t", 0, 0, (EvalRequest(0, " ".join(WORDS[:60]), " " + WORDS[61]),), "t")
    model, tokenizer = tiny_llama(positions=1024), tiny_tokenizer()
    lab, generation = (
        score_items(model, tokenizer, [item], EvalAttention(m, 4, 0, "exact"), progress=False)[0]
        for m in ("sa-band", "sa")
    )
    assert lab["choices"][0]["ll"] != pytest.approx(generation["choices"][0]["ll"], abs=1e-4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "sa-band", "budget": 8}, "^decode: sa-band runs prefill only"),
        ({"method": "sa-band", "budget": 8, "decode": "exact", "exact_layers": (1,)}, "^exact_layers: sa-band"),
        ({"method": "mla", "budget": 8, "decode": "exact"}, "^method: "),  # calibrated: not in the harness
        ({"method": "linformer", "budget": 8, "decode": "exact"}, "^method: "),  # not causal
    ],
)
def test_prefill_only_refusals(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EvalAttention(**kwargs)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=items_strategy(), method=st.sampled_from(["sa", "moba", "sa+swa"]), budget=st.integers(1, 6))
def test_both_protocols_in_one_pass_equal_each_alone_and_the_prefix_changes_nothing(
    model, tokenizer, items, method, budget
):
    sparse, exact = EvalAttention(method, budget, 1), EvalAttention(method, budget, 1, decode="exact")
    both = score_items(model, tokenizer, items, [sparse, exact], progress=False)
    no_prefix = score_items(model, tokenizer, items, exact, prefixes={}, progress=False)
    for attention, alone in (
        (sparse, score_items(model, tokenizer, items, sparse, progress=False)),
        (exact, no_prefix),
    ):
        for a, b in zip(both[attention.label], alone, strict=True):
            assert [c["ll"] for c in a["choices"]] == pytest.approx([c["ll"] for c in b["choices"]], abs=1e-9)


def test_the_shared_prefix_is_the_longest_common_run_of_tokens(tokenizer):
    items = load_requests(FIXTURES / "arc_easy_rc_5shot.jsonl")
    [prefix] = shared_prefixes(tokenizer, items).values()
    contexts = [encode_pair(tokenizer, r.context, r.continuation)[0] for item in items for r in item.requests]
    assert all(c[:prefix] == contexts[0][:prefix] for c in contexts)
    assert len({tuple(c[: prefix + 1]) for c in contexts}) > 1 or prefix == min(map(len, contexts)) - 1


def test_fixture_tasks_score_and_the_metrics_follow_from_the_records(model, tokenizer):
    for name, kind in (
        ("arc_easy_rc_5shot", "choice"),
        ("winogrande_rc_5shot", "choice"),
        ("lambada_bpb_0shot", "target"),
    ):
        items = load_requests(FIXTURES / f"{name}.jsonl", kind=kind)
        records = score_items(model, tokenizer, items, EvalAttention("sa", 8, decode="exact"), progress=False)
        scores = task_scores(records, kind)
        assert scores["items"] == len(items) and 0 <= scores["acc"] <= 1
        if kind == "target":
            choice = records[0]["choices"][0]
            assert item_scores(records[0], kind)["bpb"] == pytest.approx(-choice["ll"] / choice["bytes"] / math.log(2))


def test_metrics_by_hand():
    choices = [
        {"ll": -4.0, "tokens": 2, "chars": 8, "bytes": 8, "greedy": False},
        {"ll": -3.0, "tokens": 1, "chars": 2, "bytes": 2, "greedy": False},
        {"ll": -5.0, "tokens": 5, "chars": 20, "bytes": 20, "greedy": False},
    ]
    # raw: choice 1; per char: -0.5, -1.5, -0.25 -> choice 2; per token: -2, -3, -1 -> choice 2
    assert item_scores({"label": 2, "choices": choices}) == {"acc": 0.0, "acc_per_char": 1.0, "acc_per_token": 1.0}
    assert item_scores({"label": 1, "choices": choices})["acc"] == 1.0


def test_encode_pair_moves_trailing_spaces_and_splits_the_whole_encoding(tokenizer):
    context, continuation = encode_pair(tokenizer, "Answer: ", "food")
    assert tokenizer.decode(context) == "Answer:" and tokenizer.decode(continuation) == " food"
    whole = tokenizer("Answer: food", add_special_tokens=False)["input_ids"]
    assert context + continuation == whole
    assert encode_pair(tokenizer, "", "food")[0] == [tokenizer.eos_token_id]


def test_refusals(model, tokenizer):
    long = EvalItem("t", 0, 0, (EvalRequest(0, "food " * 1200, " water"),), "t")
    with pytest.raises(ValueError, match=r"^items: t item 0 has \d+ tokens, more than the model's max_position"):
        score_items(model, tokenizer, [long], progress=False)
    item = EvalItem("t", 0, 0, (EvalRequest(0, "Q: food", " water"),), "t")
    with pytest.raises(ValueError, match=r"^prefixes: 99 shared tokens"):
        score_items(model, tokenizer, [item], prefixes={"t": 99}, progress=False)
    with pytest.raises(TypeError, match=r"^attention: "):
        score_items(model, tokenizer, [item], "sa", progress=False)
    with pytest.raises(ValueError, match=r"^attention: the attentions scored together must differ in decode only"):
        score_items(model, tokenizer, [item], [EvalAttention("sa", 4), EvalAttention("sa", 8)], progress=False)
    with pytest.raises(ValueError, match=r"^budget: expected an integer in \[1, 65536\]"):
        EvalAttention("swa", 10**12)
    with pytest.raises(TypeError, match=r"^exact_layers: "):
        EvalAttention("swa", 4, exact_layers=3)
    with pytest.raises(ValueError, match=r"^method: "):
        EvalAttention("nope", 4)


def _encoded(group: str, context: int, continuations: list[int]):
    from gpu.harness.scoring import _Encoded

    requests = tuple(EvalRequest(i, "c", "x") for i in range(len(continuations)))
    return _Encoded(
        EvalItem(group, 0, 0, requests, group),
        ((1,) * context,) * len(continuations),
        tuple((2,) * n for n in continuations),
    )


@settings(max_examples=100, deadline=None)
@given(
    shapes=st.lists(
        st.tuples(st.sampled_from("ab"), st.integers(1, 40), st.lists(st.integers(1, 30), min_size=1, max_size=4)),
        min_size=1,
        max_size=30,
    ),
    batch_size=st.integers(1, 8),
)
def test_chunks_cover_each_item_once_by_group_and_pad_no_more_than_sorting_by_context(shapes, batch_size):
    """Every item in one chunk of at most ``batch_size`` items of one group, the groups in order, and no more padded
    tokens than chunks of items sorted by context length (the other orders are candidates, not obligations)."""
    from gpu.harness.scoring import _chunks, _padded_tokens

    encoded = [_encoded(group, context, continuations) for group, context, continuations in shapes]
    chunks = _chunks(encoded, {}, batch_size)
    assert sorted(j for chunk in chunks for j in chunk) == list(range(len(encoded)))
    assert all(1 <= len(chunk) <= batch_size and len({encoded[j].item.group for j in chunk}) == 1 for chunk in chunks)
    order = [encoded[chunk[0]].item.group for chunk in chunks]
    assert order == sorted(order, key=[e.item.group for e in encoded].index)  # one run per group, first seen first
    by_context = []
    for group in dict.fromkeys(e.item.group for e in encoded):
        members = sorted((j for j, e in enumerate(encoded) if e.item.group == group), key=lambda j: shapes[j][1])
        by_context += [members[i : i + batch_size] for i in range(0, len(members), batch_size)]
    padded = sum(_padded_tokens([encoded[j] for j in chunk], 0) for chunk in chunks)
    assert padded <= sum(_padded_tokens([encoded[j] for j in chunk], 0) for chunk in by_context)


def test_padded_tokens_by_hand():
    from gpu.harness.scoring import _padded_tokens

    # contexts of 5 and 3 tokens (2 rows of 5); continuations of 4, 2 and 1 tokens: rows of 3 and 1 token, padded to 3
    assert _padded_tokens([_encoded("a", 5, [4, 2]), _encoded("a", 3, [1])], 0) == 2 * 5 + 2 * 3
    assert _padded_tokens([_encoded("a", 5, [4, 2]), _encoded("a", 3, [1])], 2) == 2 * 3 + 2 * 3  # 2 shared tokens
    # two items with the same context run it as two rows (one per item), as _score_chunk does
    assert _padded_tokens([_encoded("a", 4, [1]), _encoded("a", 4, [1])], 0) == 2 * 4
