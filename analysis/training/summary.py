"""Summaries of an experiment's runs: mean and spread over seeds per (kind, n, w, L), the runs that deviate from
the reachability prediction, and the LM's perplexity ordering next to the paper's.

Mean and spread:

For every metric ``x`` with values ``x_1 .. x_s`` over the ``s`` seeds of a configuration (``None`` values, e.g.
accuracy where nothing was reachable, are left out and ``count`` says how many remain):
``mean = sum x_i / s``, ``std`` the sample standard deviation ``sqrt(sum (x_i - mean)^2 / (s - 1))`` (0 for one
seed), ``min`` and ``max`` (the spread plotted as error bars). Three seeds give a rough spread, not a confidence
interval.
"""

from __future__ import annotations

import math

import numpy as np

#: Jin & Sui 2026 (arXiv 2604.00754), WikiText perplexity of their pre-trained models
PAPER_PERPLEXITY = {"full": 51.3, "sa+swa": 52.0, "swa": 57.1, "sa": 75.8}

#: metrics summarised for the synthetic tasks (accuracy_reachable: accuracy on answers inside the readout's field)
SYNTHETIC_METRICS = (
    "accuracy",
    "accuracy_reachable",
    "reachable",
    "predicted_accuracy",
    "keys_per_query",
    "eval_loss",
    "train_loss_last",
    "train_seconds",
)
LM_METRICS = ("val_perplexity", "val_loss", "keys_per_query", "train_loss_last", "train_seconds")


def loss_curve(losses: list[float]) -> list[float]:
    """The training loss in tenths: means of consecutive chunks of ``max(1, len // 10)`` steps (the last may be
    shorter)."""
    tenth = max(1, len(losses) // 10)
    return [float(np.mean(losses[i : i + tenth])) for i in range(0, len(losses), tenth)]


def spread(values) -> dict:
    """``{"mean", "std", "min", "max", "count"}`` of the values that are not ``None`` (all ``None`` if none are)."""
    xs = [float(x) for x in values if x is not None]
    if not xs:
        return {"mean": None, "std": None, "min": None, "max": None, "count": 0}
    mean = sum(xs) / len(xs)
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
    return {"mean": mean, "std": std, "min": min(xs), "max": max(xs), "count": len(xs)}


def aggregate(rows: list[dict]) -> list[dict]:
    """One entry per (kind, n, w, layers) in order of first appearance: ``{"kind", "n", "w", "layers", "seeds",
    METRIC: spread(...)}``."""
    if not isinstance(rows, list) or any(not isinstance(r, dict) or "kind" not in r for r in rows):
        raise ValueError("rows: expected a list of run rows (dicts with kind, n, w, layers)")
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["kind"], r["n"], r["w"], r["layers"]), []).append(r)
    out = []
    for (kind, n, w, layers), members in groups.items():
        metrics = LM_METRICS if "val_perplexity" in members[0] else SYNTHETIC_METRICS
        entry = {"kind": kind, "n": n, "w": w, "layers": layers, "seeds": [r.get("seed", 0) for r in members]}
        for m in metrics:
            entry[m] = spread(r.get(m) for r in members)
        out.append(entry)
    return out


def aggregate_table(entries: list[dict]) -> str:
    """The synthetic aggregate as text: mean and [min, max] of accuracy, accuracy where reachable, reachable share,
    keys per query."""

    def cell(s):
        if s["mean"] is None:
            return f"{'-':>19s}"
        return f"{s['mean']:5.3f} [{s['min']:5.3f},{s['max']:5.3f}]"

    lines = [
        f"{'kind':17s} {'n':>4s} {'w':>3s} {'L':>2s} {'s':>2s} {'accuracy':>19s} {'acc where reach':>19s} "
        f"{'reachable':>19s} {'keys/q':>6s}"
    ]
    for e in entries:
        lines.append(
            f"{e['kind']:17s} {e['n']:4d} {e['w']:3d} {e['layers']:2d} {len(e['seeds']):2d} "
            f"{cell(e['accuracy'])} {cell(e['accuracy_reachable'])} {cell(e['reachable'])} "
            f"{e['keys_per_query']['mean']:6.2f}"
        )
    return "\n".join(lines)


def deviations(rows: list[dict], tolerance: float = 0.15) -> list[dict]:
    """Runs whose accuracy differs from the reachability prediction ``reach + (1 - reach) chance`` by more than
    ``tolerance``: below it the model did not learn to use what it can see, above it it beat the bound (which
    would mean the bound is wrong)."""
    out = []
    for r in rows:
        gap = r["accuracy"] - r["predicted_accuracy"]
        if abs(gap) > tolerance:
            why = "below: not learned" if gap < 0 else "above the reachability bound"
            keep = ("run", "kind", "n", "w", "layers", "accuracy", "predicted_accuracy")
            out.append({**{k: r[k] for k in keep}, "gap": gap, "why": why})
    return out


def compare_with_paper(rows: list[dict]) -> dict:
    """Our validation perplexity ordering next to the paper's WikiText ordering."""
    ours = {r["kind"]: r["val_perplexity"] for r in rows}
    common = [k for k in PAPER_PERPLEXITY if k in ours]
    our_order = sorted(common, key=ours.get)
    paper_order = sorted(common, key=PAPER_PERPLEXITY.get)
    return {
        "paper_wikitext_perplexity": {k: PAPER_PERPLEXITY[k] for k in common},
        "paper_order": paper_order,
        "our_order": our_order,
        "same_order": our_order == paper_order,
        "our_ratio_to_full": {k: ours[k] / ours["full"] for k in common} if "full" in ours else None,
        "paper_ratio_to_full": {k: PAPER_PERPLEXITY[k] / PAPER_PERPLEXITY["full"] for k in common},
    }
