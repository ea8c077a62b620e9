"""``python -m gpu.harness``: a grid on a tiny random Llama saved to a folder and the committed request fixtures:
resumable, the same results however the items are sharded, one-line refusals (on Dask:
tests/gpu/harness/test_harness_dask.py, per item the records and the summary's scores of a local run)."""

import json

import pytest
import torch

pytest.importorskip("transformers")
from hf_eval_models import FIXTURES, tiny_llama, tiny_tokenizer

from gpu.harness.cli import main

TASKS = ",".join(
    str(FIXTURES / f"{name}.jsonl") for name in ("arc_easy_rc_5shot", "winogrande_rc_5shot", "lambada_bpb_0shot")
)


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-llama")
    tiny_llama(dtype=torch.float32).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder


def same_scores(rows, other) -> bool:
    """The same summary rows, each score to within float rounding (the shards' sums run in another order)."""
    return len(rows) == len(other) and all(a == pytest.approx(b) for a, b in zip(rows, other, strict=True))


def run(model_folder, out, *extra):
    argv = [
        "--model",
        str(model_folder),
        "--tasks",
        TASKS,
        "--attention",
        "exact,sa,swa",
        "--budgets",
        "4",
        "--decode",
        "sparse,exact",
        "--out",
        str(out),
        "--quiet",
        "--threads",
        "1",
        *extra,
    ]
    return main(argv)


def test_grid_writes_records_resumes_and_shards_give_the_same_scores(model_folder, tmp_path, capsys):
    assert run(model_folder, tmp_path / "a", "--json", str(tmp_path / "a.json")) == 0
    rows = [json.loads(line) for line in (tmp_path / "a" / "tasks.jsonl").read_text().splitlines()]
    assert len(rows) == 3 * 3  # (exact, sa, swa) x 3 tasks; the protocols share a row
    assert {len(row["runs"]) for row in rows} == {1, 2}
    table = json.loads((tmp_path / "a.json").read_text())["rows"]
    assert {row["attention"] for row in table} == {"exact", "sa-4", "sa-4-exact-decode", "swa-4", "swa-4-exact-decode"}
    assert run(model_folder, tmp_path / "a", "--resume") == 0  # nothing left to do: no new rows
    assert len((tmp_path / "a" / "tasks.jsonl").read_text().splitlines()) == 9
    assert run(model_folder, tmp_path / "b", "--shards", "2", "--json", str(tmp_path / "b.json")) == 0
    sharded = json.loads((tmp_path / "b.json").read_text())["rows"]
    assert same_scores(sharded, table)
    out = capsys.readouterr().out
    assert "sa-4-exact-decode" in out and "acc_per_char" in out


def test_first_extends_a_store_to_the_same_records_as_one_larger_run(model_folder, tmp_path):
    """Items 0-1, then items 2-3 added with ``--first 2 --limit 4``: per item the records of one run of 4 items."""
    assert run(model_folder, tmp_path / "a", "--limit", "2") == 0
    assert run(model_folder, tmp_path / "a", "--resume", "--first", "2", "--limit", "4") == 0
    assert run(model_folder, tmp_path / "b", "--limit", "4") == 0

    def records(folder):
        out = {}
        for line in (folder / "tasks.jsonl").read_text().splitlines():
            row = json.loads(line)
            for r in row["runs"]:
                for record in r["records"]:
                    key = (r["attention"]["label"], row["task"], record["doc_id"])
                    assert key not in out  # no item is scored twice
                    out[key] = [c["ll"] for c in record["choices"]]
        return out

    extended, whole = records(tmp_path / "a"), records(tmp_path / "b")
    assert extended.keys() == whole.keys() and len({k[2] for k in whole if k[0] == "exact"}) > 2
    for key, lls in whole.items():
        assert extended[key] == pytest.approx(lls, abs=1e-4), key
    added = [json.loads(line) for line in (tmp_path / "a" / "tasks.jsonl").read_text().splitlines()][9:]
    assert {row["first"] for row in added} == {2} and all("|2:4|" in row["key"] for row in added)


def test_a_prefill_only_form_runs_the_exact_decode_alone(model_folder, tmp_path):
    """``sa-band`` (the paper's causal SA) beside a generation form: asked for both protocols, it scores the exact
    decode only."""
    assert run(model_folder, tmp_path / "a", "--attention", "sa,sa-band", "--json", str(tmp_path / "a.json")) == 0
    table = json.loads((tmp_path / "a.json").read_text())["rows"]
    assert {row["attention"] for row in table} == {"sa-4", "sa-4-exact-decode", "sa-band-4-exact-decode"}
    lab = {row["task"]: row for row in table if row["attention"].startswith("sa-band")}
    generation = {row["task"]: row for row in table if row["attention"] == "sa-4-exact-decode"}
    assert lab.keys() == generation.keys() and len(lab) == 3
    assert any(lab[t].get("bpb") != generation[t].get("bpb") for t in lab)  # a different pattern


def test_dry_run_prints_the_estimate_and_writes_nothing(model_folder, tmp_path, capsys):
    argv = [
        "--model",
        str(model_folder),
        "--tasks",
        TASKS,
        "--attention",
        "exact,sa",
        "--budgets",
        "4,8",
        "--decode",
        "sparse,exact",
        "--dry-run",
        "--threads",
        "1",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "\n15 task configurations to run" in out and "CPU hours" in out
    assert list(tmp_path.iterdir()) == []


def test_dry_run_with_resume_counts_only_what_the_store_lacks(model_folder, tmp_path, capsys):
    assert run(model_folder, tmp_path / "a", "--attention", "exact") == 0
    capsys.readouterr()
    assert run(model_folder, tmp_path / "a", "--resume", "--dry-run") == 0  # exact is done; sa and swa are not
    out = capsys.readouterr().out
    assert "\n12 task configurations to run" in out
    assert run(model_folder, tmp_path / "a", "--attention", "exact", "--resume", "--dry-run") == 0
    assert "\n0 task configurations to run" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--tasks", "nosuchtask"], "--tasks"),
        (["--tasks", "arc_easy:rc_99shot"], "--tasks"),
        (["--budgets", "0"], "--budgets"),
        (["--attention", "sa", "--budgets", "100000"], "--budgets"),
        (["--attention", "nope"], "--attention"),
        (["--decode", "greedy"], "--decode"),
        (["--attention", "sa-band", "--decode", "sparse"], "--decode"),
        (["--attention", "sa-band", "--decode", "exact", "--exact-layers", "1"], "--exact-layers"),
        (["--attention", "mla", "--decode", "exact"], "--attention"),
        (["--limit", "0"], "--limit"),
        (["--limit", "-3"], "--limit"),
        (["--first", "5", "--limit", "9"], "--first"),  # no task has an item 5
        (["--shards", "1000000000"], "--shards"),
        (["--attention", "sa", "--exact-layers", "3"], "--exact-layers"),  # layers 0..2
        (["--json", "table.csv"], "--json"),
        (["--dry-run", "--json", "table.json"], "--json"),
        (["--workers", "2"], "--workers"),
        (["--dask", "--workers", "1000000"], "--workers"),
        (["--threads", "1000000"], "--threads"),
        (["--dask", "--scheduler", "tcp://127.0.0.1:1"], "--dask"),
        (["--limit", "4", "--first", "4"], "--first"),
        (["--first", "-1"], "--first"),
        (["--tasks", "mmlu", "--first", "2"], "--first"),
        (["--seeds", "-1"], "--seeds"),
        (["--model", "/no/such/model"], "--model"),
        (["--json", "/no/such/folder/x.json"], "--json"),
        (["--scheduler", "notanaddress"], "--scheduler"),
        (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag_and_leaves_nothing(model_folder, tmp_path, capsys, extra, flag):
    extra = [str(tmp_path / e) if e.startswith("table.") else e for e in extra]
    argv = ["--model", str(model_folder), "--tasks", TASKS, "--out", str(tmp_path / "out"), *extra]
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and (f"error: {flag}:" in err or f"error: argument {flag}:" in err), err
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob("table.*"))


def test_an_empty_task_file_or_a_folder_without_a_model_is_refused_before_loading(model_folder, tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    for argv, flag in (
        (["--model", str(model_folder), "--tasks", str(empty)], "--tasks"),
        (["--model", str(tmp_path), "--tasks", TASKS], "--model"),
    ):
        with pytest.raises(SystemExit) as exit:
            main([*argv, "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err.strip()
        assert exit.value.code == 2 and len(err.splitlines()) == 1 and f"error: {flag}:" in err, err
    assert not (tmp_path / "out").exists()


def test_a_resume_without_out_is_refused(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--tasks", TASKS, "--dry-run", "--resume"])
    assert exit.value.code == 2 and "error: --resume:" in capsys.readouterr().err


def test_a_context_longer_than_the_model_is_refused_before_any_work(tmp_path, capsys):
    folder = tmp_path / "short"
    tiny_llama(dtype=torch.float32, positions=64).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    with pytest.raises(SystemExit) as exit:
        main(["--model", str(folder), "--tasks", TASKS, "--out", str(tmp_path / "out")])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert "error: --tasks:" in err and "max_position_embeddings 64" in err
    assert not (tmp_path / "out").exists()


def test_the_module_runs_as_a_command():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "gpu.harness", "--help"], capture_output=True, text=True, check=True)
    assert "--dry-run" in out.stdout and "Examples" not in out.stderr
