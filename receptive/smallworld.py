"""``python -m receptive.smallworld``: the small-world command of :mod:`graphs.smallworld` with the attention graphs.

The same command line, options and output as ``python -m graphs.smallworld`` (its models ``connectome``, ``er``,
``ws`` and ``--edges``), plus the attention graphs ``swa``, ``sa`` and ``sa+swa`` of
:func:`receptive.attention_graphs.union_graph`: the union of the edge sets of layers ``1..--layers`` with window
``--w`` (``--causal``: causal masks). They live here rather than in ``graphs`` because dependencies point one way
(``graphs`` <- ``receptive``): :data:`ATTENTION_MODELS` is a :class:`graphs.smallworld.cli.ModelFamily` that this
command adds to :data:`graphs.smallworld.cli.GRAPH_MODELS`.

One SA layer is the SWA lattice relabelled by its permutation, so it has exactly SWA's C and L; the small-world
regime needs the union with SWA (``sa+swa``) or several layers (see :mod:`receptive.attention_graphs`).

References
----------
.. [1] D. J. Watts and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature 393, 440-442 (1998).
.. [2] M. D. Humphries and K. Gurney, "Network 'small-world-ness': a quantitative method for determining canonical
   network equivalence", PLoS ONE 3, e0002051 (2008).
"""

from __future__ import annotations

import argparse
from functools import partial

from graphs.cli_common import run_command
from graphs.graph import Graph
from graphs.memory import check_memory
from graphs.smallworld.cli import GRAPH_MODELS, ModelFamily
from graphs.smallworld.cli import build_parser as _smallworld_parser
from graphs.smallworld.cli import main as _smallworld_main
from graphs.smallworld.connectome import FLYWIRE

from .attention_graphs import check_union_memory
from .cli_parser import add_w_option

PROG = "python -m receptive.smallworld"
NOTE = (
    "one SA layer is an SWA lattice relabelled by its permutation: same C and L; the small-world regime needs the"
    " union with SWA (sa+swa) or several layers"
)


#: the defaults of the attention models' options (``None`` in the parser, so that a flag given is told apart)
DEFAULT_W, DEFAULT_LAYERS = 16, 1
ATTENTION = ("swa", "sa", "sa+swa")


def _add_options(parser: argparse.ArgumentParser) -> None:
    """The attention models' options ``--w``, ``--layers``, ``--causal``."""
    add_w_option(parser, None, shown=DEFAULT_W)
    parser.add_argument(
        "--layers", type=int, help=f"attention layers whose union is the graph (default {DEFAULT_LAYERS})"
    )
    parser.add_argument("--causal", action="store_true", help="causal attention graph")


def _check(args: argparse.Namespace) -> None:
    """``ValueError`` naming the flag for ``--layers`` below 1, for an option the model does not read
    (naming both), for ``--sources`` above the graph's n, and for a union whose edges would not fit in memory."""
    where = "--edges" if args.edges else f"--graph {args.graph}"
    attention = not args.edges and args.graph in ATTENTION
    given = {
        "--w": args.w is not None,
        "--layers": args.layers is not None,
        "--causal": args.causal,
        "--k": args.k is not None,
        "--calibrate": args.calibrate,
    }
    for flag in ("--w", "--layers", "--causal"):
        if given[flag] and not attention:
            raise ValueError(f"{flag}: does not apply with {where} (only the attention graphs {', '.join(ATTENTION)})")
    if given["--k"] and attention:
        raise ValueError(f"--k: does not apply with {where} (an attention graph's degree is set by --w)")
    if given["--calibrate"] and (args.edges or args.graph != "connectome"):
        raise ValueError(f"--calibrate: does not apply with {where} (it refits the connectome model)")
    if args.w is None:
        args.w = DEFAULT_W
    if args.layers is None:
        args.layers = DEFAULT_LAYERS
    if args.layers < 1:
        raise ValueError(f"--layers: expected an integer >= 1, got {args.layers}")
    n = args.n or (FLYWIRE["n"] if args.graph == "connectome" else 4096)
    if args.sources is not None and not args.edges and args.sources > n:
        raise ValueError(f"--sources: expected at most --n = {n} sources, got {args.sources}")
    try:
        if attention:
            check_union_memory(args.graph, n, args.w, 1 if args.graph == "swa" else args.layers)
        elif not args.edges:  # a graph model: its edge arrays (both ends, both directions) and per-node arrays
            degree = args.k or FLYWIRE["mean_degree"]
            check_memory("n", n * (degree * 32 + 64), f"n = {n} nodes of {args.graph} at mean degree {degree:g}")
    except MemoryError as exc:
        raise ValueError(str(exc)) from None


def _builder(name: str):
    """The builder of model ``name``: ``args -> (union graph, info)``."""

    def build(args: argparse.Namespace) -> tuple[Graph, dict]:
        from .attention_graphs import union_graph

        graph = union_graph(
            name,
            args.n or 4096,
            args.w,
            args.layers,
            causal=args.causal,
            seed=args.seed,
            directed=args.directed is not False,
        )
        return graph, {"note": NOTE}

    build.__name__ = build.__qualname__ = f"build_{name.replace('+', '_')}"
    build.__doc__ = f"The union graph of layers 1..--layers of {name} (:func:`receptive.attention_graphs.union_graph`)."
    return build


#: swa, sa and sa+swa: the union of ``--layers`` attention layers of window ``--w`` as one graph
ATTENTION_MODELS = ModelFamily(
    builders={name: _builder(name) for name in ("swa", "sa", "sa+swa")},
    description=(
        "swa / sa / sa+swa (the attention graph of one layer, or the union of --layers layers, window --w, "
        "--causal: one SA layer alone is a relabelled SWA lattice, with the same C and L)"
    ),
    examples=("--graph sa+swa --n 4096 --w 16 --layers 1 --json", "--graph sa --n 32768 --w 64 --sources 512"),
    add_options=_add_options,
    check=_check,
    options={"w": "--w", "layers": "--layers", "name": "--graph"},
)

FAMILIES = (GRAPH_MODELS, ATTENTION_MODELS)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m receptive.smallworld``: :func:`graphs.smallworld.cli.build_parser` over the graph and
    attention models.

    Returns
    -------
    argparse.ArgumentParser
        A parser whose errors are one line naming the option (exit status 2).

    Examples
    --------
    >>> args = build_parser().parse_args(["--graph", "sa+swa", "--w", "8"])
    >>> args.graph, args.w, args.layers
    ('sa+swa', 8, None)
    """
    return _smallworld_parser(FAMILIES, PROG)


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m receptive.smallworld``: :func:`graphs.smallworld.cli.main` over graph and attention models.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default ``sys.argv[1:]``); see ``--help``.

    Returns
    -------
    int
        Exit status, 0 on success (bad options exit with status 2 and one line naming the flag).

    Examples
    --------
    >>> import contextlib, io, json
    >>> out = io.StringIO()
    >>> with contextlib.redirect_stdout(out):
    ...     status = main(["--graph", "sa+swa", "--n", "256", "--w", "8", "--json", "--no-progress"])
    >>> status, json.loads(out.getvalue())["n"]
    (0, 256)
    """
    return _smallworld_main(argv, families=FAMILIES, prog=PROG)


#: The command's entry point (``python -m receptive.smallworld`` and the console script ``receptive-smallworld``):
#: :func:`main`, ended by :func:`graphs.cli_common.run_command` (one line on an interrupt or a closed pipe).
run_cli = partial(run_command, main)


if __name__ == "__main__":
    run_cli()
