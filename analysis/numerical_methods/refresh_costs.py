"""``python -m analysis.numerical_methods.refresh_costs FILE [FILE ...]``: recompute, in place, the cost fields of
approx-lab result
files from the current cost model (:mod:`gpu.approx.costs`) without rerunning any measurement.

The cost fields are pure functions of a row's configuration (method, budget, the file's ``n``, ``d``, heads,
layers, causal flag), computed as the command that wrote the file computes them:

* ``python -m gpu.approx`` (the synthetic study, ``approx_synthetic*.json``): ``flops``, ``peak_bytes``,
  ``kv_cache_bytes_per_token`` of :func:`gpu.approx.method_cost` at the study's heads, ``flops_share = flops /
  exact_cost(n, d, heads, causal).flops`` and ``flops_vs_swa = flops / method_cost("swa", ..., budget).flops`` for
  the study's budgets (``None`` for a budget outside them);
* ``python -m gpu.approx --costs --json`` (the cost table): the three costs and ``flops_share`` (``exact``:
  :func:`gpu.approx.exact_cost`, share 1); the ``measured_*`` fields are measurements and stay;
* ``python -m analysis.numerical_methods.decoder`` (``approx_decoder.json``): the rows' costs by
  :func:`analysis.numerical_methods.decoder._cost` (FLOPs and KV-cache bytes summed over the layers, one layer's
  peak bytes);
* ``python -m analysis.numerical_methods.real`` (``approx_minilm.json``): the ``costs`` list as
:func:`analysis.numerical_methods.real.costs`
  writes it (MiniLM's 6 layers of 12 heads of 32, bidirectional).

Everything else (errors, perplexities, seconds, measured bytes and FLOPs, parameters) is left as it is. A file
whose cost fields already equal the model's is not rewritten; one that changes gets an entry appended to its
top-level ``costs_refreshed`` list: the command, the fields and methods changed, the number of rows, and the
``--note`` given (the old values are in the file's git history). Every file is read, checked and refreshed before
any is written, so a bad file among several leaves all of them untouched (a failure of the write itself, e.g. a full
disk, can still leave the files before it written, each whole). ``--check`` writes nothing and exits 1 if a file is
out of date."""

from __future__ import annotations

import argparse
import copy
import json
import shlex
import sys
from pathlib import Path

from analysis.numerical_methods.decoder import DecoderConfig, _cost
from gpu.approx.methods import exact_cost, method_cost
from gpu.approx.minilm import HEAD_DIM, HEADS, LAYERS
from graphs.cli_common import check_shape, run_command, write_atomic
from receptive.cli_parser import OneLineErrorParser

NOTE_FIELD = "costs_refreshed"
_ROWS = [{"method": str, "budget": int}]
_PARAMETERS = {"n": int, "d": int, "heads": int, "causal": bool, "budgets": (str, list)}
#: the command that writes each layout
WRITERS = {
    "synthetic": "python -m gpu.approx",
    "cost-table": "python -m gpu.approx --costs",
    "decoder": "python -m analysis.numerical_methods.decoder",
    "minilm": "python -m analysis.numerical_methods.real",
}
#: what :func:`expected_costs` reads of each layout (:func:`layout`)
SHAPES = {
    "synthetic": {"parameters": _PARAMETERS, "rows": _ROWS},
    "cost-table": {"parameters": _PARAMETERS, "rows": _ROWS},
    "decoder": {"config": dict, "rows": _ROWS},
    "minilm": {"costs": [{"method": str, "budget": int, "n": int}]},
}
COST_FIELDS = ("flops", "peak_bytes", "kv_cache_bytes_per_token", "flops_share", "flops_vs_swa")


def layout(doc) -> str:
    """Which command wrote ``doc``: ``"synthetic"``, ``"cost-table"``, ``"decoder"`` or ``"minilm"``; a
    ``ValueError`` naming ``doc`` for anything else."""
    if not isinstance(doc, dict):
        raise ValueError(f"doc: expected a JSON object written by an approx-lab command, got {type(doc).__name__}")
    parameters = doc.get("parameters")
    if isinstance(parameters, dict) and isinstance(doc.get("rows"), list):
        if "config" in doc:
            return "decoder"
        if "kinds" in parameters and "seeds" in parameters:
            return "synthetic"
        if "measure" in parameters:
            return "cost-table"
    if isinstance(doc.get("costs"), list) and isinstance(parameters, dict) and "substitution_budgets" in parameters:
        return "minilm"
    raise ValueError(
        "doc: expected the JSON of python -m gpu.approx (study or --costs), "
        "analysis.numerical_methods.decoder or analysis.numerical_methods.real, "
        f"got top-level keys {sorted(doc)}"
    )


def _budgets(value) -> list[int]:
    return [int(b) for b in value.split(",")] if isinstance(value, str) else [int(b) for b in value]


def _row_key(row, i):
    if not isinstance(row, dict) or "method" not in row or "budget" not in row:
        raise ValueError(f"doc: row {i} has no method and budget")
    return row["method"], int(row["budget"])


def expected_costs(doc) -> tuple[str, list[dict]]:
    """The list that holds ``doc``'s cost rows (``"rows"`` or ``"costs"``) and, for each of its rows, the cost
    fields the current model gives (see the module docstring for each layout); a ``ValueError`` naming ``doc`` and
    its first entry that is not of its layout's shape (:data:`SHAPES`)."""
    kind = layout(doc)
    try:
        check_shape(doc, SHAPES[kind])
    except ValueError as exc:
        raise ValueError(f"doc: {exc}; expected the JSON of {WRITERS[kind]}") from None

    if kind in ("synthetic", "cost-table"):
        p = doc["parameters"]
        n, d, heads, causal = int(p["n"]), int(p["d"]), int(p["heads"]), bool(p["causal"])
        reference = exact_cost(n, d, heads, causal).flops
        swa = {b: method_cost("swa", n, d, b, heads=heads, causal=causal).flops for b in _budgets(p["budgets"])}
        out = []
        for i, row in enumerate(doc["rows"]):
            method, budget = _row_key(row, i)
            if kind == "cost-table" and method == "exact":
                out.append({**exact_cost(n, d, heads, causal).to_dict(), "flops_share": 1.0})
                continue
            cost = method_cost(method, n, d, budget, heads=heads, causal=causal)
            fields = {**cost.to_dict(), "flops_share": cost.flops / reference}
            if kind == "synthetic":
                fields["flops_vs_swa"] = cost.flops / swa[budget] if budget in swa else None
            out.append(fields)
        return "rows", out
    if kind == "decoder":
        try:
            config = DecoderConfig(**doc["config"])
        except TypeError as exc:  # an entry DecoderConfig does not have
            raise ValueError(f"doc: config is not a DecoderConfig ({exc})") from None
        out = []
        for i, row in enumerate(doc["rows"]):
            method, budget = _row_key(row, i)
            out.append(_cost(method, config, budget))
        return "rows", out

    out = []
    for i, row in enumerate(doc["costs"]):
        method, budget = _row_key(row, i)
        if "n" not in row:
            raise ValueError(f"doc: costs row {i} has no n")
        n = int(row["n"])
        cost = (
            exact_cost(n, HEAD_DIM, heads=HEADS)
            if method == "full"
            else method_cost(method, n, HEAD_DIM, budget, heads=HEADS)
        )
        out.append(
            {
                "flops": cost.flops * LAYERS,
                "peak_bytes": cost.peak_bytes,
                "kv_cache_bytes_per_token": cost.kv_cache_bytes_per_token * LAYERS,
            }
        )
    return "costs", out


def refresh(doc, command: str, note: str | None = None) -> tuple[dict, list[tuple]]:
    """A copy of ``doc`` with every cost field that differs from :func:`expected_costs` replaced, and the changes
    as ``(row index, method, budget, field, old, new)``; with changes, an entry ``{"command", "fields", "methods",
    "rows", "note"}`` appended to the copy's ``costs_refreshed`` list. ``doc`` itself is not modified."""
    if not isinstance(command, str) or not command.strip():
        raise ValueError(f"command: expected the non-empty command line that refreshes the file, got {command!r}")
    if note is not None and not isinstance(note, str):
        raise ValueError(f"note: expected a string or None, got {type(note).__name__}")
    if isinstance(doc, dict) and NOTE_FIELD in doc and not isinstance(doc[NOTE_FIELD], list):
        raise ValueError(f"doc: expected {NOTE_FIELD} to be a list, got {type(doc[NOTE_FIELD]).__name__}")
    section, expected = expected_costs(doc)
    new = copy.deepcopy(doc)
    changes = []
    for i, (row, fields) in enumerate(zip(new[section], expected, strict=True)):
        for field, value in fields.items():
            if field in row and row[field] != value:
                changes.append((i, row["method"], row["budget"], field, row[field], value))
                row[field] = value
    if changes:
        entry = {
            "command": command,
            "fields": sorted({c[3] for c in changes}),
            "methods": list(dict.fromkeys(c[1] for c in changes)),
            "rows": len({c[0] for c in changes}),
        }
        if note:
            entry["note"] = note
        new.setdefault(NOTE_FIELD, []).append(entry)
    return new, changes


def _load_and_refresh(path, command: str, note: str | None) -> tuple[Path, dict, list[tuple]]:
    """Read the JSON file ``path`` and :func:`refresh` it (nothing written): ``(path, refreshed doc, changes)``; a
    ``ValueError`` naming ``FILE`` and the path for a missing file, bad JSON or a document that is not a lab result."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"FILE: no such file {str(path)!r}")
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"FILE: {path} is not JSON ({exc.msg}, line {exc.lineno})") from None
    except UnicodeDecodeError:
        raise ValueError(f"FILE: {path} is not a text file (a result is UTF-8 JSON)") from None
    try:
        new, changes = refresh(doc, command, note)
    except ValueError as exc:
        raise ValueError(f"FILE: {path}: {exc}") from None
    return path, new, changes


def _write(path: Path, new: dict) -> None:
    write_atomic(path, json.dumps(new, indent=1) + "\n", option="FILE")


def refresh_file(path, command: str, note: str | None = None, check: bool = False) -> list[tuple]:
    """:func:`refresh` the JSON file ``path`` in place (written as ``json.dumps(doc, indent=1)``, the lab's format,
    only if something changed; never with ``check``); the changes."""
    path, new, changes = _load_and_refresh(path, command, note)
    if changes and not check:
        _write(path, new)
    return changes


def main(argv=None) -> int:
    p = OneLineErrorParser(
        prog="python -m analysis.numerical_methods.refresh_costs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="result JSON of gpu.approx, .decoder or .real")
    p.add_argument("--note", help="why the costs are refreshed, recorded with the command in the file")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file's costs are out of date")
    args = p.parse_args(argv)
    if args.note is not None and not args.note.strip():
        p.error("--note: expected a non-empty text")
    words = sys.argv[1:] if argv is None else list(argv)
    command = " ".join(["python -m analysis.numerical_methods.refresh_costs", *(shlex.quote(w) for w in words)])
    refreshed = []
    for name in args.files:  # every file read, validated and refreshed before any is written
        try:
            refreshed.append((name, *_load_and_refresh(name, command, args.note)))
        except ValueError as exc:
            p.error(str(exc))
    stale = False
    for name, path, new, changes in refreshed:
        stale = stale or bool(changes)
        if not changes:
            print(f"{name}: cost fields up to date")
            continue
        if not args.check:
            try:
                _write(path, new)
            except ValueError as exc:
                p.error(str(exc))
        fields = sorted({c[3] for c in changes})
        methods = list(dict.fromkeys(c[1] for c in changes))
        print(
            f"{name}: {'would change' if args.check else 'changed'} {len(changes)} values in "
            f"{len({c[0] for c in changes})} rows ({', '.join(fields)}; {', '.join(methods)})"
        )
        for _, method, budget, field, old, new_value in changes:
            print(f"  {method:<10}{budget:>6}  {field}: {old} -> {new_value}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    run_command(main)
