"""One shape of command line: every installed command builds its parser with ``build_parser()``, an option several
commands share comes from one builder of :mod:`graphs.cli_options` (the same help, type and checks everywhere), the
user guide's tables of options are generated from those parsers, and ``--json`` / ``--csv`` print to stdout alone or
write the same text to a path."""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from pathlib import Path

import pytest
from test_cli_flags import _parser

from gpu.hf.checkpoints import add_model_option
from graphs import cli_common, cli_options

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
from command_tables import command_modules, markdown  # noqa: E402

#: each installed command: its module and the package it needs beyond the toolkit's own
COMMANDS = {
    "receptive.coverage.cli": None,
    "receptive.bound.cli": None,
    "receptive.layouts": None,
    "receptive.smallworld": None,
    "graphs.smallworld.cli": None,
    "figures.cli": "matplotlib",
    "gpu.bench.cli": "torch",
    "gpu.approx.cli": "torch",
    "gpu.harness.cli": "transformers",
    "gpu.harness.lm_eval": "transformers",
    "gpu.profile.cli": "transformers",
}
COVERAGE, BOUND, LAYOUTS = "receptive.coverage.cli", "receptive.bound.cli", "receptive.layouts"
SMALLWORLD, GRAPHS_SMALLWORLD = "receptive.smallworld", "graphs.smallworld.cli"
BENCH, APPROX, HARNESS, LM_EVAL, PROFILE = (
    "gpu.bench.cli",
    "gpu.approx.cli",
    "gpu.harness.cli",
    "gpu.harness.lm_eval",
    "gpu.profile.cli",
)
#: each shared option: the commands that have it, from its builder
SHARED = {
    "--json": {COVERAGE, BOUND, LAYOUTS, SMALLWORLD, GRAPHS_SMALLWORLD, BENCH, APPROX, HARNESS, PROFILE},
    "--csv": {COVERAGE, PROFILE},
    "--seed": {COVERAGE, BOUND, LAYOUTS, SMALLWORLD, GRAPHS_SMALLWORLD, LM_EVAL, APPROX, HARNESS, PROFILE},
    "--seeds": {BOUND, APPROX, HARNESS, PROFILE},
    "--w": {COVERAGE, SMALLWORLD, BENCH},
    "--model": {HARNESS, PROFILE},
    "--no-progress": {COVERAGE, BOUND, LAYOUTS, SMALLWORLD, GRAPHS_SMALLWORLD, HARNESS, PROFILE},
    "--n": {COVERAGE, LAYOUTS, APPROX},
    "--out": {BOUND, HARNESS, "figures.cli"},
    "--budgets": {APPROX, HARNESS, PROFILE},
    "--budget": {LM_EVAL},
}
#: a flag of a shared name that means something else in that command
OTHER_MEANING = {
    (BOUND, "--n"): "comma-separated sequence lengths, powers 2^k allowed",
    (BENCH, "--n"): "comma-separated sequence lengths",
    (SMALLWORLD, "--n"): "nodes of the graph, the default set by the model",
    (GRAPHS_SMALLWORLD, "--n"): "nodes of the graph, the default set by the model",
    (BOUND, "--w"): "comma-separated windows, powers 2^k allowed",
}


def _reference(flag: str, name: str) -> argparse.Action:
    """The action the builder of ``flag`` adds to an empty parser (``--seed`` of a command with ``--seeds`` is the
    first of them, from :func:`graphs.cli_options.add_seeds_option`)."""
    parser = cli_common.OneLineErrorParser(prog="reference")
    if flag == "--seed" and name in SHARED["--seeds"]:
        cli_options.add_seeds_option(parser, 1)
        return next(action for action in parser._actions if "--seed" in action.option_strings)
    builders = {
        "--json": lambda: cli_options.add_json_option(parser),
        "--csv": lambda: cli_options.add_csv_option(parser),
        "--seed": lambda: cli_options.add_seed_option(parser),
        "--seeds": lambda: cli_options.add_seeds_option(parser, 1),
        "--w": lambda: cli_options.add_w_option(parser, 1),
        "--model": lambda: add_model_option(parser),
        "--no-progress": lambda: cli_options.add_progress_option(parser),
        "--n": lambda: cli_options.add_n_option(parser, 2),
        "--out": lambda: cli_options.add_out_option(parser, "files"),
        "--budgets": lambda: cli_options.add_budget_option(parser, "1"),
        "--budget": lambda: cli_options.add_budget_option(parser, 1, many=False),
    }
    return builders[flag]()


def _shape(action: argparse.Action, flag: str) -> tuple:
    """What must be equal between two commands' ``flag``: help (``--out``: all but what the folder holds; ``--w``: all
    but its default), type, arity, const, metavar and destination."""
    help_text = action.help
    if flag == "--w":  # a command may state a default it fills in later (the parser's is None)
        help_text = re.sub(r"default [^;]*\)$", "default)", help_text)
    if flag == "--out":
        help_text = re.sub(r": .* \((required|no default|default %\(default\)s)\)$", "", help_text)
    kind = getattr(action.type, "__qualname__", None), getattr(action.type, "__name__", None)
    return help_text, kind, action.nargs, action.const, action.metavar, action.dest


def _module(name: str):
    if COMMANDS[name]:
        pytest.importorskip(COMMANDS[name])
    return importlib.import_module(name)


def test_the_commands_are_those_the_docs_list():
    """The modules that end with ``run_cli = partial(run_command, main)``, which the guide lists, are these."""
    assert set(command_modules(ROOT)) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_main_parses_with_build_parser(name):
    module = _module(name)
    built = module.build_parser()
    assert isinstance(built, argparse.ArgumentParser)
    used = _parser(module.main)
    assert used.prog == built.prog
    assert [a.option_strings for a in used._actions] == [a.option_strings for a in built._actions]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_shared_options_come_from_their_builders(name):
    parser = _module(name).build_parser()
    actions = {flag: action for action in parser._actions for flag in action.option_strings}
    assert "--quiet" not in actions or actions["--quiet"] is actions.get("--no-progress"), "--quiet: not --no-progress"
    for flag, commands in SHARED.items():
        if (name, flag) in OTHER_MEANING:
            assert flag in actions
            continue
        if name not in commands:
            assert flag not in actions, f"{flag} of {name}: add it to SHARED (from its builder) or to OTHER_MEANING"
            continue
        assert flag in actions, f"{name} has no {flag}"
        assert _shape(actions[flag], flag) == _shape(_reference(flag, name), flag), f"{flag} of {name}"


def test_the_guide_lists_every_option_of_every_command():
    for package in {p for p in COMMANDS.values() if p}:
        pytest.importorskip(package)
    text = markdown(ROOT)
    for name in COMMANDS:
        module = importlib.import_module(name)
        block = text.partition(f"**`python -m {name.removesuffix('.cli')}`**")[2].partition("\n\n**")[0]
        assert block, f"{name} is not in the guide"
        for action in module.build_parser()._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert re.search(rf"^\| `{re.escape(flag)}\b", block, re.M) or f", {flag}" in block, (name, flag)


def _run(main, argv, capsys) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


#: small runs of commands whose --json prints JSON alone
JSON_RUNS = [
    (COVERAGE, ["--n", "64", "--w", "8", "--no-progress"]),
    (GRAPHS_SMALLWORLD, ["--graph", "ws", "--n", "60", "--k", "4", "--no-progress"]),
    (SMALLWORLD, ["--graph", "sa+swa", "--n", "64", "--w", "4", "--no-progress"]),
]


@pytest.mark.parametrize(("name", "argv"), JSON_RUNS, ids=[name for name, _ in JSON_RUNS])
def test_json_alone_prints_what_json_path_writes(name, argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main = _module(name).main
    printed = _run(main, [*argv, "--json"], capsys)
    assert _run(main, [*argv, "--json", "-"], capsys) == printed
    table = _run(main, [*argv, "--json", "out.json"], capsys)
    assert json.loads(printed) == json.loads((tmp_path / "out.json").read_text())
    assert printed == (tmp_path / "out.json").read_text()
    assert table.strip() and not table.lstrip().startswith("{")
    assert _run(main, argv, capsys) == table


def test_csv_alone_prints_what_csv_path_writes(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main = _module(COVERAGE).main
    argv = ["--n", "64", "--w", "8", "--no-progress"]
    printed = _run(main, [*argv, "--csv"], capsys)
    _run(main, [*argv, "--csv", "rows.csv", "--json", "out.json"], capsys)
    assert printed.startswith("pattern,method,layer,") and printed == (tmp_path / "rows.csv").read_bytes().decode()
    with pytest.raises(SystemExit) as exit:
        main([*argv, "--csv", "--json"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit.value.code == 2 and len(err) == 1 and "--json" in err[0] and "--csv" in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "rows.csv"]
