"""Load a script of ``benchmarks/`` as a module, for the tests of the benchmarks."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_benchmark(name):
    """The script ``benchmarks/<name>.py`` as a module (a script, not a package: loaded from its file path, so it
    is not importable by name; test modules import this with ``from benchmark_scripts import load_benchmark``)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
