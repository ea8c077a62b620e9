"""``python -m gpu.approx``: relative error ``||O - O_hat||_F / ||O||_F`` of every method against exact float64
attention (causal with ``--causal``), mean +- std over seeds, on synthetic matrices, with each row's cost (FLOPs as a
share of exact attention's, KV-cache bytes per token) beside it. ``--costs`` prints only the cost table.

Kinds: ``random`` (q, k, v standard normal: near-uniform attention, the hardest case for sparse methods), ``lowrank``
(q and k of rank 4: a numerically low-rank score matrix) and ``spiky`` (a few attention-sink keys aligned with the
queries plus a local bias, the structure the survey finds in Llama's attention).

Budgets above a method's maximum (a rank: TPA's min(heads, d), MLA's 2 heads d) are skipped; a method with no valid
budget runs at the powers of two up to its maximum. Methods that need calibration when causal (MLA, TransMLA,
Loki) get the keys and values of an independent draw of the same kind: for ``spiky`` that draw has its own sink
direction, so those rows show a calibration that does not match (error can grow with the rank). Costs use 4-byte
numbers."""

from __future__ import annotations

import argparse
import json
import math
from functools import partial

import torch

from gpu.approx import METHODS, approximate, exact_attention, exact_cost, method_cost, relative_error
from gpu.approx.measure import measured_flops, measured_peak_bytes
from gpu.attention.threads import torch_threads
from graphs.cli_common import given_options, refuse_together, run_command
from graphs.memory import check_memory, physical_memory
from receptive.cli_parser import (
    OneLineErrorParser,
    add_budget_option,
    add_json_option,
    add_n_option,
    add_seeds_option,
    comma_ints,
    comma_names,
    write_output,
)

KINDS = ("random", "lowrank", "spiky")
HEADS = 4


def synthetic(kind: str, n: int, d: int, seed: int, heads: int = HEADS):
    """Synthetic float64 ``(q, k, v)`` of one kind, drawn from ``seed``.

    ``random``: standard normal (near-uniform attention); ``lowrank``: q and k of rank 4 through a shared basis (a
    score matrix of rank at most 4); ``spiky`` (any other kind): ``max(1, n // 64)`` attention-sink keys aligned with
    the queries' mean plus a smooth sinusoidal component shared by q and k (a local bias), the structure reported for
    the attention of trained models [1]_.

    Parameters
    ----------
    kind : str
        ``"random"``, ``"lowrank"`` or ``"spiky"``.
    n : int
        Sequence length.
    d : int
        Head dimension (at least 4 for ``lowrank``'s rank).
    seed : int
        Seed of the draw.
    heads : int, optional
        Number of heads.

    Returns
    -------
    tuple of torch.Tensor
        ``(q, k, v)``, each ``(1, heads, n, d)`` float64.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.cli import synthetic
    >>> q, k, v = synthetic("lowrank", 16, 8, seed=0)
    >>> q.shape, int(torch.linalg.matrix_rank(q[0, 0] @ k[0, 0].T))
    (torch.Size([1, 4, 16, 8]), 4)

    References
    ----------
    .. [1] Xiao et al., "Efficient Streaming Language Models with Attention Sinks", ICLR 2024, arXiv:2309.17453.
    """
    g = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    v = randn(1, heads, n, d)
    if kind == "random":
        return randn(1, heads, n, d), randn(1, heads, n, d), v
    if kind == "lowrank":
        basis = randn(1, heads, 4, d)
        return randn(1, heads, n, 4) @ basis, randn(1, heads, n, 4) @ basis, v
    q, k = randn(1, heads, n, d), randn(1, heads, n, d)
    direction = q.mean(dim=2, keepdim=True)
    k[:, :, : max(1, n // 64)] += 4 * direction / direction.norm(dim=-1, keepdim=True) * math.sqrt(d)  # sinks
    pos = torch.arange(n, dtype=torch.float64)
    k = k + 0.5 * torch.sin(pos[:, None] / 8 + torch.arange(d) / d)  # a smooth local component shared with q
    q = q + 0.5 * torch.sin(pos[:, None] / 8 + torch.arange(d) / d)
    return q, k, v


def budgets_for(name: str, budgets, n: int, d: int, heads: int = HEADS) -> list[int]:
    """The budgets of ``budgets`` valid for method ``name``; if none, the powers of two up to its maximum.

    Parameters
    ----------
    name : str
        A name of :data:`gpu.approx.METHODS`.
    budgets : iterable of int
        The requested budgets.
    n : int
        Sequence length.
    d : int
        Head dimension.
    heads : int, optional
        Number of heads (a latent method's maximum rank is ``2 heads d``).

    Returns
    -------
    list of int
        The valid budgets.

    Examples
    --------
    >>> from gpu.approx.cli import budgets_for
    >>> budgets_for("swa", [16, 32], 64, 8)
    [16, 32]
    >>> budgets_for("tpa", [16, 32], 64, 8)  # rank at most min(heads, d) = 4
    [1, 2, 4]
    """
    top = METHODS[name].max_budget(n, d, heads)
    if top is None:
        return list(budgets)
    valid = [b for b in budgets if b <= top]
    return valid or [2**i for i in range(int(math.log2(top)) + 1)]


def _options(name: str, kind: str, n: int, d: int, seed: int, causal: bool) -> dict:
    if not causal or "calibration" not in METHODS[name].options:
        return {}
    _, ck, cv = synthetic(kind, n, d, 10_000 + seed)
    return {"calibration": ck if name == "loki" else (ck, cv)}


def study(kinds, n, d, budgets, seeds, methods=tuple(METHODS), causal=False, seed: int = 0) -> list[dict]:
    """One row per (kind, method, budget): mean and std of the relative error over ``seeds`` draws.

    Data and method seed are both ``s`` for ``s`` in ``range(seed, seed + seeds)``; the error is
    :func:`gpu.approx.relative_error` against exact float64 attention; the cost is at ``heads = 4``, with its FLOPs
    as a share of exact attention's and of SWA's at the same budget.

    Parameters
    ----------
    kinds : iterable of str
        Kinds of :func:`synthetic`.
    n : int
        Sequence length.
    d : int
        Head dimension.
    budgets : iterable of int
        Budgets (keys per query, or ranks).
    seeds : int
        Draws per row.
    methods : iterable of str, optional
        Names of :data:`gpu.approx.METHODS`; those without a version in the direction of ``causal`` are left out.
    causal : bool, optional
        Causal methods against exact causal attention.
    seed : int, default 0
        The first seed.

    Returns
    -------
    list of dict
        Rows with ``kind, method, budget, mean, std``, the :class:`gpu.approx.costs.Cost` fields, ``flops_share``
        and ``flops_vs_swa``.

    Examples
    --------
    >>> from gpu.approx.cli import study
    >>> rows = study(["random"], 16, 4, [4], 2, methods=("swa", "top-k"))
    >>> [(r["method"], r["budget"], r["flops_vs_swa"]) for r in rows]
    [('swa', 4, 1.0), ('top-k', 4, 2.33...)]
    """
    rows = []
    reference = exact_cost(n, d, HEADS, causal)
    swa = {b: method_cost("swa", n, d, b, heads=HEADS, causal=causal).flops for b in budgets}
    for kind in kinds:
        draws = range(seed, seed + seeds)
        data = [synthetic(kind, n, d, s) for s in draws]
        exact = [exact_attention(q, k, v, causal=causal) for q, k, v in data]
        for name in (m for m in methods if METHODS[m].has_version(causal)):
            for budget in budgets_for(name, budgets, n, d):
                errors = [
                    relative_error(
                        approximate(
                            name, q, k, v, budget, seed=s, causal=causal, **_options(name, kind, n, d, s, causal)
                        ),
                        ref,
                    )
                    for s, (q, k, v), ref in zip(draws, data, exact, strict=True)
                ]
                mean = sum(errors) / len(errors)
                std = math.sqrt(sum((e - mean) ** 2 for e in errors) / max(1, len(errors) - 1))
                cost = method_cost(name, n, d, budget, heads=HEADS, causal=causal)
                rows.append(
                    {
                        "kind": kind,
                        "method": name,
                        "budget": budget,
                        "mean": mean,
                        "std": std,
                        **cost.to_dict(),
                        "flops_share": cost.flops / reference.flops,
                        "flops_vs_swa": cost.flops / swa[budget] if budget in swa else None,
                    }
                )
    return rows


def cost_rows(n, d, budgets, heads, causal, methods=tuple(METHODS), measure: bool = False) -> list[dict]:
    """Every method's :func:`gpu.approx.method_cost` at every valid budget, after exact attention's.

    With ``measure`` also the matrix-product FLOPs torch counts in one run of the lab's code
    (:func:`gpu.approx.measure.measured_flops`) and the peak bytes its profiler records
    (:func:`gpu.approx.measure.measured_peak_bytes`, plus the inputs). Methods without a version in that direction
    (causal or bidirectional) are left out.

    Parameters
    ----------
    n : int
        Sequence length.
    d : int
        Head dimension.
    budgets : iterable of int
        Budgets (keys per query, or ranks).
    heads : int
        Number of heads.
    causal : bool
        Causal costs.
    methods : iterable of str, optional
        Names of :data:`gpu.approx.METHODS`.
    measure : bool, optional
        Also run the lab's code once per row and measure it.

    Returns
    -------
    list of dict
        Rows with ``method, budget``, the :class:`gpu.approx.costs.Cost` fields and ``flops_share`` (and, with
        ``measure``, ``measured_flops`` and ``measured_peak_bytes``).

    Examples
    --------
    >>> from gpu.approx.cli import cost_rows
    >>> rows = cost_rows(16, 4, [4], 1, False, ("swa", "performer"))
    >>> [(r["method"], r["budget"]) for r in rows]
    [('exact', 16), ('swa', 4), ('performer', 4)]
    >>> rows[0]["flops_share"]
    1.0
    """
    rows = [{"method": "exact", "budget": n, **exact_cost(n, d, heads, causal).to_dict(), "flops_share": 1.0}]
    inputs = 3 * 4 * n * d * heads  # q, k, v: the measured peak is beyond the inputs
    if measure:
        rows[0]["measured_flops"] = measured_flops("exact", n, d, n, heads, causal)
        rows[0]["measured_peak_bytes"] = measured_peak_bytes("exact", n, d, n, heads, causal) + inputs
    reference = rows[0]["flops"]
    for name in methods:
        if not METHODS[name].has_version(causal):
            continue
        for budget in budgets_for(name, budgets, n, d, heads):
            cost = method_cost(name, n, d, budget, heads=heads, causal=causal)
            rows.append({"method": name, "budget": budget, **cost.to_dict(), "flops_share": cost.flops / reference})
            if measure:
                rows[-1]["measured_flops"] = measured_flops(name, n, d, budget, heads, causal)
                rows[-1]["measured_peak_bytes"] = measured_peak_bytes(name, n, d, budget, heads, causal) + inputs
    return rows


def _print_costs(rows, n, d, heads, causal):
    print(f"cost of one forward, n = {n}, d = {d}, heads = {heads}{', causal' if causal else ''}, 4-byte numbers")
    measured = "measured_flops" in rows[0]
    print(
        f"{'method':<15}{'budget':>7}{'GFLOP':>10}{'x exact':>9}{'peak MiB':>10}{'KV B/token':>12}"
        + (f"{'lab GFLOP':>11}{'lab MiB':>9}" if measured else "")
    )
    for r in rows:
        print(
            f"{r['method']:<15}{r['budget']:>7}{r['flops'] / 1e9:>10.4f}{r['flops_share']:>9.3f}"
            f"{r['peak_bytes'] / 2**20:>10.2f}{r['kv_cache_bytes_per_token']:>12.1f}"
            + (f"{r['measured_flops'] / 1e9:>11.4f}{r['measured_peak_bytes'] / 2**20:>9.2f}" if measured else "")
        )


def equal_compute(rows, budget, tolerance: float = 0.25) -> list[str]:
    """The methods whose FLOPs at ``budget`` are within ``tolerance`` of SWA's at the same budget.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`study`.
    budget : int
        The budget compared.
    tolerance : float, optional
        Largest relative difference ``|flops_vs_swa - 1|`` accepted.

    Returns
    -------
    list of str
        The method names, sorted.

    Examples
    --------
    >>> from gpu.approx.cli import equal_compute, study
    >>> rows = study(["random"], 16, 4, [4], 1, methods=("swa", "top-k"))
    >>> equal_compute(rows, 4)
    ['swa']
    """
    return sorted(
        {
            r["method"]
            for r in rows
            if r["budget"] == budget and r["flops_vs_swa"] is not None and abs(r["flops_vs_swa"] - 1) <= tolerance
        }
    )


def _study_bytes(n: int, d: int) -> int:
    """Bytes one case of the study (or one measured cost) holds at once: float64 q, k, v and outputs for
    :data:`HEADS` heads, and four ``n x n`` float64 matrices per head (exact scores and weights, a method's dense
    scores and its mask)."""
    return HEADS * (6 * n * d + 4 * n * n) * 8


def _print_study(rows, kinds, seeds, n, d, causal):
    for kind in kinds:
        print(
            f"\n{kind}: relative error (mean +- std over {seeds} seeds), n = {n}, d = {d}"
            f"{', causal' if causal else ''}; FLOPs as a share of exact attention in brackets"
        )
        for name in dict.fromkeys(r["method"] for r in rows):
            cells = [r for r in rows if r["kind"] == kind and r["method"] == name]
            text = "".join(
                f"  m={r['budget']:<4}{r['mean']:>8.4f} +-{r['std']:.3f} [{r['flops_share']:.2f}]" for r in cells
            )
            print(f"{name:<15}{text}")
    for budget in sorted({r["budget"] for r in rows if r["flops_vs_swa"] is not None}):
        print(f"at equal compute with SWA (FLOPs within 25%) at m = {budget}: {', '.join(equal_compute(rows, budget))}")


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m gpu.approx`` (one-line errors naming the flag).

    Returns
    -------
    argparse.ArgumentParser
        The parser (:class:`receptive.cli_parser.OneLineErrorParser`); :func:`main` checks the values together.

    Examples
    --------
    >>> args = build_parser().parse_args(["--costs", "--budgets", "8,16"])
    >>> args.costs, args.budgets, args.n, args.json
    (True, '8,16', 512, None)
    """
    p = OneLineErrorParser(
        prog="python -m gpu.approx", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated from {', '.join(KINDS)}")
    p.add_argument("--methods", default=",".join(METHODS), help="comma-separated from " + ", ".join(METHODS))
    add_n_option(p, 512)
    p.add_argument("--d", type=int, default=32, help="head dimension (default 32, MiniLM's)")
    p.add_argument("--heads", type=int, default=HEADS, help="heads for --costs (default 4; the study uses 4)")
    add_budget_option(p, "16,32,64,128")
    add_seeds_option(p, 3)
    p.add_argument("--causal", action="store_true", help="causal methods against exact causal attention")
    p.add_argument("--costs", action="store_true", help="print the cost table only (no errors are computed)")
    p.add_argument(
        "--measure",
        action="store_true",
        help="with --costs: also the FLOPs and peak bytes torch measures in one run of each",
    )
    add_json_option(p)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1; small tensors, shared cores)")
    return p


def main(argv=None) -> int:
    """Run ``python -m gpu.approx``: the error study, or with ``--costs`` the cost table; ``--json`` writes the rows.

    Parameters
    ----------
    argv : list of str or None, optional
        The command line without the program name; ``None``: ``sys.argv[1:]``.

    Returns
    -------
    int
        0 on success (a bad argument exits 2 with one line on stderr).

    Examples
    --------
    >>> main(["--costs", "--n", "64", "--methods", "swa", "--budgets", "8"])  # doctest: +ELLIPSIS
    cost of one forward, n = 64, ...
    swa                  8 ...
    0
    """
    p = build_parser()
    args = p.parse_args(argv)
    given = given_options(p, argv)
    try:
        if "costs" in given:
            refuse_together(given, "--kinds", "--costs", "the cost table has no input kinds")
            refuse_together(given, "--seeds", "--costs", "the cost table draws nothing")
            refuse_together(given, "--seed", "--costs", "the cost table draws nothing")
            refuse_together(given, "--threads", "--costs", "it sets the threads of the error study")
        for flag in ("--measure", "--heads"):
            if flag[2:] in given and "costs" not in given:
                raise ValueError(f"{flag}: applies with --costs only (the error study runs {HEADS} heads, unmeasured)")
        kinds = comma_names("--kinds", args.kinds, KINDS)
        methods = comma_names("--methods", args.methods, METHODS)
        budgets = comma_ints("--budgets", args.budgets)
    except ValueError as exc:
        p.error(str(exc))
    for option, value, low in (
        ("--d", args.d, 1),
        ("--heads", args.heads, 1),
        ("--threads", args.threads, 1),
    ):
        if value < low:
            p.error(f"{option}: expected an integer >= {low}, got {value}")
    if max(budgets) > args.n:
        p.error(f"--budgets: expected budgets of at most --n = {args.n} keys per query (or ranks), got {max(budgets)}")
    if not args.costs or args.measure:  # before anything is drawn: exact attention holds n^2 scores per head
        try:
            what = f"the n x n matrices of exact attention at n = {args.n}, d = {args.d}"
            check_memory("--n", _study_bytes(args.n, args.d), what, physical_memory(), "the machine's memory")
        except MemoryError as exc:
            p.error(str(exc))
    methods = [m for m in methods if METHODS[m].has_version(args.causal)]
    if not methods:
        p.error(f"--methods: none of them has a {'causal' if args.causal else 'bidirectional'} version")
    if args.costs:
        rows = cost_rows(args.n, args.d, budgets, args.heads, args.causal, methods, args.measure)
        parameters = {k: getattr(args, k) for k in ("n", "d", "heads", "budgets", "causal", "measure")}
        if args.json != "-":
            _print_costs(rows, args.n, args.d, args.heads, args.causal)
    else:
        with torch_threads(args.threads):
            rows = study(kinds, args.n, args.d, budgets, args.seeds, methods, args.causal, args.seed)
        parameters = {k: getattr(args, k) for k in ("kinds", "methods", "n", "d", "budgets", "seed", "seeds", "causal")}
        parameters["heads"] = HEADS
        if args.json != "-":
            _print_study(rows, kinds, args.seeds, args.n, args.d, args.causal)
    write_output(args.json, json.dumps({"parameters": parameters, "rows": rows}, indent=1) + "\n", "--json")
    return 0


#: The command's entry point (``python -m gpu.approx`` and the console script ``receptive-approx``): :func:`main`, ended
#: by :func:`graphs.cli_common.run_command` (one line on an interrupt or a closed pipe).
run_cli = partial(run_command, main)
