"""``python -m receptive.layouts``: the attention layouts of real models side by side, at one sequence length.

For every layout (a Hugging Face ``config.json`` read offline, or a stack spec written from a paper; the presets
ship with the package, ``receptive/layout_configs``, and ``--configs DIR`` reads others) this computes, at ``n``
positions (default 131072): the layers to full coverage ``L*``, the receptive field of the last token after the last
layer (how far back it reaches), the mean coverage per layer, the attended pairs per layer relative to full
attention (the FLOP proxy) and, for decoders, the KV-cache entries per token; and the same for SA and SA+SWA stacks
of the same depth at matched pairs per layer (the window whose expected pair count matches the layout's mean; the
actual ratio is reported).

Coverage at this size is estimated from sampled target positions, each receptive field exact (stratified, both
ends always included, a 95% betting interval of the mean; see ``receptive.coverage.sampling``); ``L*`` is then
the first layer at which no sampled target is uncovered (an estimate: a rarer uncovered position may remain).
The last token's field is always exact.

A layout with a segment, block or window longer than ``n`` (LongNet's 2048-token segment at ``--n 1024``) is left
out of the table and named under it with the smallest ``n`` it fits; named in ``--only``, it is refused.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

from graphs.cli_common import run_command
from graphs.memory import check_memory

from . import __version__
from .cli_parser import (
    OneLineErrorParser,
    add_json_option,
    add_n_option,
    add_progress_option,
    add_seed_option,
    write_output,
)
from .coverage import coverage_by_layer
from .fields import receptive_field
from .patterns import Pattern
from .patterns.hf_config import load_config, pattern_from_config
from .patterns.registry import stack_from_spec
from .presets import preset_dir
from .windows import max_window

DEFAULT_N = 131072
DEFAULT_TARGETS = 256


def load_layout(path: str | os.PathLike, n: int, seed: int = 0) -> tuple[Pattern, str]:
    """A layout file's layer stack on ``n`` positions, and its source note.

    A file with ``num_hidden_layers`` (possibly under ``text_config``) is a Hugging Face config; one with
    ``stack`` is ``{"name", "stack", "layers", "causal"}`` (a stack spec, :func:`~receptive.patterns.stack_from_spec`).

    Parameters
    ----------
    path : str or os.PathLike
        The layout file.
    n : int
        Sequence length.
    seed : int, default 0
        Seed of the random layers (SA permutations, random blocks).

    Returns
    -------
    tuple of (Pattern, str)

    Raises
    ------
    ValueError
        If the file cannot be read or interpreted, or a field has the wrong JSON type (``"causal": "false"``,
        ``"layers": "two"``); the message names the file and the field.
    MemoryError
        If the stack's layers would not fit :data:`graphs.memory.DEFAULT_MAX_MEMORY` (the message names the file).

    Examples
    --------
    >>> from receptive.layouts import load_layout
    >>> from receptive.presets import preset_dir
    >>> stack, source = load_layout(preset_dir() / "gemma3-4b.json", 2048)
    >>> stack.name, stack.max_layers, stack.causal
    ('gemma3-4b', 34, True)
    """
    config = load_config(path)
    source = str(config.get("_source", ""))
    where = f"layout: {os.fspath(path)!r}"
    if "stack" in config:
        for key in ("name", "layers", "causal"):
            if key not in config:
                raise ValueError(f"{where} has 'stack' but no {key!r}")
        name, spec, layers, causal = (config[key] for key in ("name", "stack", "layers", "causal"))
        if not isinstance(name, str) or not isinstance(spec, str):
            raise ValueError(f"{where}: 'name' and 'stack' must be strings, got {name!r} and {spec!r}")
        if not isinstance(layers, int) or isinstance(layers, bool) or layers < 1:
            raise ValueError(f"{where}: 'layers' must be an integer >= 1, got {layers!r}")
        if not isinstance(causal, bool):  # "false" would be read as True
            raise ValueError(f"{where}: 'causal' must be a JSON boolean (true or false), got {causal!r}")
        _check_depth(where, layers, n)
        stack = stack_from_spec(spec, n, layers, causal, seed=seed, argument=where)
        stack.name = name
        return stack, source
    try:
        stack = pattern_from_config(config, n, seed=seed)
    except (TypeError, ValueError) as exc:  # a field of the wrong JSON type or value: named with its file
        raise ValueError(f"{where}: {str(exc).removeprefix('hf_config: ')}") from None
    except MemoryError as exc:
        raise MemoryError(f"{where}: {str(exc).removeprefix('hf_config: ')}") from None
    _check_depth(where, stack.max_layers, n)
    stack.name = Path(path).stem
    return stack, source


def _check_depth(where: str, layers: int, n: int) -> None:
    """``MemoryError`` naming the file when ``layers`` layers of per-position coverage (8 bytes each) would not fit
    :data:`graphs.memory.DEFAULT_MAX_MEMORY`."""
    check_memory(where, layers * n * 8, f"{layers} layers x {n} positions of coverage")


@dataclass
class StackSummary:
    """One stack at one ``n``: coverage per layer (mean and 95% interval), ``L*``, cost per layer.

    Parameters
    ----------
    name, description : str
        The stack's name and :meth:`~receptive.patterns.Pattern.describe`.
    causal : bool
        Decoder (causal) or encoder.
    depth : int
        Layers.
    full_coverage_layer : int or None
        ``L*`` (``None``: not reached within ``depth``).
    last_token_span : int
        How far the last token's receptive field reaches after the last layer.
    mean_coverage, mean_coverage_ci : list
        Per layer: mean coverage and its 95% interval (``None`` when exact).
    pairs_relative : list of float
        Per layer: attended pairs / full attention's (the FLOP proxy).
    kv_cache_entries : int or None
        KV-cache entries per token summed over layers (decoders).
    method : str
        How coverage was computed.
    window : int, optional
        The matched window of an SA / SA+SWA twin.

    Examples
    --------
    >>> from receptive.layouts import StackSummary
    >>> s = StackSummary("swa", "swa:16", True, 2, 2, 256, [0.1, 1.0], [None, None], [0.06, 0.5], 17, "exact")
    >>> s.mean_pairs_relative, s.to_dict()["full_coverage_layer"]
    (0.28, 2)
    """

    name: str
    description: str
    causal: bool
    depth: int
    full_coverage_layer: int | None
    last_token_span: int
    mean_coverage: list[float]
    mean_coverage_ci: list[list[float] | None]
    pairs_relative: list[float]
    kv_cache_entries: int | None
    method: str
    window: int | None = None

    @property
    def mean_pairs_relative(self) -> float:
        """Attended pairs / full attention's, averaged over the layers."""
        return sum(self.pairs_relative) / len(self.pairs_relative)

    def to_dict(self) -> dict:
        """The fields as a dict, plus ``mean_pairs_relative``."""
        return {**asdict(self), "mean_pairs_relative": self.mean_pairs_relative}


@dataclass
class LayoutResult:
    """A layout and the SA / SA+SWA stacks of the same depth at matched pairs per layer.

    Parameters
    ----------
    layout : StackSummary
        The layout's own summary.
    source : str
        Where the layout's fields come from.
    layer_kinds : list of str
        One name per layer.
    matched : dict of str to StackSummary, optional
        ``"sa"`` and ``"sa+swa"`` twins.

    Examples
    --------
    >>> from receptive.layouts import LayoutResult, StackSummary
    >>> s = StackSummary("swa", "swa:16", True, 1, None, 16, [0.5], [None], [0.06], 16, "exact")
    >>> LayoutResult(s, "a paper", ["swa"]).to_dict()["layout"]["name"]
    'swa'

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754 (SA and SA+SWA twins).
    """

    layout: StackSummary
    source: str
    layer_kinds: list[str]
    matched: dict[str, StackSummary] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The result as a JSON-ready dict (the summaries through :meth:`StackSummary.to_dict`)."""
        return {
            "layout": self.layout.to_dict(),
            "source": self.source,
            "layer_kinds": self.layer_kinds,
            "matched": {k: v.to_dict() for k, v in self.matched.items()},
        }


def summarize(stack: Pattern, targets: int, seed: int, progress: bool | None, window: int | None = None):
    """Coverage of every layer of ``stack`` (sampled targets, each exact; exact when ``targets >= n``).

    Parameters
    ----------
    stack : Pattern
        A layer stack with ``max_layers`` set.
    targets : int
        Sampled target positions per layer.
    seed : int
        Seed of the targets.
    progress : bool or None
        Progress bars (``None``: only on a terminal).
    window : int, optional
        Recorded as the twin's matched window.

    Returns
    -------
    StackSummary

    Examples
    --------
    >>> from receptive.layouts import summarize
    >>> from receptive.patterns import stack_from_spec
    >>> s = summarize(stack_from_spec("swa:16,full", 256, 2, causal=True), 256, 0, False)
    >>> s.full_coverage_layer, s.last_token_span
    (2, 256)
    """
    depth = stack.max_layers
    n = stack.n
    if targets >= n:
        result = coverage_by_layer(stack, depth, method="exact", progress=progress)
    else:
        result = coverage_by_layer(stack, depth, method="sampled", targets=targets, seed=seed, progress=progress)
    field_ = receptive_field(stack, n - 1, depth)
    return StackSummary(
        name=stack.name,
        description=stack.describe(),
        causal=stack.causal,
        depth=depth,
        full_coverage_layer=result.full_coverage_layer,
        last_token_span=int(n - field_.min()) if stack.causal else int(field_.max() - field_.min() + 1),
        mean_coverage=[lc.mean for lc in result.layers],
        mean_coverage_ci=[list(lc.mean_ci) if lc.mean_ci else None for lc in result.layers],
        pairs_relative=[stack.pair_count(layer) / stack.full_pairs for layer in range(1, depth + 1)],
        kv_cache_entries=sum(stack.kv_cache_entries(layer) for layer in range(1, depth + 1)) if stack.causal else None,
        method=result.method,
        window=window,
    )


def matched_window(kind: str, n: int, causal: bool, pairs: float) -> int:
    """The window ``w`` whose expected pairs per layer of ``kind`` are closest to ``pairs``.

    SA keeps ``~ n w`` pairs (causal ``~ n (w + 1) / 2``: a query keeps the keys of its band that precede it);
    SA+SWA adds a window of ``w`` (causal ``~ n w``).

    Parameters
    ----------
    kind : {"sa", "sa+swa"}
    n : int
        Sequence length.
    causal : bool
        Causal stacks.
    pairs : float
        Target attended pairs per layer.

    Returns
    -------
    int
        A window in ``1 .. max_window(n, causal, False)``.

    Examples
    --------
    >>> from receptive.layouts import matched_window
    >>> matched_window("sa", 1024, False, 1024 * 64), matched_window("sa+swa", 1024, True, 1024 * 64)
    (64, 42)

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    per_w = 1.0 if not causal else 0.5
    if kind == "sa+swa":
        per_w += 1.0
    offset = 0.5 if causal else 0.0
    w = round((pairs / n - offset) / per_w)
    return int(min(max(1, w), max_window(n, causal, False)))


def study(paths, n: int, targets: int, seed: int = 0, progress: bool | None = None) -> list[LayoutResult]:
    """Each layout file summarised next to its SA and SA+SWA twins at matched pairs per layer.

    Parameters
    ----------
    paths : iterable of path
        Layout files (:func:`load_layout`).
    n : int
        Sequence length.
    targets : int
        Sampled targets per layer.
    seed : int, default 0
        Seed of permutations, random blocks and targets.
    progress : bool, optional
        Progress bars (``None``: only on a terminal).

    Returns
    -------
    list of LayoutResult

    Examples
    --------
    >>> from receptive.layouts import study
    >>> from receptive.presets import preset_dir
    >>> [r] = study([preset_dir() / "mistral-7b-v0.1.json"], 512, 16, progress=False)
    >>> r.layout.depth, sorted(r.matched)
    (32, ['sa', 'sa+swa'])
    """
    results = []
    for path in paths:
        stack, source = load_layout(path, n, seed)
        layout = summarize(stack, targets, seed, progress)
        mean_pairs = layout.mean_pairs_relative * stack.full_pairs
        entry = LayoutResult(layout, source, stack.layer_names())
        for kind in ("sa", "sa+swa"):
            w = matched_window(kind, n, stack.causal, mean_pairs)
            twin = stack_from_spec(f"{kind}:{w}", n, stack.max_layers, stack.causal, seed=seed, name=kind)
            entry.matched[kind] = summarize(twin, targets, seed, progress, window=w)
        results.append(entry)
    return results


def _fits(path, n: int, seed: int) -> bool:
    try:
        load_layout(path, n, seed)
    except ValueError:
        return False
    return True


def smallest_fitting_n(path, n: int, seed: int = 0) -> int | None:
    """The smallest sequence length above ``n``, up to ``DEFAULT_N``, on which the layout file loads.

    A layout whose segment, block or window is longer than ``n`` loads on a longer sequence; one whose fields are
    wrong loads on none.

    Parameters
    ----------
    path : str or os.PathLike
        The layout file (:func:`load_layout`).
    n : int
        A sequence length it does not load on.
    seed : int, default 0
        Seed of the random layers.

    Returns
    -------
    int or None
        That length (found by bisection between ``n`` and ``DEFAULT_N``), or ``None`` if it loads on none.

    Examples
    --------
    >>> from receptive.layouts import smallest_fitting_n
    >>> from receptive.presets import preset_dir
    >>> smallest_fitting_n(preset_dir() / "longnet.json", 1024)  # its first segment is 2048 tokens
    2048
    """
    if n >= DEFAULT_N or not _fits(path, DEFAULT_N, seed):
        return None
    low, high = n, DEFAULT_N  # low does not fit, high does
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if _fits(path, mid, seed) else (mid, high)
    return high


def fitting_layouts(paths, n: int, seed: int = 0) -> tuple[list[Path], list[dict]]:
    """The layout files of ``paths`` that load on ``n`` positions, and a record of each one that needs more.

    Parameters
    ----------
    paths : iterable of path
        Layout files (:func:`load_layout`).
    n : int
        Sequence length.
    seed : int, default 0
        Seed of the random layers.

    Returns
    -------
    fit : list of pathlib.Path
        The files that load on ``n`` positions.
    skipped : list of dict
        Per other file: ``name`` (its stem), ``needs_n`` (``smallest_fitting_n``) and ``reason`` (the error
        at ``n``).

    Raises
    ------
    ValueError
        If a file loads on no sequence length up to ``DEFAULT_N`` (its fields are wrong): :func:`load_layout`'s
        error, naming the file and the field.

    Examples
    --------
    >>> from receptive.layouts import fitting_layouts
    >>> from receptive.presets import preset_dir
    >>> fit, skipped = fitting_layouts(sorted(preset_dir().glob("*.json")), 1024)
    >>> [s["name"] for s in skipped], [s["needs_n"] for s in skipped]
    (['longnet'], [2048])
    """
    fit, skipped = [], []
    for path in map(Path, paths):
        try:
            load_layout(path, n, seed)
        except ValueError as exc:
            needs = smallest_fitting_n(path, n, seed)
            if needs is None:
                raise
            skipped.append({"name": path.stem, "needs_n": needs, "reason": str(exc)})
        else:
            fit.append(path)
    return fit, skipped


def format_table(doc: dict) -> str:
    """The table ``python -m receptive.layouts`` prints, from its JSON document (:func:`run`).

    Parameters
    ----------
    doc : dict
        The document :func:`run` returns.

    Returns
    -------
    str
        A heading, a header line and one line per layout.

    Examples
    --------
    >>> from receptive.layouts import build_parser, format_table, run
    >>> doc = run(build_parser().parse_args(["--n", "256", "--targets", "8", "--only", "mistral-7b-v0.1",
    ...                                      "--no-progress"]))
    >>> print(format_table(doc).splitlines()[-1])  # doctest: +ELLIPSIS
    mistral-7b-v0.1              causal     32 ...
    """

    def star(s: dict) -> str:
        return str(s["full_coverage_layer"]) if s["full_coverage_layer"] is not None else f">{s['depth']}"

    lines = [
        f"attention layouts at n = {doc['n']} ({doc['targets']} sampled targets per layer, each exact; "
        f"L* = first layer with no sampled target uncovered)",
        f"{'layout':<28} {'mode':<6} {'layers':>6} {'L*':>4} {'last-token span':>15} {'cov@last':>8} "
        f"{'pairs/full':>10} {'KV/token':>9} | {'SA w':>6} {'L*':>4} {'cov@last':>8} | {'SA+SWA w':>8} {'L*':>4}",
    ]
    for r in doc["layouts"]:
        lay, sa, both = r["layout"], r["matched"]["sa"], r["matched"]["sa+swa"]
        kv = "-" if lay["kv_cache_entries"] is None else f"{lay['kv_cache_entries']:.3g}"
        lines.append(
            f"{lay['name']:<28} {'causal' if lay['causal'] else 'bidir':<6} {lay['depth']:>6} {star(lay):>4} "
            f"{lay['last_token_span']:>15} {lay['mean_coverage'][-1]:>8.4f} {lay['mean_pairs_relative']:>10.4g} "
            f"{kv:>9} | {sa['window']:>6} {star(sa):>4} {sa['mean_coverage'][-1]:>8.4f} | {both['window']:>8} "
            f"{star(both):>4}"
        )
    skipped = doc.get("skipped", [])
    if skipped:
        lines.append(
            f"not run at n = {doc['n']} (a segment, block or window longer than n): "
            + ", ".join(f"{s['name']} (fits from --n {s['needs_n']})" for s in skipped)
        )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m receptive.layouts`` (one-line errors naming the flag).

    Returns
    -------
    argparse.ArgumentParser
        The parser (:class:`receptive.cli_parser.OneLineErrorParser`).

    Examples
    --------
    >>> args = build_parser().parse_args(["--n", "4096", "--only", "gemma3-4b"])
    >>> args.n, args.only, args.seed
    (4096, 'gemma3-4b', 0)
    """
    p = OneLineErrorParser(
        options={"hf_config": "--configs", "layout": "--configs", "n": "--n", "targets": "--targets", "seed": "--seed"},
        prog="python -m receptive.layouts",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n  python -m receptive.layouts --n 4096 --only mistral-7b-v0.1,gemma3-4b --targets 64\n"
            "  python -m receptive.layouts --n 131072 --json layouts.json\n"
        ),
    )
    add_n_option(p, DEFAULT_N)
    p.add_argument(
        "--configs", metavar="DIR", help="folder of layout files (default: the presets shipped with the package)"
    )
    p.add_argument("--only", metavar="NAMES", help="comma-separated file stems to run (default: all)")
    p.add_argument(
        "--targets", type=int, help=f"sampled targets per layer, at most --n (default {DEFAULT_TARGETS}, or n if less)"
    )
    add_seed_option(p)
    add_json_option(p)
    add_progress_option(p)
    return p


def run(args: argparse.Namespace) -> dict:
    """Validate ``args`` (``ValueError`` naming the flag) and return the JSON document of the study.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed by :func:`build_parser`.

    Returns
    -------
    dict
        ``version``, ``n``, ``targets``, ``seed``, ``layouts`` (:meth:`LayoutResult.to_dict` of each layout) and
        ``skipped`` (``name`` and ``needs_n`` of each layout longer than ``n``: ``fitting_layouts``).

    Raises
    ------
    ValueError
        If a flag is out of range (``--targets`` above ``--n`` included), ``--configs`` is not a folder of layout
        files, ``--only`` names an unknown layout or one longer than ``--n``, or no layout fits ``--n`` (the message
        names the flag; ``--json`` is checked as the line is parsed).
    MemoryError
        If a layout's layers would not fit :data:`graphs.memory.DEFAULT_MAX_MEMORY` (naming the file).

    Examples
    --------
    >>> doc = run(build_parser().parse_args(["--n", "256", "--targets", "8", "--only", "mistral-7b-v0.1",
    ...                                      "--no-progress"]))
    >>> layout = doc["layouts"][0]["layout"]
    >>> doc["n"], layout["name"], layout["causal"], layout["depth"]
    (256, 'mistral-7b-v0.1', True, 32)
    """
    if args.n < 2:
        raise ValueError(f"--n: expected an integer >= 2, got {args.n}")
    targets = min(DEFAULT_TARGETS, args.n) if args.targets is None else args.targets
    if not 1 <= targets <= args.n:
        raise ValueError(f"--targets: expected an integer in [1, --n = {args.n}], got {targets}")
    if args.seed < 0:
        raise ValueError(f"--seed: expected an integer >= 0, got {args.seed}")
    folder = Path(args.configs) if args.configs else preset_dir()
    if not folder.is_dir():
        raise ValueError(f"--configs: {os.fspath(folder)!r} is not a folder")
    paths = sorted(folder.glob("*.json"))
    if args.only:
        wanted = [s.strip() for s in args.only.split(",") if s.strip()]
        missing = sorted(set(wanted) - {p.stem for p in paths})
        if missing or not wanted:
            have = ", ".join(p.stem for p in paths)
            raise ValueError(f"--only: unknown layout {missing[0] if missing else ''!r}; have {have}")
        paths = [p for p in paths if p.stem in wanted]
    if not paths:
        raise ValueError(f"--configs: no layout files (*.json) in {os.fspath(folder)!r}")
    # every file's contents checked before any work (a few ms each); those longer than n are left out, unless named
    paths, skipped = fitting_layouts(paths, args.n, args.seed)
    if skipped and args.only:
        s = skipped[0]
        raise ValueError(
            f"--only: {s['name']} does not fit --n {args.n} ({s['reason']}); it fits from "
            f"--n {s['needs_n']}, or leave it out of --only"
        )
    if not paths:
        raise ValueError(
            f"--n: no layout fits n = {args.n}; the first fits from --n {min(s['needs_n'] for s in skipped)}"
        )
    progress = False if args.no_progress else None
    results = study(paths, args.n, targets, args.seed, progress)
    return {
        "version": __version__,
        "n": args.n,
        "targets": targets,
        "seed": args.seed,
        "layouts": [r.to_dict() for r in results],
        "skipped": [{"name": s["name"], "needs_n": s["needs_n"]} for s in skipped],
    }


def main(argv: list[str] | None = None) -> int:
    """Run the CLI: print the table (or the JSON with ``--json -``), write ``--json PATH``; returns 0.

    Parameters
    ----------
    argv : list of str or None, optional
        The arguments; ``None``: ``sys.argv[1:]``.

    Returns
    -------
    int
        0 (bad input exits 2 with one line on stderr).

    Examples
    --------
    >>> from receptive.layouts import main
    >>> main(["--n", "256", "--targets", "8", "--only", "mistral-7b-v0.1", "--no-progress"])  # doctest: +ELLIPSIS
    attention layouts at n = 256 ...
    0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        doc = run(args)
        doc["command"] = " ".join(["python -m receptive.layouts", *(sys.argv[1:] if argv is None else argv)])
        text = json.dumps(doc, indent=1) + "\n"
        if args.json != "-":
            write_output(args.json, text, "--json")
    except (ValueError, MemoryError) as exc:
        parser.error(str(exc))
    if args.json == "-":
        write_output(args.json, text, "--json")
    else:
        print(format_table(doc))
    return 0


#: The command's entry point (``python -m receptive.layouts`` and the console script ``receptive-layouts``):
#: :func:`main`, ended by :func:`graphs.cli_common.run_command` (one line on an interrupt or a closed pipe).
run_cli = partial(run_command, main)


if __name__ == "__main__":
    run_cli()
