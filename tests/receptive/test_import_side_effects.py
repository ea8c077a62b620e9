"""Importing the toolkit changes nothing global: matplotlib's backend and rcParams, torch's and numba's threads."""

import json
import os
import subprocess
import sys

import pytest

PROBE = r"""
import importlib, json, pkgutil, sys
import matplotlib, numba, torch

def state():
    rc = matplotlib.rcParams
    return {
        "backend": rc._get_backend_or_none(),
        "rc": {k: repr(rc._get(k)) for k in sorted(rc.keys()) if k != "backend"},
        "torch_threads": torch.get_num_threads(),
        "torch_interop": torch.get_num_interop_threads(),
        "numba_threads": numba.get_num_threads(),
        "default_dtype": str(torch.get_default_dtype()),
    }

numba.get_num_threads()  # launch numba's threading layer first: with OpenMP it resets the process's OMP threads,
before = state()          # which torch reads too (a side effect of running numba, not of importing the toolkit)
imported = []
for top in ("graphs", "receptive", "gpu", "figures"):
    package = importlib.import_module(top)
    imported.append(top)
    for info in pkgutil.walk_packages(package.__path__, top + "."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue  # running a CLI is not importing
        try:
            importlib.import_module(info.name)
        except ImportError as exc:  # an optional dependency (triton) that this machine lacks
            print("skipped", info.name, exc, file=sys.stderr)
            continue
        imported.append(info.name)
after = state()
changed = {k: (before[k], after[k]) for k in before if k != "rc" and before[k] != after[k]}
rc_before, rc_after = before["rc"], after["rc"]
changed.update({k: (rc_before[k], rc_after.get(k)) for k in rc_before if rc_before[k] != rc_after.get(k)})
print(json.dumps({"imported": imported, "changed": changed}))
"""


def test_importing_every_module_leaves_global_state_alone():
    pytest.importorskip("torch")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # as under CI's parallel workers: a thread count that can change
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"graphs.kernels", "receptive.coverage.compute", "figures.style", "gpu"} <= set(doc["imported"])
    assert doc["changed"] == {}, doc["changed"]


def test_figures_apply_their_style_only_while_drawing(tmp_path):
    import matplotlib

    from figures.style import STYLE, styled

    before = matplotlib.rcParams["font.size"]
    seen = {}

    @styled
    def make():
        seen["font"] = matplotlib.rcParams["font.size"]
        raise RuntimeError("drawing failed")

    with pytest.raises(RuntimeError):
        make()
    assert seen["font"] == STYLE["font.size"] and matplotlib.rcParams["font.size"] == before
