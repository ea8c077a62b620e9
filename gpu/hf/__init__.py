"""The Hugging Face integration: the toolkit's attentions as transformers attention implementations (one
:func:`register` for prefill and generation with a KV cache) and real models loaded offline. The rooms built on it:
the benchmark-task harness (:mod:`gpu.harness`) and the attention profile (:mod:`gpu.profile`)."""

from gpu.hf.implementations import register, registered_methods
from gpu.hf.interface import register_function
from gpu.hf.prefill import calibration_options, capture_keys_values

__all__ = ["calibration_options", "capture_keys_values", "register", "register_function", "registered_methods"]
