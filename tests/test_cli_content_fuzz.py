"""What a file, a path or a size can do wrong, beside the flag fuzz of ``test_cli_flags``: every command that reads a
file is given an empty file, a file of another shape (valid JSON, other keys), a truncated file and a binary file;
every command that writes is given a path it cannot write (below ``/proc``) and an extension it does not write; every
size flag is given a size too big for memory.

Each case must end in exit status 2 (or 1) with exactly one line on stderr that names the flag, no traceback, within
:data:`test_cli_flags.CASE_SECONDS`, and leave nothing behind in its folder (outputs are pointed into it). One case
per (command, kind)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from test_cli_flags import CASE_SECONDS, ROOT, _files, _main

#: what each kind of bad input file holds
CONTENTS = {
    "empty": b"",
    "other-shape": json.dumps({"unrelated": [1, 2, 3], "rows": "none"}).encode(),
    "truncated": b'{"points": [{"pattern": "sa", "n": 64, ',
    "binary": b"\x89PNG\r\n\x1a\n\x00\xff\xfe\x00\x01binary",
}
RESULTS = ROOT / "analysis"
APPROX = str(RESULTS / "numerical_methods/results/approx_minilm.json")
DECODER = str(RESULTS / "numerical_methods/results/approx_decoder.json")
CAUSAL = {
    "--bound-json": str(RESULTS / "bound/results/bound.json"),
    "--bound-22-json": str(RESULTS / "causal/results/n2p22/bound.json"),
    "--variants-json": str(RESULTS / "causal/results/variants/variants.json"),
    "--pooled-json": str(RESULTS / "causal/results/pooled.json"),
}
REAL_MODELS = str(RESULTS / "real_models/results/smollm2_n2048_m128.json")


def _folder_with(path: Path, name: str) -> str:
    """A folder beside ``path`` holding it as ``name`` (for the flags that read every file of a folder)."""
    folder = path.parent / "folder"
    folder.mkdir()
    path.rename(folder / name)
    return str(folder)


def _renamed(path: Path, name: str) -> str:
    """``path`` renamed to ``name`` in its folder (for a reader that goes by the extension)."""
    return str(path.rename(path.parent / name))


def _causal(flag: str):
    """The argv of ``figures causal`` with the committed files, ``flag``'s replaced by the bad one."""

    def argv(folder: Path, bad: Path) -> list[str]:
        files = [x for f, p in CAUSAL.items() for x in (f, str(bad) if f == flag else p)]
        return ["causal", *files, "--out", str(folder / "o")]

    return argv


#: readers: (id, package needed, command, flag (or the flags the line may name), argv from (case folder, bad file))
# fmt: off
READERS = [
    ("coverage-hf-config", None, "receptive.coverage.cli", "--hf-config",
     lambda t, f: ["--n", "64", "--hf-config", str(f), "--no-progress"]),
    ("layouts-configs", None, "receptive.layouts", "--configs",
     lambda t, f: ["--n", "64", "--targets", "8", "--configs", _folder_with(f, "bad.json"), "--no-progress"]),
    ("bench-replot", "torch", "gpu.bench.cli", "--replot",
     lambda t, f: ["--replot", str(f), "--plot", str(t / "p.png")]),
    ("figures-bench", "matplotlib", "figures.cli", "--bench",
     lambda t, f: ["cost_per_layer", "--bench", str(f), "--out", str(t / "o")]),
    ("figures-approx-json", "matplotlib", "figures.cli", "--approx-json",
     lambda t, f: ["approx_methods", "--approx-json", str(f), "--out", str(t / "o")]),
    ("figures-decoder-json", "matplotlib", "figures.cli", "--decoder-json",
     lambda t, f: ["approx_kv_cache", "--approx-json", APPROX, "--decoder-json", str(f), "--out", str(t / "o")]),
    ("figures-layouts-json", "matplotlib", "figures.cli", "--layouts-json",
     lambda t, f: ["layouts", "--layouts-json", str(f), "--out", str(t / "o")]),
    ("figures-training-dir", "matplotlib", "figures.cli", "--training-dir",
     lambda t, f: ["training", "--training-dir", _folder_with(f, "retrieval.json"), "--out", str(t / "o")]),
    *[(f"figures-{flag[2:]}", "matplotlib", "figures.cli", flag, _causal(flag)) for flag in CAUSAL],
    ("real-models-figure-json", "matplotlib", "analysis.real_models.figure", "--json",
     lambda t, f: ["--json", str(f), "--out", str(t / "fig.png")]),
    ("pooled-interval-file", None, "analysis.causal.pooled", "--interval-file",
     lambda t, f: [str(RESULTS / "causal/results/seeds"), "--interval-file", str(f)]),
    ("pooled-dirs", None, "analysis.causal.pooled", "dirs", lambda t, f: [_folder_with(f, "tasks.jsonl")]),
    ("interval-model-dirs", None, "analysis.causal.interval_model", "dirs",
     lambda t, f: [_folder_with(f, "tasks.jsonl"), "--out", str(t / "o.json")]),
    # a CSV whose header lacks the default source column is refused naming --source, the flag that picks it
    ("smallworld-edges", None, "receptive.smallworld", ("--edges", "--source"),
     lambda t, f: ["--edges", _renamed(f, "edges.csv")]),
    ("refresh-costs-file", "torch", "analysis.numerical_methods.refresh_costs", "FILE", lambda t, f: [str(f)]),
    ("refresh-keys-log", None, "analysis.causal.refresh_keys", "--out",
     lambda t, f: ["--out", _folder_with(f, "variants.jsonl")]),
]
# fmt: on

#: writers: (id, package needed, command, flag, argv from the output path, the extension it writes (None: a folder))
# fmt: off
WRITERS = [
    ("coverage-csv", None, "receptive.coverage.cli", "--csv", lambda p: ["--n", "64", "--w", "4", "--csv", p], ".csv"),
    ("coverage-plot", None, "receptive.coverage.cli", "--plot", lambda p: ["--n", "64", "--w", "4", "--plot", p],
     ".png"),
    ("layouts-json", None, "receptive.layouts", "--json",
     lambda p: ["--n", "64", "--targets", "8", "--only", "mistral-7b-v0.1", "--json", p], ".json"),
    ("bench-json", "torch", "gpu.bench.cli", "--json",
     lambda p: ["--n", "64", "--w", "8", "--repeats", "1", "--json", p], ".json"),
    ("bench-plot", "torch", "gpu.bench.cli", "--plot",
     lambda p: ["--n", "64", "--w", "8", "--repeats", "1", "--plot", p], ".png"),
    ("approx-json", "torch", "gpu.approx.cli", "--json",
     lambda p: ["--n", "16", "--d", "4", "--budgets", "4", "--seeds", "1", "--json", p], ".json"),
    ("figures-out", "matplotlib", "figures.cli", "--out", lambda p: ["coverage_vs_layer", "--quick", "--out", p],
     None),
    ("hops-out", None, "analysis.receptive_fields.hops", "--out", lambda p: ["--n", "64", "--w", "4", "--out", p],
     ".json"),
    ("keys-per-query-out", None, "analysis.receptive_fields.keys_per_query", "--out", lambda p: ["--out", p], ".json"),
    ("mask-mod-time-out", "torch", "analysis.receptive_fields.mask_mod_time", "--out",
     lambda p: ["--sizes", "64", "--out", p], ".json"),
    ("smallworld-attention-out", None, "analysis.receptive_fields.smallworld_attention", "--out",
     lambda p: ["--n", "64", "--w", "4", "--sources", "4", "--out", p], ".json"),
    ("far-offsets-out", None, "analysis.causal.causal_far_offsets", "--out",
     lambda p: ["--n", "1024", "--w", "8", "--out", p], ".json"),
    ("interval-check-out", None, "analysis.causal.causal_interval_check", "--out", lambda p: ["--out", p], ".json"),
    ("clumps-out", None, "analysis.causal.causal_clumps", "--out", lambda p: ["--point", "64:4:2", "--out", p],
     ".json"),
    ("model-attempts-out", None, "analysis.causal.causal_model_attempts", "--out", lambda p: ["--out", p], ".json"),
    ("interval-model-out", None, "analysis.causal.interval_model", "--out", lambda p: ["--out", p], ".json"),
    ("pooled-out", None, "analysis.causal.pooled", "--out", lambda p: ["--out", p], ".json"),
    ("variants-out", None, "analysis.causal.variants", "--out", lambda p: ["--n", "2^6", "--out", p], None),
    ("training-out", "torch", "analysis.training.__main__", "--out", lambda p: ["retrieval", "--quick", "--out", p],
     None),
    ("step-time-out", "torch", "analysis.training.step_time", "--out", lambda p: ["--out", p], ".json"),
    ("reach-grid-out", "torch", "analysis.training.reach_grid", "--out", lambda p: ["--out", p], ".json"),
    ("decoder-json", "transformers", "analysis.numerical_methods.decoder", "--json", lambda p: ["--json", p], ".json"),
    ("real-json", "transformers", "analysis.numerical_methods.real", "--json", lambda p: ["--json", p], ".json"),
    ("real-models-study-out", "transformers", "analysis.real_models.study", "--out", lambda p: ["--out", p], ".json"),
    ("real-models-windows-out", "transformers", "analysis.real_models.windows", "--out", lambda p: ["--out", p],
     ".json"),
    ("real-models-figure-out", "matplotlib", "analysis.real_models.figure", "--out",
     lambda p: ["--json", REAL_MODELS, "--out", p], ".png"),
]
# fmt: on

HUGE = str(10**13)
#: sizes too big for memory: (id, package needed, command, flag, argv from the case folder)
# fmt: off
SIZES = [
    ("coverage-n", None, "receptive.coverage.cli", "--n", lambda t: ["--n", HUGE, "--w", "4", "--no-progress"]),
    ("coverage-stack-repeat", None, "receptive.coverage.cli", "--stack",
     lambda t: ["--n", "64", "--stack", f"{HUGE}*swa:4", "--layers", HUGE, "--no-progress"]),
    ("coverage-hf-config-layers", None, "receptive.coverage.cli", "--hf-config",
     lambda t: ["--n", "64", "--hf-config", _config(t, num_hidden_layers=10**12), "--no-progress"]),
    ("layouts-configs-layers", None, "receptive.layouts", "--configs",
     lambda t: ["--n", "64", "--targets", "8", "--no-progress", "--configs",
                _folder_with(Path(_config(t, num_hidden_layers=10**12)), "huge.json")]),
    ("layouts-stack-layers", None, "receptive.layouts", "--configs",
     lambda t: ["--n", "64", "--targets", "8", "--no-progress", "--configs",
                _folder_with(Path(_config(t, name="x", stack="swa:16", layers=10**12, causal=True)), "huge.json")]),
    ("smallworld-layers", None, "receptive.smallworld", "--layers",
     lambda t: ["--graph", "sa", "--n", "4096", "--w", "16", "--layers", HUGE, "--no-progress"]),
    ("smallworld-n", None, "receptive.smallworld", "--n",
     lambda t: ["--graph", "sa+swa", "--n", HUGE, "--no-progress"]),
    ("smallworld-er-n", None, "receptive.smallworld", "--n", lambda t: ["--graph", "er", "--n", HUGE, "--no-progress"]),
    ("bench-n", "torch", "gpu.bench.cli", "--n", lambda t: ["--n", str(10**8), "--repeats", "1"]),
    ("approx-n", "torch", "gpu.approx.cli", "--n",
     lambda t: ["--n", str(10**7), "--budgets", "4", "--seeds", "1"]),
    ("hops-n", None, "analysis.receptive_fields.hops", "--n", lambda t: ["--n", HUGE, "--out", str(t / "h.json")]),
    ("smallworld-attention-n", None, "analysis.receptive_fields.smallworld_attention", "--n",
     lambda t: ["--n", HUGE, "--out", str(t / "s.json")]),
    ("variants-n", None, "analysis.causal.variants", "--n", lambda t: ["--n", "2^40", "--out", str(t / "v")]),
]
# fmt: on


def _config(folder: Path, **fields) -> str:
    path = folder / "config.json"
    path.write_text(json.dumps({"model_type": "huge", **fields}))
    return str(path)


def _run(main, argv: list[str], folder: Path, capsys) -> tuple[object, str, set[str]]:
    """``main(argv)`` under an alarm: (exit status or the exception, stderr, the files the folder gained or lost)."""
    before = _files(folder)

    def alarm(*_):
        raise TimeoutError(f"still running after {CASE_SECONDS} s: work started that should have been refused")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(CASE_SECONDS)
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    except Exception as exc:  # a traceback the command let out
        code = f"{type(exc).__name__}: {exc}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, capsys.readouterr().err, _files(folder) ^ before


def _check(code, err: str, changed: set[str], flag: str) -> None:
    lines = err.strip().splitlines()
    assert code in (1, 2), (code, err)
    assert "Traceback" not in err and len(lines) == 1, err
    flags = flag if isinstance(flag, tuple) else (flag,)
    assert any(f" {f}:" in lines[0] or f"{f} " in lines[0] for f in flags), f"the line names none of {flags}: {err}"
    assert not changed, f"left behind or removed: {sorted(changed)}"


@pytest.mark.parametrize("kind", sorted(CONTENTS))
@pytest.mark.parametrize(("needs", "command", "flag", "argv"), [c[1:] for c in READERS], ids=[c[0] for c in READERS])
def test_a_bad_input_file_is_one_line_naming_its_flag(needs, command, flag, argv, kind, tmp_path, capsys, monkeypatch):
    if needs:
        pytest.importorskip(needs)
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "input.json"
    bad.write_bytes(CONTENTS[kind])
    args = argv(tmp_path, bad)
    _check(*_run(_main(command), args, tmp_path, capsys), flag)


@pytest.mark.parametrize("kind", ["unwritable", "extension"])
@pytest.mark.parametrize(
    ("needs", "command", "flag", "argv", "suffix"), [c[1:] for c in WRITERS], ids=[c[0] for c in WRITERS]
)
def test_an_output_path_that_cannot_be_written_is_refused_before_work(
    needs, command, flag, argv, suffix, kind, tmp_path, capsys, monkeypatch
):
    if needs:
        pytest.importorskip(needs)
    if kind == "extension" and suffix is None:
        pytest.skip("a folder has no extension")
    monkeypatch.chdir(tmp_path)
    path = f"/proc/out{suffix or ''}" if kind == "unwritable" else str(tmp_path / "out.svg")
    _check(*_run(_main(command), argv(path), tmp_path, capsys), flag)


@pytest.mark.parametrize(("needs", "command", "flag", "argv"), [c[1:] for c in SIZES], ids=[c[0] for c in SIZES])
def test_a_size_too_big_for_memory_is_refused_before_work(needs, command, flag, argv, tmp_path, capsys, monkeypatch):
    if needs:
        pytest.importorskip(needs)
    monkeypatch.chdir(tmp_path)
    args = argv(tmp_path)
    code, err, changed = _run(_main(command), args, tmp_path, capsys)
    _check(code, err, changed, flag)
    assert any(word in err for word in ("memory", "GiB", "TiB", "PiB")), err
