"""The attention profile against float64 dense oracles on tiny random Llama models: the regions, recall, output error
and rollout from dense ``n x n`` weights built by plain loops, the restricted layer output from the harness's own
``generation_attention``, and the KL from the registered implementation's forward."""

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu.attention.generation_keys import position_keys
from gpu.attention.generation_patterns import generation_attention
from gpu.profile.measures import ProfilePattern, attention_profile

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.usefixtures("one_torch_thread")

POSITION_METHODS = ["swa", "swa+sink", "sa", "sa+sink", "sa+swa", "sa+swa-union", "swa+sink+sa", "sa-ms"]


def tiny_llama(layers=2, heads=4, kv_heads=2, d=4, seed=0, max_positions=64):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=40,
        hidden_size=heads * d,
        intermediate_size=16,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions,
        attn_implementation="sdpa",
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.float64).eval()
    for p in model.parameters():  # larger weights: peaked, position-dependent attention
        p.data.mul_(8.0)
    return model


def captured(model, ids):
    """Every layer's float64 ``q`` (heads), ``k``, ``v`` (kv heads repeated), by a plain recording attention."""
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    store = {}

    def record(module, query, key, value, mask, dropout=0.0, scaling=None, is_causal=None, **kwargs):
        groups = module.num_key_value_groups
        store[module.layer_idx] = (
            query[0],
            key[0].repeat_interleave(groups, 0),
            value[0].repeat_interleave(groups, 0),
            scaling,
            module,
        )
        return sdpa_attention_forward(
            module, query, key, value, mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
        )

    AttentionInterface.register("test-record", record)
    AttentionMaskInterface.register("test-record", sdpa_mask)
    model.set_attn_implementation("test-record")
    with torch.no_grad():
        model(input_ids=torch.tensor([ids]), use_cache=False)
    model.set_attn_implementation("sdpa")
    return [store[layer] for layer in range(len(store))]


def dense_weights(q, k, scaling):
    """``(heads, n, n)`` causal softmax weights by a plain masked softmax."""
    n = q.shape[1]
    scores = q @ k.transpose(1, 2) * scaling
    scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(scores, -1)


def dense_keys(pattern, layer, layers, heads, n, max_length, q, k, scaling):
    """Per part, its weight and a dense ``(heads, n, n)`` bool of the keys each query reads, by plain loops."""
    if pattern.method == "top-k":
        w = dense_weights(q, k, scaling)
        keep = torch.zeros(heads, n, n, dtype=torch.bool)
        for h in range(heads):
            for i in range(n):
                order = sorted(range(i + 1), key=lambda j: -float(w[h, i, j]))
                keep[h, i, order[: pattern.budget]] = True
        return [(1.0, keep)]
    names = [("sa", 0.5), ("swa", 0.5)] if pattern.method == "sa+swa" else [(pattern.method, 1.0)]
    budget = max(1, pattern.budget // 2) if pattern.method == "sa+swa" else pattern.budget
    parts = []
    for name, weight in names:
        idx, valid = position_keys(name, torch.arange(n), n, budget, heads, pattern.seed * layers + layer, max_length)
        keep = torch.zeros(heads, n, n, dtype=torch.bool)
        for h in range(heads):
            for i in range(n):
                for slot in range(idx.shape[-1]):
                    if valid[h, i, slot]:
                        keep[h, i, idx[h, i, slot]] = True
        parts.append((weight, keep))
    return parts


def oracle(model, ids, pattern, sink, bands, max_length):
    """Regions, recall, head error, exact and pattern rollout at the last position, from dense weights."""
    layers_qkv = captured(model, ids)
    n, layers = len(ids), len(layers_qkv)
    heads = layers_qkv[0][0].shape[0]
    regions, recall, error = [], [], []
    exact_mean, pattern_mean = [], []
    for layer, (q, k, v, scaling, _) in enumerate(layers_qkv):
        w = dense_weights(q, k, scaling)
        out = w @ v
        r = torch.zeros(heads, n, len(bands) + 2, dtype=torch.float64)
        for i in range(n):
            for j in range(i + 1):
                if j < sink:
                    region = 0
                else:
                    region = 1 + sum(i - j >= b for b in bands)
                r[:, i, region] += w[:, i, j]
        regions.append(r)
        exact_mean.append(w.mean(0))
        if layer in pattern.exact_layers:
            recall.append(torch.ones(heads, n, dtype=torch.float64))
            error.append(torch.zeros(heads, n, dtype=torch.float64))
            pattern_mean.append(w.mean(0))
            continue
        parts = dense_keys(pattern, layer, layers, heads, n, max_length, q, k, scaling)
        union = torch.stack([keep for _, keep in parts]).any(0)
        recall.append((w * union).sum(-1))
        restricted = sum(weight * (w * keep) / (w * keep).sum(-1, keepdim=True) for weight, keep in parts)
        pattern_mean.append(restricted.mean(0))
        harness = generation_attention(
            pattern.method, q[None], k[None], v[None], max(pattern.budget, 1), pattern.seed * layers + layer, max_length
        )[0]
        assert torch.allclose(restricted @ v, harness, atol=1e-10)  # the same keys as the harness reads
        error.append((harness - out).norm(dim=-1) / out.norm(dim=-1))
    eye = torch.eye(n, dtype=torch.float64)
    rollout = {}
    for name, means in (("exact", exact_mean), ("pattern", pattern_mean)):
        total = eye
        for a in means:
            total = (0.5 * a + 0.5 * eye) @ total
        rollout[name] = total[n - 1]
    return torch.stack(regions), torch.stack(recall), torch.stack(error), rollout


@settings(max_examples=25)
@given(
    method=st.sampled_from([*POSITION_METHODS, "top-k"]),
    n=st.integers(2, 24),
    budget=st.integers(1, 9),
    seed=st.integers(0, 3),
    heads_kv=st.sampled_from([(2, 1), (2, 2), (4, 2), (3, 1)]),
    sink=st.integers(0, 2),
    exact_layer=st.sampled_from([(), (0,), (1,)]),
    block_bytes=st.sampled_from([1024, 1 << 20]),
)
def test_profile_equals_the_dense_oracle(method, n, budget, seed, heads_kv, sink, exact_layer, block_bytes):
    heads, kv_heads = heads_kv
    model = tiny_llama(heads=heads, kv_heads=kv_heads, seed=seed)
    ids = [int(x) for x in np.random.default_rng(seed).integers(0, 40, n)]
    pattern = ProfilePattern(method, budget, seed=seed, exact_layers=exact_layer)
    bands = (1, 2, 4)
    profile = attention_profile(
        model, [ids], [pattern], sink=sink, bands=bands, block_bytes=block_bytes, progress=False
    )
    t = profile.texts[0]
    regions, recall, error, rollout = oracle(model, ids, pattern, sink, bands, 64)
    assert np.allclose(t.regions, regions.numpy(), atol=1e-6)
    assert np.allclose(t.recall[0], recall.numpy(), atol=1e-6)
    assert np.allclose(t.head_error[0], error.numpy(), atol=1e-5)
    assert np.allclose(t.rollout[0], rollout["exact"].numpy(), atol=1e-6)
    assert np.allclose(t.pattern_rollout[0, 0], rollout["pattern"].numpy(), atol=1e-6)
    overlap = np.minimum(rollout["exact"].numpy(), rollout["pattern"].numpy()).sum()
    assert t.overlap[0, 0] == pytest.approx(overlap, abs=1e-5)


@settings(max_examples=10)
@given(
    method=st.sampled_from(["sa", "swa+sink", "sa+swa", "moba", "top-k"]),
    seed=st.integers(0, 3),
    block_bytes=st.sampled_from([1024, 1 << 20]),
)
def test_the_scored_positions_alone_are_the_same_numbers_there(method, seed, block_bytes):
    model = tiny_llama(heads=4, kv_heads=2, seed=seed)
    rng = np.random.default_rng(seed)
    ids = [[int(x) for x in rng.integers(0, 40, size)] for size in (30, 17)]
    scored = [sorted({int(x) for x in rng.integers(0, len(t), 4)}) for t in ids]
    pattern = [ProfilePattern(method, 4, seed=seed, exact_layers=(1,) if seed % 2 else ())]
    every = attention_profile(model, ids, pattern, scored=scored, kl=False, block_bytes=block_bytes, progress=False)
    fast = attention_profile(
        model, ids, pattern, scored=scored, kl=False, positions="scored", block_bytes=block_bytes, progress=False
    )
    for a, b, at in zip(every.texts, fast.texts, scored, strict=True):
        assert b.measured.tolist() == at and a.measured is None
        assert np.array_equal(a.regions[:, :, at], b.regions)
        for name in ("recall", "head_error", "layer_error"):
            assert np.allclose(getattr(a, name)[..., at], getattr(b, name), rtol=1e-6, atol=1e-7), name
        assert np.isnan(b.overlap).all() and np.isnan(b.rollout).all()
    (row,), (fast_row,) = every.summary(), fast.summary()
    for measure in ("recall_scored", "error_scored"):
        assert fast_row[measure] == pytest.approx(row[measure], rel=1e-6)
    assert np.isnan(fast_row["recall"]) and np.isnan(fast_row["overlap"])


def test_kl_is_the_registered_forward_against_sdpa():
    from gpu.hf import register

    model = tiny_llama(heads=4, kv_heads=2)
    ids = list(range(30))
    pattern = ProfilePattern("sa", 4, seed=2, exact_layers=(1,))
    t = attention_profile(model, [ids], [pattern], scored=[[10, 29]], progress=False).texts[0]
    with torch.no_grad():
        exact = model(input_ids=torch.tensor([ids])).logits[0].log_softmax(-1)
        model.set_attn_implementation(register("sa", 4, 2, exact_layers=(1,)))
        approx = model(input_ids=torch.tensor([ids])).logits[0].log_softmax(-1)
        model.set_attn_implementation("sdpa")
    expected = (exact.exp() * (exact - approx)).sum(-1)[[10, 29]]
    assert np.allclose(t.kl[0], expected.numpy(), rtol=1e-5, atol=1e-9)
    assert t.kl[0].min() > 0


def test_moba_error_is_the_harness_output():
    model = tiny_llama(heads=2, kv_heads=1)
    ids = list(range(33))
    t = attention_profile(model, [ids], [ProfilePattern("moba", 8)], kl=False, progress=False).texts[0]
    layers_qkv = captured(model, ids)
    for layer, (q, k, v, scaling, _) in enumerate(layers_qkv):
        out = dense_weights(q, k, scaling) @ v
        harness = generation_attention("moba", q[None], k[None], v[None], 8)[0]
        expected = (harness - out).norm(dim=-1) / out.norm(dim=-1)
        assert np.allclose(t.head_error[0, layer], expected.numpy(), atol=1e-5)


def test_a_pattern_has_the_same_numbers_alone_and_with_others():
    model = tiny_llama(heads=4, kv_heads=2)
    ids = [list(range(3, 40)), list(range(20))]
    sa = ProfilePattern("sa", 6, seed=1)
    alone = attention_profile(model, ids, [sa], progress=False)
    together = attention_profile(model, ids, [ProfilePattern("swa", 6), sa, ProfilePattern("top-k", 3)], progress=False)
    for a, b in zip(alone.texts, together.texts, strict=True):
        for name in ("recall", "head_error", "layer_error", "pattern_rollout", "overlap", "kl"):
            assert np.array_equal(getattr(a, name)[0], getattr(b, name)[1]), name
    assert alone.summary()[0] == together.summary()[1]


def test_exact_pattern_and_summary_rows():
    model = tiny_llama()
    profile = attention_profile(
        model, [list(range(12))], [ProfilePattern("exact"), ProfilePattern("swa", 2)], progress=False
    )
    exact, swa = profile.summary()
    assert exact["recall"] == 1.0 and exact["error"] == 0.0 and exact["kl"] == 0.0
    assert exact["overlap"] == pytest.approx(1.0)
    assert swa["recall"] < 1.0 and swa["kl"] > 0.0
    assert profile.predicted_rank("kl") == {"exact": 1, "swa-2": 2}
    data = profile.to_dict()
    assert data["summary"] == profile.summary() and len(data["layer_head_regions"]) == 2


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda m: attention_profile(m, [], []), "texts"),
        (lambda m: attention_profile(m, [[]], []), "texts"),
        (lambda m: attention_profile(m, [[1] * 65], []), "texts"),
        (lambda m: attention_profile(m, [[1, 40]], []), "texts"),
        (lambda m: attention_profile(m, ["abc"], []), "tokenizer"),
        (lambda m: attention_profile(m, [[1, 2]], [], scored=[[2]]), "scored"),
        (lambda m: attention_profile(m, [[1, 2]], [], bands=(4, 2)), "bands"),
        (lambda m: attention_profile(m, [[1, 2]], [], sink=-1), "sink"),
        (lambda m: attention_profile(m, [[1, 2]], [], positions="some"), "positions"),
        (lambda m: attention_profile(m, [[1, 2]], [ProfilePattern("sa", 2, exact_layers=(5,))]), "exact_layers"),
        (lambda m: attention_profile(m, [[1, 2]], [ProfilePattern("sa", 2)] * 2), "patterns"),
        (lambda m: attention_profile(m, [[1] * 60], [], max_memory=1000), "max_memory"),
        (lambda m: ProfilePattern("nope", 2), "method"),
        (lambda m: ProfilePattern("sa", 0), "budget"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(call, name):
    from refusals import assert_refused

    model = tiny_llama()
    with pytest.raises((ValueError, TypeError)) as info:
        call(model)
    assert_refused(lambda: call(model), type(info.value), name)


@settings(max_examples=8)
@given(method=st.sampled_from(["sa", "swa+sink", "sa-ms", "moba", "top-k"]), seed=st.integers(0, 5))
def test_a_shared_prefix_gives_the_whole_text_numbers(method, seed):
    model = tiny_llama(heads=4, kv_heads=2, seed=seed)
    rng = np.random.default_rng(seed)
    prefix = [int(x) for x in rng.integers(0, 40, 20)]
    ids = [prefix + [int(x) for x in rng.integers(0, 40, size)] for size in (3, 9, 5)]
    pattern = [ProfilePattern(method, 4, seed=seed, exact_layers=(1,) if seed % 2 else ())]
    shared = attention_profile(model, ids, pattern, progress=False)
    whole = attention_profile(model, ids, pattern, share_prefix=False, progress=False)
    for a, b in zip(shared.texts, whole.texts, strict=True):
        for name in ("regions", "recall", "head_error", "layer_error", "rollout", "pattern_rollout", "kl"):
            assert np.allclose(getattr(a, name), getattr(b, name), rtol=1e-6, atol=1e-8), name


@pytest.fixture(scope="module")
def saved_tiny_model(tmp_path_factory):
    """A tiny random Llama in float32 and its tokenizer saved to a folder, as ``--model`` reads one."""
    from hf_eval_models import tiny_llama as harness_llama
    from hf_eval_models import tiny_tokenizer

    folder = tmp_path_factory.mktemp("tiny-llama")
    harness_llama(dtype=torch.float32).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder


def test_the_command_writes_what_the_api_gives(saved_tiny_model, tmp_path, capsys):
    from hf_eval_models import TEXT

    from gpu.hf.models import load_causal_lm
    from gpu.profile.cli import main

    lines = [t for t in TEXT if "\n" not in t][:3]
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(lines) + "\n")
    out = tmp_path / "p.json"
    argv = [
        "--model",
        str(saved_tiny_model),
        "--texts",
        str(texts),
        "--patterns",
        "swa,sa",
        "--budgets",
        "4",
        "--positions",
        "scored",
        "--no-kl",
        "--json",
        str(out),
        "--quiet",
    ]
    assert main(argv) == 0
    assert "rank by recall_scored" in capsys.readouterr().out
    model, tokenizer = load_causal_lm(saved_tiny_model)
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in lines]
    api = attention_profile(
        model, ids, [ProfilePattern("swa", 4), ProfilePattern("sa", 4)], positions="scored", kl=False, progress=False
    )
    rows = json.loads(out.read_text())["rows"]
    expected = api.summary()
    ranks = api.predicted_rank("recall_scored")
    for row, want in zip(rows, expected, strict=True):
        assert row["label"] == want["label"] and row["rank"] == ranks[want["label"]]
        assert row["recall_scored"] == pytest.approx(want["recall_scored"], rel=1e-6)
        assert row["error_scored"] == pytest.approx(want["error_scored"], rel=1e-6)


@pytest.mark.parametrize(
    "extra",
    [["--no-kl", "--rank-by", "kl"], ["--positions", "scored", "--rank-by", "overlap"], ["--positions", "some"]],
)
def test_the_command_refuses_a_measure_it_does_not_compute(extra, capsys):
    from gpu.profile.cli import main

    with pytest.raises(SystemExit) as info:
        main(["--texts", "nothing.txt", *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2 and len(err) == 1 and err[0].count("--") >= 1
    assert ("--rank-by" in err[0]) or ("--positions" in err[0])


def test_a_rank_by_a_measure_not_taken_is_refused():
    profile = attention_profile(tiny_llama(), [list(range(12))], [ProfilePattern("swa", 2)], kl=False, progress=False)
    with pytest.raises(ValueError, match=r"^measure: kl was not measured"):
        profile.predicted_rank("kl")
