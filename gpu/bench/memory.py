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


def device_memory(cuda: bool) -> int:
    """Bytes of memory the timed tensors live in: the GPU's total on CUDA, the machine's physical memory otherwise.

    Parameters
    ----------
    cuda : bool
        Whether the tensors go to the GPU.

    Returns
    -------
    int

    Examples
    --------
    >>> device_memory(False) >= 2**20
    True
    """
    if cuda:
        import torch

        return torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
    from graphs.memory import physical_memory

    return physical_memory()


def bench_bytes(n: int, w: int, heads: int, d: int, batch: int, element: int, backward: bool, dense: bool) -> int:
    """Bytes the timing of one sequence length holds at once, an estimate made before anything is allocated.

    q, k, v, the gate and an output (``2 x`` with gradients), the float32 draws they are made from, a banded path's
    float32 scores (``O(n (bq + w))`` per head, :mod:`gpu.attention.banded`, with ``bq`` about ``w``) and, where a
    path computes dense scores (``dense``: FlexAttention run eagerly on the CPU), ``n^2`` scores per head.

    Parameters
    ----------
    n, w, heads, d, batch : int
        The shapes timed.
    element : int
        Bytes per element of the dtype timed.
    backward : bool
        Gradients are kept too.
    dense : bool
        A path materialises the ``n x n`` scores.

    Returns
    -------
    int

    Examples
    --------
    >>> bench_bytes(1024, 64, 4, 64, 1, 4, False, False) < 2**30
    True
    >>> bench_bytes(10**8, 64, 4, 64, 1, 4, False, False) > 2**39  # over 512 GiB
    True
    """
    rows = batch * heads * n
    tensors = rows * d * (4 * element + 3 * 4) * (2 if backward else 1)
    banded = rows * 2 * w * 4
    scores = rows * n * 4 if dense else 0
    return tensors + banded + scores
