"""The numbers of the README's findings are those of the result files it names (the examples run as doctests)."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
RESULTS = ROOT / "analysis" / "receptive_fields" / "results"


def patterns(name):
    return json.loads((RESULTS / name).read_text())["patterns"]


def test_under_150_lines_with_the_two_commands():
    assert len(README.splitlines()) < 150
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert "python -m pip install -e . && python -m receptive.coverage --n 32768 --w 64" in README
    assert ci in README  # .ci/run runs the README's test command


def test_bidirectional_coverage_numbers():
    p = patterns("coverage_n32768_w64.json")
    m = re.search(r"SA covers every\s+token at layer (\d+), SA\+SWA at layer (\d+), while SWA needs (\d+)", README)
    assert m, "the coverage finding moved: update this test"
    swa = int(re.search(r"L\* = (\d+)", p["swa"]["note"]).group(1))
    assert (int(m[1]), int(m[2]), int(m[3])) == (
        p["sa"]["full_coverage_layer"],
        p["sa+swa"]["full_coverage_layer"],
        swa,
    )


def test_causal_coverage_numbers():
    p = patterns("coverage_n32768_w64_causal.json")
    m = re.search(r"not complete after (\d+) layers, where causal SA\+SWA is\s+complete at layer (\d+)", README)
    assert m, "the causal finding moved: update this test"
    assert p["sa"]["full_coverage_layer"] is None and f"within {m[1]} layers" in p["sa"]["note"]
    assert int(m[2]) == p["sa+swa"]["full_coverage_layer"]


def test_real_model_numbers():
    data = json.loads((ROOT / "analysis/real_models/results/smollm2_n2048_m128.json").read_text())
    m = re.search(
        r"SA's perplexity is ([\d.]+) with a sparse prefill and an exact decode against ([\d.]+)\s+for SWA "
        r"and ([\d.]+) for full attention",
        README,
    )
    assert m, "the real-model finding moved: update this test"

    from analysis.real_models.figure import summary

    table = summary(data)

    def mean(label, protocol):
        return round(table[label][protocol], 1)

    assert (float(m[1]), float(m[2]), float(m[3])) == (
        mean("sa", "sparse-prefill"),
        mean("swa", "sparse-prefill"),
        mean("exact", "sparse"),
    )
    reach = [r["reach_layer"] for r in data["rows"] if r["task"] == "passkey" and r["label"] == "sa"]
    assert max(reach) <= 2 and not any(
        r["correct"] for r in data["rows"] if r["task"] == "passkey" and r["label"] == "sa"
    )


def test_bound_numbers():
    doc = json.loads((ROOT / "analysis/bound/results/bound.json").read_text())
    m = re.search(r"grid n = 2⁸ .. 2²⁰ .*?at (\d+) of (\d+) points, one layer off at the other (\d+)", README, re.S)
    assert m, "the bound finding moved: update this test"
    points = [p for p in doc["points"] if not p["causal"]]
    assert {p["pattern"] for p in points} == {"sa", "sa+swa"}
    assert (min(p["n"] for p in points), max(p["n"] for p in points)) == (2**8, 2**20)
    exact = sum(p["predicted"] == p["typical"] for p in points)
    off_by_one = sum(abs(p["predicted"] - p["typical"]) == 1 for p in points)
    assert (int(m[1]), int(m[2]), int(m[3])) == (exact, len(points), off_by_one) and exact + off_by_one == len(points)


def test_layout_numbers():
    doc = json.loads((ROOT / "analysis/layouts/results/layouts.json").read_text())
    m = re.search(r"never complete at n = (\d+); SA\+SWA at matched pairs completes in\s+(\d+)-(\d+) layers", README)
    assert m, "the layouts finding moved: update this test"
    assert doc["n"] == int(m[1])
    rows = {r["layout"]["name"]: r for r in doc["layouts"]}
    for name in ("mistral-7b-v0.1", "longnet"):  # the window stack and causal LongNet
        assert rows[name]["layout"]["causal"] and rows[name]["layout"]["full_coverage_layer"] is None, name
    assert {r["matched"]["sa+swa"]["full_coverage_layer"] for r in rows.values()} == {int(m[2]), int(m[3])}
    for r in rows.values():  # a full layer completes every field at once: L* is the first full layer
        if "full" in r["layer_kinds"]:
            assert r["layout"]["full_coverage_layer"] == r["layer_kinds"].index("full") + 1, r["layout"]["name"]


def test_designed_pattern_numbers():
    summary = json.loads((ROOT / "analysis/attention_profile/results/design/summary.json").read_text())
    plan = json.loads((ROOT / "analysis/attention_profile/results/design/plan_64.json").read_text())
    average = next(r for r in summary["rows"] if (r["decode"], r["task"]) == ("sparse", "average"))
    found = re.search(r"averages ([\d.]+) against SWA \+\s+sink's ([\d.]+) and full attention's ([\d.]+)", README)
    assert found is not None
    assert [float(x) for x in found.groups()] == [round(100 * average[k], 1) for k in ("plan", "reference", "exact")]
    assert plan["sa_heads"] == 0 and "no head chose SA" in README
