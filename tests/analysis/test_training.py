"""analysis.training: quick runs learn, spanning windows equal full attention, runs resume bit for bit, configs
fail clearly."""

import dataclasses
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from analysis.training import (  # noqa: E402
    QUICK,
    Interrupted,
    LMConfig,
    SyntheticConfig,
    TinyTransformer,
    run_experiment,
    tasks,
)
from analysis.training.__main__ import main  # noqa: E402
from analysis.training.reach import pattern_for, reachable  # noqa: E402
from receptive.patterns.causal_variants import keys_per_query  # noqa: E402

#: the smallest runs the resume and extension tests compare bit for bit (what they check holds at any batch)
TINY = dataclasses.replace(
    QUICK.retrieval,
    kinds=("swa", "sa"),
    layers=(2,),
    steps=30,
    batch=8,
    checkpoint_every=10,
    eval_samples=64,
    name="tiny",
)


def _comparable(summary):
    return [{k: v for k, v in row.items() if k != "train_seconds"} for row in summary["runs"]]


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
    finals = sorted((tmp_path / "b" / "checkpoints" / "tiny").glob("*.pt"))  # kept, so runs can be continued
    assert [torch.load(f, weights_only=False)["step"] for f in finals] == [TINY.steps] * 2
    assert (tmp_path / "b" / "checkpoints" / ".gitignore").read_text().splitlines()[-1] == "*"
    again = run_experiment(TINY, tmp_path / "b", resume=True, progress=False)  # everything done: nothing trains
    assert _comparable(again) == _comparable(reference)
    with pytest.raises(ValueError, match="different configuration"):
        run_experiment(dataclasses.replace(TINY, steps=31), tmp_path / "b", resume=True, progress=False)


def test_checkpoints_of_another_configuration_are_never_loaded(tmp_path, capsys):
    """Train, delete NAME.jsonl and NAME.json, train again without --resume and 10x the learning rate: a fresh run
    refuses a folder with checkpoints, and a resume whose header is gone is refused by the configuration
    every checkpoint records (one-line errors, nothing written)."""
    from analysis.training.runner import train

    first = run_experiment(TINY, tmp_path, progress=False)
    for name in ("tiny.jsonl", "tiny.json"):
        (tmp_path / name).unlink()
    header = (tmp_path / "tiny.config.json").read_text()
    louder = dataclasses.replace(TINY, lr=10 * TINY.lr)
    for config in (louder, TINY):  # a fresh run over kept checkpoints: refused, whatever its configuration
        with pytest.raises(FileExistsError, match=r"^out: .*checkpoints.* of an earlier training of tiny; .*--resume"):
            run_experiment(config, tmp_path, progress=False)
    assert (tmp_path / "tiny.config.json").read_text() == header and not (tmp_path / "tiny.jsonl").exists()
    (tmp_path / "tiny.config.json").unlink()  # no header left to compare with: the checkpoints' own record decides
    with pytest.raises(ValueError, match=r"^checkpoint: .* different configuration \(lr 0.003 there, 0.03 here\)"):
        run_experiment(louder, tmp_path, resume=True, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoints"]
    spec = TINY.grid()[0]
    checkpoint = tmp_path / "checkpoints" / "tiny" / f"tiny-causal-{spec['kind']}-n32-w4-L2-s0.pt"
    for other in (louder, dataclasses.replace(TINY, decay_steps=40), dataclasses.replace(TINY, batch=16)):
        with pytest.raises(ValueError, match=r"^checkpoint: .* different configuration"):
            train(other, spec, checkpoint)
    with pytest.raises(ValueError, match=r"^checkpoint: .*spec"):
        train(TINY, {**spec, "seed": 1}, checkpoint)
    assert torch.load(checkpoint, weights_only=False)["config"]["horizon"] == TINY.steps
    resumed = run_experiment(TINY, tmp_path, resume=True, progress=False)  # its own configuration continues
    assert _comparable(resumed) == _comparable(first)
    quick = tmp_path / "checkpoints" / "retrieval"  # the CLI: one line, exit 2
    quick.mkdir()
    (quick / "x.pt").write_bytes(b"")
    with pytest.raises(SystemExit) as exc:
        main(["retrieval", "--quick", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and "--resume" in err


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


# --- the causal variants, seeds and parallel runs ---------------------------------------------------------

VARIANTS_TINY = dataclasses.replace(
    QUICK.variants,
    kinds=("sa", "sa-ms+swa", "kleinberg-eq", "dilated"),
    seeds=(0, 3),
    steps=6,
    warmup=1,
    checkpoint_every=3,
    name="vtiny",
)


def test_variant_models_reach_exactly_their_pattern():
    """In eval mode the output at position i depends on token j iff j lies in the pattern's receptive field of i
    (gradient of the output at i with respect to the embeddings, nonzero exactly on RF_L(i))."""
    from analysis.training.models import VARIANT_KINDS
    from analysis.training.reach import receptive_rows

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
    from gpu.attention.neighbour import pattern_keys

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
    from analysis.training import FULL
    from analysis.training.models import KINDS

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


# --- continuing finished runs to more steps ---------------------------------------------------------------

EXTEND = dataclasses.replace(
    TINY, kinds=("swa", "sa", "sa-ms+swa-eq"), steps=12, decay_steps=20, warmup=3, checkpoint_every=5, name="ext"
)


def _without_notes(summary):
    return [{k: v for k, v in row.items() if k not in ("train_seconds", "continued")} for row in summary["runs"]]


def _final_states(folder, name):
    return {f.name: torch.load(f, weights_only=False) for f in sorted((folder / "checkpoints" / name).glob("*.pt"))}


def test_learning_rate_at_a_step_does_not_depend_on_the_total_once_decay_steps_is_set():
    from analysis.training.configs import extended
    from analysis.training.step import learning_rate

    committed = dataclasses.replace(TINY, steps=40, warmup=4)  # decay_steps None: the committed runs' schedule
    longer = extended(committed, 100)
    assert longer.steps == 100 and longer.decay_steps == 40 and longer.horizon == committed.horizon == 40
    for t in range(40):  # the committed runs are the first 40 steps of the extended schedule, bit for bit
        assert learning_rate(longer, t) == learning_rate(committed, t)
    assert [learning_rate(longer, t) for t in range(40, 100)] == [committed.lr / 10] * 60
    # warm-up, then the peak
    assert learning_rate(committed, 3) == committed.lr and learning_rate(committed, 4) == committed.lr
    for steps in (20, 21, 57):
        assert [learning_rate(dataclasses.replace(EXTEND, steps=steps), t) for t in range(20)] == [
            learning_rate(EXTEND, t) for t in range(20)
        ]
    with pytest.raises(ValueError, match=r"^extend_to: expected an integer in \[40,"):
        extended(committed, 39)
    with pytest.raises(ValueError, match=r"^decay_steps: expected"):
        dataclasses.replace(TINY, warmup=5, decay_steps=4)


def test_extending_a_finished_run_equals_training_it_that_long_in_one_go(tmp_path):
    """A: 12 steps, then extended to 30 (serially, then in two workers to 41); B: 30 (41) steps in one go. Same seed,
    same machine, one thread: bit for bit (rows, loss curves, final weights and optimiser states)."""
    one_go = run_experiment(dataclasses.replace(EXTEND, steps=30), tmp_path / "b", progress=False)
    run_experiment(EXTEND, tmp_path / "a", progress=False)
    extended = run_experiment(EXTEND, tmp_path / "a", progress=False, extend_to=30)
    assert _without_notes(extended) == _without_notes(one_go)
    assert all(r["steps"] == 30 and len(r["loss_curve"]) == 10 for r in extended["runs"])
    a, b = _final_states(tmp_path / "a", "ext"), _final_states(tmp_path / "b", "ext")
    assert a.keys() == b.keys() and len(a) == len(EXTEND.grid()) == 3
    for name in a:
        assert a[name]["step"] == b[name]["step"] == 30 and a[name]["losses"] == b[name]["losses"]
        for key, tensor in b[name]["model"].items():
            assert torch.equal(a[name]["model"][key], tensor), (name, key)
        assert str(a[name]["optimizer"]) == str(b[name]["optimizer"])
    for row in extended["runs"]:
        (note,) = row["continued"]
        assert note["from_steps"] == 12 and note["to_steps"] == 30 and note["resumed_at_step"] == 12
        assert note["how"] == "continued from the final checkpoint" and "replay_curve_max_abs_diff" not in note
        assert set(note["before"]) >= {"accuracy", "reachable", "train_loss_last"}
    doc = json.loads((tmp_path / "a" / "ext.json").read_text())
    assert doc["config"]["steps"] == 30 and doc["config"]["decay_steps"] == 20
    lines = (tmp_path / "a" / "ext.jsonl").read_text().splitlines()
    assert len(lines) == 6  # the 12-step rows stay in the log; the summary holds the latest
    again = run_experiment(EXTEND, tmp_path / "a", progress=False, extend_to=41, jobs=2)  # once more, in workers
    run_experiment(dataclasses.replace(EXTEND, steps=30), tmp_path / "b", progress=False, extend_to=41)
    longest = run_experiment(dataclasses.replace(EXTEND, steps=41), tmp_path / "c", progress=False)
    assert _without_notes(again) == _without_notes(longest)
    assert [len(r["continued"]) for r in again["runs"]] == [2] * 3
    assert _without_notes(json.loads((tmp_path / "b" / "ext.json").read_text())) == _without_notes(longest)


def test_extending_runs_without_a_final_checkpoint_replays_them(tmp_path):
    """Runs recorded without a final checkpoint (no "steps" in the rows, no decay_steps in the header) are
    replayed from step 0 on the schedule they were trained with; the replayed loss curve equals the recorded one."""
    unchecked = dataclasses.replace(EXTEND, decay_steps=None, kinds=("sa",))
    run_experiment(unchecked, tmp_path / "a", progress=False)
    header = tmp_path / "a" / "ext.config.json"
    config = json.loads(header.read_text())
    del config["decay_steps"]
    header.write_text(json.dumps(config))
    log = tmp_path / "a" / "ext.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    log.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "steps"}) + "\n" for r in rows))
    for f in (tmp_path / "a" / "checkpoints" / "ext").glob("*.pt"):
        f.unlink()
    assert (
        run_experiment(unchecked, tmp_path / "a", resume=True, progress=False)["runs"][0]["accuracy"]
        == rows[0]["accuracy"]
    )  # an old header still resumes
    replayed = run_experiment(unchecked, tmp_path / "a", progress=False, extend_to=25)
    one_go = run_experiment(dataclasses.replace(unchecked, steps=25, decay_steps=12), tmp_path / "b", progress=False)
    assert _without_notes(replayed) == _without_notes(one_go)
    (note,) = replayed["runs"][0]["continued"]
    assert note["how"].startswith("replayed from step 0") and note["resumed_at_step"] == 0
    assert note["replay_curve_max_abs_diff"] == 0.0 and note["before"]["accuracy"] == rows[0]["accuracy"]


def test_extension_errors_and_kept_run_notes(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"^extend_to: .*does not exist"):
        run_experiment(EXTEND, tmp_path / "none", progress=False, extend_to=20)
    run_experiment(EXTEND, tmp_path, progress=False)
    summary = tmp_path / "ext.json"
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "run_notes": {"note": "by hand"}}))
    with pytest.raises(ValueError, match=r"^extend_to: expected an integer in \[12,"):
        run_experiment(EXTEND, tmp_path, progress=False, extend_to=11)
    with pytest.raises(ValueError, match="different configuration or schedule"):
        run_experiment(dataclasses.replace(EXTEND, lr=1e-3), tmp_path, progress=False, extend_to=20)
    with pytest.raises(ValueError, match="different configuration or schedule"):
        run_experiment(dataclasses.replace(EXTEND, decay_steps=15), tmp_path, progress=False, extend_to=20)
    assert run_experiment(EXTEND, tmp_path, progress=False, extend_to=14)["run_notes"] == {"note": "by hand"}
    with pytest.raises(ValueError, match=r"^extend_to: expected at least the 14 steps"):
        run_experiment(EXTEND, tmp_path, progress=False, extend_to=13)
    with pytest.raises(ValueError, match="different configuration"):  # a plain resume of an extended folder
        run_experiment(EXTEND, tmp_path, resume=True, progress=False)
    with pytest.raises(SystemExit) as exc:
        main(["retrieval", "--quick", "--extend-to", "5", "--out", str(tmp_path / "cli")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and "--extend-to: expected an integer" in err


def test_long_n_preset_and_cli_extension(tmp_path, capsys):
    from analysis.training import FULL

    v = FULL.long_n
    assert (v.ns, v.ws, v.layers, v.seeds) == ((1024,), (8,), (4,), (0, 1, 2))
    assert v.kinds == ("sa", "sa+swa", "sa-ms-eq", "sa-ms+swa-eq") and v.decay_steps == v.steps == 3000
    out = str(tmp_path)
    assert main(["long_n", "--quick", "--json", "--out", out]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(["long_n", "--quick", "--json", "--extend-to", "11", "--out", out]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["config"]["steps"] == 11 and len(doc["runs"]) == 8
    for before, after in zip(first["runs"], doc["runs"], strict=True):
        (note,) = after["continued"]
        assert (note["from_steps"], note["to_steps"], note["how"]) == (8, 11, "continued from the final checkpoint")
        assert note["before"]["accuracy"] == before["accuracy"] and after["steps"] == 11
    with pytest.raises(SystemExit) as exc:
        main(["long_n", "--quick", "--extend-to", "9", "--out", out])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--extend-to: expected at least the 11 steps" in err and len(err.splitlines()) == 1


# --- where long-n training could separate the variants (analysis.training.reach_grid) ------------------------------


def _readout_share_by_sets(pattern, layers):
    """Oracle: walk the key lists layer by layer from the readout with Python sets."""
    n = pattern.n
    seen = {n - 1}
    for layer in range(layers, 0, -1):
        adjacency = pattern.adjacency(layer).tocsr()
        seen = {int(k) for i in seen for k in adjacency.indices[adjacency.indptr[i] : adjacency.indptr[i + 1]]}
    return sum(1 for j in seen if 1 <= j <= n - 2) / (n - 2)


def test_readout_reachable_matches_the_set_walk_and_the_runner():
    from analysis.training.reach_grid import GRID_KINDS, readout_keys, readout_reachable

    rng = np.random.default_rng(13)
    for _ in range(40):
        kind = str(rng.choice(GRID_KINDS))
        n, w, layers, seed = int(rng.choice([16, 24, 40, 64])), int(rng.integers(2, 6)), int(rng.integers(1, 5)), 0
        seed = int(rng.integers(0, 1000))
        pattern = pattern_for(kind, n, w, True, seed)
        share = readout_reachable(pattern, layers)
        assert share == pytest.approx(_readout_share_by_sets(pattern, layers), abs=1e-12), (kind, n, w, layers)
        sources = np.arange(1, n - 1)[:, None]  # every answer position once: the runner's estimate, exactly
        assert share == pytest.approx(reachable(pattern, layers, np.full(n - 2, n - 1), sources).mean(), abs=1e-12)
        rows = pattern.adjacency(1).tocsr()
        assert readout_keys(pattern, 1) == rows.indptr[n] - rows.indptr[n - 1]
    swa = pattern_for("swa", 64, 4, True, 0)
    assert readout_reachable(swa, 3) == pytest.approx(9 / 62)  # answers at distance 1..L (w - 1) = 9 of 62
    for bad in (0, -1, 1.5, True, "2"):
        for function in (readout_reachable, readout_keys):
            with pytest.raises(ValueError, match=r"^layers: expected a positive integer"):
                function(swa, bad)


def test_reach_grid_cli_writes_the_separation(tmp_path, capsys):
    from analysis.training.reach_grid import main as grid_main
    from analysis.training.reach_grid import reach_grid

    out = tmp_path / "r" / "reach.json"
    argv = ["--ns", "64", "--ws", "4", "--layers", "2", "3", "--seeds", "2", "--out", str(out)]
    assert grid_main(argv) == 0
    doc = json.loads(out.read_text())
    assert doc["command"].endswith("--out " + str(out)) and len(doc["rows"]) == 8 * 2 * 2
    by = {(r["kind"], r["layers"], r["seed"]): r["reachable"] for r in doc["rows"]}
    for entry in doc["separation"]:
        v = [by["sa-ms+swa-eq", entry["layers"], s] for s in (0, 1)]
        b = [by["sa+swa", entry["layers"], s] for s in (0, 1)]
        assert entry["gap_mean"] == pytest.approx(np.mean(v) - np.mean(b))
        assert entry["gap_worst_vs_best"] == pytest.approx(min(v) - max(b))
    assert doc["choice"] == max(doc["separation"], key=lambda e: (e["gap_mean"], -e["layers"]))
    assert all(e["lstar_readout"] == 1 for e in doc["readout_lstar"] if e["kind"] == "full")
    for bad, field in (({"ws": (40,)}, "ws"), ({"kinds": ("dense",)}, "kinds"), ({"layers": (0,)}, "layers")):
        with pytest.raises(ValueError, match=rf"^{field}: expected"):
            reach_grid(**{"ns": (64,), **bad})
    with pytest.raises(SystemExit) as exc:
        grid_main(["--ws", "0", "--out", str(out)])
    assert exc.value.code == 2 and "--ws: expected" in capsys.readouterr().err


def test_train_step_is_the_written_out_step():
    """Oracle: the optimiser step written out (learning rate, loss on the next batch, clipping, AdamW) from the same
    seed gives the same losses and weights, bit for bit, for the synthetic and the LM loss."""
    from analysis.training.runner import training_threads
    from analysis.training.step import RunData, build_model, learning_rate, train_step

    corpus = tasks.load_corpus(50_000)
    lm = dataclasses.replace(QUICK.lm, kinds=("sa",), warmup=2)
    with training_threads(1):
        for config, spec, data_corpus in (
            (TINY, {"kind": "sa", "n": 32, "w": 4, "layers": 2, "seed": 5}, None),
            (lm, {"kind": "sa", "n": lm.n, "w": lm.w, "layers": lm.layers, "seed": 2}, corpus),
        ):
            runs = []
            for use_step in (True, False):
                torch.manual_seed(spec["seed"])
                model = build_model(config, spec).train()
                data = RunData(config, spec, data_corpus)
                optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
                losses = []
                for step in range(4):
                    if use_step:
                        losses.append(train_step(model, optimizer, data, config, step))
                        continue
                    for group in optimizer.param_groups:
                        group["lr"] = learning_rate(config, step)
                    batch = data.train_batch()
                    if data_corpus is not None:
                        x, y = batch
                        loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
                    else:
                        logits = model(batch.tokens).flatten(0, 1)
                        loss = torch.nn.functional.cross_entropy(logits, batch.dense.flatten(), ignore_index=-100)
                    optimizer.zero_grad()
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.step()
                    losses.append(loss.item())
                runs.append((losses, model.state_dict()))
            (a, weights_a), (b, weights_b) = runs
            assert a == b and len(set(a)) == 4
            for key, tensor in weights_a.items():
                assert torch.equal(tensor, weights_b[key]), key
    model = build_model(TINY, spec := {"kind": "sa", "n": 32, "w": 4, "layers": 1, "seed": 0})
    optimizer = torch.optim.AdamW(model.parameters())
    for bad_config, step, field in ((TINY, -1, "step"), (TINY, True, "step"), ({"lr": 1}, 0, "config")):
        with pytest.raises(ValueError, match=rf"^{field}: expected"):
            train_step(model, optimizer, RunData(TINY, spec, None), bad_config, step)
    for bad in (0, 1.0, 2000):
        with pytest.raises(ValueError, match=r"^threads: expected an integer in \[1, 1024\]"):
            with training_threads(bad):
                pass


def test_step_time_cli(tmp_path, capsys):
    from analysis.training.step_time import main as time_main
    from analysis.training.step_time import step_seconds

    out = tmp_path / "t.json"
    argv = [
        "--n",
        "32",
        "--w",
        "4",
        "--layers",
        "1",
        "--kinds",
        "sa",
        "sa+swa",
        "--estimate-kinds",
        "sa",
        "--estimate-runs",
        "3",
        "--estimate-steps",
        "100",
        "--steps",
        "2",
        "--out",
        str(out),
    ]
    assert time_main(argv) == 0
    doc = json.loads(out.read_text())
    assert [r["kind"] for r in doc["rows"]] == ["sa", "sa+swa"] and doc["config"]["threads"] == 1
    for r in doc["rows"]:
        assert 0 < r["wall_min"] <= r["wall_median"] <= r["wall_max"] and r["cpu_median"] > 0
    (est,) = doc["estimate"]
    assert est["cpu_minutes"] == pytest.approx(round(doc["rows"][0]["cpu_median"] * 300 / 60, 1))
    with pytest.raises(ValueError, match=r"^steps: expected"):
        step_seconds(QUICK.long_n, {"kind": "sa", "n": 32, "w": 4, "layers": 1, "seed": 0}, 0, 0)
    with pytest.raises(SystemExit) as exc:
        time_main(["--kinds", "sa", "--out", str(out)])  # the estimate's default kinds are not all timed
    assert exc.value.code == 2 and "--estimate-kinds" in capsys.readouterr().err
