"""gpu.train: quick runs learn, spanning windows equal full attention, runs resume bit for bit, configs fail clearly."""

import dataclasses
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gpu.train import (  # noqa: E402
    QUICK,
    Interrupted,
    LMConfig,
    SyntheticConfig,
    TinyTransformer,
    run_experiment,
    tasks,
)
from gpu.train.__main__ import main  # noqa: E402
from gpu.train.reach import pattern_for, reachable  # noqa: E402
from receptive.patterns.causal_variants import keys_per_query  # noqa: E402

TINY = dataclasses.replace(QUICK.retrieval, kinds=("swa", "sa"), layers=(2,), steps=30, checkpoint_every=10,
                           eval_samples=64, name="tiny")  # fmt: skip


def _comparable(summary):
    return [{k: v for k, v in row.items() if k != "train_seconds"} for row in summary["runs"]]


def test_quick_retrieval_learns_and_full_attention_solves_it(tmp_path):
    summary = run_experiment(QUICK.retrieval, tmp_path, progress=False)
    rows = {(r["kind"], r["layers"]): r for r in summary["runs"]}
    assert len(rows) == 8
    for row in rows.values():
        assert row["train_loss_last"] < row["train_loss_first"], row["run"]
        assert 0 <= row["reachable"] <= 1
    assert rows["full", 1]["accuracy"] > 0.9 and rows["full", 1]["reachable"] == 1.0
    assert rows["swa", 1]["reachable"] < 0.2  # causal window of 4 keys: distances 1..3 of 1..30
    doc = json.loads((tmp_path / "retrieval.json").read_text())
    assert doc["versions"]["torch"] == torch.__version__ and doc["config"]["task"] == "retrieval"
    assert doc["runs"][0]["parameters"]["total"] == doc["runs"][1]["parameters"]["total"]  # full vs swa
    gated = rows["sa+swa", 1]["parameters"]
    assert gated["gates"] == 2 * (32 * 2 + 2) and gated["without_gates"] == rows["sa", 1]["parameters"]["total"]


def test_quick_counting_and_lm_learn(tmp_path):
    counting = run_experiment(QUICK.counting, tmp_path, progress=False)
    assert all(r["train_loss_last"] < r["train_loss_first"] for r in counting["runs"])
    full = next(r for r in counting["runs"] if r["kind"] == "full")
    assert full["accuracy"] > 0.5 and full["lstar"] == 1
    lm = run_experiment(dataclasses.replace(QUICK.lm, kinds=("full", "swa")), tmp_path, progress=False)
    for row in lm["runs"]:
        assert row["train_loss_last"] < row["train_loss_first"] - 0.5
        assert np.isfinite(row["val_perplexity"]) and row["val_perplexity"] < 128
        assert row["probe"]["far"]["tokens"] + row["probe"]["near"]["tokens"] > 0
    assert lm["corpus"]["train_chars"] > lm["corpus"]["validation_chars"] > 0
    assert set(lm["paper"]["our_order"]) == {"full", "swa"}


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("kind", ["swa", "sa"])
def test_spanning_window_equals_full_attention(kind, causal):
    n = 24
    w = 2 * n - 1 if kind == "sa" or not causal else n
    torch.manual_seed(0)
    full = TinyTransformer("full", 20, 16, 2, 2, w, causal)
    other = TinyTransformer(kind, 20, 16, 2, 2, w, causal)
    other.load_state_dict(full.state_dict())
    x = torch.randint(0, 20, (3, n))
    for mode in (True, False):  # training draws random permutations, eval the seeded ones
        full.train(mode), other.train(mode)
        torch.testing.assert_close(other(x), full(x), rtol=1e-5, atol=1e-5)


def test_narrow_window_differs_from_full_attention():
    torch.manual_seed(0)
    full = TinyTransformer("full", 20, 16, 2, 1, 4, True)
    swa = TinyTransformer("swa", 20, 16, 2, 1, 4, True)
    swa.load_state_dict(full.state_dict())
    x = torch.randint(0, 20, (2, 16))
    assert not torch.allclose(swa(x)[:, 8:], full(x)[:, 8:], atol=1e-4)
    torch.testing.assert_close(swa(x)[:, :4], full(x)[:, :4])  # the first w positions see the same keys


def test_resume_after_interruption_is_bit_for_bit(tmp_path):
    reference = run_experiment(TINY, tmp_path / "a", progress=False)
    with pytest.raises(Interrupted):  # first run finished, second killed at step 15 (checkpoint at 10)
        run_experiment(TINY, tmp_path / "b", progress=False, stop_after=45)
    assert (tmp_path / "b" / "checkpoints" / "tiny").exists()
    assert len((tmp_path / "b" / "tiny.jsonl").read_text().splitlines()) == 1
    with pytest.raises(FileExistsError, match="--resume"):
        run_experiment(TINY, tmp_path / "b", progress=False)
    resumed = run_experiment(TINY, tmp_path / "b", resume=True, progress=False)
    assert _comparable(resumed) == _comparable(reference)
    assert not (tmp_path / "b" / "checkpoints").exists()
    again = run_experiment(TINY, tmp_path / "b", resume=True, progress=False)  # everything done: nothing trains
    assert _comparable(again) == _comparable(reference)
    with pytest.raises(ValueError, match="different configuration"):
        run_experiment(dataclasses.replace(TINY, steps=31), tmp_path / "b", resume=True, progress=False)


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: SyntheticConfig(ns=(4,)), "ns"),
        (lambda: SyntheticConfig(ns=(64,), ws=(65,)), "ws"),
        (lambda: SyntheticConfig(steps=0), "steps"),
        (lambda: SyntheticConfig(kinds=("dense",)), "kinds"),
        (lambda: SyntheticConfig(task="sorting"), "task"),
        (lambda: SyntheticConfig(d_model=30, n_heads=4), "n_heads"),
        (lambda: SyntheticConfig(lr=float("nan")), "lr"),
        (lambda: SyntheticConfig(layers=()), "layers"),
        (lambda: SyntheticConfig(causal="yes"), "causal"),
        (lambda: LMConfig(w=1), "w"),
        (lambda: LMConfig(max_chars=10), "max_chars"),
        (lambda: LMConfig(warmup=10_000), "warmup"),
    ],
)
def test_bad_configs_name_the_field(make, field):
    with pytest.raises(ValueError, match=rf"^{field}: expected"):
        make()


def test_bad_run_arguments(tmp_path):
    with pytest.raises(ValueError, match="config"):
        run_experiment({"task": "retrieval"}, tmp_path)
    with pytest.raises(ValueError, match="stop_after"):
        run_experiment(TINY, tmp_path, stop_after=0)
    with pytest.raises(ValueError, match="kind"):
        TinyTransformer("linear", 10, 16, 2, 1, 4, True)


def test_tasks_put_the_answer_where_they_say():
    g = torch.Generator().manual_seed(1)
    b = tasks.retrieval(64, 40, True, g)
    rows = torch.arange(64)
    assert torch.equal(b.tokens[rows, b.sources[:, 0]], tasks.FIRST_VALUE + b.targets)
    assert torch.equal(b.tokens[rows, b.sources[:, 0] - 1], torch.full((64,), tasks.KEY))
    assert torch.equal(b.dense[:, -1], b.targets) and (b.dense[rows, b.sources[:, 0]] == tasks.IGNORE).all()
    c = tasks.counting(64, 40, True, g)
    assert torch.equal((c.tokens == tasks.MARK).sum(1), c.targets)
    assert torch.equal(c.dense[:, -1], c.targets) and (c.dense.diff(dim=1) >= 0).all()
    bidir = tasks.retrieval(64, 40, False, g)
    assert not (bidir.readout == bidir.sources[:, 0]).any()
    with pytest.raises(ValueError, match="max_count"):
        tasks.counting(2, 8, True, g, max_count=8)


def test_reachability_matches_the_sliding_window_interval():
    n, w, layers = 40, 4, 3
    readout = np.full(n - 1, n - 1)
    sources = np.arange(n - 1)[:, None]
    reach = reachable(pattern_for("swa", n, w, True, 0), layers, readout, sources)
    assert np.array_equal(reach, (n - 1) - np.arange(n - 1) <= layers * (w - 1))
    assert reachable(pattern_for("full", n, w, True, 0), 1, readout, sources).all()


def test_copy_probe_marks_far_repeats():
    rng = np.random.default_rng(0)
    span = rng.integers(65, 90, 20)
    text = np.concatenate([span, rng.integers(97, 122, 60), span, rng.integers(97, 122, 10)])
    x, y = text[None, :-1], text[None, 1:]
    masks = tasks.copy_probe_mask(x, y, field=30, k=6)
    second = np.arange(80 + 6, 99)  # targets inside the repeated span, once 6 characters of context repeat
    assert masks["far"][0, second - 1].all() and not masks["far"][0, :80].any()
    assert not masks["near"].any()
    assert tasks.copy_probe_mask(x, y, field=200, k=6)["near"][0, second - 1].all()


def test_corpus_is_deterministic_and_split_by_file():
    a, b = tasks.load_corpus(50_000), tasks.load_corpus(50_000)
    assert a.sha256 == b.sha256 and np.array_equal(a.train, b.train)
    assert a.validation_files >= 1 and a.train.max() < tasks.TEXT_VOCAB
    with pytest.raises(ValueError, match="max_chars"):
        tasks.load_corpus(10)


def test_cli_help_and_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "retrieval" in text and "--resume" in text and "--quick" in text
    for argv, needle in ((["sorting"], "experiment"), (["lm", "--threads", "0"], "--threads")):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and needle in err and len(err.strip().splitlines()) == 1
    (tmp_path / "counting.jsonl").write_text("")
    with pytest.raises(SystemExit) as exc:
        main(["counting", "--quick", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "--resume" in capsys.readouterr().err


# --- issue 13: the causal variants, seeds and parallel runs ---------------------------------------------------------

VARIANTS_TINY = dataclasses.replace(QUICK.variants, kinds=("sa", "sa-ms+swa", "kleinberg-eq", "dilated"),
                                    seeds=(0, 3), steps=6, warmup=1, checkpoint_every=3, name="vtiny")  # fmt: skip


def test_variant_models_reach_exactly_their_pattern():
    """In eval mode the output at position i depends on token j iff j lies in the pattern's receptive field of i
    (gradient of the output at i with respect to the embeddings, nonzero exactly on RF_L(i))."""
    from gpu.train.models import VARIANT_KINDS
    from gpu.train.reach import receptive_rows

    n, w, layers = 32, 4, 2
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: extra threads only spin on shared cores
    try:
        _check_variant_reach(VARIANT_KINDS, n, w, layers, receptive_rows)
    finally:
        torch.set_num_threads(before)


def _check_variant_reach(kinds, n, w, layers, receptive_rows):
    for kind in kinds:
        torch.manual_seed(1)
        model = TinyTransformer(kind, 20, 16, 2, layers, w, True, seed=7).eval()
        pattern = pattern_for(kind, n, w, True, 7)
        tokens = torch.randint(0, 20, (1, n))
        for i in (n - 1, n // 2):
            e = model.embed(tokens).detach().requires_grad_()
            x = e
            for block in model.blocks:
                x = block(x)
            model.head(model.norm(x))[0, i].sum().backward()
            seen = (e.grad[0].abs().sum(-1) > 0).numpy()
            assert np.array_equal(seen, receptive_rows(pattern, layers, [i])[0]), (kind, i)
            assert not seen[i + 1 :].any()  # causal


def test_variant_models_train_with_fresh_patterns_and_evaluate_with_the_seeded_one():
    from gpu.neighbour_attention import pattern_keys

    model = TinyTransformer("kleinberg+swa", 20, 16, 2, 2, 4, True, seed=2)
    x = torch.randint(0, 20, (2, 24))
    model.train()
    model(x)
    drawn = [b.attention.last_keys for b in model.blocks]
    model(x)
    assert not torch.equal(drawn[0], model.blocks[0].attention.last_keys)
    model.eval()
    model(x)
    for layer, block in enumerate(model.blocks, 1):
        assert torch.equal(block.attention.last_keys, pattern_keys(pattern_for("kleinberg+swa", 24, 4, True, 2), layer))


def test_parallel_runs_equal_serial_ones_and_aggregate_over_seeds(tmp_path):
    serial = run_experiment(VARIANTS_TINY, tmp_path / "a", progress=False)
    parallel = run_experiment(VARIANTS_TINY, tmp_path / "b", progress=False, jobs=2)
    assert _comparable(parallel) == _comparable(serial)
    names = [r["run"] for r in serial["runs"]]
    assert len(names) == 8 and names[0] == "vtiny-causal-sa-n32-w4-L2-s0" and names[-1].endswith("dilated-n32-w4-L2-s3")
    rows = {(r["kind"], r["seed"]): r for r in serial["runs"]}
    for kind in VARIANTS_TINY.kinds:
        a, b = rows[kind, 0], rows[kind, 3]
        mean = (a["accuracy"] + b["accuracy"]) / 2
        entry = next(e for e in serial["aggregate"] if e["kind"] == kind)
        assert entry["seeds"] == [0, 3] and entry["accuracy"]["count"] == 2
        assert entry["accuracy"]["mean"] == pytest.approx(mean)
        assert entry["accuracy"]["std"] == pytest.approx(abs(a["accuracy"] - b["accuracy"]) / np.sqrt(2))
        assert entry["reachable"]["min"] == min(a["reachable"], b["reachable"])
        assert a["keys_per_query"] == pytest.approx(keys_per_query(pattern_for(kind, 32, 4, True, 0), 1))
    doc = json.loads((tmp_path / "b" / "vtiny.json").read_text())
    assert doc["jobs"] == 2 and len(doc["aggregate"]) == 4
    assert len((tmp_path / "b" / "vtiny.jsonl").read_text().splitlines()) == 8
    again = run_experiment(VARIANTS_TINY, tmp_path / "b", resume=True, progress=False, jobs=2)  # all done
    assert _comparable(again) == _comparable(serial)


def test_variants_preset_and_seed_validation():
    from gpu.train import FULL
    from gpu.train.models import KINDS

    v = FULL.variants
    assert v.ns == (256,) and v.ws == (16,) and v.layers == (3,) and v.seeds == (0, 1, 2)
    assert v.kinds == tuple(k for k in KINDS if k != "dilated+swa")  # the same pattern as dilated: one run
    assert len(KINDS) == 16 and len(v.grid()) == 45 and QUICK.retrieval.kinds == ("full", "swa", "sa", "sa+swa")
    for bad in ((), (0, 0), (-1,), [0]):
        with pytest.raises(ValueError, match=r"^seeds: expected"):
            SyntheticConfig(seeds=bad)
    with pytest.raises(ValueError, match=r"^jobs: expected"):
        run_experiment(TINY, "unused", jobs=0)
    with pytest.raises(ValueError, match=r"^stop_after: only with jobs = 1"):
        run_experiment(TINY, "unused", jobs=2, stop_after=3)


def test_cli_variants_quick_with_jobs(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["variants", "--quick", "--jobs", "0"])
    assert exc.value.code == 2 and "--jobs" in capsys.readouterr().err
    assert main(["variants", "--quick", "--jobs", "2", "--json", "--out", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["experiment"] == "variants" and len(doc["runs"]) == 32 and len(doc["aggregate"]) == 16
    assert all(e["keys_per_query"]["mean"] > 0 and e["accuracy"]["count"] == 2 for e in doc["aggregate"])
