"""The cost-quality frontier: the Pareto front against a brute-force oracle, accuracy and the seconds convention on a
hand-made store, its refusals, and the committed result against its stores, the paper-task summary and the findings
page."""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.frontier import figure, frontier

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "analysis" / "frontier" / "results"


def oracle(seconds, accuracy) -> list[bool]:
    """Brute force: a point is on the front when no other is at least as good in both and better in one."""
    n = len(seconds)
    return [
        not any(
            seconds[j] <= seconds[i]
            and accuracy[j] >= accuracy[i]
            and (seconds[j] < seconds[i] or accuracy[j] > accuracy[i])
            for j in range(n)
        )
        for i in range(n)
    ]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=25),
    st.lists(st.tuples(st.floats(0.01, 10), st.floats(0, 1)), max_size=25),
)
def test_the_front_is_the_brute_force_oracles(ties, spread):
    for points in (ties, spread):  # small integers make ties in either coordinate
        seconds, accuracy = [p[0] for p in points], [p[1] for p in points]
        assert frontier.pareto_front(seconds, accuracy).tolist() == oracle(seconds, accuracy)


def test_the_front_keeps_equal_points_and_drops_a_slower_equal():
    assert frontier.pareto_front([1, 1, 2], [0.5, 0.5, 0.5]).tolist() == [True, True, False]
    assert frontier.pareto_front([], []).tolist() == []


def record(doc, right):
    choices = [
        {"ll": -1.0 if right else -3.0, "tokens": 1, "chars": 1, "bytes": 1, "greedy": False},
        {"ll": -2.0, "tokens": 1, "chars": 1, "bytes": 1, "greedy": False},
    ]
    return {"doc_id": doc, "label": 0, "context_tokens": 40, "choices": choices}


def row(method, budget, seed, task, right, seconds, first=0, decodes=("sparse", "exact"), layers=()):
    """A harness row: ``right[d]`` says whether item ``first + d`` is answered right, under every protocol."""
    runs = []
    for decode in ("sparse",) if method == "exact" else decodes:
        attention = {
            "method": method,
            "budget": budget,
            "seed": seed,
            "decode": decode,
            "exact_layers": list(layers),
            "label": f"{method}-{budget}-s{seed}-{decode}",
        }
        runs.append({"attention": attention, "records": [record(first + d, r) for d, r in enumerate(right)]})
    return {
        "key": f"{method}|{budget}|{seed}|{task}|{first}|{layers}",
        "method": method,
        "budget": budget,
        "seed": seed,
        "exact_layers": list(layers),
        "decodes": [r["attention"]["decode"] for r in runs],
        "task": task,
        "limit": 200,
        "kind": "choice",
        "first": first,
        "runs": runs,
        "seconds": seconds,
    }


def write_store(folder: Path, rows) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


N = 60
EVERY = [True] * N
HALF = [d % 2 == 0 for d in range(N)]
THIRD = [d % 3 == 0 for d in range(N)]


@pytest.fixture()
def store(tmp_path):
    rows = [
        row("exact", 0, 0, "arc_easy", EVERY[:-6] + [False] * 6, 60.0),  # 1.0 s per item
        row("exact", 0, 0, "arc_easy", EVERY, 30.0, first=N),  # past the fixed items: 0.5 s per item, not scored
        row("exact", 0, 0, "piqa", EVERY[:-3] + [False] * 3, 120.0),  # 2.0 s per item
        row("exact", 0, 0, "boolq", HALF, 60.0),  # at chance: not informative
        row("swa", 32, 0, "arc_easy", HALF, 60.0),  # 0.5 s per item and protocol, 1.0 per item
        row("swa", 32, 0, "piqa", HALF, 120.0),
        row("swa", 32, 0, "boolq", EVERY, 1.0),
        *(row("sa", 32, seed, "arc_easy", HALF if seed else THIRD, s) for seed, s in ((0, 30), (1, 30), (2, 300))),
        *(row("sa", 32, seed, "piqa", THIRD, 60.0) for seed in range(3)),
        row("swa+sink", 32, 0, "arc_easy", EVERY, 300.0, layers=(0, 6)),
        row("swa+sink", 32, 0, "piqa", EVERY, 300.0, layers=(0, 6)),
        row("moba", 32, 0, "arc_easy", EVERY, 1.0),  # no piqa: incomplete
        row("sa-band", 64, 0, "arc_easy", THIRD, 6.0, decodes=("exact",)),
        row("sa-band", 64, 0, "piqa", THIRD, 6.0, decodes=("exact",)),
    ]
    return write_store(tmp_path / "grid", rows)


def by_label(result, protocol):
    return {c["label"]: c for c in result["configurations"] if c["protocol"] == protocol}


def test_accuracy_and_seconds_follow_the_stated_conventions(store):
    result = frontier.frontier([store])
    assert result["informative_tasks"] == ["arc_easy", "piqa"] and result["chance"] == 0.5
    sparse, exact = by_label(result, "sparse"), by_label(result, "exact")
    full = sparse["full attention"]
    assert full == exact["full attention"] | {
        "protocol": "sparse",
        "on_front": full["on_front"],
        "on_front_whole": full["on_front_whole"],
    }
    assert full["accuracy"] == {"arc_easy": 0.9, "piqa": 0.95} and full["items"] == {"arc_easy": N, "piqa": N}
    assert full["seconds_per_item"] == pytest.approx((np.median([1.0, 0.5]) + 2.0) / 2)  # one protocol: no split
    assert full["seconds_per_item_whole"] == full["seconds_per_item"] and full["rows"] == 3
    swa = sparse["swa-32"]
    assert swa["mean"] == 0.5 and swa["seconds_per_item"] == pytest.approx(0.75)  # seconds / (items x 2)
    assert swa["seconds_per_item_whole"] == pytest.approx(1.5)
    sa = exact["sa-32"]
    third, half = np.mean(THIRD), np.mean(HALF)
    assert sa["accuracy"]["arc_easy"] == pytest.approx((third + 2 * half) / 3)  # per item, over the seeds
    assert sa["seeds"] == [0, 1, 2]
    assert sa["seconds_per_item"] == pytest.approx((0.25 + 0.5) / 2)  # the median drops the slow seed
    assert sa["seconds_low"] == pytest.approx(0.375) and sa["seconds_high"] == pytest.approx((2.5 + 0.5) / 2)
    assert "swa+sink-32, layers 0,6 exact" in sparse and sparse["swa+sink-32, layers 0,6 exact"]["budget"] == 32
    assert "sa-band-64" in exact and "sa-band-64" not in sparse
    assert exact["sa-band-64"]["seconds_per_item"] == exact["sa-band-64"]["seconds_per_item_whole"] == 0.1
    assert result["incomplete"] == ["moba-32 (exact decode)", "moba-32 (sparse decode)"]


def test_the_front_of_each_protocol_is_the_oracles_on_its_points(store):
    result = frontier.frontier([store])
    for protocol in frontier.PROTOCOLS:
        points = [c for c in result["configurations"] if c["protocol"] == protocol]
        for key, seconds in (("on_front", "seconds_per_item"), ("on_front_whole", "seconds_per_item_whole")):
            expected = oracle([c[seconds] for c in points], [c["mean"] for c in points])
            assert [c[key] for c in points] == expected
    front = ["sa-32", "swa-32", "full attention", "swa+sink-32, layers 0,6 exact"]
    assert result["front"] == {"sparse": front, "exact": ["sa-band-64", *front]}
    assert result["front_whole"]["sparse"] == ["sa-32", "full attention", "swa+sink-32, layers 0,6 exact"]


def test_a_second_store_adds_its_configurations_and_a_repeated_one_is_refused(store, tmp_path):
    plan = [row("plan-toy-0123abcd", 0, 0, task, EVERY, 12.0) for task in ("arc_easy", "piqa")]
    design = write_store(tmp_path / "design", plan)
    result = frontier.frontier([store, design])
    added = by_label(result, "sparse")["plan-toy-0123abcd"]
    assert added["mean"] == 1.0 and added["on_front"] and added["store"] == str(design)
    again = write_store(tmp_path / "again", [row("swa", 32, 0, "arc_easy", HALF, 60.0)])
    with pytest.raises(ValueError, match="is in both"):
        frontier.frontier([store, again])


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--stores", "{tmp}/none", "--out", "{tmp}/f.json"], "--stores"),
        (["--stores", "{tmp}/noseconds", "--out", "{tmp}/f.json"], "--stores"),
        (["--stores", "{tmp}/nofull", "--out", "{tmp}/f.json"], "--stores"),
        (["--stores", "{tmp}/garbage", "--out", "{tmp}/f.json"], "--stores"),
        (["--stores", "{tmp}/nofull", "{tmp}/nofull", "--out", "{tmp}/f.json"], "--stores"),
        (["--stores", "{tmp}/nofull", "--out", "{tmp}/f.txt"], "--out"),
        (["--stores", "{tmp}/nofull", "--out", "{tmp}/garbage/tasks.jsonl/f.json"], "--out"),
    ],
)
def test_bad_input_is_one_line_and_leaves_nothing(tmp_path, capsys, argv, flag):
    bad = row("swa", 32, 0, "arc_easy", HALF, 60.0)
    del bad["seconds"]
    write_store(tmp_path / "noseconds", [row("exact", 0, 0, "arc_easy", EVERY, 1.0), bad])
    write_store(tmp_path / "nofull", [row("swa", 32, 0, "arc_easy", HALF, 60.0)])
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "tasks.jsonl").write_text('{"key": "a"}\nnot json\n')
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(SystemExit) as exit:
        frontier.main([a.format(tmp=tmp_path) for a in argv])
    assert exit.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f" {flag}:" in err, err
    assert sorted(tmp_path.rglob("*")) == before


def test_the_figure_refuses_a_file_of_another_shape(tmp_path, capsys):
    (tmp_path / "other.json").write_text('{"configurations": []}')
    with pytest.raises(SystemExit):
        figure.main(["--frontier", str(tmp_path / "other.json"), "--out", str(tmp_path / "f")])
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and " --frontier:" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.json"]


def test_the_command_writes_its_table_and_the_figure_draws_it(store, tmp_path, capsys):
    out = tmp_path / "f.json"
    assert frontier.main(["--stores", str(store), "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["command"].startswith("python -m analysis.frontier.frontier --stores ")
    assert {k: v for k, v in written.items() if k != "command"} == frontier.frontier([store])
    assert figure.main(["--frontier", str(out), "--out", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig.png").stat().st_size and (tmp_path / "fig.pdf").stat().st_size


@pytest.fixture(scope="module")
def committed():
    return json.loads((RESULTS / "frontier.json").read_text())


@pytest.mark.slow
def test_the_committed_frontier_is_what_its_command_writes_from_its_stores(committed, tmp_path):
    out = tmp_path / "frontier.json"
    assert frontier.main(["--stores", *(str(ROOT / s) for s in committed["stores"]), "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    del written["command"]
    assert written == {k: v for k, v in committed.items() if k != "command"}
    readme = (ROOT / "analysis" / "frontier" / "README.md").read_text()
    assert f"`{committed['command']}`" in readme


def test_the_committed_accuracy_is_the_paper_task_summarys(committed):
    summary = json.loads((ROOT / "analysis" / "paper_tasks" / "results" / "summary.json").read_text())
    averages = {(a["method"], a["budget"], a["decode"]): a["informative_average"] for a in summary["averages"]}
    informative = [t for t in summary["tasks"] if t["informative"]]
    assert committed["informative_tasks"] == sorted(t["task"] for t in informative)
    grid = [c for c in committed["configurations"] if c["store"] == "analysis/paper_tasks/results/grid"]
    for c in grid:
        expected = (
            np.mean([t["exact"] for t in informative])
            if c["method"] == "exact"
            else averages[c["method"], c["budget"], c["protocol"]]
        )
        assert c["mean"] == pytest.approx(expected, abs=1e-12), c["label"]
    assert len(grid) == len(averages) + 2  # full attention under each protocol


def _window(c):
    """SWA or SWA + sink, with or without full layers."""
    return c["method"].partition(",")[0] in ("swa", "swa+sink")


def test_what_the_findings_page_says(committed):
    """The claims of docs/findings/frontier.md, on the committed file."""
    configurations = [c for c in committed["configurations"] if c["store"] == "analysis/paper_tasks/results/grid"]
    for protocol in frontier.PROTOCOLS:
        points = [c for c in configurations if c["protocol"] == protocol]
        front = [c for c in points if c["on_front"]]
        labels = {c["label"] for c in front}
        expected = {
            "swa+sink-16",
            "swa+sink-32, layers 0,6,12,18,24 exact",
            "swa+sink-64, layers 0,6,12,18,24 exact",
            "swa+sink-128",
        } | ({"swa-128"} if protocol == "exact" else set())
        assert labels == expected
        assert not any({"sa", "sa-band"} & set(c["method"].partition(",")[0].split("+")) for c in front)
        for c in points:  # every configuration off the front is beaten by a window, with the sink or without
            if not c["on_front"]:
                assert any(
                    o["mean"] >= c["mean"] and o["seconds_per_item"] <= c["seconds_per_item"]
                    for o in points
                    if _window(o) and o is not c
                ), c["label"]
        top = max(front, key=lambda c: c["mean"])
        assert top["label"] == "swa+sink-128" and top["mean"] >= committed["full_attention"]["mean"]
        assert "full attention" in committed["front_whole"][protocol]
    sparse = [c for c in configurations if c["protocol"] == "sparse" and c["method"] != "exact"]
    clean = [c for c in sparse if c["seconds_per_item"] <= 0.25]
    assert (len(sparse), len(clean)) == (42, 37)
    assert min(c["seconds_per_item"] for c in clean) > 0.18
    slow = {c["label"]: c["seconds_low"] for c in sparse if c not in clean}
    assert set(slow) == {"swa-64", "sa-64", "sa+swa-union-64", "moba-32", "top-k-64"}
    assert max(v for k, v in slow.items() if k != "top-k-64") < 0.205 and round(slow["top-k-64"], 2) == 0.29
    by = {(c["method"], c["budget"]): c["seconds_per_item"] for c in sparse}
    change = [by[m, 128] / by[m, 16] - 1 for m in {c["method"] for c in sparse if c["budget"] == 16}]
    assert -0.035 < min(change) and max(change) < 0.165
    assert round(committed["full_attention"]["seconds_per_item"], 3) == 0.394


def test_the_designed_plan_is_off_both_fronts_and_below_the_shortest_window_with_the_sink(committed):
    plans = [c for c in committed["configurations"] if c["method"].startswith("plan-")]
    assert {c["protocol"] for c in plans} == set(frontier.PROTOCOLS)
    for c in plans:
        shortest = next(
            g for g in committed["configurations"] if g["label"] == "swa+sink-16" and g["protocol"] == c["protocol"]
        )
        assert not c["on_front"] and not c["on_front_whole"] and c["mean"] < shortest["mean"]
        assert round(c["mean"], 3) == {"sparse": 0.405, "exact": 0.399}[c["protocol"]]
