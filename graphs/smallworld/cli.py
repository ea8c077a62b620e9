"""``python -m graphs.smallworld``: clustering, path length and small-world coefficients of a graph or model."""

from __future__ import annotations

import argparse
import json
import math
import sys

from ..cli_common import OneLineErrorParser
from ..graph import Graph
from .connectome import FITTED, FLYWIRE, calibrate_connectome, connectome_model, reciprocity
from .measures import REFERENCES, small_world

MODELS = ("connectome", "er", "ws", "swa", "sa", "sa+swa")

DESCRIPTION = """\
Is a graph a small world? Prints n, edges, <k>, the average local clustering C and transitivity of the
undirected graph, the average shortest-path length L in its giant connected component (exact by bit-parallel
BFS, or from --sources K sampled sources with a 95% interval), the random references C_r and L_r, the lattice
reference C_latt, sigma = (C/C_r)/(L/L_r) and omega = L_r/L - C/C_latt. For directed graphs also the directed
clustering and the directed L in the giant strongly connected component. For the connectome model the published
FlyWire statistics (Lin et al. 2024) are printed beside the measured ones.

Models: connectome (3-D local wiring plus random shortcuts, fitted to FlyWire; --calibrate refits it), er
(Erdos-Renyi), ws (Watts-Strogatz), swa / sa / sa+swa (the attention graph of one layer, or the union of
--layers layers: one SA layer alone is a relabelled SWA lattice, with the same C and L; these three come from
receptive.attention_graphs, imported only when chosen). --edges FILE measures a real graph instead: a CSV edge list
with a header (FlyWire's connections table: --source pre --target post find pre_root_id / post_root_id), a plain
whitespace-separated edge list with '#' comments and no header (SNAP; columns 0 and 1 unless --source/--target
give other column numbers), or GraphML.

sigma and omega are left out where they are undefined: below mean degree 1 the analytic random reference has no
giant component (L_r is infinite), below mean degree 3 the lattice clustering C_latt is 0 (omega).
"""

EPILOG = """\
examples:
  python -m graphs.smallworld --model connectome --sources 256
  python -m graphs.smallworld --model sa+swa --n 4096 --w 16 --layers 1 --json
  python -m graphs.smallworld --edges connections.csv --source pre_root_id --target post_root_id \\
      --weight syn_count --threshold 5 --sources 1000
"""


def build_parser() -> argparse.ArgumentParser:
    p = OneLineErrorParser(
        prog="python -m graphs.smallworld",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", choices=MODELS, default="connectome", help="the graph to build (default connectome)")
    p.add_argument("--n", type=int, help="nodes (default: FlyWire's 127978 for connectome, 4096 otherwise)")
    p.add_argument("--k", type=float, default=None, help="mean degree (er, ws: neighbours; default 20.5 / 20)")
    p.add_argument("--beta", type=float, default=0.1, help="ws rewiring probability (default 0.1)")
    p.add_argument("--w", type=int, default=16, help="attention window, keys per query incl. self (default 16)")
    p.add_argument("--layers", type=int, default=1, help="attention layers whose union is the graph (default 1)")
    p.add_argument("--causal", action="store_true", help="causal attention graph")
    p.add_argument("--seed", type=int, default=0, help="seed of the model and of sampled sources")
    p.add_argument("--edges", metavar="FILE", help="measure this edge list (.csv) or GraphML (.graphml) instead")
    p.add_argument("--source", default="pre", help="column of edge sources: a name, or its start (default pre)")
    p.add_argument("--target", default="post", help="column of edge targets: a name, or its start (default post)")
    p.add_argument("--weight", help="CSV column of weights, e.g. syn_count (optional)")
    p.add_argument("--threshold", type=float, help="keep edges with weight >= THRESHOLD (FlyWire: 5 synapses)")
    direction = p.add_mutually_exclusive_group()
    direction.add_argument("--directed", dest="directed", action="store_true", default=None, help="treat as directed")
    direction.add_argument("--undirected", dest="directed", action="store_false", help="treat as undirected")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--exact", action="store_true", help="exact L: BFS from every node (default for n <= 20000)")
    how.add_argument("--sources", type=int, metavar="K", help="L from K sampled sources with a 95%% interval")
    p.add_argument("--reference", choices=REFERENCES, default="analytic", help="random reference (default analytic)")
    p.add_argument("--calibrate", action="store_true", help="connectome: refit the model to FlyWire's C and L first")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def build_graph(args) -> tuple[Graph, dict]:
    """The graph the arguments describe and what to print about how it was made."""
    info: dict = {}
    if args.edges:
        from ..io import load_edge_list, load_graphml

        if args.edges.endswith((".graphml", ".xml")):
            graph = load_graphml(args.edges)
        else:
            graph, _ = load_edge_list(
                args.edges,
                source=args.source,
                target=args.target,
                weight=args.weight,
                threshold=args.threshold,
                directed=args.directed is not False,
            )
        info["source"] = args.edges
    elif args.model == "connectome":
        n = args.n or FLYWIRE["n"]
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
        mean_degree = args.k or FLYWIRE["mean_degree"]
        graph = connectome_model(n, mean_degree, seed=args.seed, **params)
        info.update(params, published=FLYWIRE, reciprocity=reciprocity(graph))
    elif args.model in ("er", "ws"):
        from ..generators import erdos_renyi, watts_strogatz

        n = args.n or 4096
        if args.model == "er":
            graph = erdos_renyi(n, args.k or 20.5, directed=bool(args.directed), seed=args.seed)
        else:
            graph = watts_strogatz(n, int(args.k or 20), args.beta, seed=args.seed)
    else:
        from receptive.attention_graphs import union_graph

        n = args.n or 4096
        graph = union_graph(
            args.model, n, args.w, args.layers, causal=args.causal, seed=args.seed, directed=args.directed is not False
        )
        info["note"] = (
            "one SA layer is an SWA lattice relabelled by its permutation: same C and L; the small-world regime"
            " needs the union with SWA (sa+swa) or several layers"
        )
    if args.directed is False and graph.directed:
        graph = graph.undirected()
    return graph, info


def _clean(value):
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


#: API argument names (the start of their ValueError) -> the options that set them
_OPTIONS = {
    "n": "--n",
    "mean_degree": "--k",
    "k": "--k",
    "beta": "--beta",
    "w": "--w",
    "layers": "--layers",
    "seed": "--seed",
    "sources": "--sources",
    "source": "--source",
    "target": "--target",
    "weight": "--weight",
    "threshold": "--threshold",
    "path": "--edges",
    "format": "--edges",
}


def _as_option(message: str) -> str:
    """``"mean_degree: ..."`` -> ``"--k: ..."``: an error of the API named by the option the user typed."""
    name, sep, rest = message.partition(":")
    return f"{_OPTIONS[name]}:{rest}" if sep and name in _OPTIONS else message


def _check_args(args) -> None:
    for name, value, low in (
        ("--n", args.n, 10),
        ("--w", args.w, 1),
        ("--layers", args.layers, 1),
        ("--seed", args.seed, 0),
        ("--sources", args.sources, 1),
    ):
        if value is not None and value < low:
            raise ValueError(f"{name}: expected an integer >= {low}, got {value}")
    if args.k is not None and not (math.isfinite(args.k) and args.k > 0):
        raise ValueError(f"--k: expected a positive mean degree, got {args.k}")
    if args.model == "ws" and args.k is not None and not args.k.is_integer():
        raise ValueError(f"--k: ws needs an even integer number of neighbours, got {args.k}")
    if not 0 <= args.beta <= 1:
        raise ValueError(f"--beta: expected a probability in [0, 1], got {args.beta}")
    if args.threshold is not None and not math.isfinite(args.threshold):
        raise ValueError(f"--threshold: expected a finite number, got {args.threshold}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        _check_args(args)
        graph, info = build_graph(args)
        sources = args.sources
        if sources is None and not args.exact and graph.n > 20000:
            sources = 256
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
        parser.error(_as_option(str(exc)))
    except MemoryError as exc:
        parser.error(f"out of memory ({exc}); use a smaller --n or --sources")
    except OSError as exc:
        parser.error(f"--edges: cannot read {args.edges!r} ({exc.strerror or exc})")
    doc = _clean({**result.to_dict(), **info})
    if args.json:
        json.dump(doc, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(format_report(doc))
    return 0
