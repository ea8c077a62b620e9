"""``python -m graphs.smallworld``: clustering, path length and small-world coefficients of a graph or model.

The command offers the graph models of :mod:`graphs` (``connectome``, ``er``, ``ws``) and measures edge lists.
Packages above ``graphs`` add their own models without ``graphs`` importing them: a :class:`ModelFamily` names
models, their builders and the options only they read, and ``main(argv, families=..., prog=...)`` runs the same
command line over ``GRAPH_MODELS`` plus those families (``python -m receptive.smallworld`` adds the attention
graphs ``swa``, ``sa`` and ``sa+swa`` this way).

References
----------
- D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442 (1998).
- M. D. Humphries and K. Gurney, "Network 'small-world-ness': a quantitative method for determining canonical
  network equivalence", PLoS ONE 3, e0002051 (2008).
- A. Lin et al., "Network statistics of the whole-brain connectome of Drosophila", Nature 634, 153-165 (2024).
"""

from __future__ import annotations

import argparse
import json
import math
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from ..cli_common import OneLineErrorParser, run_command
from ..cli_options import add_json_option, add_progress_option, add_seed_option, write_output
from ..graph import Graph
from ..memory import check_memory
from .connectome import FITTED, FLYWIRE, calibrate_connectome, connectome_model, reciprocity
from .measures import REFERENCES, small_world

#: ``builder(args) -> (graph, info)``: the graph the parsed arguments describe and what to print about it
Builder = Callable[[argparse.Namespace], tuple[Graph, dict]]


@dataclass(frozen=True)
class ModelFamily:
    """Graph models that one command line offers, with the options only they read.

    Parameters
    ----------
    builders : mapping of str to callable
        ``--graph`` name -> :data:`Builder` ``builder(args) -> (graph, info)``, which validates the options it
        reads and raises a ``ValueError`` starting with the option or API argument name.
    description : str, optional
        The models' line in ``--help``.
    examples : tuple of str, optional
        Example argument lists for ``--help``.
    add_options : callable or None, optional
        ``add_options(parser)`` adds the options only these models read.
    check : callable or None, optional
        ``check(args)`` validates them (for every model, as the common options are).
    options : mapping of str to str, optional
        API argument names in the builders' errors -> the options that set them.

    Raises
    ------
    TypeError
        If a builder, ``add_options`` or ``check`` is not callable.
    ValueError
        If there is no model or a model name is empty.

    Examples
    --------
    >>> from graphs.generators import ring_lattice
    >>> family = ModelFamily(builders={"ring": lambda args: (ring_lattice(args.n or 100, 4), {})})
    >>> sorted(family.builders)
    ['ring']
    """

    builders: Mapping[str, Builder]
    description: str = ""
    examples: tuple[str, ...] = ()
    add_options: Callable[[argparse.ArgumentParser], None] | None = None
    check: Callable[[argparse.Namespace], None] | None = None
    options: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if not self.builders or not all(isinstance(name, str) and name for name in self.builders):
            raise ValueError("builders: expected at least one model, each named by a non-empty string")
        if not all(callable(build) for build in self.builders.values()):
            raise TypeError("builders: expected a callable builder(args) -> (graph, info) for every model")
        for name in ("add_options", "check"):
            if getattr(self, name) is not None and not callable(getattr(self, name)):
                raise TypeError(f"{name}: expected a callable or None, got {getattr(self, name)!r}")


def _connectome(args) -> tuple[Graph, dict]:
    """Builder of ``--graph connectome`` (``--calibrate`` refits first)."""
    n = args.n or FLYWIRE["n"]
    info: dict = {}
    if args.calibrate:
        if n <= 400:
            raise ValueError(f"--n: --calibrate tries neighbourhoods up to 400; expected --n > 400, got {n}")
        fit = calibrate_connectome(n, seed=args.seed)
        info["fit"] = fit.to_dict()
        params = dict(random_fraction=fit.random_fraction, neighbourhood=fit.neighbourhood)
    else:
        params = dict(random_fraction=FITTED["random_fraction"], neighbourhood=FITTED["neighbourhood"])
        if n <= params["neighbourhood"]:
            raise ValueError(
                f"--n: the fitted connectome model wires within {params['neighbourhood']} neighbours; expected "
                f"--n > {params['neighbourhood']} (or --calibrate), got {n}"
            )
    graph = connectome_model(n, args.k or FLYWIRE["mean_degree"], seed=args.seed, **params)
    info.update(params, published=FLYWIRE, reciprocity=reciprocity(graph))
    return graph, info


def _erdos_renyi(args) -> tuple[Graph, dict]:
    """Builder of ``--graph er``."""
    from ..generators import erdos_renyi

    return erdos_renyi(args.n or 4096, args.k or 20.5, directed=bool(args.directed), seed=args.seed), {}


def _watts_strogatz(args) -> tuple[Graph, dict]:
    """Builder of ``--graph ws``."""
    from ..generators import watts_strogatz

    if args.k is not None and not args.k.is_integer():
        raise ValueError(f"--k: ws needs an even integer number of neighbours, got {args.k}")
    beta = DEFAULT_BETA if args.beta is None else args.beta
    return watts_strogatz(args.n or 4096, int(args.k or 20), beta, seed=args.seed), {}


def _check_graph_models(args: argparse.Namespace) -> None:
    """``ValueError`` naming both flags for an option the chosen graph does not read, naming ``--sources`` above the
    model's n, and naming ``--n`` for a model whose edges would not fit in memory."""
    where = "--edges" if args.edges else f"--graph {args.graph}"
    if args.beta is not None and (args.edges or args.graph != "ws"):
        raise ValueError(f"--beta: does not apply with {where} (only ws rewires)")
    if args.calibrate and (args.edges or args.graph != "connectome"):
        raise ValueError(f"--calibrate: does not apply with {where} (it refits the connectome model)")
    if args.k is not None and args.edges:
        raise ValueError("--k: does not apply with --edges (the file sets the degrees)")
    if args.edges or args.graph not in GRAPH_MODELS.builders:
        return
    n = args.n or (FLYWIRE["n"] if args.graph == "connectome" else 4096)
    if args.sources is not None and args.sources > n:
        raise ValueError(f"--sources: expected at most --n = {n} sources, got {args.sources}")
    degree = args.k or FLYWIRE["mean_degree"]
    try:  # the edge arrays (both ends, both directions) and the per-node arrays
        check_memory("--n", n * (degree * 32 + 64), f"n = {n} nodes of {args.graph} at mean degree {degree:g}")
    except MemoryError as exc:
        raise ValueError(str(exc)) from None


#: Watts-Strogatz's rewiring probability when ``--beta`` is not given.
DEFAULT_BETA = 0.1

#: the models of :mod:`graphs`, offered by ``python -m graphs.smallworld`` and every command built on it
GRAPH_MODELS = ModelFamily(
    builders={"connectome": _connectome, "er": _erdos_renyi, "ws": _watts_strogatz},
    description=(
        "connectome (3-D local wiring plus random shortcuts, fitted to FlyWire; --calibrate refits it), er "
        "(Erdos-Renyi, mean degree --k), ws (Watts-Strogatz: --k neighbours, rewiring probability --beta)"
    ),
    examples=("--graph connectome --sources 256", "--graph ws --n 4096 --k 20 --beta 0.1 --json"),
    check=_check_graph_models,
)

#: models that packages above ``graphs`` offer, and the command that has them (named in the error, not imported)
ELSEWHERE = {"swa": "python -m receptive.smallworld", "sa": "python -m receptive.smallworld"}
ELSEWHERE["sa+swa"] = ELSEWHERE["sa"]

DESCRIPTION = """\
Is a graph a small world? Prints n, edges, <k>, the average local clustering C and transitivity of the
undirected graph, the average shortest-path length L in its giant connected component (exact by bit-parallel
BFS, or from --sources K sampled sources with a 95% interval), the random references C_r and L_r, the lattice
reference C_latt, sigma = (C/C_r)/(L/L_r) and omega = L_r/L - C/C_latt. For directed graphs also the directed
clustering and the directed L in the giant strongly connected component. For the connectome model the published
FlyWire statistics (Lin et al. 2024) are printed beside the measured ones.

{models}

sigma and omega are left out where they are undefined: below mean degree 1 the analytic random reference has no
giant component (L_r is infinite), below mean degree 3 the lattice clustering C_latt is 0 (omega).
"""

EDGES = (
    "--edges FILE measures a real graph instead: a CSV edge list with a header (FlyWire's connections table: "
    "--source pre --target post find pre_root_id / post_root_id), a plain whitespace-separated edge list with '#' "
    "comments and no header (SNAP; columns 0 and 1 unless --source/--target give other column numbers), or GraphML."
)

EDGES_EXAMPLE = (
    "--edges connections.csv --source pre_root_id --target post_root_id \\\n"
    "      --weight syn_count --threshold 5 --sources 1000"
)


def _families(families) -> tuple[ModelFamily, ...]:
    """``families`` as a checked tuple: ModelFamily instances offering distinct model names."""
    families = tuple(families)
    if not all(isinstance(f, ModelFamily) for f in families):
        raise TypeError("families: expected a non-empty sequence of ModelFamily")
    if not families:
        raise ValueError("families: expected a non-empty sequence of ModelFamily")
    names = [name for family in families for name in family.builders]
    if len(set(names)) != len(names):
        raise ValueError(f"families: a model name is offered twice ({', '.join(names)})")
    return families


def _model_type(families: tuple[ModelFamily, ...]):
    """The argparse ``type`` of ``--graph``: an offered name, or a one-line pointer to the command that has it."""
    offered = [name for family in families for name in family.builders]

    def model(text: str) -> str:
        if text in offered:
            return text
        hint = ""
        if text in ELSEWHERE:  # a one-line pointer to the command that has it, rather than importing it
            hint = f"; attention graph {text!r}: use {ELSEWHERE[text]} (same options, plus --w --layers --causal)"
        raise argparse.ArgumentTypeError(f"unknown graph {text!r}: choose from {', '.join(offered)}{hint}")

    return model


def build_parser(
    families: Sequence[ModelFamily] = (GRAPH_MODELS,), prog: str = "python -m graphs.smallworld"
) -> argparse.ArgumentParser:
    """Build the command line over the models of ``families`` (the first one's first model is the default).

    Parameters
    ----------
    families : sequence of ModelFamily, optional
        The models offered (default: :data:`GRAPH_MODELS`).
    prog : str, optional
        The program name shown in ``--help`` and errors.

    Returns
    -------
    argparse.ArgumentParser
        A parser whose errors are one line naming the option (exit status 2).

    Raises
    ------
    TypeError
        If ``families`` holds something other than :class:`ModelFamily`.
    ValueError
        If ``families`` is empty or offers a model name twice.

    Examples
    --------
    >>> args = build_parser().parse_args(["--graph", "er", "--n", "500"])
    >>> args.graph, args.n, args.k
    ('er', 500, None)
    """
    families = _families(families)
    offered = [name for family in families for name in family.builders]
    elsewhere = sorted(set(ELSEWHERE.values()) - {prog})
    moved = [name for name in ELSEWHERE if name not in offered]
    examples = [f"  {prog} {example}" for family in families for example in family.examples]
    models = ["Models: " + "; ".join(family.description for family in families if family.description) + "."]
    if moved:
        models.append(f"Attention graphs ({', '.join(moved)}): {', '.join(elsewhere)}.")
    models.append(EDGES)
    p = OneLineErrorParser(
        prog=prog,
        description=DESCRIPTION.format(models=textwrap.fill(" ".join(models), width=115, break_on_hyphens=False)),
        epilog="examples:\n" + "\n".join([*examples, f"  {prog} {EDGES_EXAMPLE}"]) + "\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # else --w (an option of the attention graphs) would silently be read as --weight
        options={**_OPTIONS, **{name: flag for family in families for name, flag in family.options.items()}},
    )
    p.add_argument(
        "--graph",
        type=_model_type(families),
        metavar="{" + ",".join(offered) + "}",
        default=offered[0],
        help=f"the graph to build (default {offered[0]})",
    )
    p.add_argument("--n", type=int, help="nodes (default: FlyWire's 127978 for connectome, 4096 otherwise)")
    p.add_argument("--k", type=float, default=None, help="mean degree (er, ws: neighbours; default 20.5 / 20)")
    p.add_argument("--beta", type=float, help=f"ws rewiring probability (default {DEFAULT_BETA})")
    for family in families:
        if family.add_options is not None:
            family.add_options(p)
    add_seed_option(p)
    p.add_argument("--edges", metavar="FILE", help="measure this edge list (.csv) or GraphML (.graphml) instead")
    p.add_argument("--source", help="with --edges: column of edge sources, a name or its start (default pre)")
    p.add_argument("--target", help="with --edges: column of edge targets, a name or its start (default post)")
    p.add_argument("--weight", help="with --edges: CSV column of weights, e.g. syn_count (optional)")
    p.add_argument(
        "--threshold", type=float, help="with --edges: keep edges with weight >= THRESHOLD (FlyWire: 5 synapses)"
    )
    direction = p.add_mutually_exclusive_group()
    direction.add_argument("--directed", dest="directed", action="store_true", default=None, help="treat as directed")
    direction.add_argument("--undirected", dest="directed", action="store_false", help="treat as undirected")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--exact", action="store_true", help="exact L: BFS from every node (default for n <= 20000)")
    how.add_argument("--sources", type=int, metavar="K", help="L from K sampled sources with a 95%% interval")
    p.add_argument("--reference", choices=REFERENCES, default="analytic", help="random reference (default analytic)")
    p.add_argument("--calibrate", action="store_true", help="connectome: refit the model to FlyWire's C and L first")
    add_json_option(p)
    add_progress_option(p)
    return p


def build_graph(args, families: Sequence[ModelFamily] = (GRAPH_MODELS,)) -> tuple[Graph, dict]:
    """Build the graph the parsed arguments describe: an edge file, or ``args.graph`` built by its family.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed by :func:`build_parser` over the same ``families``.
    families : sequence of ModelFamily, optional
        The models offered.

    Returns
    -------
    graph : Graph
    info : dict
        What to print about how the graph was made.

    Raises
    ------
    ValueError
        Naming the argument, for a model's bad parameters or an unreadable edge list.
    FileNotFoundError
        If ``--edges`` names no file.

    Examples
    --------
    >>> args = build_parser().parse_args(["--graph", "ws", "--n", "200", "--k", "6"])
    >>> graph, info = build_graph(args)
    >>> graph.n, graph.edges, info
    (200, 600, {})
    """
    families = _families(families)
    if args.edges:
        from ..io import load_edge_list, load_graphml

        if args.edges.endswith((".graphml", ".xml")):
            graph = load_graphml(args.edges)
        else:
            columns = {k: v for k, v in (("source", args.source), ("target", args.target)) if v is not None}
            graph, _ = load_edge_list(  # without --source / --target: the API's defaults
                args.edges, weight=args.weight, threshold=args.threshold, directed=args.directed is not False, **columns
            )
        info = {"source": args.edges}
    else:
        builder = next((f.builders[args.graph] for f in families if args.graph in f.builders), None)
        if builder is None:
            raise ValueError(f"--graph: unknown graph {args.graph!r}")
        graph, info = builder(args)
        if not isinstance(graph, Graph) or not isinstance(info, dict):
            raise TypeError(f"the builder of model {args.graph!r} must return (Graph, dict)")
    if args.directed is False and graph.directed:
        graph = graph.undirected()
    return graph, info


def _clean(value):
    """``value`` with non-finite floats as ``None`` (JSON ``null``), recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


_UNDEFINED = {
    "L_r": " (infinite: the random reference has no giant component at <k> <= 1)",
    "sigma": " (needs C_r > 0, L > 0 and a finite L_r)",
    "omega": " (needs L > 0, C_latt > 0 and a finite L_r)",
}


def format_report(doc: dict) -> str:
    """Format the command's result as aligned ``key value`` lines (published FlyWire values beside them).

    Parameters
    ----------
    doc : dict
        :meth:`SmallWorld.to_dict` merged with the builder's ``info``.

    Returns
    -------
    str

    Examples
    --------
    >>> print(format_report({"n": 10, "C": 0.5, "sigma": None, "published": {"C": 0.0463}}))
    n                      10
    C                      0.5   (FlyWire: 0.0463)
    sigma                  undefined (needs C_r > 0, L > 0 and a finite L_r)
    """
    lines = []
    pub = doc.get("published", {})
    keys = [
        "n",
        "edges",
        "mean_degree",
        "C",
        "transitivity",
        "L",
        "L_method",
        "L_ci",
        "C_directed",
        "L_directed",
        "L_directed_ci",
        "giant_scc_fraction",
        "giant_wcc_fraction",
        "unreachable_fraction",
        "reciprocity",
        "C_r",
        "L_r",
        "C_latt",
        "sigma",
        "omega",
        "reference",
    ]
    for key in keys:
        if key in ("L_r", "sigma", "omega") and doc.get(key, 0) is None:
            lines.append(f"{key:<22} undefined{_UNDEFINED[key]}")
            continue
        if key not in doc or doc[key] is None:
            continue
        value = doc[key]
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        if isinstance(value, list):
            shown = f"[{value[0]:.4f}, {value[1]:.4f}]"
        published = f"   (FlyWire: {pub[key]})" if key in pub else ""
        lines.append(f"{key:<22} {shown}{published}")
    for key in ("note", "source"):
        if key in doc:
            lines.append(f"{key}: {doc[key]}")
    if "fit" in doc:
        fit = doc["fit"]
        lines.append(
            f"fit: random_fraction={fit['random_fraction']:.3f} neighbourhood={fit['neighbourhood']} "
            f"({fit['evaluations']} evaluations) measured {fit['measured']} targets {fit['targets']}"
        )
    return "\n".join(lines)


#: API argument names (the start of their errors) -> the options that set them (:class:`OneLineErrorParser` swaps them)
_OPTIONS = {
    "n": "--n",
    "mean_degree": "--k",
    "k": "--k",
    "beta": "--beta",
    "seed": "--seed",
    "sources": "--sources",
    "source": "--source",
    "target": "--target",
    "weight": "--weight",
    "threshold": "--threshold",
    "path": "--edges",
    "format": "--edges",
}


def _check_args(args, families: Sequence[ModelFamily] = ()) -> None:
    """``ValueError`` naming the flag for an option out of range, before anything is built."""
    for name, value, low in (("--n", args.n, 10), ("--seed", args.seed, 0), ("--sources", args.sources, 1)):
        if value is not None and value < low:
            raise ValueError(f"{name}: expected an integer >= {low}, got {value}")
    if args.k is not None and not (math.isfinite(args.k) and args.k > 0):
        raise ValueError(f"--k: expected a positive mean degree, got {args.k}")
    if args.beta is not None and not 0 <= args.beta <= 1:
        raise ValueError(f"--beta: expected a probability in [0, 1], got {args.beta}")
    if args.threshold is not None and not math.isfinite(args.threshold):
        raise ValueError(f"--threshold: expected a finite number, got {args.threshold}")
    columns = [
        flag for flag in ("--source", "--target", "--weight", "--threshold") if getattr(args, flag[2:]) is not None
    ]
    graphml = bool(args.edges) and args.edges.endswith((".graphml", ".xml"))
    if columns and (not args.edges or graphml):
        raise ValueError(
            f"{columns[0]}: only read from a CSV or edge-list --edges FILE, got "
            f"{'a GraphML file' if graphml else 'no --edges'}"
        )
    for family in families:
        if family.check is not None:
            family.check(args)


def main(
    argv: list[str] | None = None,
    *,
    families: Sequence[ModelFamily] = (GRAPH_MODELS,),
    prog: str = "python -m graphs.smallworld",
) -> int:
    """Run ``python -m graphs.smallworld``: measure C, L, sigma and omega of a model graph or an edge list.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default ``sys.argv[1:]``); see ``--help``.
    families : sequence of ModelFamily, optional
        The models offered (default :data:`GRAPH_MODELS`).
    prog : str, optional
        The program name shown in ``--help`` and errors.

    Returns
    -------
    int
        0 on success; bad options exit with status 2 and one line naming the option.

    References
    ----------
    - M. D. Humphries and K. Gurney, "Network 'small-world-ness': a quantitative method for determining
      canonical network equivalence", PLoS ONE 3, e0002051 (2008).

    Examples
    --------
    >>> import contextlib, io, json
    >>> out = io.StringIO()
    >>> with contextlib.redirect_stdout(out):
    ...     status = main(["--graph", "ws", "--n", "300", "--k", "6", "--json", "--no-progress"])
    >>> doc = json.loads(out.getvalue())
    >>> status, doc["n"], doc["edges"], bool(doc["sigma"] > 1)
    (0, 300, 900, True)
    """
    families = _families(families)
    parser = build_parser(families, prog)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        offered = {opt for action in parser._actions for opt in action.option_strings}
        moved = [opt for opt in ("--w", "--layers", "--causal") if opt in unknown and opt not in offered]
        hint = f"; {', '.join(moved)}: options of the attention graphs ({ELSEWHERE['sa']})" if moved else ""
        parser.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    try:
        _check_args(args, families)
        graph, info = build_graph(args, families)
        sources = args.sources
        if sources is None and not args.exact and graph.n > 20000:
            sources = 256
        if args.sources is not None and args.sources > graph.n:
            raise ValueError(f"--sources: expected at most the graph's {graph.n} nodes, got {args.sources}")
        if sources is not None:
            sources = min(sources, graph.n)
        result = small_world(
            graph,
            sources=sources,
            reference=args.reference,
            seed=args.seed,
            progress=False if args.no_progress else None,
        )
    except (ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))
    except MemoryError as exc:
        parser.error(f"out of memory ({exc}); use a smaller --n or --sources")
    except OSError as exc:
        parser.error(f"--edges: cannot read {args.edges!r} ({exc.strerror or exc})")
    doc = _clean({**result.to_dict(), **info})
    if args.json != "-":
        print(format_report(doc))
    write_output(args.json, json.dumps(doc, indent=1) + "\n", "--json")
    return 0


#: The command's entry point (``python -m graphs.smallworld``): :func:`main`, ended by
#: :func:`graphs.cli_common.run_command` (one line on an interrupt or a closed pipe).
run_cli = partial(run_command, main)
