"""The attention profile: where a causal LM's exact attention mass goes, and what each sparse pattern keeps of it,
from one exact forward per text (``python -m gpu.profile``). It uses the integration (:mod:`gpu.hf`) and, for task
inputs, the harness (:mod:`gpu.harness`)."""

from gpu.profile.measures import (
    DEFAULT_BANDS,
    MEASURES,
    AttentionProfile,
    ProfilePattern,
    TextProfile,
    attention_profile,
)

__all__ = ["DEFAULT_BANDS", "MEASURES", "AttentionProfile", "ProfilePattern", "TextProfile", "attention_profile"]
