"""The Hugging Face integration: the toolkit's attentions as transformers attention implementations (one
:func:`register` for prefill and generation with a KV cache) and real models loaded offline. The rooms built on it:
the approximation lab (:mod:`gpu.approx`, its methods registered as objects), the benchmark-task harness
(:mod:`gpu.harness`) and the attention profile (:mod:`gpu.profile`)."""

from gpu.hf.implementations import register
from gpu.hf.interface import register_function
from gpu.hf.prefill import PrefillMethod, capture_keys_values

__all__ = ["PrefillMethod", "capture_keys_values", "register", "register_function"]
