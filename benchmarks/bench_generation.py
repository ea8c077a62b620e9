"""Time a causal LM's forward and its decode under the generation-form patterns against transformers' SDPA, each time
beside its floor.

    python benchmarks/bench_generation.py [--n 2048,8192] [--long 32768] [--contexts 2048,8192,32768]
        [--methods exact,swa,swa+sink,sa,sa+swa-union] [--plan FILE] [--budget 128] [--new 8] [--repeats 3]
        [--decode-rounds 2] [--cache static|dynamic] [--profile-rows 12] [--model PATH | --tiny] [--json PATH]

* **The floor**: the time of the same model whose attention reads one key per query (``one-key``: each query's
  output is its own value, everything but attention: projections, MLP, norms, logits, the cache), plus the
  attention FLOPs of the row's keys per query (``4 d`` per query, key and head: scores and weighted values, summed
  over the heads and layers) at the dense kernel's FLOP rate, measured in the same run on the model's shapes
  (PyTorch's fused causal SDPA over ``n`` keys for a forward, one query over the context for a decode step). SDPA's
  own floor is then about its time, a check of the decomposition. ``over_floor`` is time over floor.
* **Forward**: ``model(input_ids)`` over ``n`` tokens without a cache (the prefill's work, every position's logits)
  with ``attn_implementation="sdpa"`` (transformers' default on the CPU: PyTorch's fused causal kernel), the
  one-key model and every pattern of ``--methods`` (and ``--plan``) at ``--budget`` keys per query
  (:func:`gpu.hf.register`). The rows of one ``n`` are timed together in rotating rounds
  (:func:`gpu.bench.timing.round_robin`, one untimed warm-up call each); ``seconds`` is the median round. ``--long``
  adds one round at that length with the last position's logits only (``logits_to_keep=1``), no warm-up.
* **Decode**: for each context of ``--contexts`` one cache is filled once by a one-key prefill (the timing of a
  step does not depend on the cached values), then every row decodes ``--new`` greedy steps from it (the cache reset
  to the context each time, an explicit attention mask as ``generate`` passes), ``--decode-rounds`` rotating rounds;
  ``ms_per_step`` is the median step. ``--cache static`` (default): a ``StaticCache``, the new keys written in
  place; ``--cache dynamic``: a ``DynamicCache`` (``generate``'s default), which concatenates every layer's whole
  cache at every step, an ``O(n)`` copy per step for every attention, SDPA's included. ``growth`` is the per-step
  time at the longest context over the shortest (flat: 1).
* **Profile**: ``torch.profiler``'s table of one decode step at the first context for SDPA and each pattern: the
  ``--profile-rows`` operators with the most self CPU time.

Every forward's logits are checked finite. The load average before and after is recorded; the numbers compare rows
of this run only. A row of ``--plan`` is a :class:`gpu.attention.head_plans.HeadPlan` read from JSON (its key
``plan``, or the whole file).
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

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from a checkout: import this checkout's packages
    sys.path.insert(0, str(ROOT))

from gpu.attention.generation_patterns import GENERATION_METHODS, mean_keys_read  # noqa: E402
from gpu.bench.timing import round_robin  # noqa: E402
from gpu.hf import register  # noqa: E402
from gpu.hf.checkpoints import add_model_option, model_path  # noqa: E402
from gpu.hf.generation import compacted  # noqa: E402
from graphs.cli_common import run_command, write_atomic  # noqa: E402
from receptive.cli_parser import OneLineErrorParser, comma_ints, output_file  # noqa: E402

DEFAULT_METHODS = "exact,swa,swa+sink,sa,sa+swa-union"
ONE_KEY = "receptive-bench-one-key"


def tiny_model(max_length: int):
    """A randomly initialised 2-layer Llama with SmolLM2-135M's attention shape (9 heads, 3 KV heads, d = 64)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=512,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=2,
        num_attention_heads=9,
        num_key_value_heads=3,
        max_position_embeddings=max_length,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config).eval()


def one_key_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kwargs):
    """A transformers attention that reads one key per query, its own: the output is the query's own value (each
    query head its key head's). Without a mask the queries are the first slots (SDPA's ``is_causal`` alignment of
    a prefill) or, one query, the last."""
    groups = query.shape[1] // value.shape[1]

    def own(q, k, v):
        return v[:, :, -q.shape[2] :].repeat_interleave(groups, dim=1)

    if attention_mask is not None:
        out = compacted(own, query, key, value, attention_mask)
    else:
        n_q = query.shape[2]
        out = (value[:, :, :n_q] if n_q > 1 else value[:, :, -1:]).repeat_interleave(groups, dim=1)
    return out.transpose(1, 2).contiguous(), None


def register_one_key() -> str:
    """Register :func:`one_key_attention` (with SDPA's mask: none for a plain causal call)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(ONE_KEY, one_key_attention)
    AttentionMaskInterface.register(ONE_KEY, sdpa_mask)
    return ONE_KEY


def read_plan(path: str):
    """The :class:`gpu.attention.head_plans.HeadPlan` of a JSON file (its key ``plan``, or the whole file)."""
    from gpu.attention.head_plans import HeadPlan

    doc = json.loads(Path(path).read_text())
    return HeadPlan.from_dict(doc["plan"] if isinstance(doc, dict) and "plan" in doc else doc)


def attention_names(methods: list[str], budget: int, plan=None, max_length: int | None = None) -> dict[str, str]:
    """``{row label: attn_implementation}``: SDPA, the one-key floor, each method at ``budget`` keys, the plan."""
    names = {"sdpa": "sdpa", "one-key": register_one_key()}
    names |= {m: register(m, budget if m != "exact" else 1, max_length=max_length) for m in methods}
    if plan is not None:
        names[f"plan:{plan.name}"] = register(plan, None, max_length=max_length)
    return names


def keys_per_query(label: str, n: int, budget: int, plan=None, max_length: int | None = None) -> float:
    """The mean keys a query of a length-``n`` forward reads per head (layer 0's draw for SA; the plan's mean over
    its layers and heads); SDPA and ``exact`` the causal ``(n + 1) / 2``, the floor 1."""
    if label in ("sdpa", "exact"):
        return (n + 1) / 2
    if label == "one-key":
        return 1.0
    if label.startswith("plan:"):
        from gpu.attention.head_plans import plan_mean_keys

        return plan_mean_keys(plan, [n], 0, max(n, max_length or n))
    return mean_keys_read(label, n, budget, 1, 0, max(n, max_length or n))


def decode_keys(label: str, context: int, budget: int, plan=None, max_length: int | None = None) -> float:
    """Keys per head a query at position ``context`` reads (SDPA and ``exact``: every one before it)."""
    if label in ("sdpa", "exact"):
        return context + 1.0
    if label == "one-key":
        return 1.0
    length = max(context + 1, max_length or 0)
    positions = torch.tensor([context])
    if label.startswith("plan:"):
        from gpu.attention.generation_keys import position_keys

        per_head = [
            float(position_keys(m, positions, context + 1, b, 1, 0, length)[1].sum())
            for row in plan.heads
            for m, b in row
            if m != "exact"
        ]
        exact = sum(m == "exact" for row in plan.heads for m, _ in row)
        return (sum(per_head) + exact * (context + 1)) / (len(per_head) + exact)
    from gpu.attention.generation_keys import position_keys

    if label == "sa+swa":
        half = max(1, budget // 2)
        return sum(float(position_keys(m, positions, context + 1, half, 1, 0, length)[1].sum()) for m in ("sa", "swa"))
    return float(position_keys(label, positions, context + 1, budget, 1, 0, length)[1].sum())


def dense_rate(model, n_q: int, n: int, repeats: int) -> dict:
    """FLOPs per second of PyTorch's fused SDPA on the model's attention shape: ``n_q`` queries (the last) over
    ``n`` keys, causal for a forward (``n_q == n``); the median of ``repeats`` calls after one warm-up."""
    c = model.config
    heads, kv = c.num_attention_heads, c.num_key_value_heads
    d = getattr(c, "head_dim", None) or c.hidden_size // heads
    g = torch.Generator().manual_seed(n)
    q = torch.randn(1, heads, n_q, d, generator=g)
    k, v = torch.randn(2, 1, kv, n, d, generator=g).unbind(0)
    causal = n_q == n

    def call():
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=kv != heads)

    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    keys = n_q * (n + 1) / 2 if causal else n_q * n
    flops = 4 * d * heads * keys
    return {
        "queries": n_q,
        "keys": n,
        "seconds": statistics.median(times),
        "flops": flops,
        "flops_per_second": flops / statistics.median(times),
    }


def attention_flops(model, queries: int, keys: float) -> float:
    """``4 d`` FLOPs per query, key and head over every layer: ``keys`` the mean keys per query and head."""
    c = model.config
    d = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    return 4 * d * c.num_attention_heads * c.num_hidden_layers * queries * keys


def time_forwards(model, n: int, names: dict[str, str], repeats: int, last: bool = False) -> dict[str, list[float]]:
    """Seconds of each row's forward over ``n`` tokens: rotating rounds after a warm-up, or (``last``: the last
    position's logits only) one call each, no warm-up."""
    ids = torch.randint(0, model.config.vocab_size, (1, n), generator=torch.Generator().manual_seed(n))
    keep = {"logits_to_keep": 1} if last else {}

    def forward(name):
        def call():
            model.set_attn_implementation(name)
            logits = model(input_ids=ids, use_cache=False, **keep).logits
            if not bool(torch.isfinite(logits).all()):
                raise RuntimeError(f"{name}: the forward at n = {n} is not finite")

        return call

    with torch.no_grad():
        if not last:
            return round_robin({label: forward(name) for label, name in names.items()}, repeats)
        runs = {}
        for label, name in names.items():
            start = time.perf_counter()
            forward(name)()
            runs[label] = [time.perf_counter() - start]
        return runs


def _reset(cache, length: int) -> None:
    """The cache rewound to ``length`` tokens: a ``StaticCache``'s later slots are overwritten and masked, a
    ``DynamicCache`` is cropped."""
    from transformers import StaticCache

    if isinstance(cache, StaticCache):
        for layer in cache.layers:
            layer.cumulative_length.fill_(length)
    elif cache.get_seq_length() > length:
        cache.crop(length - cache.get_seq_length())


def time_decode(
    model, names: dict[str, str], context: int, new: int, rounds: int, profile_rows: int = 0, cache_kind: str = "static"
):
    """``{label: [seconds of each step]}`` of ``new`` greedy steps after ``context`` tokens, every row from one cache
    filled once (``cache_kind``: a ``StaticCache`` or a ``DynamicCache``); with ``profile_rows``, also ``{label:
    profiler rows}`` of one more step each."""
    from transformers import DynamicCache, StaticCache

    ids = torch.randint(0, model.config.vocab_size, (1, context), generator=torch.Generator().manual_seed(1))
    if cache_kind == "static":
        cache = StaticCache(config=model.config, max_cache_len=context + new + 1)
    else:
        cache = DynamicCache(config=model.config)
    steps = {label: [] for label in names}
    profiles = {}
    with torch.no_grad():
        model.set_attn_implementation(names["one-key"])
        first = model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1).logits[:, -1:].argmax(-1)

        def step(token, filled):
            mask = torch.ones(1, filled + 1, dtype=torch.long)
            return model(input_ids=token, attention_mask=mask, cache=cache, use_cache=True).logits[:, -1:].argmax(-1)

        labels = list(names)
        for r in range(rounds + 1):  # round 0: a warm-up step of each row, untimed
            for label in labels[r % len(labels) :] + labels[: r % len(labels)]:
                model.set_attn_implementation(names[label])
                _reset(cache, context)
                token = first
                for i in range(new if r else 1):
                    start = time.perf_counter()
                    token = step(token, context + i)
                    if r:
                        steps[label].append(time.perf_counter() - start)
        if profile_rows:
            from torch.profiler import ProfilerActivity, profile

            for label, name in names.items():
                model.set_attn_implementation(name)
                _reset(cache, context)
                with profile(activities=[ProfilerActivity.CPU]) as prof:
                    step(first, context)
                profiles[label] = profiler_rows(prof, profile_rows)
    return steps, profiles


def profiler_rows(prof, rows: int) -> dict:
    """The top ``rows`` operators of a profile by self CPU time, and the step's total."""
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    return {
        "self_cpu_ms_total": total / 1e3,
        "rows": [
            {
                "name": e.key,
                "calls": e.count,
                "self_cpu_ms": e.self_cpu_time_total / 1e3,
                "cpu_total_ms": e.cpu_time_total / 1e3,
            }
            for e in events[:rows]
        ],
    }


def lengths(option: str):
    """``--n``-style lists; ``none`` for no rows."""

    def parse(text: str) -> list[int]:
        return [] if text == "none" else comma_ints(option, text, 2)

    return parse


def build_parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser(
        prog="python benchmarks/bench_generation.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--n",
        type=lengths("--n"),
        default=[2048, 8192],
        help="forward lengths, rotating rounds (default 2048,8192; none: no rows)",
    )
    p.add_argument(
        "--long", type=int, default=0, help="one more forward length, one round, the last logits only (default 0: none)"
    )
    p.add_argument(
        "--contexts",
        type=lengths("--contexts"),
        default=[2048],
        help="decode after these many tokens (default 2048; none: no decode rows)",
    )
    p.add_argument(
        "--cache",
        choices=("static", "dynamic"),
        default="static",
        help="the decode's cache: StaticCache (written in place) or DynamicCache (concatenated at "
        "every step, generate's default) (default static)",
    )
    p.add_argument("--methods", default=DEFAULT_METHODS, help=f"patterns to time (default {DEFAULT_METHODS})")
    p.add_argument("--plan", help="also time this head plan (JSON: HeadPlan.from_dict of its 'plan' or the file)")
    p.add_argument("--budget", type=int, default=128, help="keys per query (default 128)")
    p.add_argument("--new", type=int, default=8, help="decode steps per row and round (default 8; 0: no decode rows)")
    p.add_argument("--repeats", type=int, default=3, help="timed rounds of the forwards (default 3)")
    p.add_argument("--decode-rounds", type=int, default=2, help="timed rounds of the decode steps (default 2)")
    p.add_argument(
        "--profile-rows", type=int, default=12, help="operators of the decode-step profile (default 12; 0: no profile)"
    )
    model = p.add_mutually_exclusive_group()
    add_model_option(model)
    model.add_argument("--tiny", action="store_true", help="a random 2-layer Llama of SmolLM2's attention shape")
    p.add_argument("--json", type=output_file("--json"), help="write the results here (default: print only)")
    return p


def floor_row(row: dict, one_key: float, flops: float, rate: float) -> None:
    """Add ``attention_flops``, ``floor_seconds`` and ``over_floor`` to ``row`` (``seconds`` its time)."""
    row["attention_flops"] = flops
    row["floor_seconds"] = one_key + flops / rate
    row["over_floor"] = row["seconds"] / row["floor_seconds"]


def main(argv=None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    unknown = [m for m in methods if m not in GENERATION_METHODS or m in ("moba", "top-k")]
    if unknown:
        position_only = [m for m in GENERATION_METHODS if m not in ("moba", "top-k")]
        p.error(f"--methods: unknown or data-dependent {unknown}; expected among {position_only}")
    for flag, value, low in (
        ("--budget", args.budget, 1),
        ("--repeats", args.repeats, 1),
        ("--new", args.new, 0),
        ("--decode-rounds", args.decode_rounds, 1),
        ("--profile-rows", args.profile_rows, 0),
        ("--long", args.long, 0),
    ):
        if value < low:
            p.error(f"{flag}: expected an integer >= {low}, got {value}")
    plan = None
    if args.plan is not None:
        try:
            plan = read_plan(args.plan)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            p.error(f"--plan: {exc}")
    longest = max([*args.n, args.long, *(c + args.new + 1 for c in args.contexts)])
    if args.tiny:
        model, label = tiny_model(longest), "random 2-layer Llama (SmolLM2's attention shape)"
    else:
        from gpu.hf.models import load_causal_lm

        try:
            path = model_path(args.model)
        except ValueError as exc:
            p.error(str(exc))
        try:
            model, label = load_causal_lm(path)[0], Path(path).name
        except (TypeError, ValueError) as exc:
            p.error(str(exc).replace("path:", "--model:", 1))
    trained = model.config.max_position_embeddings
    if plan is not None and plan.layers != model.config.num_hidden_layers:
        p.error(f"--plan: {plan.name} has {plan.layers} layers, the model {model.config.num_hidden_layers}")
    # timing only: lengths past the trained positions run (RoPE extrapolates), SA draws over the longest
    max_length = max(longest, trained)
    names = attention_names(methods, args.budget, plan, max_length)
    load_before = os.getloadavg()
    forwards, rates = [], []
    for n, last in [(n, False) for n in args.n] + ([(args.long, True)] if args.long else []):
        runs = time_forwards(model, n, names, args.repeats, last)
        rate = dense_rate(model, n, n, 1 if last else args.repeats)
        rates.append({"n": n, **rate})
        sdpa, one = statistics.median(runs["sdpa"]), statistics.median(runs["one-key"])
        for row, times in runs.items():
            keys = keys_per_query(row, n, args.budget, plan, max_length)
            entry = {
                "n": n,
                "attention": row,
                "logits": "last" if last else "all",
                "seconds": statistics.median(times),
                "runs": times,
                "over_sdpa": statistics.median(times) / sdpa,
                "keys_per_query": keys,
            }
            floor_row(entry, one, attention_flops(model, n, keys), rate["flops_per_second"])
            forwards.append(entry)
    decodes, profile = [], {}
    for i, context in enumerate(args.contexts if args.new else []):
        steps, prof = time_decode(
            model, names, context, args.new, args.decode_rounds, args.profile_rows * (i == 0), args.cache
        )
        rate = dense_rate(model, 1, context + 1, 20)
        rates.append({"decode_context": context, **rate})
        if prof:
            profile = {
                "context": context,
                "statistic": "self CPU time of one decode step's operators (ms)",
                "steps": prof,
            }
        sdpa, one = statistics.median(steps["sdpa"]), statistics.median(steps["one-key"])
        for row, times in steps.items():
            keys = decode_keys(row, context, args.budget, plan, max_length)
            entry = {
                "context": context,
                "attention": row,
                "step_seconds": times,
                "seconds": statistics.median(times),
                "ms_per_step": 1e3 * statistics.median(times),
                "over_sdpa": statistics.median(times) / sdpa,
                "keys_per_query": keys,
            }
            floor_row(entry, one, attention_flops(model, 1, keys), rate["flops_per_second"])
            decodes.append(entry)
    for row in decodes:
        at = [r["seconds"] for r in decodes if r["attention"] == row["attention"]]
        row["growth"] = at[-1] / at[0]
    doc = {
        "command": "python benchmarks/bench_generation.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "model": label,
        "layers": model.config.num_hidden_layers,
        "trained_positions": trained,
        "budget": args.budget,
        "plan": None if plan is None else {"name": plan.name, "digest": plan.digest, "file": args.plan},
        "threads": torch.get_num_threads(),
        "machine": f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} cores".strip(),
        "load_average_before": list(load_before),
        "load_average_after": list(os.getloadavg()),
        "statistic": "seconds: the median of each row's rounds (forward) or steps (decode); floor: the one-key "
        "model's time plus the row's attention FLOPs at the dense kernel's rate (dense_rates)",
        "decode_cache": f"one {'StaticCache' if args.cache == 'static' else 'DynamicCache'} per context, filled once "
        "by the one-key prefill; every row decodes from it",
        "dense_rates": rates,
        "forward": forwards,
        "decode": decodes,
        "profile": profile,
    }
    print(
        f"{label}, {args.budget} keys per query; forward without a cache (median of {args.repeats} rounds; the "
        f"--long row one round, last logits only)"
    )
    print(f"{'n':>6} {'attention':<14} {'seconds':>8} {'floor':>8} {'x floor':>8} {'sdpa':>8} {'x sdpa':>7}")
    for row in forwards:
        sdpa = next(r["seconds"] for r in forwards if r["n"] == row["n"] and r["attention"] == "sdpa")
        print(
            f"{row['n']:>6} {row['attention']:<14} {row['seconds']:>8.3f} {row['floor_seconds']:>8.3f} "
            f"{row['over_floor']:>8.2f} {sdpa:>8.3f} {row['over_sdpa']:>7.2f}"
        )
    if decodes:
        print(f"decode, {args.cache} cache, median of {args.decode_rounds} x {args.new} steps per row")
        print(
            f"{'context':>7} {'attention':<14} {'ms/step':>8} {'floor':>8} {'x floor':>8} {'x sdpa':>7} {'growth':>7}"
        )
        for row in decodes:
            print(
                f"{row['context']:>7} {row['attention']:<14} {row['ms_per_step']:>8.2f} "
                f"{1e3 * row['floor_seconds']:>8.2f} {row['over_floor']:>8.2f} {row['over_sdpa']:>7.2f} "
                f"{row['growth']:>7.2f}"
            )
    if args.json is not None:
        write_atomic(args.json, json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    run_command(main)
