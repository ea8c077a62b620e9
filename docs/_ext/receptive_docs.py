"""Sphinx extension: tables, notebooks and API pages generated from the checkout at build time.

On ``config-inited`` (before Sphinx looks for source files) it writes into ``docs/generated/``:

* ``tables/NAME.md``: one Markdown table per committed result file (or group of files), each headed by the file it
  reads and the command that wrote it. The pages include them with ``{include}``; no number is copied by hand.
* ``notebooks/NN_name.ipynb``: copies of the study notebooks ``analysis/*/NN_*.ipynb``, which myst-nb renders from
  their stored outputs (the docs never execute them).
* ``api/PACKAGE.rst``: an autosummary of every public module of ``receptive``, ``graphs``, ``gpu`` and ``figures``.

The command of a result file is read from the table of its study's ``analysis/<study>/README.md`` (the rows
"| `results/FILE` | command |"); a file outside ``analysis/`` gives its command in its own ``command`` field.
A result file that is missing or has no command is a Sphinx warning, so ``sphinx -W`` fails on it.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import shutil
from pathlib import Path

from results_tables import Tables
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: the packages whose public modules the API reference lists
API_PACKAGES = ("receptive", "graphs", "gpu", "figures")

#: module names the API reference leaves out: entry points whose import would run a command line
API_SKIP = ("__main__",)


# -- notebooks and API pages -----------------------------------------------------------------------------------------
def copy_notebooks(root: Path, out: Path) -> list[Path]:
    """Copy ``analysis/*/NN_*.ipynb`` into ``out`` (keeping their times, removing stale copies); return the copies."""
    out.mkdir(parents=True, exist_ok=True)
    sources = sorted(root.glob("analysis/*/[0-9][0-9]_*.ipynb"))
    names = {nb.name for nb in sources}
    for old in out.glob("*.ipynb"):
        if old.name not in names:
            old.unlink()
    copies = []
    for nb in sources:
        target = out / nb.name
        if not target.exists() or target.read_bytes() != nb.read_bytes():
            shutil.copy2(nb, target)
        copies.append(target)
    return copies


def public_modules(package: str) -> list[str]:
    """The importable modules of ``package`` whose dotted names have no part starting with ``_``."""
    pkg = importlib.import_module(package)
    names = []
    for info in pkgutil.walk_packages(pkg.__path__, package + "."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts) or parts[-1] in API_SKIP:
            continue
        names.append(info.name)
    return sorted(names)


def write_api(out: Path) -> None:
    """Write ``api/PACKAGE.rst`` for every package of :data:`API_PACKAGES`: its docstring and its modules."""
    for package in API_PACKAGES:
        title = f"``{package}``"
        lines = [title, "=" * len(title), "", f".. automodule:: {package}", "   :no-members:", ""]
        lines += [".. rubric:: Modules", "", ".. autosummary::", "   :toctree: .", ""]
        lines += [f"   {name.removeprefix(package + '.')}" for name in public_modules(package)]
        write_if_changed(out / f"{package}.rst", "\n".join(lines) + "\n")


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` names an importable module or an attribute of one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def prune_stale_stubs(out: Path) -> None:
    """Delete the autosummary stubs of objects that no longer exist (autosummary only adds stubs)."""
    for stub in out.glob("*.rst"):
        if stub.stem not in API_PACKAGES and not resolves(stub.stem):
            stub.unlink()


def write_if_changed(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def generate(app, config) -> None:
    srcdir = Path(app.srcdir)
    root = srcdir.parent
    out = srcdir / "generated"
    tables = Tables(root)
    for name, text in tables.all().items():
        write_if_changed(out / "tables" / f"{name}.md", text)
    for problem in tables.missing:
        logger.warning("receptive_docs: missing %s", problem)
    copy_notebooks(root, out / "notebooks")
    write_api(out / "api")
    prune_stale_stubs(out / "api")


def _summary_keeping_literals(extract):
    """Wrap autosummary's ``extract_summary`` so that a period inside a ``literal`` does not end the summary.

    autosummary cuts a docstring's first sentence at ``". "``; inside a literal such as ``1 .. n`` or ``x . y`` that
    cut leaves an unterminated literal, which docutils reports as a warning. The periods inside literals are masked
    while the sentence is found, and restored in the summary.
    """

    def extract_summary(doc: list[str], document) -> str:
        text = "\n".join(doc)
        masked = re.sub(r"``.+?``", lambda m: m.group(0).replace(".", _DOT), text, flags=re.DOTALL)
        return extract(masked.split("\n"), document).replace(_DOT, ".")

    return extract_summary


_DOT = "\u2024"


def setup(app):
    from sphinx.ext import autosummary

    if not getattr(autosummary.extract_summary, "_keeps_literals", False):
        autosummary.extract_summary = _summary_keeping_literals(autosummary.extract_summary)
        autosummary.extract_summary._keeps_literals = True
    app.connect("config-inited", generate)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
