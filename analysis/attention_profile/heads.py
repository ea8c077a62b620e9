"""Why SA loses here: where each layer's and head's attention mass is, and what SA's, SWA's and SWA + sink's keys hold
of it (``python -m analysis.attention_profile.heads``).

From the study's ``results/profile.json`` (the exact mass per layer, head and region; the headline patterns' recall
per layer and head, m = 64), averaged over the informative tasks' texts:

* each head's mass on the sink (key 0), within the window (distance below m), and beyond it (``far``);
* the heads whose far mass is at least :data:`FAR_HEAD` (*far heads*: a window of m cannot serve them);
* per head, the recall of ``sa``, ``swa`` and ``swa+sink`` at m, and on the far heads whether SA's keys hold more
  than the window's (SA's random keys serving what the window cannot).

References
----------
- Xiao et al. (2024). Efficient streaming language models with attention sinks. ICLR, arXiv 2309.17453.
- Xiao et al. (2024). DuoAttention: efficient long-context LLM inference with retrieval and streaming heads.
  arXiv 2410.10819.
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from graphs.cli_common import output_file, run_command, write_atomic
from receptive.cli_parser import OneLineErrorParser

from .predict import read_result

RESULTS = Path(__file__).parent / "results"
#: A head is a far head when at least this share of its mass lies beyond distance m (the sink excluded).
FAR_HEAD = 0.25
BUDGET = 64


def region_shares(profile: dict, budget: int = BUDGET) -> dict[str, np.ndarray]:
    """``(layers, heads)`` mass on the sink, within distance ``budget`` (the sink excluded) and beyond, averaged over
    the tasks.

    Parameters
    ----------
    profile : dict
        ``results/profile.json``.
    budget : int, default 64
        The window; a power of two at most the largest band edge.

    Returns
    -------
    dict of str to numpy.ndarray
        ``sink``, ``window``, ``far``.
    """
    regions = np.mean([np.array(t["regions"]) for t in profile["tasks"].values()], axis=0)  # (L, H, R)
    names = next(iter(profile["tasks"].values()))["region_names"]
    window = [i for i, name in enumerate(names[1:-1], 1) if int(name.split("-")[-1]) < budget]
    return {
        "sink": regions[..., 0],
        "window": regions[..., window].sum(-1),
        "far": 1 - regions[..., 0] - regions[..., window].sum(-1),
    }


def head_recall(profile: dict, budget: int = BUDGET) -> dict[str, np.ndarray]:
    """``(layers, heads)`` recall of each headline pattern at ``budget``, averaged over the tasks.

    Parameters
    ----------
    profile : dict
        ``results/profile.json``.
    budget : int, default 64
        The budget.

    Returns
    -------
    dict of str to numpy.ndarray
        Label to recall.
    """
    tasks = list(profile["tasks"].values())
    labels = [label for label in tasks[0]["headline_recall"] if label.endswith(f"-{budget}")]
    return {label: np.mean([np.array(t["headline_recall"][label]) for t in tasks], axis=0) for label in labels}


def heads_summary(profile: dict, budget: int = BUDGET) -> dict:
    """The per-head table and what it says.

    Parameters
    ----------
    profile : dict
        ``results/profile.json``.
    budget : int, default 64
        The budget.

    Returns
    -------
    dict
        ``per_head`` rows, ``far_heads``, the mean shares, and for the far heads the patterns' mean recall.
    """
    shares = region_shares(profile, budget)
    recall = head_recall(profile, budget)
    layers, heads = shares["sink"].shape
    rows = []
    for layer in range(layers):
        for head in range(heads):
            row = {"layer": layer, "head": head} | {k: round(float(v[layer, head]), 4) for k, v in shares.items()}
            rows.append(row | {f"recall {k}": round(float(v[layer, head]), 4) for k, v in recall.items()})
    far = shares["far"] >= FAR_HEAD
    sa, swa, sink = (recall.get(f"{m}-{budget}") for m in ("sa", "swa", "swa+sink"))
    summary = {
        "budget": budget,
        "far_head_threshold": FAR_HEAD,
        "per_head": rows,
        "mean": {k: float(v.mean()) for k, v in shares.items()},
        "far_heads": [[int(a), int(b)] for a, b in zip(*np.nonzero(far), strict=True)],
        "recall_mean": {k: float(v.mean()) for k, v in recall.items()},
        "recall_far_heads": {k: float(v[far].mean()) if far.any() else None for k, v in recall.items()},
        "sink_heads": int((shares["sink"] >= 0.5).sum()),
        "heads": layers * heads,
    }
    if sa is not None and swa is not None and far.any():
        summary["far_heads_sa_above_swa"] = int((sa[far] > swa[far]).sum())
        summary["heads_sa_above_swa"] = int((sa > swa).sum())
        summary["heads_sa_above_swa_sink"] = int((sa > sink).sum()) if sink is not None else None
    return summary


def main(argv=None) -> int:
    """Write the per-head table.

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
        prog="python -m analysis.attention_profile.heads",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--profile", default=str(RESULTS / "profile.json"), help="the study's profile")
    parser.add_argument("--out", required=True, type=output_file("--out", suffixes=(".json",)), help="the JSON")
    args = parser.parse_args(argv)
    profile = read_result(parser, "--profile", args.profile, "tasks")
    summary = heads_summary(profile)
    summary["command"] = f"python -m analysis.attention_profile.heads --out {args.out}"
    write_atomic(args.out, json.dumps(summary, indent=1) + "\n", option="--out")
    mean = summary["mean"]
    print(
        f"mass: sink {mean['sink']:.3f}, within {summary['budget']} {mean['window']:.3f}, beyond {mean['far']:.3f}; "
        f"{len(summary['far_heads'])} far heads of {summary['heads']}, {summary['sink_heads']} sink heads"
    )
    for label, value in summary["recall_mean"].items():
        far = summary["recall_far_heads"][label]
        print(f"{label:14} recall {value:.3f}" + ("" if far is None else f", on the far heads {far:.3f}"))
    return 0


if __name__ == "__main__":
    run_command(main)
