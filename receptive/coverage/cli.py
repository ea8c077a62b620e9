"""``python -m receptive.coverage``: receptive-field coverage of SWA, SA and SA+SWA through depth."""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
from functools import partial

from graphs.cli_common import run_command
from graphs.memory import DEFAULT_MAX_MEMORY, parse_bytes

from .. import __version__, theory
from ..cli_parser import (
    FIGURE_SUFFIXES,
    OneLineErrorParser,
    add_csv_option,
    add_json_option,
    add_n_option,
    add_progress_option,
    add_seed_option,
    add_w_option,
    given_options,
    output_file,
    refuse_together,
    stdout_output,
    write_output,
)
from ..patterns.hf_config import pattern_from_config
from ..patterns.registry import PATTERNS, pattern_from_spec, stack_from_spec
from ..plotting import save_png_pdf
from ..presets import preset_dir
from ..windows import max_window
from .compute import DEFAULT_MAX_LAYERS, DEFAULT_TARGETS, coverage_by_layer, exact_fits, extend
from .results import CoverageResult

__all__ = ["build_parser", "check_applicable", "format_table", "main", "preset_names", "run"]

DESCRIPTION = """\
After L layers of a sparse attention pattern, which tokens can each token see?

Attention through depth is a layered graph: layer l has an edge key j -> query i when i attends to j (every
pattern includes the query itself, the residual path). RF_L(i) is the set of positions with a path to i through
layers 1..L, and coverage of i is |RF_L(i)| / |A(i)|, A(i) = all positions (or j <= i when causal). For each layer
this prints the mean and minimum coverage and the share of fully covered positions, and L*, the first layer at
which every position sees all of A(i).

Patterns: swa (sliding window of w keys, self included), sa (Stochastic Attention: a fresh random permutation per
layer, the same window in permuted order; causal = that band AND original key position <= query position),
sa+swa (the union of both, as in gated SA+SWA), full, and the zoo as layer specs NAME[:ARG...] (a missing window
W is --w): global:W:G (Longformer), sink:W:S (StreamingLLM), random:K, bigbird[:B:WB:R:G], dilated-window:W:R,
longnet[:W0:RATIO], chunk:C (Llama 4), strided:L and fixed:L:C (Sparse Transformer), sa-ms, kleinberg, ...
Patterns with a closed form are computed in it; the others exactly (every receptive field, bit-parallel) when
n * n/64 <= 2^26 words (n <= 65536), otherwise for 1024 random target positions, each exact (the mean gets a 95%
confidence interval).

Layer stacks (--stack, --hf-config): layer l of a model is any of these, e.g. five sliding-window layers per full
one. --stack takes comma-separated layer specs with K* repetition, cycled to --layers (default --max-layers);
--hf-config reads a Hugging Face config.json offline (num_hidden_layers, sliding_window, layer_types,
attention_chunk_size, sliding_window_pattern, use_sliding_window + max_window_layers; decoders are causal).
Per layer the JSON also gives the attended (query, key) pairs, the FLOP proxy, relative to full attention, and
for causal patterns the KV-cache entries a decoder keeps.
"""

EPILOG = """\
examples:
  python -m receptive.coverage --n 32768 --w 64
  python -m receptive.coverage --n 4096 --w 16 --causal --json
  python -m receptive.coverage --n 4096 --w 16 --json cov.json
  python -m receptive.coverage --n 1048576 --w 64 --targets 1024 --csv cov.csv --plot cov.png
  python -m receptive.coverage --n 32768 --causal --stack "5*swa:1024,full" --layers 26
  python -m receptive.coverage --n 131072 --hf-config gemma3-4b --targets 256
  python -m receptive.coverage --n 4096 --hf-config mistral-7b-v0.1 --max-memory 512MiB

--hf-config takes a config.json (or its folder) or the name of a Hugging Face preset shipped with the package:
  PRESETS
"""


#: the library's argument names (the first word of its errors) -> the flags that set them
OPTIONS = {
    "n": "--n",
    "w": "--w",
    "seed": "--seed",
    "layers": "--layers",
    "max_layers": "--max-layers",
    "targets": "--targets",
    "max_memory": "--max-memory",
    "hf_config": "--hf-config",
    "circular": "--circular",
}


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m receptive.coverage`` (defaults and examples in its help; one-line errors).

    Returns
    -------
    argparse.ArgumentParser
        The parser (:class:`receptive.cli_parser.OneLineErrorParser`).

    Examples
    --------
    >>> args = build_parser().parse_args(["--n", "4096", "--causal"])
    >>> args.n, args.w, args.causal, args.patterns
    (4096, 64, True, 'swa,sa,sa+swa')
    """
    p = OneLineErrorParser(
        prog="python -m receptive.coverage",
        description=DESCRIPTION,
        epilog=EPILOG.replace("PRESETS", ", ".join(preset_names())),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        options=OPTIONS,
    )
    add_n_option(p, 32768)
    add_w_option(p, 64)
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--patterns",
        default="swa,sa,sa+swa",
        help=f"comma-separated layer specs, from {', '.join(PATTERNS)} (default swa,sa,sa+swa)",
    )
    which.add_argument("--stack", metavar="SPEC", help='one model\'s layers, e.g. "5*swa:1024,full" (see above)')
    which.add_argument(
        "--hf-config", metavar="PATH", help="the layers of a Hugging Face config.json (offline), or a preset's name"
    )
    p.add_argument("--causal", action="store_true", help="causal attention (A(i) = positions j <= i)")
    p.add_argument("--circular", action="store_true", help="windows wrap around (the SA paper's theory)")
    p.add_argument(
        "--layers",
        type=int,
        help="compute layers 1..LAYERS (default: until every pattern is full); the depth of a --stack",
    )
    p.add_argument(
        "--max-layers",
        type=int,
        default=DEFAULT_MAX_LAYERS,
        help=f"cap on layers when --layers is not given (default {DEFAULT_MAX_LAYERS})",
    )
    add_seed_option(p)
    how = p.add_mutually_exclusive_group()
    how.add_argument("--exact", action="store_true", help="every receptive field, whatever it costs")
    how.add_argument(
        "--targets",
        type=int,
        metavar="K",
        help=f"K random target positions, each exact (default when n is large: {DEFAULT_TARGETS})",
    )
    p.add_argument(
        "--max-memory",
        default="3GiB",
        help=f"memory budget of the engine, e.g. 512MiB (default {DEFAULT_MAX_MEMORY // 2**30}GiB)",
    )
    add_json_option(p)
    add_csv_option(p)  # one row per (pattern, layer)
    p.add_argument(
        "--plot",
        type=output_file("--plot", suffixes=FIGURE_SUFFIXES),
        metavar="PATH",
        help="also plot coverage vs layer to PATH (.png or .pdf: both are written)",
    )
    add_progress_option(p)
    return p


def run(args: argparse.Namespace) -> dict:
    """Validate ``args``, compute every pattern and return the JSON document.

    Parameters
    ----------
    args : argparse.Namespace
        As parsed by :func:`build_parser`.

    Returns
    -------
    dict
        ``n``, ``w``, ``causal``, ``method``, per-pattern coverage documents (with costs per layer) and, for the
        window patterns, the theory's predictions.

    Raises
    ------
    ValueError
        A bad flag (the message starts with it).
    MemoryError
        If the layers asked for cannot fit ``--max-memory``.

    Examples
    --------
    >>> from receptive.coverage.cli import build_parser, run
    >>> doc = run(build_parser().parse_args(["--n", "256", "--w", "8", "--no-progress"]))
    >>> sorted(doc["patterns"]), doc["patterns"]["sa"]["full_coverage_layer"] is not None
    (['sa', 'sa+swa', 'swa'], True)
    """
    if args.n < 2:
        raise ValueError(f"--n: expected an integer >= 2, got {args.n}")
    names = [s.strip() for s in args.patterns.split(",") if s.strip()]
    if not names or len(set(names)) != len(names):
        raise ValueError(f"--patterns: expected distinct names from {', '.join(PATTERNS)}, got {args.patterns!r}")
    if args.layers is not None and args.layers < 1:
        raise ValueError(f"--layers: expected an integer >= 1, got {args.layers}")
    if args.max_layers < 1:
        raise ValueError(f"--max-layers: expected an integer >= 1, got {args.max_layers}")
    if args.targets is not None and not 1 <= args.targets <= args.n:
        raise ValueError(f"--targets: expected an integer in [1, {args.n}], got {args.targets}")
    max_memory = parse_bytes(args.max_memory)
    causal = args.causal
    stacked = args.stack is not None or args.hf_config is not None
    if args.stack is not None:
        depth = args.layers or args.max_layers
        stack = stack_from_spec(args.stack, args.n, depth, causal, args.circular, args.seed, argument="--stack")
        patterns = {args.stack: stack}
    elif args.hf_config is not None:
        stack = pattern_from_config(_hf_config_path(args.hf_config), args.n, seed=args.seed)
        if args.layers is not None and args.layers > stack.max_layers:
            raise ValueError(f"--layers: the config defines {stack.max_layers} layers, got {args.layers}")
        causal = stack.causal
        patterns = {stack.name: stack}
    else:
        patterns = {
            name: pattern_from_spec(name, args.n, causal, args.circular, args.seed, args.w, "--patterns")
            for name in names
        }
    names = list(patterns)

    method = "exact" if args.exact else "sampled" if args.targets else "auto"
    progress = False if args.no_progress else None
    common = dict(max_layers=args.max_layers, max_memory=max_memory, seed=args.seed, progress=progress)
    simulated = [name for name, pat in patterns.items() if not pat.has_closed_form or args.exact]
    results: dict[str, CoverageResult] = {}
    for name in simulated:
        results[name] = coverage_by_layer(patterns[name], args.layers, method=method, targets=args.targets, **common)
    if args.layers is not None:
        shown = args.layers
    elif simulated:
        shown = max(len(r.layers) for r in results.values())
    else:
        shown = min(args.max_layers, max(p.closed_form_full_layer() or args.max_layers for p in patterns.values()))
    for name, pat in patterns.items():
        if name not in results:
            results[name] = coverage_by_layer(pat, shown, method="closed-form", **common)
        results[name] = extend(results[name], shown)

    sim_methods = {results[name].method for name in simulated}
    documents = {name: results[name].to_dict() for name in names}
    for name, pattern in patterns.items():
        _add_costs(documents[name], pattern)
    return {
        "version": __version__,
        "n": args.n,
        "w": args.w,
        "causal": causal,
        "circular": args.circular,
        "seed": args.seed,
        "method": sim_methods.pop() if len(sim_methods) == 1 else ("closed-form" if not simulated else "mixed"),
        "exact_by_default": exact_fits(args.n),
        "patterns": documents,
        "theory": None if stacked else _theory_summary(args.n, args.w, causal, args.circular),
    }


def check_applicable(given: set[str]) -> None:
    """Refuse options that the command line's other options make meaningless, naming both.

    Parameters
    ----------
    given : set of str
        The destinations the command line set (:func:`graphs.cli_common.given_options`).

    Raises
    ------
    ValueError
        ``"--w: does not apply with --hf-config (...)"`` and the like.

    Examples
    --------
    >>> check_applicable({"n", "stack", "layers"})
    >>> check_applicable({"hf_config", "causal"})
    Traceback (most recent call last):
    ...
    ValueError: --causal: does not apply with --hf-config (the config says whether the model is a decoder)
    """
    for first, second, why in (
        ("--w", "--hf-config", "the config sets every layer's window"),
        ("--causal", "--hf-config", "the config says whether the model is a decoder"),
        ("--circular", "--hf-config", "a model's layers run on a truncated sequence"),
        ("--max-layers", "--layers", "--max-layers caps the layers only when --layers is not given"),
    ):
        refuse_together(given, first, second, why)


def preset_names() -> list[str]:
    """The names of the preset Hugging Face configs shipped with the package (``receptive/layout_configs``).

    Returns
    -------
    list of str
        The presets ``--hf-config`` accepts by name, sorted.

    Examples
    --------
    >>> from receptive.coverage.cli import preset_names
    >>> "mistral-7b-v0.1" in preset_names()
    True
    """
    return sorted(p.stem for p in preset_dir().glob("*.json") if '"num_hidden_layers"' in p.read_text())


def _hf_config_path(text: str) -> str:
    """``--hf-config``'s file: the path as given, else the preset of that name (with or without ``.json``).

    Examples
    --------
    >>> _hf_config_path("gemma3-4b").endswith("layout_configs/gemma3-4b.json")
    True
    """
    if os.path.exists(text) or os.sep in text:
        return text
    preset = preset_dir() / (text if text.endswith(".json") else text + ".json")
    return os.fspath(preset) if preset.is_file() else text


def _add_costs(doc: dict, pattern) -> None:
    """Per layer of ``doc`` (a coverage result's dict): ``pairs`` attended (the FLOP proxy, see
    :meth:`Pattern.pair_count`), ``pairs_relative`` to full attention, and for causal patterns the
    ``kv_cache_entries`` a decoder keeps in that layer."""
    limit = pattern.max_layers
    for row in doc["layers"]:
        layer = row["layer"]
        if limit is not None and layer > limit:
            continue
        row["pairs"] = pattern.pair_count(layer)
        row["pairs_relative"] = row["pairs"] / pattern.full_pairs
        if pattern.causal:
            row["kv_cache_entries"] = pattern.kv_cache_entries(layer)


def _theory_summary(n: int, w: int, causal: bool, circular: bool) -> dict:
    """The predictions printed next to the measurements (see receptive.theory and docs/theory.md)."""
    sharp = {name: theory.predict_full_layer(name, n, w, causal, circular, 64)[0] for name in ("sa", "sa+swa")}
    summary = {
        "log_w_n": theory.log_w_n(n, w),
        "n_over_w": theory.swa_layers_estimate(n, w),
        "swa_full_coverage_layer": theory.swa_full_layer(n, min(w, max_window(n, causal, circular)), causal, circular),
        "sa_full_coverage_layer_prediction": theory.sa_full_layer_estimate(n, w),
        "sa_prediction_formula": theory.SA_FORMULA + (" (bidirectional; causal needs more)" if causal else ""),
        "sharp_full_coverage_layer": sharp,
    }
    if causal:
        summary["causal_sa_median_full_coverage_layer"] = theory.causal_sa_full_layer_estimate(n, w, circular)
    return summary


def format_table(doc: dict) -> str:
    """The table ``python -m receptive.coverage`` prints, from the document of :func:`run`.

    Parameters
    ----------
    doc : dict
        The document :func:`run` returns (or ``--json`` prints).

    Returns
    -------
    str
        A heading, one line per layer (mean, minimum and full fraction per pattern), then L*, the cost per layer and
        the theory's predictions.

    Examples
    --------
    >>> doc = run(build_parser().parse_args(["--n", "256", "--w", "16", "--patterns", "swa,sa", "--no-progress"]))
    >>> print(format_table(doc).splitlines()[0])
    coverage of n=256 w=16 bidirectional seed=0
    """
    names = list(doc["patterns"])
    head = f"{'layer':>5} " + " ".join(f"{name + ' mean/min/full':>28}" for name in names)
    lines = [
        f"coverage of n={doc['n']} w={doc['w']} {'causal' if doc['causal'] else 'bidirectional'}"
        f"{' circular' if doc['circular'] else ''} seed={doc['seed']}",
        head,
    ]
    count = max(len(p["layers"]) for p in doc["patterns"].values())
    for k in range(count):
        cells = []
        for name in names:
            lc = doc["patterns"][name]["layers"][k]
            cells.append(f"{lc['mean']:>9.4f} {lc['min']:>9.4f} {lc['full_fraction']:>8.4f}")
        lines.append(f"{k + 1:>5} " + " ".join(cells))
    lines.append("")
    lines.append("L* = first layer at which every position is fully covered:")
    for name in names:
        p = doc["patterns"][name]
        star = p["full_coverage_layer"]
        extra = f"  [{p['note']}]" if p.get("note") else ""
        lines.append(f"  {name:<8} L* = {star if star is not None else 'not reached':<12} ({p['method']}){extra}")
    for name in names:
        rows = [lc for lc in doc["patterns"][name]["layers"] if "pairs" in lc]
        if rows:
            rel = sum(lc["pairs_relative"] for lc in rows) / len(rows)
            line = f"  {name}: pairs per layer / full attention = {rel:.4g} (mean over {len(rows)} layers)"
            if doc["causal"]:
                kv = sum(lc["kv_cache_entries"] for lc in rows) / len(rows)
                line += f"; KV-cache entries per token and layer = {kv:.6g}"
            lines.append(line)
    th = doc["theory"]
    if th is None:
        return "\n".join(lines)
    lines.append(
        f"  log_w n = {th['log_w_n']:.2f};  SWA n/w = {th['n_over_w']:.1f} "
        f"(closed form {th['swa_full_coverage_layer']})"
    )
    lines.append(f"  SA prediction {th['sa_full_coverage_layer_prediction']}: {th['sa_prediction_formula']}")
    sharp = ", ".join(f"{k} {'> 64' if v is None else v}" for k, v in th["sharp_full_coverage_layer"].items())
    lines.append(f"  sharp model (receptive.theory.predict_full_layer): {sharp}")
    if "causal_sa_median_full_coverage_layer" in th:
        lines.append(
            f"  pure causal SA needs every edge i-1 -> i: median L* ~ {th['causal_sa_median_full_coverage_layer']:.0f}"
        )
    return "\n".join(lines)


def _csv_text(doc: dict) -> str:
    """One row per (pattern, layer), with a header."""
    buffer = io.StringIO()
    out = csv.writer(buffer)
    out.writerow(["pattern", "method", "layer", "mean", "min", "full_fraction", "mean_ci_low", "mean_ci_high"])
    for name, p in doc["patterns"].items():
        for lc in p["layers"]:
            ci = lc.get("mean_ci") or ["", ""]
            out.writerow([name, p["method"], lc["layer"], lc["mean"], lc["min"], lc["full_fraction"], *ci])
    return buffer.getvalue()


def _plot(doc: dict, path: str) -> list[str]:
    """Mean (solid) and minimum (dashed) coverage vs layer; saved as PNG and PDF next to ``path``."""
    from matplotlib.figure import Figure  # no pyplot: the caller's backend stays as it is

    fig = Figure(figsize=(5, 3.2), layout="constrained")
    ax = fig.subplots()
    for name, p in doc["patterns"].items():
        x = [lc["layer"] for lc in p["layers"]]
        (line,) = ax.plot(x, [lc["mean"] for lc in p["layers"]], marker="o", ms=3, label=f"{name} mean")
        ax.plot(x, [lc["min"] for lc in p["layers"]], ls="--", color=line.get_color(), label=f"{name} min")
    ax.set_xlabel("layer L")
    ax.set_ylabel("coverage |RF_L(i)| / |A(i)|")
    ax.set_ylim(-0.02, 1.02)
    mode = "causal" if doc["causal"] else "bidirectional"
    ax.set_title(f"n = {doc['n']}, w = {doc['w']}, {mode}", fontsize=10)
    ax.legend(fontsize=7, ncol=2, loc="center right")
    return save_png_pdf(fig, path)


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m receptive.coverage``: print the table (or ``--json`` / ``--csv`` alone), write ``--json PATH``,
    ``--csv PATH`` and ``--plot``.

    Parameters
    ----------
    argv : list of str or None, optional
        The arguments; ``None``: ``sys.argv[1:]``.

    Returns
    -------
    int
        0 (a bad flag exits 2 with one line on stderr naming it).

    Examples
    --------
    >>> import contextlib, io, json
    >>> out = io.StringIO()
    >>> with contextlib.redirect_stdout(out):
    ...     status = main(["--n", "1024", "--w", "32", "--patterns", "sa", "--json", "--no-progress"])
    >>> status, json.loads(out.getvalue())["patterns"]["sa"]["method"]
    (0, 'exact')
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        printing = stdout_output({"--json": args.json, "--csv": args.csv})
        check_applicable(given_options(parser, argv))
        doc = run(args)
    except (ValueError, MemoryError) as exc:
        parser.error(str(exc))
    if not printing:
        print(format_table(doc))
    write_output(args.json, json.dumps(doc, indent=1) + "\n", "--json")
    write_output(args.csv, _csv_text(doc), "--csv")
    if args.plot:
        written = _plot(doc, args.plot)
        if not printing:
            print("plot: " + ", ".join(written))
    return 0


#: The command's entry point (``python -m receptive.coverage`` and the console script ``receptive-coverage``):
#: :func:`main`, ended by :func:`graphs.cli_common.run_command` (one line on an interrupt or a closed pipe).
run_cli = partial(run_command, main)
