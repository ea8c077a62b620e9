"""The approximation methods of :mod:`gpu.approx`, one module per family of Serret et al. (2026, arXiv
2604.01757): windows (SWA, SA and their sinks through the backend), LSH, clustering, sampling, low rank, kernels,
latent attention, tensor methods, and the oracles. :mod:`gpu.approx.methods` is the registry."""
