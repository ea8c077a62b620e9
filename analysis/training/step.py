"""One optimiser step of :func:`analysis.training.runner.train` and what it needs: the learning-rate schedule
(:func:`learning_rate`), the run's model (:func:`build_model`), its training batches and fixed evaluation set
(:class:`RunData`), the loss (:func:`_loss`) and the step itself (:func:`train_step`); also timed by
:mod:`analysis.training.step_time`."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from . import tasks
from .configs import LMConfig, SyntheticConfig
from .models import TinyTransformer

EVAL_SEED_OFFSET = 1_000_003


def learning_rate(config, step: int) -> float:
    """Linear warm-up to ``lr`` over ``warmup`` steps, cosine decay to ``lr / 10`` at ``config.horizon``
    (``decay_steps``, or ``steps`` when that is ``None``), then ``lr / 10``:

    ``lr (t + 1) / warmup`` for ``t < warmup``, else ``lr (0.1 + 0.45 (1 + cos(pi min(1, (t - warmup) /
    max(1, horizon - warmup)))))``. With ``decay_steps`` set the value at step ``t`` does not depend on ``steps``."""
    if config.warmup and step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    progress = (step - config.warmup) / max(1, config.horizon - config.warmup)
    return config.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def build_model(config, spec: dict) -> TinyTransformer:
    if isinstance(config, LMConfig):
        vocab, classes, causal = tasks.TEXT_VOCAB, None, True
    else:
        vocab, causal = tasks.SYNTHETIC_VOCAB, config.causal
        classes = tasks.N_VALUES if config.task == "retrieval" else config.max_count + 1
    return TinyTransformer(
        spec["kind"], vocab, config.d_model, config.n_heads, spec["layers"], spec["w"], causal, spec["seed"], classes
    )


class RunData:
    """Training batches and the fixed evaluation set of run ``spec`` of ``config``: ``train_batch()`` draws the next
    batch from a generator seeded with ``spec["seed"]`` (LM: random windows of ``corpus.train``); ``eval_set()`` is
    the same ``eval_samples`` examples at every call (seed ``spec["seed"] + EVAL_SEED_OFFSET``)."""

    def __init__(self, config, spec: dict, corpus: tasks.Corpus | None):
        self.config, self.spec, self.corpus = config, spec, corpus
        self.generator = torch.Generator().manual_seed(spec["seed"])

    def train_batch(self):
        c, n = self.config, self.spec["n"]
        if self.corpus is not None:
            return tasks.lm_batch(self.corpus.train, c.batch, n, self.generator)
        return self._synthetic(c.batch, self.generator)

    def _synthetic(self, batch: int, generator: torch.Generator) -> tasks.Batch:
        c, n = self.config, self.spec["n"]
        if c.task == "retrieval":
            return tasks.retrieval(batch, n, c.causal, generator)
        return tasks.counting(batch, n, c.causal, generator, c.max_count)

    def eval_set(self) -> tasks.Batch:
        generator = torch.Generator().manual_seed(self.spec["seed"] + EVAL_SEED_OFFSET)
        return self._synthetic(self.config.eval_samples, generator)


def _loss(model, batch, lm: bool) -> torch.Tensor:
    if lm:
        x, y = batch
        return F.cross_entropy(model(x).flatten(0, 1), y.flatten())
    return F.cross_entropy(model(batch.tokens).flatten(0, 1), batch.dense.flatten(), ignore_index=tasks.IGNORE)


def train_step(model: TinyTransformer, optimizer: torch.optim.Optimizer, data: RunData, config, step: int) -> float:
    """One optimiser step of :func:`train` at step index ``step`` (0-based), returning its training loss.

    The learning rate of every parameter group is set to :func:`learning_rate` ``(config, step)``; the loss is the
    mean cross-entropy of ``model`` on ``data.train_batch()`` over every position with a target (LM: the next
    character; synthetic tasks: ``batch.dense``, positions marked ``tasks.IGNORE`` left out); gradients are zeroed,
    computed, their global norm clipped at 1 (``torch.nn.utils.clip_grad_norm_``, Pascanu et al. 2013) and
    ``optimizer.step()`` applied (AdamW in :func:`train`). ``model`` should be in training mode.
    """
    if not isinstance(config, SyntheticConfig | LMConfig):
        raise ValueError(f"config: expected a SyntheticConfig or LMConfig, got {type(config).__name__}")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"step: expected an integer >= 0, got {step!r}")
    for group in optimizer.param_groups:
        group["lr"] = learning_rate(config, step)
    loss = _loss(model, data.train_batch(), isinstance(config, LMConfig))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()
