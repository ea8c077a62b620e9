"""Fast-attention approximations on one interface, compared at matched compute with Stochastic Attention.

Every method maps ``(q, k, v, budget, seed)`` to an approximation of ``softmax(q k^T / sqrt(d)) v`` (bidirectional,
``(batch, heads, n, d)``), where ``budget = m`` is the effective number of keys per query; each method's
``accounting`` says how its parameter is derived from ``m`` so that all of them cost about ``O(n m d)``. The
families follow the numerical view of Serret, Cortinovis, ..., Grigori (2026, arXiv 2604.01757): sparsity and
clustering (sliding window, SA, SA+SWA, both windows with the attention sink kept, Reformer LSH, MoBA, the top-k
oracle), low rank (Linformer, Nystromformer, the truncated-SVD oracle) and kernels (Performer).

``python -m gpu.approx`` compares them on synthetic matrices; :mod:`gpu.approx.real` (``python -m gpu.approx.real``,
the extra ``.[minilm]``) on the attention of the pretrained all-MiniLM-L6-v2 (:mod:`gpu.approx.minilm`) reading
CPython's help topics (:mod:`gpu.approx.corpus`).
"""

from .methods import METHODS, Method, approximate, exact_attention, relative_error

__all__ = ["METHODS", "Method", "approximate", "exact_attention", "relative_error"]
