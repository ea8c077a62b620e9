"""One dataclass per experiment, validated on construction, with ``quick`` (tests, about a minute for all three)
and ``full`` (the committed results; 78 minutes of training for all three on one thread per run, the files'
``train_seconds_total``) presets.

A synthetic experiment trains one model per (attention kind, n, w, L, seed) of the product grid; a seed fixes the
initial weights, the training data and the evaluation set, so at one seed every kind sees the same data and, where
shapes agree, starts from the same weights. ``seeds`` repeats the grid (runs named ``...-s{seed}``). Optimiser: AdamW
(Loshchilov & Hutter 2019) with linear warm-up over ``warmup`` steps, then cosine decay to ``lr / 10`` at step
``decay_steps`` and ``lr / 10`` from there on, gradient norm clipped at 1
(:func:`analysis.training.step.learning_rate`). ``decay_steps = None`` means ``steps``, the schedule every run committed
before ``decay_steps`` existed was trained with; a schedule whose value at step ``t`` does not depend on ``steps``
is what lets a finished run continue to more steps (:func:`extended`, ``python -m analysis.training ... --extend-to``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from receptive.windows import max_window

from .models import BASE_KINDS, KINDS


def _int(cfg, name: str, low: int, high: int | None = None) -> None:
    value = getattr(cfg, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        allowed = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name}: expected an integer in {allowed}, got {value!r}")


def _ints(cfg, name: str, low: int, high: int) -> None:
    values = getattr(cfg, name)
    if not isinstance(values, tuple) or not values:
        raise ValueError(f"{name}: expected a non-empty tuple of integers in [{low}, {high}], got {values!r}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
            raise ValueError(f"{name}: expected integers in [{low}, {high}], got {v!r} in {values!r}")


def _real(cfg, name: str, low: float, high: float) -> None:
    value = getattr(cfg, name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name}: expected a number in ({low}, {high}], got {value!r}")
    if not low < value <= high:
        raise ValueError(f"{name}: expected a number in ({low}, {high}], got {value!r}")


def _kinds(cfg) -> None:
    if not isinstance(cfg.kinds, tuple) or not cfg.kinds or any(k not in KINDS for k in cfg.kinds):
        raise ValueError(f"kinds: expected a non-empty tuple from {', '.join(KINDS)}, got {cfg.kinds!r}")


@dataclass(frozen=True)
class Common:
    """Fields every experiment shares."""

    kinds: tuple[str, ...] = BASE_KINDS
    d_model: int = 32
    n_heads: int = 2
    steps: int = 300
    batch: int = 32
    lr: float = 3e-3
    warmup: int = 30
    weight_decay: float = 0.01
    seeds: tuple[int, ...] = (0,)
    checkpoint_every: int = 100
    decay_steps: int | None = None  # the cosine's end; None: steps

    def _validate_common(self) -> None:
        _kinds(self)
        _int(self, "d_model", 4, 1024)
        _int(self, "n_heads", 1, 64)
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(
                f"n_heads: expected a divisor of d_model = {self.d_model} giving an even head dimension (RoPE), "
                f"got {self.n_heads}"
            )
        _int(self, "steps", 1, 10**6)
        _int(self, "batch", 1, 4096)
        _real(self, "lr", 0.0, 1.0)
        _int(self, "warmup", 0, self.steps)
        _real(self, "weight_decay", -1e-300, 1.0)
        _ints(self, "seeds", 0, 2**31 - 1)
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds: expected distinct seeds, got {self.seeds!r}")
        _int(self, "checkpoint_every", 1, 10**6)
        if self.decay_steps is not None:
            _int(self, "decay_steps", max(1, self.warmup), 10**6)

    @property
    def horizon(self) -> int:
        """The step at which the cosine reaches ``lr / 10``: ``decay_steps``, or ``steps`` when it is ``None``."""
        return self.steps if self.decay_steps is None else self.decay_steps

    def to_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


@dataclass(frozen=True)
class SyntheticConfig(Common):
    """A synthetic task (``retrieval`` or ``counting``) over the grid ``ns x ws x layers``."""

    task: str = "retrieval"
    causal: bool = True
    ns: tuple[int, ...] = (128,)
    ws: tuple[int, ...] = (8,)
    layers: tuple[int, ...] = (1, 2)
    max_count: int = 3
    eval_samples: int = 512
    name: str = ""

    def __post_init__(self):
        if self.task not in ("retrieval", "counting"):
            raise ValueError(f"task: expected 'retrieval' or 'counting', got {self.task!r}")
        if not isinstance(self.causal, bool):
            raise ValueError(f"causal: expected True or False, got {self.causal!r}")
        self._validate_common()
        _ints(self, "ns", 8, 8192)
        _ints(self, "ws", 2, 8192)
        _ints(self, "layers", 1, 32)
        for n in self.ns:
            for w in self.ws:
                limit = max_window(n, self.causal, False)
                if w > limit:
                    raise ValueError(
                        f"ws: expected windows in [2, {limit}] for n = {n} (a window of {limit} keys already spans "
                        f"the sequence), got {w}"
                    )
        _int(self, "max_count", 1, min(self.ns) - 1)
        _int(self, "eval_samples", 1, 10**6)
        if not self.name:
            object.__setattr__(self, "name", self.task)

    def grid(self) -> list[dict]:
        """One entry per run: ``{"kind", "n", "w", "layers", "seed"}``, kinds innermost, seeds next."""
        return [
            {"kind": kind, "n": n, "w": w, "layers": layer, "seed": seed}
            for n in self.ns
            for w in self.ws
            for layer in self.layers
            for seed in self.seeds
            for kind in self.kinds
        ]


@dataclass(frozen=True)
class LMConfig(Common):
    """Character-level language model on CPython's stdlib sources, one model per kind (causal)."""

    n: int = 256
    w: int = 16
    layers: int = 4
    max_chars: int = 2_000_000
    eval_windows: int = 64
    probe_k: int = 12
    name: str = "lm"
    kinds: tuple[str, ...] = BASE_KINDS
    d_model: int = 64
    n_heads: int = 4
    lr: float = 2e-3

    def __post_init__(self):
        self._validate_common()
        _int(self, "n", 8, 8192)
        _int(self, "w", 2, self.n)
        _int(self, "layers", 1, 32)
        _int(self, "max_chars", 10_000, 10**9)
        _int(self, "eval_windows", 1, 100_000)
        _int(self, "probe_k", 1, 64)

    @property
    def field(self) -> int:
        """SWA's causal receptive field after ``layers`` layers: ``L (w - 1) + 1`` tokens."""
        return self.layers * (self.w - 1) + 1

    def grid(self) -> list[dict]:
        return [
            {"kind": kind, "n": self.n, "w": self.w, "layers": self.layers, "seed": seed}
            for seed in self.seeds
            for kind in self.kinds
        ]


def extended(config, steps: int):
    """``config`` trained to ``steps`` steps on the schedule it was trained with: ``decay_steps`` fixed at
    ``config.horizon``, so the learning rate at every step before ``config.steps`` is unchanged and a finished run
    continued from its final checkpoint is exactly the run trained to ``steps`` in one go."""
    if isinstance(steps, bool) or not isinstance(steps, int) or not config.steps <= steps <= 10**6:
        raise ValueError(
            f"extend_to: expected an integer in [{config.steps}, {10**6}] (the steps trained so far or "
            f"more), got {steps!r}"
        )
    return dataclasses.replace(config, steps=steps, decay_steps=config.horizon)


#: the kinds of the ``variants`` experiment: every kind but ``dilated+swa``, which is the same pattern as
#: ``dilated`` (its heads include dilation 1, the window; same seed, same model: a duplicate run)
TRAINED_VARIANT_KINDS = tuple(kind for kind in KINDS if kind != "dilated+swa")


#: the kinds of the ``long_n`` experiment: pure and windowed, SA and the multi-scale SA sized to SA's keys
LONG_N_KINDS = ("sa", "sa+swa", "sa-ms-eq", "sa-ms+swa-eq")


@dataclass(frozen=True)
class Preset:
    retrieval: SyntheticConfig
    counting: SyntheticConfig  # the every-token task
    lm: LMConfig = field(default_factory=LMConfig)
    variants: SyntheticConfig | None = None  # the causal variants on retrieval, several seeds
    long_n: SyntheticConfig | None = None  # SA, SA+SWA and sa-ms(-eq, +swa-eq) at n = 1024 (not run)


# fmt: off
QUICK = Preset(
    retrieval=SyntheticConfig(
        task="retrieval", ns=(32,), ws=(4,), layers=(1, 2), steps=150, batch=32, eval_samples=256,
        checkpoint_every=50,
    ),
    counting=SyntheticConfig(
        task="counting", ns=(32,), ws=(4,), layers=(2,), steps=100, batch=32, eval_samples=256,
        checkpoint_every=50,
    ),
    lm=LMConfig(n=64, w=8, layers=2, d_model=32, n_heads=2, steps=60, batch=16, max_chars=200_000,
                eval_windows=16, checkpoint_every=20),
    variants=SyntheticConfig(
        task="retrieval", ns=(32,), ws=(4,), layers=(2,), kinds=KINDS, seeds=(0, 1), steps=12, warmup=2, batch=8,
        eval_samples=32, checkpoint_every=6, name="variants",
    ),
    long_n=SyntheticConfig(
        task="retrieval", ns=(64,), ws=(4,), layers=(2,), kinds=LONG_N_KINDS, seeds=(0, 1), steps=8, warmup=2,
        decay_steps=8, batch=8, eval_samples=32, checkpoint_every=4, name="long_n",
    ),
)
# fmt: on

# fmt: off
FULL = Preset(
    retrieval=SyntheticConfig(
        task="retrieval", ns=(64, 128), ws=(8,), layers=(1, 2, 4), steps=500, batch=32, eval_samples=1024,
    ),
    counting=SyntheticConfig(
        task="counting", ns=(128,), ws=(8,), layers=(1, 2, 4), steps=500, batch=32, eval_samples=1024,
    ),
    lm=LMConfig(n=256, w=16, layers=3, d_model=32, n_heads=2, steps=400, batch=16),
    variants=SyntheticConfig(
        task="retrieval", ns=(256,), ws=(16,), layers=(3,), kinds=TRAINED_VARIANT_KINDS, seeds=(0, 1, 2), steps=1500,
        warmup=30,
        batch=32, eval_samples=1024, checkpoint_every=100, name="variants",
    ),
    # where python -m analysis.training.reach_grid finds sa-ms+swa-eq furthest ahead of SA+SWA at the readout, at
    # the fewest
    # layers (0.992 vs 0.981 reachable; analysis/training/results/long_n_reach/reach.json); the cosine ends at
    # decay_steps, so --extend-to continues it; 4096 evaluation samples put one run's binomial standard error near
    # 0.002, under the 0.011 gap. Not run: about 8 CPU-hours on one core (12 runs x 3000 steps x 0.82 CPU-s,
    # analysis/training/results/long_n_reach/step_time.json)
    long_n=SyntheticConfig(
        task="retrieval", ns=(1024,), ws=(8,), layers=(4,), kinds=LONG_N_KINDS, seeds=(0, 1, 2), steps=3000,
        warmup=30, decay_steps=3000, batch=32, eval_samples=4096, checkpoint_every=100, name="long_n",
    ),
)
# fmt: on

#: what ``all`` runs, in turn
EXPERIMENTS = ("retrieval", "counting", "lm")
#: every experiment the CLI knows (``variants``: 15 kinds x 3 seeds, run it with ``--jobs``; ``long_n``: defined,
#: not run)
ALL_EXPERIMENTS = (*EXPERIMENTS, "variants", "long_n")


def preset(quick: bool) -> Preset:
    return QUICK if quick else FULL
