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
    m = re.search(r"SA's perplexity is ([\d.]+) with a sparse prefill and an exact decode against ([\d.]+)\s+for SWA "
                  r"and ([\d.]+) for full attention", README)  # fmt: skip
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
