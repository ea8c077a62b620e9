"""Fast-attention approximations on one interface, compared at matched budgets and costs with Stochastic Attention.

``approximate(method, q, k, v, budget, seed=0, causal=False)`` maps ``(batch, heads, n, d)`` tensors to an
approximation of ``softmax(q k^T / sqrt(d)) v`` (causal: keys ``j <= i``). ``METHODS[name]`` holds each method's
family, what its budget means (keys per query, or a rank for the latent and tensor methods), whether it is
randomized and whether it has a causal and a bidirectional version; :func:`method_cost` gives its FLOPs, peak memory
and KV-cache bytes per token. The families follow Serret, Cortinovis, ..., Grigori (2026, arXiv 2604.01757):
sparsity (SWA, SA, SA+SWA and their sink variants through the :mod:`gpu` backend, SA's causal forms named
``sa-band``, Reformer LSH, MoBA), clustering (Routing Transformer), importance sampling (HyperAttention, KDEformer),
low rank (Linformer, Nystromformer, Skyformer, pivoted Cholesky, Loki), kernels (Performer, PolySketchFormer,
LevAttention), latent attention (MLA, TransMLA), tensor methods (TPA) and two oracles (top-k, truncated SVD).

``python -m gpu.approx`` compares them on synthetic matrices (``--costs`` prints the cost table); on real attention,
the pretrained all-MiniLM-L6-v2 (:mod:`gpu.approx.minilm`, the extra ``.[minilm]``) reads CPython's help topics
(:mod:`gpu.approx.corpus`).
"""

from gpu.approx.costs import Cost
from gpu.approx.methods import METHODS, Method, approximate, exact_attention, exact_cost, method_cost, relative_error

__all__ = ["METHODS", "Cost", "Method", "approximate", "exact_attention", "exact_cost", "method_cost", "relative_error"]
