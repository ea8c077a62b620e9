import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))
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
