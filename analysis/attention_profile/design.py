"""Head plans designed from the attention profile, scored on the informative tasks
(``python -m analysis.attention_profile.design``).

1. **Calibrate** on text apart from every test item: MMLU's ``dev`` examples as five shots and the first
   ``validation`` question of each subject (OLMES's cloze prompt, the scored position the prompt's last token; MMLU
   is not among the scored tasks). One exact forward per text measures, per layer and head, the mass each candidate
   key set of :data:`OPTIONS` holds at the scored position (:func:`gpu.profile.measures.attention_profile`'s
   ``recall``, the measure the study chose).
2. **Choose** per head the candidate that maximises ``recall - lam * keys`` (keys per query relative to the
   reference's on each task, averaged over the tasks), ``lam`` the smallest at which the plan reads at most the
   reference's mean keys per query on every scored task, counted over every position of the items' sequences
   (context and longest continuation, :func:`analysis.paper_tasks.summary.item_lengths`) as
   :func:`gpu.attention.head_plans.plan_mean_keys` counts the pairs attended: the Lagrangian relaxation of the
   knapsack "most mass for the keys" (Everett 1963), optimal on each head's upper concave hull.
3. **Score** the plan through :func:`gpu.hf.register` (so it also generates) with the harness on the four informative
   tasks' fixed items, both protocols, every seed where a head draws, into a store of the grid's row format.

The candidates: the sink with a window (StreamingLLM's streaming heads, DuoAttention's), every key (a retrieval
head), and SA's random shortcuts beside the window and sink, or SA's band with the sink: SA is in the design space,
and the result says whether any head prefers it.

References
----------
- Xiao et al. (2024). DuoAttention: efficient long-context LLM inference with retrieval and streaming heads.
  arXiv 2410.10819.
- Xiao et al. (2024). Efficient streaming language models with attention sinks. ICLR, arXiv 2309.17453.
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
- Everett (1963). Generalized Lagrange multiplier method for solving problems of optimum allocation of resources.
  Operations Research 11(3).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from graphs.cli_common import output_file, run_command, write_atomic
from receptive.cli_parser import OneLineErrorParser, add_progress_option, add_seeds_option

GRID = Path(__file__).parent.parent / "paper_tasks" / "results" / "grid"
TASKS = ("arc_easy", "hellaswag", "piqa", "lambada")
#: The candidate key sets of a head: (method, keys per query).
OPTIONS = (
    *(("swa+sink", w) for w in (4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)),
    ("exact", 0),
    *(("swa+sink+sa", m) for m in (32, 64, 128, 256)),
    *(("sa+sink", m) for m in (64, 128)),
)
#: The reference pattern whose keys per query the plan may not exceed, at each budget.
REFERENCE = "swa+sink"


def calibration_ids(tokenizer, subjects: int | None = None) -> list[list[int]]:
    """The calibration texts' token ids: per MMLU subject, five ``dev`` shots and the first ``validation``
    question, as the harness tokenises its gold context.

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
        The model's tokenizer.
    subjects : int, optional
        The first this many subjects (alphabetical); ``None``: all.

    Returns
    -------
    list of list of int
    """
    from gpu.harness.tasks import load_mmlu
    from gpu.profile.cli import task_contexts

    items = load_mmlu(per_subject=1, shots=5, split="validation")
    return task_contexts(tokenizer, items[:subjects])


def head_recall(model, texts, options=OPTIONS, max_length: int | None = None) -> dict:
    """Per candidate, the ``(layers, heads)`` exact softmax mass its keys hold at each text's last position, the mean
    over texts: :func:`gpu.profile.measures.attention_profile`'s ``recall`` at the scored position (seed 0), from one
    exact forward per text that keeps only the last query's probabilities.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM whose attention modules carry ``layer_idx``.
    texts : sequence of sequences of int
        Token ids.
    options : sequence of (str, int), default :data:`OPTIONS`
    max_length : int, optional
        SA's permutation length; ``None``: the model's ``max_position_embeddings``, as :func:`gpu.hf.register`.

    Returns
    -------
    dict
        Candidate -> ``(layers, heads)`` array.
    """
    import torch

    from gpu.attention.generation_keys import position_keys
    from gpu.hf.interface import register_function

    layers = model.config.num_hidden_layers
    length = max_length or model.config.max_position_embeddings
    mass = np.zeros((len(options), layers, model.config.num_attention_heads))

    def attend(q, k, v, causal, layer, n_layers):
        n = k.shape[2]
        probs = torch.softmax((q[0, :, -1:] @ k[0].transpose(-1, -2)).double()[:, 0] / q.shape[-1] ** 0.5, -1)
        last = torch.tensor([n - 1])
        for i, (method, budget) in enumerate(options):
            idx, valid = position_keys(method, last, n, max(budget, 1), 1, layer, length)
            mass[i, layer] += probs[:, idx[0, 0][valid[0, 0]]].sum(-1).numpy()
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    previous = model.config._attn_implementation
    model.set_attn_implementation(register_function("receptive-design-recall", attend))
    try:
        with torch.no_grad():
            for ids in texts:
                model(input_ids=torch.as_tensor([list(ids)]), use_cache=False)
    finally:
        model.set_attn_implementation(previous)
    return {option: mass[i] / len(texts) for i, option in enumerate(options)}


def option_keys(lengths: dict[str, list[int]], options=OPTIONS, max_length: int = 8192) -> dict:
    """Per task and candidate, the mean keys per query over every position of sequences of those lengths.

    Parameters
    ----------
    lengths : dict of str to list of int
        Per task, the items' sequence lengths.
    options : sequence of (str, int), default :data:`OPTIONS`
    max_length : int, default 8192
        SA's permutation length (the model's ``max_position_embeddings``).

    Returns
    -------
    dict
        ``{task: {option: keys}}``.

    Examples
    --------
    >>> option_keys({"t": [4]}, [("swa+sink", 2), ("exact", 0)], 8)["t"]
    {('swa+sink', 2): 1.75, ('exact', 0): 2.5}
    """
    from gpu.attention.head_plans import HeadPlan, plan_mean_keys

    return {
        task: {option: plan_mean_keys(HeadPlan("one", ((option,),)), n, 0, max_length) for option in options}
        for task, n in lengths.items()
    }


def choose(recall: dict, keys: dict, reference: dict[str, float], steps: int = 60) -> tuple[np.ndarray, float]:
    """Per head the candidate maximising ``recall - lam * relative keys``, ``lam`` the smallest (to ``steps``
    bisections) with every task's mean keys at most its reference's.

    Parameters
    ----------
    recall : dict
        Candidate -> ``(layers, heads)`` recall (:func:`head_recall`).
    keys : dict
        ``{task: {candidate: keys per query}}`` (:func:`option_keys`).
    reference : dict of str to float
        Per task, the reference's keys per query.
    steps : int, default 60
        Bisection steps.

    Returns
    -------
    choice : numpy.ndarray
        ``(layers, heads)`` index into the candidates (``list(recall)``).
    lam : float

    Examples
    --------
    >>> recall = {"short": np.array([[0.5, 0.9]]), "long": np.array([[1.0, 1.0]])}
    >>> keys = {"t": {"short": 1.0, "long": 3.0}}
    >>> choose(recall, keys, {"t": 2.0})[0].tolist()  # the head that gains most takes the long keys
    [[1, 0]]
    """
    options = list(recall)
    values = np.stack([recall[o] for o in options])  # (options, layers, heads)
    tasks = sorted(reference)
    per_task = np.array([[keys[t][o] for o in options] for t in tasks])  # (tasks, options)
    relative = (per_task / np.array([reference[t] for t in tasks])[:, None]).mean(0)

    def pick(lam):
        choice = np.argmax(values - lam * relative[:, None, None], axis=0)
        return choice, per_task[:, choice].mean(axis=(1, 2))

    def feasible(lam):
        return bool((pick(lam)[1] <= np.array([reference[t] for t in tasks]) + 1e-9).all())

    low, high = 0.0, 1.0
    while not feasible(high):
        high *= 2
        if high > 1e9:
            raise ValueError("reference: no plan of these candidates reads as few keys as the reference")
    if feasible(low):
        return pick(low)[0], low
    for _ in range(steps):
        middle = (low + high) / 2
        low, high = (low, middle) if feasible(middle) else (middle, high)
    return pick(high)[0], high


def design(
    budget: int, subjects: int | None, store=GRID, tasks=TASKS, min_keys: int = 1, recall_from: dict | None = None
) -> dict:
    """Profile the candidates on the calibration text and choose the plan at ``budget`` keys per query.

    Parameters
    ----------
    budget : int
        The reference's keys per query (:data:`REFERENCE` at this budget).
    subjects : int or None
        MMLU subjects for calibration (:func:`calibration_ids`).
    store : str or pathlib.Path, default :data:`GRID`
        The grid's store (the items' lengths).
    tasks : sequence of str, default :data:`TASKS`
    min_keys : int, default 1
        Candidates with fewer keys per query are left out (every key always stays).
    recall_from : dict, optional
        An earlier design's result: its measured ``recall`` (and calibration) instead of new forwards.

    Returns
    -------
    dict
        ``plan`` (:meth:`gpu.attention.head_plans.HeadPlan.to_dict`), ``keys`` (per task: the plan's, the
        reference's), ``choices`` (candidate label -> heads), ``sa_heads``, ``recall`` (per candidate, per layer and
        head), ``calibration`` (texts, tokens), ``seconds``.
    """
    import torch

    from analysis.paper_tasks.summary import item_lengths
    from gpu.attention.head_plans import HeadPlan, plan_mean_keys
    from gpu.hf.checkpoints import smollm2_gguf
    from gpu.hf.models import load_causal_lm

    labels = [f"{m}-{b}" if m != "exact" else "exact" for m, b in OPTIONS]
    start = time.perf_counter()
    if recall_from is None:
        model, tokenizer = load_causal_lm(smollm2_gguf())
        max_length = model.config.max_position_embeddings
        ids = calibration_ids(tokenizer, subjects)
        recall = head_recall(model, ids, OPTIONS, max_length)
        calibration = {"texts": len(ids), "tokens": [len(x) for x in ids], "source": "mmlu dev shots + validation"}
    else:
        max_length = 8192  # SmolLM2's max_position_embeddings
        recall = {o: np.asarray(recall_from["recall"][label]) for o, label in zip(OPTIONS, labels, strict=True)}
        calibration = recall_from["calibration"] | {"recall_from": recall_from["label"]}
    seconds_profile = time.perf_counter() - start
    kept = [i for i, (m, b) in enumerate(OPTIONS) if m == "exact" or b >= min_keys]
    options = [OPTIONS[i] for i in kept]
    lengths = {t: [whole for _, whole in items.values()] for t, items in item_lengths(store).items() if t in tasks}
    keys = option_keys(lengths, options, max_length)
    reference = {
        t: plan_mean_keys(HeadPlan("ref", (((REFERENCE, budget),),)), lengths[t], 0, max_length) for t in tasks
    }
    choice, lam = choose({o: recall[o] for o in options}, keys, reference)
    choice = np.asarray(kept)[choice]  # indices into OPTIONS
    heads = tuple(tuple(OPTIONS[c] for c in row) for row in choice.tolist())
    plan = HeadPlan(f"profile{budget}" + (f"min{min_keys}" if min_keys > 1 else ""), heads)
    counts = {labels[i]: int((choice == i).sum()) for i in range(len(OPTIONS)) if (choice == i).any()}
    sa = [i for i, (m, _) in enumerate(OPTIONS) if "sa" in m.split("+")]
    return {
        "budget": budget,
        "min_keys": min_keys,
        "reference": REFERENCE,
        "lambda": lam,
        "plan": plan.to_dict(),
        "label": plan.digest,
        "keys": {
            t: {"plan": plan_mean_keys(plan, lengths[t], 0, max_length), "reference": reference[t]} for t in tasks
        },
        "choices": counts,
        "sa_heads": int(np.isin(choice, sa).sum()),
        "heads": int(choice.size),
        "recall": {labels[i]: recall[o].round(6).tolist() for i, o in enumerate(OPTIONS)},
        "plan_recall": float(np.take_along_axis(np.stack(list(recall.values())), choice[None], 0).mean()),
        "reference_recall": float(recall[REFERENCE, budget].mean()) if (REFERENCE, budget) in recall else None,
        "calibration": calibration,
        "seconds": {"recall": seconds_profile},
        "threads": torch.get_num_threads(),
    }


def score(plan, out, tasks=TASKS, limit: int = 200, seeds=(0, 1, 2), progress: bool | None = None) -> list[dict]:
    """Score ``plan`` on each task's first ``limit`` items under both protocols into the store ``out``
    (``tasks.jsonl`` rows of the grid's format, one per task and seed; a finished row is not run again).

    Parameters
    ----------
    plan : gpu.attention.head_plans.HeadPlan
    out : str or pathlib.Path
        The store's folder.
    tasks : sequence of str, default :data:`TASKS`
    limit : int, default 200
    seeds : sequence of int, default (0, 1, 2)
        The plan's seeds (only 0 when nothing in it draws).
    progress : bool or None, default None

    Returns
    -------
    list of dict
        The store's rows.
    """
    from gpu.harness.scoring import EvalAttention, score_items, shared_prefixes
    from gpu.harness.tasks import load_task
    from gpu.hf.checkpoints import smollm2_gguf
    from gpu.hf.models import load_causal_lm
    from receptive.sweep import ResultStore

    store = ResultStore(out, resume=True)
    done = store.done()
    model = tokenizer = None
    for seed in seeds if plan.randomized else (0,):
        for task in tasks:
            attentions = [EvalAttention(plan=plan, seed=seed, decode=d) for d in ("sparse", "exact")]
            key = f"smollm2|{attentions[0].method}|s{seed}|{task}|{limit}"
            if key in done:
                continue
            if model is None:
                model, tokenizer = load_causal_lm(smollm2_gguf())
            items = load_task(task, limit)
            start = time.perf_counter()
            scored = score_items(
                model, tokenizer, items, attentions, prefixes=shared_prefixes(tokenizer, items), progress=progress
            )
            store.add(
                {
                    "key": key,
                    "model": "smollm2",
                    "method": attentions[0].method,
                    "budget": 0,
                    "seed": seed,
                    "exact_layers": [],
                    "decodes": ["sparse", "exact"],
                    "task": task,
                    "limit": limit,
                    "kind": items[0].kind,
                    "plan": plan.to_dict(),
                    "runs": [{"attention": a.to_dict(), "records": scored[a.label]} for a in attentions],
                    "seconds": time.perf_counter() - start,
                }
            )
    return store.results()


def main(argv=None) -> int:
    """Design the plan (``--design``), score it (``--score``), or both.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0.
    """
    parser = OneLineErrorParser(
        prog="python -m analysis.attention_profile.design",
        description=__doc__.split("\n\n")[0],
        epilog="example: python -m analysis.attention_profile.design --budget 64 "
        "--out analysis/attention_profile/results/design",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--out", required=True, help="the folder: plan_<budget>.json and the store tasks.jsonl")
    parser.add_argument("--budget", type=int, default=64, help=f"{REFERENCE}'s keys per query the plan may read")
    parser.add_argument("--subjects", type=int, default=None, help="MMLU subjects to calibrate on (default: all)")
    parser.add_argument("--min-keys", type=int, default=1, help="leave out candidates with fewer keys per query")
    parser.add_argument("--recall-from", default=None, help="an earlier design's plan JSON: reuse its measured recall")
    parser.add_argument("--steps", default="design,score", help="comma-separated: design, score")
    parser.add_argument("--limit", type=int, default=200, help="items per task to score")
    add_seeds_option(parser, 3)  # where a head draws
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    add_progress_option(parser, "--quiet")
    args = parser.parse_args(argv)
    if not 1 <= args.budget <= 4096:
        parser.error(f"--budget: expected an integer in [1, 4096], got {args.budget}")
    if not 1 <= args.min_keys <= args.budget:
        parser.error(f"--min-keys: expected an integer in [1, --budget = {args.budget}], got {args.min_keys}")
    recall_from = None
    if args.recall_from is not None:
        try:
            recall_from = json.loads(Path(args.recall_from).read_text())
            if not isinstance(recall_from, dict) or not {"recall", "calibration", "label"} <= recall_from.keys():
                raise ValueError("not a design's plan file (recall, calibration, label)")
        except (OSError, ValueError) as exc:
            parser.error(f"--recall-from: {args.recall_from}: {getattr(exc, 'strerror', None) or exc}")
    if args.subjects is not None and not 1 <= args.subjects <= 57:
        parser.error(f"--subjects: expected an integer in [1, 57], got {args.subjects}")
    if not 1 <= args.limit <= 200:
        parser.error(f"--limit: expected an integer in [1, 200], got {args.limit}")
    steps = [s for s in args.steps.split(",") if s]
    if not steps or set(steps) - {"design", "score"}:
        parser.error(f"--steps: expected design and/or score, got {args.steps!r}")
    seeds = range(args.seed, args.seed + args.seeds)
    if args.threads < 1:
        parser.error(f"--threads: expected an integer >= 1, got {args.threads}")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        name = f"plan_{args.budget}" + (f"_min{args.min_keys}" if args.min_keys > 1 else "")
        plan_file = output_file("--out", suffixes=(".json",))(str(out / f"{name}.json"))
    except (OSError, argparse.ArgumentTypeError) as exc:
        parser.error(f"--out: cannot write to {out}: {getattr(exc, 'strerror', None) or exc}")
    if "design" not in steps and not plan_file.is_file():
        parser.error(f"--steps: score needs {plan_file} (run the design step first)")
    from gpu.attention.head_plans import HeadPlan
    from gpu.attention.threads import set_threads

    set_threads(args.threads)
    progress = False if args.no_progress else None
    if "design" in steps:
        result = design(args.budget, args.subjects, min_keys=args.min_keys, recall_from=recall_from)
        command = (
            f"python -m analysis.attention_profile.design --budget {args.budget} --steps design"
            + (f" --subjects {args.subjects}" if args.subjects else "")
            + (f" --min-keys {args.min_keys}" if args.min_keys > 1 else "")
            + (f" --recall-from {args.recall_from}" if args.recall_from else "")
            + f" --out {args.out}"
        )
        write_atomic(plan_file, json.dumps(result | {"command": command}, indent=1) + "\n", option="--out")
        print(f"plan {result['label']}: {result['choices']}; heads with SA: {result['sa_heads']}/{result['heads']}")
        for task, k in result["keys"].items():
            print(f"  {task:10} keys per query {k['plan']:.1f} (reference {k['reference']:.1f})")
    if "score" in steps:
        data = json.loads(plan_file.read_text())
        plan = HeadPlan.from_dict(data.get("plan") if isinstance(data, dict) else None)
        score(plan, out, limit=args.limit, seeds=seeds, progress=progress)
    return 0


if __name__ == "__main__":
    run_command(main)
