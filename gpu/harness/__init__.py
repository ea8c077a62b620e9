"""The benchmark-task harness: a causal LM scored on the SA paper's tasks (OLMES's requests, offline) under any
attention :func:`gpu.hf.register` provides, as lm-evaluation-harness scores them, each item's shared context computed
once (``python -m gpu.harness`` runs a grid of models, tasks and patterns, locally or on Dask;
``python -m gpu.harness.lm_eval`` runs lm-eval itself with a registered attention). It uses the integration
(:mod:`gpu.hf`); the integration does not import it."""

from gpu.harness.scoring import (
    PREFILL_METHODS,
    EvalAttention,
    check_fits,
    encode_pair,
    item_scores,
    prefill_method,
    score_items,
    shared_prefixes,
    task_scores,
)
from gpu.harness.tasks import EVAL_TASKS, EvalItem, EvalRequest, load_mmlu, load_requests, load_task, olmes_folder

__all__ = [
    "EVAL_TASKS",
    "PREFILL_METHODS",
    "EvalAttention",
    "EvalItem",
    "EvalRequest",
    "check_fits",
    "encode_pair",
    "item_scores",
    "load_mmlu",
    "load_requests",
    "load_task",
    "olmes_folder",
    "prefill_method",
    "score_items",
    "shared_prefixes",
    "task_scores",
]
