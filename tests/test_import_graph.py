"""The import graph of the project's code, read from the source with ``ast`` (nothing is imported): no cycles, also
none hidden by an import inside a function, and dependencies pointing one way, graphs <- receptive <- gpu <- figures,
with the studies of ``analysis/`` and the scripts of ``benchmarks/`` above them all and never imported by an
installed package."""

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("graphs", "receptive", "gpu", "figures", "analysis", "benchmarks")
# what each top-level package may import of the others (the layering; a package may always import itself)
ALLOWED = {
    "graphs": set(),
    "receptive": {"graphs"},
    "gpu": {"graphs", "receptive"},
    "figures": {"graphs", "receptive", "gpu"},
    "analysis": {"graphs", "receptive", "gpu", "figures"},
    "benchmarks": {"graphs", "receptive", "gpu", "figures"},
}


def module_files() -> dict[str, Path]:
    """Every module of the project by dotted name (a package by its own name, for its ``__init__.py``)."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules that module ``name`` imports anywhere in its body (top level, functions, branches)."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_package else name.split(".")[:-1]
                here = here[: len(here) - node.level + 1]
                base = ".".join([*here, base] if base else here)
            # ``from package import submodule`` imports the submodule; ``from module import name`` the module
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


@pytest.fixture(scope="module")
def import_graph() -> nx.DiGraph:
    modules = module_files()
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        graph.add_edges_from((name, target) for target in imported_modules(name, path, modules))
    return graph


def test_the_graph_is_read(import_graph):
    assert import_graph.number_of_nodes() > 100
    assert import_graph.has_edge("receptive.coverage.compute", "receptive.patterns")


def test_no_import_cycles(import_graph):
    cycles = [sorted(c) for c in nx.strongly_connected_components(import_graph) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def test_dependencies_point_one_way(import_graph):
    wrong = sorted(
        (a, b)
        for a, b in import_graph.edges
        if a.split(".")[0] != b.split(".")[0] and b.split(".")[0] not in ALLOWED[a.split(".")[0]]
    )
    assert not wrong, f"imports against the layering graphs <- receptive <- gpu <- figures <- analysis: {wrong}"


def test_the_checker_sees_a_cycle_and_a_function_level_import(tmp_path):
    """The walk must see an import hidden inside a function, and a cycle it closes."""
    (tmp_path / "a.py").write_text("def f():\n    from b import g\n    return g\n")
    (tmp_path / "b.py").write_text("import a\n\ndef g():\n    return a\n")
    modules = {"a": tmp_path / "a.py", "b": tmp_path / "b.py"}
    assert imported_modules("a", modules["a"], modules) == {"b"}
    graph = nx.DiGraph([(m, t) for m, p in modules.items() for t in imported_modules(m, p, modules)])
    assert not nx.is_directed_acyclic_graph(graph)


INSTALLED = ("graphs", "receptive", "gpu", "figures")
# what each part of ``gpu`` may import of the others: the integration builds on the backend; the lab, the harness
# and the profile on the integration (the harness reads only the lab's public API, the package ``gpu.approx``, not
# its modules); the backend imports nothing, the integration none of the rooms built on it
GPU_ALLOWED = {
    "gpu": {"gpu.attention"},
    "gpu.validation": set(),
    "gpu.attention": {"gpu.validation"},
    "gpu.approx": {"gpu.attention", "gpu.validation", "gpu.hf"},
    "gpu.hf": {"gpu.attention", "gpu.validation"},
    "gpu.harness": {"gpu.attention", "gpu.validation", "gpu.approx", "gpu.hf"},
    "gpu.profile": {"gpu.attention", "gpu.validation", "gpu.hf", "gpu.harness"},
    "gpu.bench": {"gpu.attention", "gpu.validation"},
}


def part(module: str) -> str:
    """The top-level package and its first component (``receptive.theory.causal`` -> ``receptive.theory``)."""
    return ".".join(module.split(".")[:2])


def test_gpu_parts_point_one_way(import_graph):
    parts = {part(m) for m in import_graph if m.split(".")[0] == "gpu"}
    assert parts == set(GPU_ALLOWED), f"gpu's parts changed: {sorted(parts ^ set(GPU_ALLOWED))}"
    wrong = sorted(
        (a, b)
        for a, b in import_graph.edges
        if a.startswith("gpu")
        and b.startswith("gpu")
        and part(a) != part(b)
        and (part(b) not in GPU_ALLOWED[part(a)] or (part(b) == "gpu.approx" and b != "gpu.approx"))
    )
    assert not wrong, f"imports against the layering of gpu's parts (backend <- lab, integration, CLI): {wrong}"


@pytest.mark.parametrize("package", INSTALLED)
def test_subpackages_form_no_cycle(import_graph, package):
    """Within each installed package, the import graph between its subpackages (and top-level modules) is acyclic."""
    parts = nx.DiGraph(
        (part(a), part(b))
        for a, b in import_graph.edges
        if a.split(".")[0] == package == b.split(".")[0] and part(a) != part(b) and a != package and b != package
    )
    cycles = [sorted(c) for c in nx.strongly_connected_components(parts) if len(c) > 1]
    assert not cycles, f"{package}: subpackages importing each other: {cycles}"


@pytest.mark.parametrize("package", INSTALLED)
def test_the_library_packages_do_not_name_the_studies(package):
    """The studies in ``analysis/`` use the packages, never the other way round, in code or in prose: an installed
    module that names a study (``analysis.training``, ``analysis/causal``) points at files a user does not have."""
    import re

    study = re.compile(r"(?<![\w./])analysis[./][a-z_]")  # not receptive.bound.analysis, not a relative import
    named = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if study.search(line)
    ]
    assert not named, f"installed modules naming a study: {named}"
