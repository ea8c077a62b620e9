"""The causal decoder study: a small Llama-style byte LM trained with full attention, then every layer's attention
replaced training-free by each causal method of :mod:`gpu.approx` (``python -m analysis.numerical_methods.decoder``).

The model is transformers' ``LlamaForCausalLM`` (RoPE, RMSNorm, SwiGLU; Touvron et al. 2023) with a 128-symbol
vocabulary, trained by next-byte prediction on CPython's stdlib sources
(:func:`analysis.training.tasks.load_corpus`: sorted
``.py`` files, every tenth held out) with AdamW, linear warm-up and cosine decay; every draw comes from ``seed``, so
the run is reproducible from its configuration (no checkpoint is kept). The trained model is then evaluated on
validation windows (:func:`analysis.training.tasks.validation_windows`) with each method registered as a transformers
attention implementation (:func:`gpu.hf.register`), the decoder analogue of the training-free substitution
of Jin & Sui (2026, arXiv 2604.00754, Qwen3) and of the lab's MiniLM study.

Perplexity ``exp(-(1/T) sum_t log p(x_{t+1} | x_{<=t}))`` over all ``T`` predicted bytes, and over the second half
of each window only (``ppl_tail``: positions ``>= n/2``, where a budget ``m < n/2`` actually cuts context).
Randomized methods run ``seeds`` times (seed ``s`` gives layer ``l`` the draw ``s * layers + l``): mean, std, min
and max. Beside each: the KV-cache bytes per token of the whole model (all layers, float32) and the FLOPs of one
forward of length ``n`` (:func:`gpu.approx.method_cost`, causal). The methods fitted offline (Loki's PCA, the
latent projections of MLA and TransMLA) are calibrated on the keys and values of ``CALIBRATION_WINDOWS`` windows
of the training text, never on the evaluated text. A rank-budget method (TPA: rank at most ``min(heads, d)``)
runs at the budgets it admits.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from analysis.training.tasks import TEXT_VOCAB, lm_batch, load_corpus, validation_windows
from gpu.approx import METHODS, exact_cost, method_cost
from gpu.attention.threads import torch_threads
from gpu.hf import capture_keys_values, register
from graphs.cli_common import output_file, run_command, write_atomic
from receptive.cli_parser import OneLineErrorParser, comma_ints, comma_names, given_options

CALIBRATION_WINDOWS = 8  # training-text windows whose keys and values fit Loki's PCA and the latent projections


@dataclass(frozen=True)
class DecoderConfig:
    """The model, its training and the evaluation set. ``head_dim = hidden / heads``."""

    n: int = 256
    hidden: int = 128
    layers: int = 3
    heads: int = 4
    intermediate: int = 256
    steps: int = 400
    batch: int = 16
    lr: float = 3e-3
    warmup: int = 40
    max_chars: int = 2_000_000
    eval_windows: int = 32
    seed: int = 0

    def __post_init__(self):
        limits = {
            "n": (8, 4096),
            "hidden": (8, 4096),
            "layers": (1, 48),
            "heads": (1, 64),
            "intermediate": (8, 16384),
            "steps": (1, 10**6),
            "batch": (1, 4096),
            "warmup": (0, 10**6),
            "max_chars": (10_000, 10**9),
            "eval_windows": (1, 10**5),
            "seed": (0, 2**31 - 1),
        }
        for name, (low, high) in limits.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"{name}: expected an integer in [{low}, {high}], got {value!r}")
        if self.hidden % self.heads:
            raise ValueError(f"heads: expected a divisor of hidden = {self.hidden}, got {self.heads}")
        if not (isinstance(self.lr, float) and 0 < self.lr < 1):
            raise ValueError(f"lr: expected a float in (0, 1), got {self.lr!r}")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


#: The seconds-long version the tests run.
QUICK = DecoderConfig(
    n=64, hidden=64, layers=2, heads=2, intermediate=128, steps=30, batch=8, warmup=5, max_chars=100_000, eval_windows=4
)


def causal_methods() -> list[str]:
    """The methods of :data:`METHODS` that have a causal version."""
    return [name for name, method in METHODS.items() if method.causal]


def build_model(config: DecoderConfig):
    """A freshly initialised ``LlamaForCausalLM`` (weights from ``torch.manual_seed(config.seed)``)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    llama = LlamaConfig(
        vocab_size=TEXT_VOCAB,
        hidden_size=config.hidden,
        intermediate_size=config.intermediate,
        num_hidden_layers=config.layers,
        num_attention_heads=config.heads,
        num_key_value_heads=config.heads,
        max_position_embeddings=config.n,
        tie_word_embeddings=True,
        attn_implementation="sdpa",
        pad_token_id=None,
    )
    torch.manual_seed(config.seed)
    return LlamaForCausalLM(llama)


def learning_rate(config: DecoderConfig, step: int) -> float:
    """Linear warm-up to ``lr`` over ``warmup`` steps, then cosine decay to ``lr / 10`` at ``steps``."""
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    progress = (step - config.warmup) / max(1, config.steps - config.warmup)
    return config.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def train(config: DecoderConfig, corpus, bar=None, verbose: bool = False) -> tuple[torch.nn.Module, list[dict]]:
    """Train with full attention; the model and its loss every 10 steps (mean over those steps, printed to stderr
    with ``verbose``)."""

    model = build_model(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, betas=(0.9, 0.95), weight_decay=0.01)
    generator = torch.Generator().manual_seed(config.seed)
    log, window = [], []
    for step in range(config.steps):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, step)
        x, y = lm_batch(corpus.train, config.batch, config.n, generator)
        logits = model(input_ids=x, use_cache=False).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        window.append(float(loss.detach()))
        if (step + 1) % 10 == 0 or step + 1 == config.steps:
            log.append({"step": step + 1, "loss": float(np.mean(window))})
            window = []
            if verbose:
                print(f"step {step + 1}: loss {log[-1]['loss']:.3f}", file=sys.stderr, flush=True)
        if bar is not None:
            bar.update()
    return model.eval(), log


@torch.no_grad()
def perplexity(model, x: torch.Tensor, y: torch.Tensor, implementation: str, chunk: int = 8) -> dict:
    """``ppl`` over every predicted byte and ``ppl_tail`` over positions ``>= n/2`` with ``implementation``."""
    model.set_attn_implementation(implementation)
    nll = []
    for i in range(0, len(x), chunk):
        logits = model(input_ids=x[i : i + chunk], use_cache=False).logits
        nll.append(torch.nn.functional.cross_entropy(logits.transpose(1, 2), y[i : i + chunk], reduction="none"))
    nll = torch.cat(nll).double()
    half = x.shape[1] // 2
    return {"ppl": float(nll.mean().exp()), "ppl_tail": float(nll[:, half:].mean().exp())}


def _cost(method: str, config: DecoderConfig, budget: int) -> dict:
    """The whole model's cost: FLOPs of one forward of length ``n`` and KV-cache bytes per token summed over the
    layers (float32), the peak bytes of one layer's attention."""

    if method == "full":
        cost = exact_cost(config.n, config.head_dim, heads=config.heads, causal=True)
    else:
        cost = method_cost(method, config.n, config.head_dim, budget, heads=config.heads, causal=True)
    return {
        "kv_cache_bytes_per_token": cost.kv_cache_bytes_per_token * config.layers,
        "flops": cost.flops * config.layers,
        "peak_bytes": cost.peak_bytes,
    }


def budgets_for(method: str, budgets, config: DecoderConfig) -> list[int]:
    """The budgets valid for ``method`` (a rank bounded by ``METHODS[method].max_budget``); if none is, the powers
    of two up to its maximum."""
    top = METHODS[method].max_budget(config.n, config.head_dim, config.heads)
    if top is None:
        return list(budgets)
    return [b for b in budgets if b <= top] or [2**i for i in range(int(math.log2(top)) + 1)]


def trained(config: DecoderConfig, corpus, cache=None, bar=None, verbose=False) -> tuple[torch.nn.Module, dict]:
    """The model trained by :func:`train` and ``{"seconds", "loss"}``; with ``cache`` (a file path) a model saved
    there by an earlier run of the same configuration is loaded instead (the run is deterministic on one machine;
    the cache is a convenience, never committed)."""
    key = json.dumps(asdict(config), sort_keys=True)
    if cache is not None and Path(cache).is_file():
        saved = torch.load(cache, weights_only=True)
        if saved.get("config") == key:
            model = build_model(config)
            model.load_state_dict(saved["state"])
            if bar is not None:
                bar.update(config.steps)
            return model.eval(), {"seconds": saved["seconds"], "loss": json.loads(saved["loss"]), "cached": True}
    start = time.perf_counter()
    model, log = train(config, corpus, bar, verbose)
    seconds = time.perf_counter() - start
    if cache is not None:
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
        torch.save({"config": key, "state": model.state_dict(), "seconds": seconds, "loss": json.dumps(log)}, cache)
    return model, {"seconds": seconds, "loss": log, "cached": False}


def study(
    config: DecoderConfig, methods=None, budgets=(8, 16, 32, 64), seeds: int = 3, progress=None, cache=None
) -> dict:
    """Train (or load from ``cache``, see :func:`trained`), then every method at every budget (randomized:
    ``seeds`` draws); the JSON-ready result."""

    methods = list(methods if methods is not None else causal_methods())
    not_causal = [m for m in methods if m not in causal_methods()]
    if not_causal:
        raise ValueError(
            f"methods: no causal version of {', '.join(not_causal)}; causal: {', '.join(causal_methods())}"
        )
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds: expected a positive integer, got {seeds!r}")
    corpus = load_corpus(config.max_chars)
    x, y = validation_windows(corpus.validation, config.n, config.eval_windows)
    calibration_ids, _ = validation_windows(corpus.train, config.n, CALIBRATION_WINDOWS)
    plan = {m: budgets_for(m, budgets, config) for m in methods}
    runs = sum((seeds if METHODS[m].randomized else 1) * len(plan[m]) for m in methods)
    show = sys.stderr.isatty() if progress is None else progress
    with tqdm(total=config.steps + runs, disable=not show, leave=False, desc="decoder") as bar:
        model, training = trained(config, corpus, cache, bar)
        full = perplexity(model, x, y, "sdpa")
        rows = [{"method": "full", "budget": config.n, **full, **_cost("full", config, config.n)}]
        calibration = capture_keys_values(model, calibration_ids, use_cache=False)
        for method in methods:
            options = METHODS[method].calibration_options(calibration)
            for budget in plan[method]:
                draws = [
                    perplexity(model, x, y, register(METHODS[method], budget, s, layer_options=options))
                    for s in range(seeds if METHODS[method].randomized else 1)
                ]
                bar.update(len(draws))
                ppl = np.array([d["ppl"] for d in draws])
                rows.append(
                    {
                        "method": method,
                        "budget": budget,
                        "ppl": float(ppl.mean()),
                        "ppl_std": float(ppl.std(ddof=1)) if len(ppl) > 1 else 0.0,
                        "ppl_min": float(ppl.min()),
                        "ppl_max": float(ppl.max()),
                        "draws": len(ppl),
                        "ppl_tail": float(np.mean([d["ppl_tail"] for d in draws])),
                        **_cost(method, config, budget),
                    }
                )
    return {
        "config": asdict(config),
        "parameters": {
            "methods": methods,
            "budgets": list(budgets),
            "seeds": seeds,
            "eval_windows": len(x),
            "eval_tokens": int(y.numel()),
            "calibration_windows": len(calibration_ids),
        },
        "versions": {
            "receptive": importlib.metadata.version("receptive"),
            "torch": torch.__version__,
            "transformers": importlib.metadata.version("transformers"),
            "threads": torch.get_num_threads(),
        },
        "corpus": corpus.describe(),
        "model": {"class": "transformers.LlamaForCausalLM", "parameters": sum(p.numel() for p in model.parameters())},
        "training": training,
        "rows": rows,
    }


def summary(result: dict) -> str:
    c = result["config"]
    lines = [
        f"decoder: {result['model']['parameters']} parameters, n = {c['n']}, {c['layers']} layers x "
        f"{c['heads']} heads of {c['hidden'] // c['heads']}; trained {c['steps']} steps in "
        f"{result['training']['seconds']:.0f} s, final loss {result['training']['loss'][-1]['loss']:.3f}",
        f"{'method':<16}{'m':>5}{'ppl':>9}{'+-':>7}{'tail ppl':>10}{'KV B/token':>12}{'GFLOP':>9}",
    ]
    for r in result["rows"]:
        lines.append(
            f"{r['method']:<16}{r['budget']:>5}{r['ppl']:>9.3f}{r.get('ppl_std', 0.0):>7.3f}"
            f"{r['ppl_tail']:>10.3f}{r['kv_cache_bytes_per_token']:>12.0f}{r['flops'] / 1e9:>9.3f}"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    p = OneLineErrorParser(
        prog="python -m analysis.numerical_methods.decoder",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--methods", help="comma-separated causal methods (default: every method with a causal version)")
    p.add_argument("--budgets", default="8,16,32,64", help="keys per query, comma-separated (default 8,16,32,64)")
    p.add_argument("--seeds", type=int, default=3, help="draws of each randomized method (default 3)")
    p.add_argument("--steps", type=int, help=f"training steps (default {DecoderConfig.steps})")
    p.add_argument("--seed", type=int, default=0, help="seed of the initialisation and the batches (default 0)")
    p.add_argument("--quick", action="store_true", help="a seconds-long version (tiny model, 30 steps, n = 64)")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: on a shared machine more threads wait on each other)",
    )
    p.add_argument(
        "--cache",
        type=output_file("--cache"),
        help="keep the trained model in this file and reuse it on a rerun (not committed)",
    )
    p.add_argument("--train-only", action="store_true", help="train (and --cache) without the evaluation")
    p.add_argument("--json", type=output_file("--json", suffixes=(".json",)), help="write the result to this file")
    args = p.parse_args(argv)
    try:
        methods = comma_names("--methods", args.methods, causal_methods()) if args.methods else None
        budgets = comma_ints("--budgets", args.budgets)
    except ValueError as exc:
        p.error(str(exc))
    if args.threads < 1:
        p.error(f"--threads: expected a positive integer, got {args.threads}")
    given = given_options(p, argv)
    for name in ("methods", "budgets", "seeds", "json"):
        if args.train_only and name in given:
            p.error(f"--{name}: does not apply with --train-only (nothing is evaluated)")
    n = (QUICK if args.quick else DecoderConfig()).n
    if max(budgets) > n:
        p.error(f"--budgets: expected at most n = {n} keys per query (or ranks), got {max(budgets)}")
    try:  # the options named like the fields they set: --steps, --seed, --seeds, --methods
        with torch_threads(args.threads):
            config = QUICK if args.quick else DecoderConfig()
            config = replace(config, seed=args.seed, **({"steps": args.steps} if args.steps is not None else {}))
            if args.train_only:
                _, training = trained(config, load_corpus(config.max_chars), args.cache, verbose=True)
                print(f"trained in {training['seconds']:.0f} s, final loss {training['loss'][-1]['loss']:.3f}")
                return 0
            result = study(config, methods, budgets, args.seeds, cache=args.cache)
    except ValueError as exc:
        p.error(f"--{exc}")
    print(summary(result))
    if args.json:
        write_atomic(args.json, json.dumps(result, indent=1) + "\n", option="--json")
    return 0


if __name__ == "__main__":
    run_command(main)
