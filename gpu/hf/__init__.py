"""The Hugging Face integration: the toolkit's attentions as transformers attention implementations (one
:func:`register` for prefill and generation with a KV cache), real models loaded offline, and the benchmark-task
harness (:mod:`gpu.hf.eval`, ``python -m gpu.hf.eval_cli``) and the attention profile (:mod:`gpu.hf.profile`,
``python -m gpu.hf.profile_cli``)."""

from gpu.hf.implementations import register, registered_methods
from gpu.hf.interface import register_function
from gpu.hf.prefill import calibration_options, capture_keys_values
from gpu.hf.profile import AttentionProfile, ProfilePattern, attention_profile

__all__ = ["AttentionProfile", "ProfilePattern", "attention_profile", "calibration_options", "capture_keys_values",
           "register", "register_function", "registered_methods"]  # fmt: skip
