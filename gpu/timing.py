"""How ``python -m gpu.bench`` times its paths: CUDA events through ``triton.testing.do_bench`` on a GPU
(:func:`_cuda_timer`), rounds over every path on the CPU (:func:`_times`)."""

from __future__ import annotations

import time


def _cuda_timer(fn, repeats: int) -> float:
    """Median seconds of ``fn`` on the GPU (CUDA events, ``triton.testing.do_bench``)."""
    from triton.testing import do_bench

    return do_bench(fn, warmup=5, rep=max(20, repeats), return_mode="median") / 1e3


def _times(steps: dict, repeats: int, cuda: bool) -> dict:
    """``{name: [seconds, ...]}`` for every step. CUDA: one median per step (``do_bench``). CPU: one warm-up run of
    each, then ``repeats`` rounds that run every step once in turn, so a change in the machine's load during the
    measurement reaches every path alike (the ratios of one ``n`` compare runs made side by side)."""
    if cuda:
        return {name: [_cuda_timer(step, repeats)] for name, step in steps.items()}
    for step in steps.values():
        step()
    runs = {name: [] for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            runs[name].append(time.perf_counter() - start)
    return runs
