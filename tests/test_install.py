"""A fresh, non-editable install runs every user CLI from outside the checkout, and imports without reading it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("install"),
]  # one worker makes the install once (--dist loadgroup)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A venv with the checkout pip-installed into it, not editable; the dependencies (and pip, setuptools) come from
    the environment running the tests, a venv or the system interpreter, through a ``.pth`` file (a venv's own
    ``system_site_packages`` would give the *base* interpreter's packages instead)."""
    root = tmp_path_factory.mktemp("install")
    env_dir = root / "venv"
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    nested = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    outer = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()])
    (Path(nested) / "outer-environment.pth").write_text("".join(f"{p}\n" for p in outer if Path(p).is_dir()))
    source = root / "source"  # a copy of the tree: pip builds in place, and the checkout stays as it is
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, files.split("\0")):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    subprocess.run(
        [python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-cache-dir", "-q", str(source)],
        check=True,
        cwd=root,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "TMPDIR": str(root)},
    )
    away = root / "elsewhere"
    away.mkdir()
    return python, away


def _run(installed, *args, timeout=300):
    python, away = installed
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [str(python), *args], cwd=away, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, f"{args}: {result.stderr[-2000:]}"
    return result.stdout


def test_imports_come_from_the_install_not_the_checkout(installed):
    code = "import receptive, graphs, figures; print(receptive.__file__, graphs.__file__, figures.__file__)"
    out = _run(installed, "-c", code)
    for line in out.split():
        assert not Path(line).resolve().is_relative_to(REPO), line
    code = "from receptive.layouts import preset_dir; print(len(list(preset_dir().glob('*.json'))))"
    out = _run(installed, "-c", code)
    assert int(out) > 0


@pytest.mark.parametrize(
    "args",
    [
        ["-m", "receptive.coverage", "--n", "256", "--w", "8", "--no-progress"],
        ["-m", "receptive.coverage", "--n", "256", "--hf-config", "gemma3-4b", "--layers", "4", "--no-progress"],
        ["-m", "receptive.coverage", "--help"],
        ["-m", "receptive.bound", "--help"],
        ["-m", "receptive.layouts", "--n", "256", "--targets", "16", "--only", "mistral-7b-v0.1", "--no-progress"],
        ["-m", "graphs.smallworld", "--help"],
        ["-m", "gpu.approx", "--help"],
        ["-m", "figures", "--help"],
    ],
)
def test_user_clis_run_from_elsewhere(installed, args):
    assert _run(installed, *args)


def test_console_scripts_are_installed_and_run_from_elsewhere(installed):
    """pip writes every ``[project.scripts]`` entry beside the interpreter; two of them run (their entry points are
    checked against the commands in ``test_cli_flags``)."""
    tomllib = pytest.importorskip("tomllib")
    python, away = installed
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert sorted(p.name for p in python.parent.iterdir() if p.name in scripts) == sorted(scripts)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for argv, expected in (
        (["receptive-coverage", "--n", "256", "--w", "8", "--no-progress"], "coverage of n=256"),
        (["receptive-figures", "--help"], "usage: python -m figures"),
    ):
        result = subprocess.run(
            [str(python.parent / argv[0]), *argv[1:]],
            cwd=away,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert result.returncode == 0 and expected in result.stdout, result.stderr[-2000:]


def test_bound_tiny_run(installed, tmp_path):
    out = tmp_path / "bound"
    _run(
        installed,
        "-m",
        "receptive.bound",
        "--n",
        "256",
        "--w",
        "8",
        "--patterns",
        "sa",
        "--causal",
        "no",
        "--seeds",
        "2",
        "--out",
        str(out),
        "--no-progress",
    )
    assert (out / "bound.json").exists()


def test_a_figure_from_elsewhere(installed, tmp_path):
    _run(installed, "-m", "figures", "coverage_vs_layer", "--quick", "--out", str(tmp_path))
    assert {p.suffix for p in tmp_path.iterdir()} >= {".png", ".pdf"}


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_gpu_bench_help(installed):
    assert "usage" in _run(installed, "-m", "gpu.bench", "--help")


def test_python_is_the_venvs(installed):
    python, _ = installed
    assert Path(python).parent.parent != Path(sys.prefix)
