import inspect
import os
import random
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

# Under pytest-xdist each worker gets its share of the cores for torch's and numba's thread pools (as scikit-learn's
# conftest does): OpenMP workers that spin-wait for each other on oversubscribed cores make a busy machine several
# times slower. The environment carries the share to the notebooks' kernels and the CLIs the tests start.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    _share = str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[_name] = _share
try:  # Triton kernels run on the CPU interpreter where there is no CUDA; set before any module imports triton
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
except ImportError:
    pass

# hypothesis: in CI (CI set) every run draws new cases (one random seed per session, in the report's header) and
# keeps no example database; a failure prints its falsifying example and a @reproduce_failure blob, and
# --hypothesis-seed=N reruns the session's draws. Locally the example database replays earlier failures first, and
# HYPOTHESIS_PROFILE=debug draws the same cases on every run (derandomized).
_COMMON = dict(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", derandomize=False, database=None, print_blob=True, **_COMMON)
settings.register_profile("dev", derandomize=False, **_COMMON)
settings.register_profile("debug", derandomize=True, database=None, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Under the ``ci`` profile, a random seed for the session's hypothesis tests unless one was given."""
    if settings.get_current_profile_name() == "ci" and config.getoption("--hypothesis-seed", None) is None:
        config.option.hypothesis_seed = str(random.SystemRandom().randrange(2**32))


def pytest_report_header(config):
    """The hypothesis seed of the session, to rerun its draws."""
    seed = config.getoption("--hypothesis-seed", None)
    return None if seed is None else f"hypothesis seed {seed} (rerun with --hypothesis-seed={seed})"


def pytest_pycollect_makeitem(collector, name, obj):
    """A mark on a helper marks no test: a collection error names it (marks belong on tests, classes or modules)."""
    if inspect.isfunction(obj) and getattr(obj, "pytestmark", None) and not collector.funcnamefilter(name):
        marks = ", ".join(m.name for m in obj.pytestmark)
        raise collector.CollectError(f"{name}: @pytest.mark ({marks}) on a helper, not a test, marks nothing")
    return None


@pytest.fixture(scope="module")
def one_torch_thread():
    """Small tensors: one torch thread is several times faster than two on a shared machine; the caller's setting is
    restored after the module (use with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``)."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
