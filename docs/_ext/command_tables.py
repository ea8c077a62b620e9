"""Sphinx extension: the ``command-tables`` directive, the user guide's list of commands read from the commands.

A command is a module of ``receptive``, ``graphs``, ``gpu`` or ``figures`` that ends with
``run_cli = partial(run_command, main)``. For each one the directive renders its ``python -m`` name, its console
script (``[project.scripts]`` of ``pyproject.toml``), the first sentence of its module docstring and a table of the
options of its ``build_parser()``: flag, default and help, as ``--help`` shows them. Nothing is written by hand, so
the table cannot fall behind a parser. :func:`markdown` is the whole text (MyST Markdown); the directive parses it
in place.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
from pathlib import Path

#: the packages whose modules may be commands
PACKAGES = ("receptive", "graphs", "gpu", "figures")
#: the line that makes a module a command
ENTRY = "\nrun_cli = partial(run_command, main)"


def scripts(root: Path) -> dict[str, str]:
    """Module -> console script, from ``[project.scripts]`` of ``root/pyproject.toml``."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    table = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    return {target.split(":")[0]: name for name, target in table.items()}


def command_modules(root: Path) -> list[str]:
    """The command modules under ``root``: those with a console script in its order, then the others by name."""
    found = sorted(
        ".".join(path.relative_to(root).with_suffix("").parts)
        for package in PACKAGES
        for path in (root / package).rglob("*.py")
        if ENTRY in path.read_text()
    )
    order = list(scripts(root))
    return sorted(found, key=lambda m: (order.index(m) if m in order else len(order), m))


def command_name(module: str) -> str:
    """What follows ``python -m``: ``receptive.coverage.cli`` -> ``receptive.coverage``."""
    return module.removesuffix(".cli")


def summary(module) -> str:
    """The first sentence of ``module``'s docstring, without the command's own name, as Markdown."""
    text = " ".join(inspect.getdoc(module).split("\n\n")[0].split())
    if text.startswith("``python -m"):
        text = text.split("``: ", 1)[-1]
    text = re.sub(r"\s*\(``python -m [^`]+``\)|:\s*``python -m [^`]+``", "", text)
    text = re.split(r"(?<=[.?])\s", text)[0]
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"``\1``", text).replace("``", "`")
    return _escape(text[:1].upper() + text[1:])


def _escape(text: str) -> str:
    """``text`` with the characters Markdown (and MyST's dollar math) would read escaped, outside code spans."""
    parts = text.split("`")
    for k in range(0, len(parts), 2):
        parts[k] = re.sub(r"([\\*_|<>\[\]$])", r"\\\1", parts[k])
    return "`".join(parts)


def option_rows(parser: argparse.ArgumentParser) -> list[list[str]]:
    """One row per argument of ``parser`` (``--help`` left out): the flags as ``--help`` writes them, the default
    (``required`` for a required one, empty for a switch or where there is none) and the help, its ``%(default)s``
    filled in."""
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        flags = formatter._format_action_invocation(action)
        default = action.default
        if action.required:
            shown = "required"
        elif action.nargs == 0 or default is None or default == "" or default is argparse.SUPPRESS:  # a switch
            shown = ""
        else:
            shown = f"`{default}`"
        help_text = formatter._expand_help(action) if action.help else ""
        rows.append([f"`{flags}`", shown, _escape(" ".join(help_text.split()))])
    return rows


def command_table(root: Path) -> str:
    """The table of the commands: console script (empty for none) and ``python -m`` name, importing none of them."""
    names = scripts(root)
    lines = ["| console script | `python -m` |", "|---|---|"]
    for module in command_modules(root):
        script = f"`{names[module]}`" if module in names else ""
        lines.append(f"| {script} | `{command_name(module)}` |")
    return "\n".join(lines) + "\n"


def options_text(module: str, script: str | None = None) -> str:
    """One command's name, console script, summary and table of options (the module is imported)."""
    loaded = importlib.import_module(module)
    named = f" (console script `{script}`)" if script else ""
    lines = [f"**`python -m {command_name(module)}`**{named}: {summary(loaded)}", ""]
    lines += ["| option | default | what it sets |", "|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in option_rows(loaded.build_parser())]
    return "\n".join(lines) + "\n"


def markdown(root: Path) -> str:
    """The guide's text of the commands: :func:`command_table`, then :func:`options_text` of each command."""
    names = scripts(root)
    parts = [command_table(root)] + [options_text(m, names.get(m)) for m in command_modules(root)]
    return "\n".join(parts)


def _directive():
    """The ``command-tables`` directive (imported with Sphinx, which only a build needs)."""
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class CommandTables(SphinxDirective):
        """Renders :func:`markdown` of the checkout in place (MyST parses it)."""

        has_content = False

        def run(self):
            root = Path(self.env.srcdir).parent
            self.env.note_dependency(str(root / "pyproject.toml"))
            for module in command_modules(root):
                self.env.note_dependency(str(root / Path(*module.split(".")).with_suffix(".py")))
            holder = nodes.container()
            text = StringList(markdown(root).splitlines(), source="command-tables")
            self.state.nested_parse(text, self.content_offset, holder)
            return holder.children

    return CommandTables


def setup(app):
    app.add_directive("command-tables", _directive())
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
