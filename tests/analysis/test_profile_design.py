"""The designed pattern: the choice against a brute-force oracle, the key count, the committed plan within its budget,
bad command lines refused in one line."""

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.attention_profile.design import choose, main, option_keys

RESULTS = Path(__file__).resolve().parents[2] / "analysis" / "attention_profile" / "results" / "design"

_STORE_ROWS: dict = {}


@pytest.fixture
def grid_read_once(monkeypatch):
    """``analysis.paper_tasks.summary.store_rows`` parsing each store once for this module: the grid's 53 MB
    ``tasks.jsonl`` is read by two tests and by the summary inside each; its readers only read the rows."""
    from analysis.paper_tasks import summary as paper_summary

    read = paper_summary.store_rows

    def store_rows(folder, more=False, option="store"):
        key = (str(folder), more, option)
        if key not in _STORE_ROWS:
            _STORE_ROWS[key] = read(folder, more, option)
        return list(_STORE_ROWS[key])

    monkeypatch.setattr(paper_summary, "store_rows", store_rows)
    return store_rows


@st.composite
def instances(draw):
    options, heads, tasks = draw(st.integers(2, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 2))
    recall = {o: np.array([draw(st.lists(st.floats(0, 1), min_size=heads, max_size=heads))]) for o in range(options)}
    order = draw(st.permutations(range(options)))  # a longer key set costs more on every task
    keys = {}
    for t in range(tasks):
        costs = sorted(draw(st.lists(st.floats(1, 50), min_size=options, max_size=options)))
        keys[t] = {o: costs[rank] for rank, o in enumerate(order)}
    reference = {t: min(keys[t].values()) * draw(st.floats(1, 3)) for t in range(tasks)}
    return recall, keys, reference


@settings(max_examples=150, deadline=None)
@given(instances())
def test_the_choice_meets_every_budget_and_no_assignment_does_better_for_its_keys(instance):
    recall, keys, reference = instance
    options, tasks = list(recall), sorted(reference)
    heads = recall[options[0]].shape[1]

    def cost(assignment, task):
        return np.mean([keys[task][options[c]] for c in assignment])

    def relative(assignment):
        return np.mean([cost(assignment, t) / reference[t] for t in tasks])

    def value(assignment):
        return sum(recall[options[c]][0, h] for h, c in enumerate(assignment))

    choice, lam = choose(recall, keys, reference)
    chosen = choice[0].tolist()
    assert all(cost(chosen, t) <= reference[t] + 1e-9 for t in tasks)
    # Everett: the Lagrangian choice is optimal among the assignments that spend no more (relative) keys
    for other in itertools.product(range(len(options)), repeat=heads):
        if relative(other) <= relative(chosen) + 1e-12:
            assert value(other) <= value(chosen) + 1e-6
    if lam > 0:  # a multiplier was needed: the most mass regardless of keys breaks some task's budget
        greedy = np.argmax(np.stack([recall[o][0] for o in options]), axis=0).tolist()
        assert any(cost(greedy, t) > reference[t] + 1e-9 for t in tasks)
    else:
        assert value(chosen) == pytest.approx(sum(max(recall[o][0, h] for o in options) for h in range(heads)))


def test_option_keys_count_the_pairs_attended():
    keys = option_keys({"t": [4, 2]}, [("swa", 1), ("swa+sink", 2), ("exact", 0)], 8)["t"]
    assert keys == {("swa", 1): 1.0, ("swa+sink", 2): pytest.approx((7 + 3) / 6), ("exact", 0): pytest.approx(13 / 6)}


def test_the_committed_plan_reads_at_most_the_reference_s_keys_on_every_task():
    path = RESULTS / "plan_64.json"
    if not path.is_file():
        pytest.skip("no committed plan")
    from gpu.attention.head_plans import HeadPlan

    data = json.loads(path.read_text())
    plan = HeadPlan.from_dict(data["plan"])
    assert plan.layers == 30 and plan.n_heads == 9 and data["label"] == plan.digest
    assert all(k["plan"] <= k["reference"] + 1e-9 for k in data["keys"].values())
    assert sum(data["choices"].values()) == data["heads"] == 270


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--budget", "0"], "--budget"),
        (["--subjects", "99"], "--subjects"),
        (["--limit", "0"], "--limit"),
        (["--steps", "train"], "--steps"),
        (["--seeds", "a"], "--seeds"),
        (["--seeds", "-1"], "--seeds"),
        (["--threads", "0"], "--threads"),
        (["--steps", "score"], "--steps"),
    ],
)
def test_bad_command_lines_are_one_line_errors(tmp_path, capsys, argv, flag):
    with pytest.raises(SystemExit) as info:
        main([*argv, "--out", str(tmp_path / "d")])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0]


def test_head_recall_is_the_profile_s_recall_at_the_scored_position():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from analysis.attention_profile.design import head_recall
    from gpu.profile.measures import ProfilePattern, attention_profile

    config = transformers.LlamaConfig(
        vocab_size=40,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).double().eval()
    texts = [list(range(3, 30)), list(range(5, 17))]
    options = [("swa+sink", 4), ("exact", 0), ("swa+sink+sa", 8), ("sa+sink", 6)]
    mine = head_recall(model, texts, options)
    profile = attention_profile(model, texts, [ProfilePattern(*o) for o in options], kl=False, progress=False)
    expected = np.mean([t.recall[:, :, :, t.scored].mean(-1) for t in profile.texts], axis=0)
    for i, option in enumerate(options):
        assert np.allclose(mine[option], expected[i], atol=1e-5)
    assert np.allclose(mine["exact", 0], 1.0)


def test_the_summary_of_a_plan_that_is_the_reference_differs_by_nothing(tmp_path, grid_read_once):
    from analysis.attention_profile.design import GRID
    from analysis.attention_profile.design_summary import summary
    from receptive.sweep import ResultStore

    store = ResultStore(tmp_path / "design")
    for row in grid_read_once(GRID):  # the grid's fixed items (first 0), as the summary reads them
        if (row["method"], row["budget"], row["seed"], row["exact_layers"], row.get("first", 0)) == (
            "swa+sink",
            64,
            0,
            [],
            0,
        ) and row["task"] in ("arc_easy", "lambada"):
            store.add(row | {"key": "plan|" + row["key"], "method": "plan-x"})
    result = summary(tmp_path / "design", 64, tasks=("arc_easy", "lambada"))
    assert {(r["decode"], r["task"]) for r in result["rows"]} == {
        (d, t) for d in ("sparse", "exact") for t in ("arc_easy", "lambada", "average")
    }
    for row in result["rows"]:
        assert row["plan"] == row["reference"] and row["minus_reference"] == 0.0
        assert row["minus_reference_low"] == row["minus_reference_high"] == 0.0
        assert row["minus_exact"] == pytest.approx(row["plan"] - row["exact"])


def test_the_summary_refuses_what_it_cannot_read(tmp_path, capsys):
    from analysis.attention_profile.design_summary import main as summary_main

    (tmp_path / "tasks.jsonl").write_text('{"key": "a"}\n')
    (tmp_path / "plan_64.json").write_text("[]")
    for argv, flag in ((["--store", str(tmp_path / "none")], "--store"), (["--store", str(tmp_path)], "--plan")):
        with pytest.raises(SystemExit):
            summary_main([*argv, "--out", str(tmp_path / "s.json")])
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and flag in err[0]


@pytest.mark.slow
def test_the_committed_summary_is_what_the_command_writes_from_the_store(grid_read_once):
    path = RESULTS / "summary.json"
    if not path.is_file():
        pytest.skip("no committed summary")
    from analysis.attention_profile.design_summary import sa_against_window, summary

    committed = json.loads(path.read_text())
    assert json.loads(json.dumps(summary(RESULTS, committed["budget"])["rows"])) == committed["rows"]
    plan = json.loads((RESULTS / f"plan_{committed['budget']}.json").read_text())
    assert committed["sa_against_window"] == json.loads(json.dumps(sa_against_window(plan)))
    assert committed["plan"] == plan["label"] and committed["keys"] == plan["keys"]


def test_the_exploratory_plan_scores_the_findings_page_gives():
    from analysis.attention_profile.design_summary import plan_table

    store = RESULTS.parent / "design_min32"
    data = json.loads((store / "plan_64_min32.json").read_text())
    assert data["min_keys"] == 32 and data["choices"]["swa+sink+sa-32"] == 112 and data["choices"]["exact"] == 39
    table = plan_table(store)
    scores = {
        (d, t): round(100 * float(np.mean([np.mean(v) for v in items.values()])), 1)
        for d, tasks in table.items()
        for t, items in tasks.items()
    }
    assert scores == {
        ("sparse", "lambada"): 13.0,
        ("exact", "lambada"): 13.5,
        ("sparse", "arc_easy"): 51.5,
        ("exact", "arc_easy"): 52.5,
    }
    page = (Path(__file__).resolve().parents[2] / "docs" / "findings" / "attention_profile.md").read_text()
    assert "13.0 (sparse decode) and 13.5 (exact)" in page and "ARC-Easy 51.5 and 52.5" in page
