"""Peak GPU memory of one call, shared by ``gpu.bench.cli`` and ``benchmarks/gpu_check.py``."""

from __future__ import annotations


def peak_memory(step) -> int:
    """Bytes one call allocates beyond what was allocated before it (inputs, weights), at its peak.

    ``torch.cuda.max_memory_allocated`` around a single call (not around ``do_bench``, whose L2-flush buffer would
    count). Needs CUDA.

    Parameters
    ----------
    step : callable
        The call, without arguments.

    Returns
    -------
    int
        The peak of the bytes allocated during ``step`` minus those allocated before it.

    References
    ----------
    - PyTorch documentation, "CUDA semantics: memory management", ``torch.cuda.max_memory_allocated``,
      https://pytorch.org/docs/stable/generated/torch.cuda.max_memory_allocated.html

    Examples
    --------
    >>> import torch
    >>> x = torch.ones(1024, device="cuda")  # doctest: +SKIP
    >>> peak_memory(lambda: x * 2) >= 4096  # doctest: +SKIP
    True
    """
    import torch

    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - before
