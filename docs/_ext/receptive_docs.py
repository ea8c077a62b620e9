"""Sphinx extension: tables and notebooks generated from the checkout at build time, and the API reference's links.

On ``config-inited`` (before Sphinx looks for source files) it writes into ``docs/generated/``:

* ``tables/NAME.md``: one Markdown table per committed result file (or group of files), each headed by the file it
  reads and the command that wrote it. The pages include them with ``{include}``; no number is copied by hand.
* ``notebooks/NN_name.ipynb``: copies of the study notebooks ``analysis/*/NN_*.ipynb``, which myst-nb renders from
  their stored outputs (the docs never execute them).

and removes the stubs of ``generated/api/`` that no page of ``docs/api/`` lists (autosummary writes them, one page
per public name, and never deletes one).

The command of a result file is read from the table of its study's ``analysis/<study>/README.md`` (the rows
"| `results/FILE` | command |"); a file outside ``analysis/`` gives its command in its own ``command`` field.
A result file that is missing or has no command is a Sphinx warning, so ``sphinx -W`` fails on it.

Two repairs of what autosummary and the Python domain do by default:

* a summary (the first sentence of a docstring in the API tables) is not cut at ``Sec.``, ``Eq.`` and the like, nor
  inside a ``literal``, and loses its numpydoc citation labels (``[R...-1]_``, which only the object's own page
  resolves);
* a reference to a public name through another import path (``gpu.swa_attention``, ``receptive.patterns.make_pattern``)
  links to the page of the object it names, found by identity: each object is documented once, where users import it.
"""

from __future__ import annotations

import importlib
import inspect
import re
import shutil
from pathlib import Path

from docutils import nodes
from results_tables import Tables
from sphinx import addnodes
from sphinx.util import logging

logger = logging.getLogger(__name__)


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


def api_entries(api_dir: Path) -> list[str]:
    """The dotted names that the autosummary tables of the API pages ``api_dir/*.md`` list, in page order.

    A name is its table's ``.. currentmodule::`` joined with the entry, as autosummary names its stub.
    """
    names = []
    for page in sorted(api_dir.glob("*.md")):
        module, in_table = "", False
        for line in page.read_text().splitlines():
            stripped = line.strip()
            if stripped.startswith(".. currentmodule::"):
                module, in_table = stripped.split("::", 1)[1].strip(), False
            elif stripped.startswith(".. autosummary::"):
                in_table = True
            elif in_table and stripped and not stripped.startswith(":") and line.startswith("   "):
                names.append(f"{module}.{stripped}" if module else stripped)
            elif in_table and stripped and not line.startswith("   "):
                in_table = False
    return names


def resolve(dotted: str):
    """The object that ``dotted`` names (an importable module or an attribute of one), or ``None``."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return None
            obj = getattr(obj, attr)
        return obj
    return None


def prune_stale_stubs(out: Path, listed: set[str]) -> None:
    """Delete the autosummary stubs that no API page lists any more (autosummary only adds stubs)."""
    for stub in out.glob("*.rst"):
        if stub.stem not in listed:
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
    prune_stale_stubs(out / "api", set(api_entries(srcdir / "api")))


# -- summaries of the API tables ---------------------------------------------------------------------------------------
#: abbreviations whose period does not end a docstring's first sentence
ABBREVIATIONS = ("Sec", "Secs", "Eq", "Eqs", "Fig", "Figs", "Ref", "Refs", "Thm", "Alg", "cf", "resp", "approx", "vs")

_DOT = "\u2024"
_CITATION = re.compile(r"\s*\[[\w.-]+\]_")
_ABBREVIATION = re.compile(r"\b(" + "|".join(ABBREVIATIONS) + r")\.")


def _summary_without_false_stops(extract):
    """Wrap autosummary's ``extract_summary``: no cut inside a literal or after an abbreviation, no citation label.

    autosummary cuts a docstring's first sentence at ``". "``: inside a literal such as ``1 .. n`` that cut leaves an
    unterminated literal (a docutils warning), and after ``Sec.`` or ``Eq.`` it ends the summary mid-sentence. Those
    periods are masked while the sentence is found, and restored in the summary. numpydoc renames a docstring's
    citations (``[1]_`` becomes ``[R...-1]_``) before autosummary reads it; in the table the label would show as raw
    text, so it is dropped there (the object's page keeps it, linked to its References).
    """

    def extract_summary(doc: list[str], *args) -> str:
        text = "\n".join(doc)
        text = re.sub(r"``.+?``", lambda m: m.group(0).replace(".", _DOT), text, flags=re.DOTALL)
        text = _ABBREVIATION.sub(lambda m: m.group(1) + _DOT, text)
        text = _CITATION.sub("", text)
        return extract(text.split("\n"), *args).replace(_DOT, ".")

    return extract_summary


# -- references through another import path ---------------------------------------------------------------------------
_DOCUMENTED_TYPES = ("function", "class", "exception", "module", "method", "classmethod", "staticmethod", "data")
_REFERENCE_TYPES = ("func", "class", "exc", "mod", "obj", "meth", "data")
_documented: dict[int, dict[int, str]] = {}
_packages: set[str] = set()


def _identifiable(obj) -> bool:
    """Whether ``obj`` is told apart by identity: modules, functions, classes and containers, not ints or strings."""
    return inspect.ismodule(obj) or callable(obj) or isinstance(obj, (dict, list, tuple, set, frozenset))


def documented_objects(env) -> dict[int, str]:
    """``id(object) -> documented name`` for every module, function, class, method and container documented."""
    key = id(env)
    if key not in _documented:
        table = {}
        for name, entry in sorted(env.get_domain("py").objects.items()):
            if entry.aliased or entry.objtype not in _DOCUMENTED_TYPES:
                continue
            obj = resolve(name)
            if obj is not None and _identifiable(obj):
                table.setdefault(id(_unwrap(obj)), name)
        _documented.clear()
        _documented[key] = table
        _packages.clear()
        _packages.update(_top_level_packages(env, table))
    return _documented[key]


def _top_level_packages(env, table: dict[int, str]) -> set[str]:
    """The top-level packages of the documented names and of the modules that define the documented objects: a name
    outside them cannot name a documented object (it would have to import it from one of them)."""
    packages = {name.split(".")[0] for name in env.get_domain("py").objects}
    for name in table.values():
        obj = _unwrap(resolve(name))
        module = obj.__name__ if inspect.ismodule(obj) else getattr(obj, "__module__", None)
        if isinstance(module, str):
            packages.add(module.split(".")[0])
    return packages


def _unwrap(obj):
    """The function under a classmethod or staticmethod, else ``obj``."""
    return getattr(obj, "__func__", obj)


_DOCSTRING_OF = re.compile(r"docstring of (\S+)")


def _scopes(node) -> list[str]:
    """The scopes a relative target of ``node`` may be relative to: its module and class, and (for a docstring) the
    object whose docstring holds it and each of its parents, as Python would resolve a name written there."""
    scopes = []
    module, cls = node.get("py:module"), node.get("py:class")
    if module and cls:
        scopes.append(f"{module}.{cls}")
    if module:
        scopes.append(module)
    match = _DOCSTRING_OF.search(node.source or "")
    owner = match.group(1) if match else _summarised(node)
    if owner:
        obj = resolve(owner)
        if getattr(obj, "__module__", None) and getattr(obj, "__qualname__", None):
            owner = f"{obj.__module__}.{obj.__qualname__}"  # where its docstring is written
        parts = owner.split(".")
        scopes += [".".join(parts[:cut]) for cut in range(len(parts), 0, -1)]
    return scopes


def _summarised(node) -> str | None:
    """The documented name of the object whose summary, in a row of an autosummary table, holds ``node``."""
    row = node.parent
    while row is not None and not isinstance(row, nodes.row):
        row = row.parent
    if row is None or not row.children:
        return None
    for ref in row.children[0].findall(lambda n: "refuri" in n or "reftarget" in n):
        target = ref.get("reftarget") or ref["refuri"].rpartition("#")[2]
        if target:
            return target
    return None


def resolve_alias(app, env, node, contnode):
    """Resolve a missing Python reference to the documented object that its target imports, if there is one."""
    if node.get("refdomain") != "py" or node.get("reftype") not in (
        "func",
        "class",
        "exc",
        "mod",
        "obj",
        "meth",
        "data",
    ):
        return None
    target = node["reftarget"].lstrip(".~")
    table = documented_objects(env)
    domain = env.get_domain("py")
    for candidate in [target] + [f"{scope}.{target}" for scope in _scopes(node)]:
        if candidate.split(".")[0] not in _packages:
            continue  # another project's name (transformers.AttentionInterface): resolving it imports that project
        obj = resolve(candidate)
        if obj is None or not _identifiable(obj) or id(_unwrap(obj)) not in table:
            continue
        found = domain.resolve_xref(env, node["refdoc"], app.builder, "obj", table[id(_unwrap(obj))], node, contnode)
        if found is not None:
            return found
    return None


def public_bases(app, name, obj, options, bases) -> None:
    """Show a class's public bases: a private base (``_HeadsPattern``) is replaced by its own bases."""
    shown = []
    for base in bases:
        while base.__name__.startswith("_") and base.__bases__ and base.__bases__ != (object,):
            base = base.__bases__[0]
        if not base.__name__.startswith("_") and base not in shown:
            shown.append(base)
    bases[:] = shown or [object]


# -- the sidebar ----------------------------------------------------------------------------------------------------
#: toctree entries under this folder stay out of the sidebar (each topic page links its names' pages)
UNLISTED = "generated/api/"


def unlist_api_pages(app, env) -> None:
    """Remove the pages of ``generated/api/`` from the sidebar's toctrees, keeping them in the documents' toctrees.

    Every page renders the sidebar's whole toctree; listing the ~300 pages of the API's names there would cost most of
    the build (pydata-sphinx-theme's "Build performance and size") and bury the topic pages.
    """
    for toc in env.tocs.values():
        for toctree in list(toc.findall(addnodes.toctree)):
            entries = [entry for entry in toctree["entries"] if not entry[1].startswith(UNLISTED)]
            if entries:
                toctree["entries"] = entries
            else:
                toctree.parent.remove(toctree)


def setup(app):
    from sphinx.ext import autosummary

    if not getattr(autosummary.extract_summary, "_no_false_stops", False):
        autosummary.extract_summary = _summary_without_false_stops(autosummary.extract_summary)
        autosummary.extract_summary._no_false_stops = True
    app.connect("config-inited", generate)
    app.connect("missing-reference", resolve_alias)
    app.connect("autodoc-process-bases", public_bases)
    app.connect("env-updated", unlist_api_pages)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
