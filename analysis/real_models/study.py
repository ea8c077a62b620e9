"""Sparse patterns in a real pretrained LM (SmolLM2-135M-Instruct, 30 layers): perplexity, passkey retrieval,
the needle's path through the stack, and cost (``python -m analysis.real_models.study``).

* Perplexity of the last ``--scored`` tokens of windows of ``n`` tokens of the Python documentation that ships with
  the standard library (``pydoc_data.topics``, English prose), under two protocols: ``sparse`` (every position runs
  the pattern; by the tested equality of :mod:`gpu.hf.generation` this is also teacher-forced sparse generation)
  and ``sparse-prefill`` (the pattern over the first ``n - scored`` tokens into a ``DynamicCache``, the scored tokens
  then read every key: the protocol of Jin & Sui 2026's training-free results).
* Passkey retrieval: a 5-digit key at 10 / 50 / 90 % depth of ``n`` tokens of filler, answered by greedy
  ``model.generate()`` with the pattern in the prefill and every decode step; the answer is right when the key's
  digits come out first.
* The needle's path: during the passkey prefill every layer's key sets are traced, and the first layer after which
  the last prompt position can depend on the key's tokens (``reach_layer``; ``None``: never in 30 layers).
* Cost: keys per query (measured on the position methods, the budget for MoBA and top-k), the keys the KV cache must
  hold, and CPU seconds per forward and per generated token.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import itertools
import json
import sys
import time
from pathlib import Path

import torch
from tqdm.auto import tqdm

from gpu.attention.generation_patterns import GENERATION_METHODS, mean_keys_read
from gpu.hf import register
from gpu.hf.checkpoints import add_model_option, model_path
from gpu.hf.models import load_causal_lm
from graphs.cli_common import output_file, run_command, write_atomic
from receptive.cli_parser import OneLineErrorParser, add_seeds_option

RESULTS = Path(__file__).parent / "results"

#: (label, method, exact layers): the methods and the remedies of the study.
CONFIGS = {
    "swa": ("swa", ()),
    "swa+sink": ("swa+sink", ()),
    "sa": ("sa", ()),
    "sa+sink": ("sa+sink", ()),
    "sa+swa (mean)": ("sa+swa", ()),
    "sa+swa (union)": ("sa+swa-union", ()),
    "sa-ms": ("sa-ms", ()),
    "moba": ("moba", ()),
    "top-k": ("top-k", ()),
    "sa, every 6th layer exact": ("sa", tuple(range(0, 30, 6))),
    "swa, every 6th layer exact": ("swa", tuple(range(0, 30, 6))),
    "sa in layers 15-29 only": ("sa", tuple(range(15))),
}


def pydoc_text() -> str:
    """The standard library's help topics, joined in key order (about 465k characters of English prose)."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[key] for key in sorted(topics))


def perplexity(model, ids: torch.Tensor, scored: int, name: str, protocol: str) -> tuple[float, float]:
    """``exp`` of the mean NLL of the last ``scored`` tokens of ``ids`` (1, n), and the seconds it took."""
    from transformers import DynamicCache

    model.set_attn_implementation(name)
    start = time.perf_counter()
    with torch.no_grad():
        if protocol == "sparse":
            logits = model(input_ids=ids).logits[:, -scored - 1 : -1]
        else:
            cache = DynamicCache(config=model.config)
            head = model(input_ids=ids[:, :-scored], cache=cache, use_cache=True).logits[:, -1:]
            tail = model(input_ids=ids[:, -scored:-1], cache=cache, use_cache=True).logits
            logits = torch.cat([head, tail], 1)
    nll = torch.nn.functional.cross_entropy(logits[0].float(), ids[0, -scored:])
    return float(torch.exp(nll)), time.perf_counter() - start


def passkey_prompt(tokenizer, n: int, depth: float, key: str) -> torch.Tensor:
    """About ``n`` tokens: filler with the key at ``depth``, then the question."""
    filler = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
    needle = f"The pass key is {key}. Remember it. {key} is the pass key. "
    question = "What is the pass key? The pass key is"
    unit = len(tokenizer(filler)["input_ids"])
    budget = n - len(tokenizer(needle + question)["input_ids"])
    count = max(1, budget // unit)
    before = round(depth * count)
    text = filler * before + needle + filler * (count - before) + question
    return torch.tensor([tokenizer(text)["input_ids"][:n]])


def needle_positions(tokenizer, ids: torch.Tensor, key: str) -> list[int]:
    """The positions of the tokens of the key's first mention."""
    tokens = ids[0].tolist()
    target = tokenizer(" " + key, add_special_tokens=False)["input_ids"]
    for start in range(len(tokens) - len(target) + 1):
        if tokens[start : start + len(target)] == target:
            return list(range(start, start + len(target)))
    raise ValueError("the key's tokens were not found in the prompt")


class Reach:
    """Follows the needle's influence layer by layer in one prefill: ``reached[i]`` after layer ``l`` when position
    ``i`` reads, at some layer up to ``l``, a position already reached (the residual stream keeps what is reached)."""

    def __init__(self, n: int, sources: list[int]):
        self.reached = torch.zeros(n, dtype=torch.bool)
        self.reached[sources] = True
        self.layer = None

    def __call__(self, layer, positions, keep):
        if keep.shape[0] != len(self.reached):  # a decode step
            return
        if bool(self.reached[-1]) and self.layer is None:
            self.layer = layer
        self.reached[positions] |= (keep & self.reached[None, :]).any(1)
        if bool(self.reached[-1]) and self.layer is None:
            self.layer = layer + 1  # after this layer


class StepClock:
    """A ``generate(streamer=...)`` that timestamps every ``put``: the prompt first, then each new token, so the
    prefill and the per-token decode times come apart."""

    def __init__(self):
        self.times = []

    def put(self, value):
        self.times.append(time.perf_counter())

    def end(self):
        pass

    def split(self, start: float) -> tuple[float, list[float]]:
        """Seconds from ``start`` to the first new token (prefill), and of each later token."""
        stamps = self.times[1:]  # the first put is the prompt
        return stamps[0] - start, [b - a for a, b in itertools.pairwise(stamps)]


def run_passkey(
    model, tokenizer, n: int, label: str, method: str, exact: tuple, budget: int, seed: int, depths, trials: int
) -> list[dict]:
    rows = []
    for depth in depths:
        for trial in range(trials):
            key = str(10000 + (7919 * (trial + 1) + int(depth * 1000) * 104729) % 90000)
            ids = passkey_prompt(tokenizer, n, depth, key)
            reach = Reach(ids.shape[1], needle_positions(tokenizer, ids, key))
            name = register(method, budget, seed, exact_layers=exact, trace=reach)
            model.set_attn_implementation(name)
            clock = StepClock()
            start = time.perf_counter()
            with torch.no_grad():
                out = model.generate(
                    ids, max_new_tokens=8, do_sample=False, pad_token_id=tokenizer.eos_token_id, streamer=clock
                )
            seconds = time.perf_counter() - start
            prefill, steps = clock.split(start)
            answer = tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
            digits = "".join(ch for ch in answer if ch.isdigit())
            rows.append(
                {
                    "task": "passkey",
                    "label": label,
                    "method": method,
                    "exact_layers": list(exact),
                    "budget": budget,
                    "seed": seed,
                    "n": int(ids.shape[1]),
                    "depth": depth,
                    "trial": trial,
                    "key": key,
                    "answer": answer.strip(),
                    "correct": digits.startswith(key),
                    "reach_layer": reach.layer,
                    "seconds": seconds,
                    "prefill_seconds": prefill,
                    "decode_seconds_per_token": sum(steps) / max(1, len(steps)),
                    "new_tokens": int(out.shape[1] - ids.shape[1]),
                }
            )
    return rows


def cost_row(label, method, exact, budget, n, config) -> dict:
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    head_dim = config.hidden_size // heads
    keys = (
        budget
        if GENERATION_METHODS[method].data_dependent
        else mean_keys_read(method, n, budget, heads, 0, config.max_position_embeddings)
    )
    layers = config.num_hidden_layers
    mean_keys = (keys * (layers - len(exact)) + (n + 1) / 2 * len(exact)) / layers
    cached = min(n, budget) if method in ("swa", "swa+sink") and not exact else n
    return {
        "label": label,
        "method": method,
        "budget": budget,
        "n": n,
        "keys_per_query": mean_keys,
        "kv_cache_keys": cached,
        "kv_cache_bytes_per_token": 2 * kv_heads * head_dim * layers * 4 * cached / n,
        "kv_cache_holds": GENERATION_METHODS[method].kv_cache if not exact else "every key",
    }


def build_parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser(
        prog="python -m analysis.real_models.study",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog="example: python -m analysis.real_models.study --n 2048 --budget 128 --out /tmp/real",
        options={"budget": "--budget", "seed": "--seed"},
    )
    add_model_option(p)
    p.add_argument("--n", type=int, default=2048, help="tokens per window / passkey prompt")
    p.add_argument("--budget", type=int, default=128, help="keys per query")
    add_seeds_option(p, 3)  # of the randomized methods
    p.add_argument("--windows", type=int, default=2, help="text windows for perplexity")
    p.add_argument("--scored", type=int, default=256, help="scored tokens at the end of each window")
    p.add_argument("--configs", help="comma-separated labels of CONFIGS (default: all)")
    p.add_argument("--passkey-trials", type=int, default=1, help="trials per depth (0: no passkey)")
    p.add_argument("--out", type=output_file("--out", suffixes=(".json",)), required=True, help="output JSON file")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    parser = build_parser()
    if args.scored < 1:
        parser.error(f"--scored: expected an integer >= 1, got {args.scored}")
    if args.n < 2 * args.scored:
        parser.error(f"--n: must be at least 2 * --scored = {2 * args.scored}, got {args.n}")
    for flag, value, low in (
        ("--budget", args.budget, 1),
        ("--windows", args.windows, 1),
        ("--passkey-trials", args.passkey_trials, 0),
    ):
        if value < low:
            parser.error(f"{flag}: expected an integer >= {low}, got {value}")
    labels = list(CONFIGS) if not args.configs else args.configs.split(",")
    unknown = [x for x in labels if x not in CONFIGS]
    if unknown:
        parser.error(f"--configs: unknown {unknown}; expected among {list(CONFIGS)}")
    jobs = [("exact", "exact", (), 0)] + [
        (label, CONFIGS[label][0], CONFIGS[label][1], seed)
        for label in labels
        for seed in (
            range(args.seed, args.seed + args.seeds) if GENERATION_METHODS[CONFIGS[label][0]].randomized else [0]
        )
    ]
    try:  # every attention form registered (its budget and seed checked) before the model is loaded
        names = {
            (label, seed, protocol): register(
                method,
                args.budget if method != "exact" else 1,
                seed,
                decode="exact" if protocol == "sparse-prefill" else "sparse",
                exact_layers=exact,
            )
            for label, method, exact, seed in jobs
            for protocol in (("sparse", "sparse-prefill") if method != "exact" else ("sparse",))
        }
    except ValueError as exc:
        parser.error(str(exc))
    try:
        path = model_path(args.model)
    except ValueError as exc:
        parser.error(str(exc))
    torch.manual_seed(0)
    try:
        model, tokenizer = load_causal_lm(path)
    except (TypeError, ValueError) as exc:
        parser.error(str(exc).replace("path:", "--model:", 1))
    config = model.config
    ids = torch.tensor([tokenizer(pydoc_text())["input_ids"]])
    stride = ids.shape[1] // args.windows
    windows = [ids[:, i * stride : i * stride + args.n] for i in range(args.windows)]
    rows = []
    for label, method, exact, seed in tqdm(jobs, desc="perplexity"):
        for protocol in ("sparse", "sparse-prefill") if method != "exact" else ("sparse",):
            name = names[label, seed, protocol]
            for w, window in enumerate(windows):
                ppl, seconds = perplexity(model, window, args.scored, name, protocol)
                rows.append(
                    {
                        "task": "perplexity",
                        "label": label,
                        "method": method,
                        "exact_layers": list(exact),
                        "budget": args.budget,
                        "seed": seed,
                        "protocol": protocol,
                        "window": w,
                        "n": args.n,
                        "scored": args.scored,
                        "perplexity": ppl,
                        "seconds": seconds,
                    }
                )
    if args.passkey_trials:
        passkey_jobs = [("exact", "exact", (), 0)] + [(x, CONFIGS[x][0], CONFIGS[x][1], 0) for x in labels]
        for label, method, exact, seed in tqdm(passkey_jobs, desc="passkey"):
            rows += run_passkey(
                model, tokenizer, args.n, label, method, exact, args.budget, seed, (0.1, 0.5, 0.9), args.passkey_trials
            )
    costs = [cost_row(label, CONFIGS[label][0], CONFIGS[label][1], args.budget, args.n, config) for label in labels]
    result = {
        "command": "python -m analysis.real_models.study " + " ".join(argv if argv is not None else sys.argv[1:]),
        "model": Path(path).name,
        "layers": config.num_hidden_layers,
        "heads": config.num_attention_heads,
        "kv_heads": config.num_key_value_heads,
        "threads": torch.get_num_threads(),
        "versions": {p: importlib.metadata.version(p) for p in ("torch", "transformers", "receptive")},
        "rows": rows,
        "costs": costs,
    }
    write_atomic(args.out, json.dumps(result, indent=1) + "\n", option="--out")
    print(f"wrote {args.out} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    run_command(main)
