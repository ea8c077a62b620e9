"""Perplexity of each pattern under both protocols, and passkey retrieval, from a study file
(``python -m analysis.real_models.figure --json FILE --out PREFIX``: writes ``PREFIX.png`` and ``PREFIX.pdf``)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from graphs.cli_common import FIGURE_SUFFIXES, NUMBER, check_shape, output_file, run_command, save_png_pdf
from receptive.cli_parser import OneLineErrorParser


def summary(data: dict) -> dict[str, dict]:
    """Per pattern: the perplexity per protocol (per seed the geometric mean over the windows, then the mean over
    the seeds), and passkey hits and trials."""
    out: dict[str, dict] = {}
    for r in data["rows"]:
        entry = out.setdefault(r["label"], {"sparse": {}, "sparse-prefill": {}, "hits": 0, "trials": 0})
        if r["task"] == "perplexity":
            entry[r["protocol"]].setdefault(r["seed"], []).append(math.log(r["perplexity"]))
        else:
            entry["hits"] += bool(r["correct"])
            entry["trials"] += 1
    for entry in out.values():
        for protocol in ("sparse", "sparse-prefill"):
            per_seed = [math.exp(sum(v) / len(v)) for v in entry[protocol].values()]
            entry[protocol] = sum(per_seed) / len(per_seed) if per_seed else None
    return out


#: what the figure reads of a study file: its model, rows and the costs' budget; each row is a perplexity or a
#: passkey row (:data:`ROW_SHAPES`)
STUDY_SHAPE = {"model": str, "rows": [{"label": str, "n": int, "task": str}, ...], "costs": [{"budget": int}, ...]}
ROW_SHAPES = {
    "perplexity": {"protocol": frozenset({"sparse", "sparse-prefill"}), "perplexity": NUMBER, "seed": int},
    "passkey": {"correct": bool},
}


def check_study(data) -> None:
    """``data`` as a study file the figure can draw (:data:`STUDY_SHAPE` and :data:`ROW_SHAPES`, a positive finite
    perplexity and an ``exact`` perplexity row); else a ``ValueError`` naming ``--json`` and the first entry that is
    not.

    Examples
    --------
    >>> check_study({"model": "m", "rows": [], "costs": []})
    Traceback (most recent call last):
    ...
    ValueError: --json: rows is empty, expected at least one entry; expected a file of python -m analysis...
    """
    what = "expected a file of python -m analysis.real_models.study"
    try:
        check_shape(data, STUDY_SHAPE)
        for i, r in enumerate(data["rows"]):
            check_shape(r, ROW_SHAPES.get(r["task"], ROW_SHAPES["passkey"]), f"rows[{i}]")
            if r["task"] == "perplexity" and not (math.isfinite(r["perplexity"]) and r["perplexity"] > 0):
                raise ValueError(f"rows[{i}]['perplexity'] is {r['perplexity']}, expected a positive number")
    except ValueError as exc:
        raise ValueError(f"--json: {exc}; {what}") from None
    if not any(r["label"] == "exact" and r.get("protocol") == "sparse" for r in data["rows"]):
        raise ValueError("--json: no perplexity row labelled exact (the figure's reference line)")


def plot(data: dict, prefix: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = summary(data)
    labels = list(table)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), gridspec_kw={"width_ratios": [3, 1.2]})
    y = range(len(labels))
    for offset, protocol, colour in ((-0.2, "sparse", "tab:red"), (0.2, "sparse-prefill", "tab:blue")):
        values = [table[x][protocol] or float("nan") for x in labels]
        left.barh([i + offset for i in y], values, height=0.4, color=colour, label=protocol)
    exact = table["exact"]["sparse"]
    left.axvline(exact, color="k", lw=1, ls="--", label=f"exact ({exact:.1f})")
    left.set_xscale("log")
    left.set_yticks(list(y), labels)
    left.invert_yaxis()
    left.set_xlabel("perplexity of the last tokens (log scale)")
    left.legend(loc="lower right", fontsize=8)
    right.barh(list(y), [table[x]["hits"] / max(1, table[x]["trials"]) for x in labels], color="tab:green")
    right.set_yticks(list(y), [""] * len(labels))
    right.invert_yaxis()
    right.set_xlim(0, 1)
    right.set_xlabel("passkey found (share of trials)")
    n = data["rows"][0]["n"]
    fig.suptitle(f"{data['model']}: every layer sparse, n = {n}, m = {data['costs'][0]['budget']} keys per query")
    fig.tight_layout()
    return [Path(path) for path in save_png_pdf(fig, prefix, option="--out")]


def main(argv=None) -> int:
    p = OneLineErrorParser(
        prog="python -m analysis.real_models.figure",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--json", type=Path, required=True, help="a file written by analysis.real_models.study")
    p.add_argument(
        "--out",
        type=output_file("--out", suffixes=FIGURE_SUFFIXES),
        required=True,
        help="output prefix (PREFIX.png and PREFIX.pdf)",
    )
    args = p.parse_args(argv)
    if not args.json.is_file():
        p.error(f"--json: no such file {args.json}")
    try:
        data = json.loads(args.json.read_text())
    except (OSError, ValueError) as exc:
        p.error(f"--json: cannot read {args.json} ({getattr(exc, 'strerror', None) or 'not JSON'})")
    try:
        check_study(data)
        paths = plot(data, args.out)
    except ValueError as exc:
        p.error(str(exc))
    for path in paths:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    run_command(main)
