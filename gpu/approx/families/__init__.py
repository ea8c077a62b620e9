"""The approximation methods of :mod:`gpu.approx`, one module per family of Serret et al. (2026, arXiv
2604.01757): windows (SWA, SA and their sinks through the backend), LSH, clustering, sampling, low rank along the
sequence and of a PSD kernel, kernels, latent attention, tensor methods, and the oracles. Each method's cost
(``<method>_cost``: FLOPs, peak bytes, KV cache, on the conventions of ``gpu.approx.costs``) follows it in its
module. :mod:`gpu.approx.methods` is the registry."""

__all__: list[str] = []  # the families are reached through gpu.approx.METHODS and their modules
