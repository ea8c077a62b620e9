"""Peak GPU memory of one call, shared by ``gpu.bench`` and ``benchmarks/gpu_check.py``."""

from __future__ import annotations


def peak_memory(step) -> int:
    """Bytes one call allocates beyond what was allocated before it (inputs, weights), at its peak:
    ``torch.cuda.max_memory_allocated`` around a single call (not around ``do_bench``, whose L2-flush buffer would
    count)."""
    import torch

    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - before
