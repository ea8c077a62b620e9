"""The scripts of ``analysis/receptive_fields`` at their smallest sizes: they write what their committed files hold."""

import json
from pathlib import Path

import pytest

from analysis.receptive_fields import hops, keys_per_query, mask_mod_time, smallworld_attention

RESULTS = Path(__file__).resolve().parents[2] / "analysis" / "receptive_fields" / "results"


def test_hops_small(tmp_path):
    out = tmp_path / "hops.json"
    assert hops.main(["--n", "256", "--w", "8", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    committed = json.loads((RESULTS / "hops_n32768_w64.json").read_text())
    assert [(r["pattern"], r["causal"]) for r in doc["rows"]] == [
        (r["pattern"], r["causal"]) for r in committed["rows"]
    ]
    for row in doc["rows"]:
        assert sum(row["pairs"]) > 0 and row["mean"] >= 1
        assert row["unreached"] == 0 or row["causal"]  # bidirectional stacks run until every pair is connected


def test_smallworld_attention_small(tmp_path):
    """The merged small-world reports: one per model, with the fields and the command line of the committed file."""
    out = tmp_path / "sw.json"
    assert smallworld_attention.main(["--n", "512", "--w", "8", "--sources", "16", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    committed = json.loads((RESULTS / "smallworld_attention_n32768_w64.json").read_text())
    assert list(doc["rows"]) == list(committed["rows"]) == ["swa", "sa", "sa+swa"]
    for model, row in doc["rows"].items():
        assert sorted(row) == sorted(committed["rows"][model]) and row["n"] == 512
    full_size = doc["command"].replace("--n 512 --w 8 --sources 16", "--n 32768 --w 64 --sources 512")
    assert full_size == committed["command"]


def test_keys_per_query_recomputes_the_committed_file():
    committed = json.loads((RESULTS / "keys_per_query_training.json").read_text())["rows"]
    assert keys_per_query.rows() == committed


def test_mask_mod_time_small(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "t.json"
    assert mask_mod_time.main(["--sizes", "64,128", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    # a causal 64-key window: row i holds min(i + 1, 64) keys
    assert [r["nnz"] for r in rows] == [sum(min(i + 1, 64) for i in range(n)) for n in (64, 128)]


@pytest.mark.parametrize("module", [hops, mask_mod_time])
def test_bad_flags_fail_in_one_line(module, tmp_path, capsys):
    argv = (
        ["--w", "1", "--out", str(tmp_path / "x")] if module is hops else ["--sizes", "8", "--out", str(tmp_path / "x")]
    )
    with pytest.raises(SystemExit) as exc:
        module.main(argv)
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1 and err.split(": error: ")[1].startswith("--")
