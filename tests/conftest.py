import os
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

# hypothesis' default number of cases, derandomized: every run draws the same cases
settings.register_profile(
    "default", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile("default")


@pytest.fixture(scope="module")
def one_torch_thread():
    """Small tensors: one torch thread is several times faster than two on a shared machine; the caller's setting is
    restored after the module (use with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``)."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
