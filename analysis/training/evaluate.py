"""What :func:`analysis.training.runner.train` records of a trained run: on a synthetic task the accuracy at the readout
next to the share of answers reachable through the layers' receptive fields and the accuracy that predicts
(:func:`_evaluate_synthetic`), on text the validation loss and the long-context copy probe (:func:`_evaluate_lm`);
both with the coverage ``receptive`` computes for the run's pattern."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from . import tasks
from .configs import LMConfig, SyntheticConfig
from .reach import coverage_summary, pattern_for, reachable
from .step import RunData


def _evaluate_synthetic(model, config: SyntheticConfig, spec: dict, data: RunData) -> dict:
    batch = data.eval_set()
    chance = 1 / (tasks.N_VALUES if config.task == "retrieval" else config.max_count + 1)
    correct, losses = [], []
    for lo in range(0, batch.tokens.shape[0], 256):
        part = slice(lo, lo + 256)
        tokens, targets, readout = batch.tokens[part], batch.targets[part], batch.readout[part]
        logits = model(tokens)[torch.arange(tokens.shape[0]), readout]
        losses.append(F.cross_entropy(logits, targets, reduction="none"))
        correct.append(logits.argmax(-1) == targets)
    correct = torch.cat(correct).numpy()
    n, w, layers, seed = spec["n"], spec["w"], spec["layers"], spec["seed"]
    pattern = pattern_for(spec["kind"], n, w, config.causal, seed)
    reach = reachable(pattern, layers, batch.readout.numpy(), batch.sources.numpy())
    share = float(reach.mean())
    cov = coverage_summary(spec["kind"], n, w, layers, config.causal, seed, n - 1 if config.causal else None)
    return {
        "task": config.task,
        "causal": config.causal,
        "accuracy": float(correct.mean()),
        "eval_loss": float(torch.cat(losses).mean()),
        "chance": chance,
        "reachable": share,
        "predicted_accuracy": share + (1 - share) * chance,
        "accuracy_reachable": float(correct[reach].mean()) if reach.any() else None,
        "accuracy_unreachable": float(correct[~reach].mean()) if (~reach).any() else None,
        "swa_field": layers * (w - 1) + 1 if config.causal else layers * (w // 2) + 1,
        **cov,
    }


def _evaluate_lm(model, config: LMConfig, spec: dict, corpus: tasks.Corpus) -> dict:
    x, y = tasks.validation_windows(corpus.validation, config.n, config.eval_windows)
    per_token = torch.cat(
        [
            F.cross_entropy(model(x[lo : lo + 32]).transpose(1, 2), y[lo : lo + 32], reduction="none")
            for lo in range(0, x.shape[0], 32)
        ]
    ).numpy()
    masks = tasks.copy_probe_mask(x.numpy(), y.numpy(), config.field, config.probe_k)
    other = ~(masks["far"] | masks["near"])
    loss = float(per_token.mean())
    probe = {
        name: {"tokens": int(m.sum()), "loss": float(per_token[m].mean()) if m.any() else None}
        for name, m in (("far", masks["far"]), ("near", masks["near"]), ("other", other))
    }
    cov = coverage_summary(model.kind, config.n, config.w, config.layers, True, spec["seed"], None)
    return {
        "val_loss": loss,
        "val_perplexity": math.exp(loss),
        "val_bits_per_char": loss / math.log(2),
        "probe": probe,
        "swa_field": config.field,
        **cov,
    }
