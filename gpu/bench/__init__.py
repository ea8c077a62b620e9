"""The benchmark CLI of the attention backend (``python -m gpu.bench``): every path per backend and pattern, timed
beside the peer a user would pick (SDPA, FlexAttention), with the peak memory and the cost figure."""

from gpu.bench.cli import main

__all__ = ["main"]
