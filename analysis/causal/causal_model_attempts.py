"""Changes to the causal SA+SWA model that were tried (docs/theory.md Sec. 5, "All seeds pooled"), scored on the
pooled seeds through the same code as ``python -m analysis.causal.pooled``.

Each variant changes one step of :func:`receptive.theory.causal_failure_clumps` (``model`` is that function, step
for step, and is tested equal to it):

- ``events``: a missed pair starts a failure *event* iff no earlier pair of its run in the bulk is missed, the bulk
  ignoring the private last-layer band of the next target: ``f = r_b / (1 - r + r_b)`` with ``r = 1 - psi_2/psi_1``
  and ``r_b = 1 - psi_b/psi_1`` (``psi_b``: two consecutive targets, the later one not counting a shortcut that lands
  on it in the last layer), ``f^2`` for exact runs and ``f`` for sampled targets;
- ``events-exact``: ``f^2`` for exact runs, sampled targets as in ``model``;
- ``euler``: the expected Euler characteristic of the 4-connected missed set, ``psi_1 - psi_2 - psi_k + psi_kk``
  (``psi_k``, ``psi_kk``: the tree started at a run of two keys, one and two targets), and the key runs
  ``psi_1 - psi_k`` for sampled targets;
- ``key-root``: ``r_q r_k`` with ``r_k = 1 - psi_k/psi_1`` for exact runs, ``r_k`` for sampled targets;
- ``far-both-axes``: the profile part of exact runs declumped along both axes, ``(u - u2)^2 / u``;
- ``cut3``, ``cut12``: the cut between the two models at ``3 L (w - 1)`` or ``12 L (w - 1)`` instead of ``6``;
- ``lead-cap``: the run-branching tables with every run capped at its nearest child's start (``_CappedRows``: a
  parent's front reaches its nearest child's start at the child's speed, after which its new tokens are the child's,
  which the tree counts twice), clumps as in ``model``; ``lead-cap-events``: the same tables with the event
  declumping of ``events`` in both modes; ``lead-cap-events-exact``: ``f^2`` for exact runs, ``r`` for sampled
  targets.

Scores (points with ``n >= 1024``): exact share, within one layer (all points), binomial checks below 0.01 and 0.001,
and the log-likelihood of the seeds' L*, ``sum log(F(L*) - F(L* - 1))`` with the model's ``F(L) = P(full after L)``
(a seed not full within the cap scores ``log(1 - F(cap))``; floored at ``1e-6``), with its z-score against the
variant's own law (``receptive.bound.analysis.log_likelihood_check``). ``--dirs`` scores on other runs, e.g. only
the seeds measured after the variants were fixed (hold-out).

    python -m analysis.causal.causal_model_attempts --out analysis/causal/results/causal_model_attempts.json
    python -m analysis.causal.causal_model_attempts --variants lead-cap,lead-cap-events,lead-cap-events-exact \
        --out analysis/causal/results/causal_model_attempts.json --append
    python -m analysis.causal.causal_model_attempts --dirs analysis/causal/results/seeds/s15-39-n2p10-2p15,... \
        --out FILE
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from graphs.cli_common import OneLineErrorParser, check_shape, output_file, run_command, write_atomic
from receptive.bound import models
from receptive.theory import CausalProfile, RunMissTable, sa_key_probability
from receptive.validation import check_int

from . import pooled

VARIANTS = (
    "model",
    "events",
    "events-exact",
    "euler",
    "key-root",
    "far-both-axes",
    "cut3",
    "cut12",
    "lead-cap",
    "lead-cap-events",
    "lead-cap-events-exact",
)


class _Rows(RunMissTable):
    """The run-branching rows, with the same row for a root run of two tokens (``psi * exp(-p * extra)``: the extra
    token fires into the same zones in every layer) and a first row of one's choosing."""

    def __init__(self, p, a, depth, m, first=None):
        super().__init__(p, a, depth, m)
        if first is not None:
            self.psi[0] = first
            self.prefix[0] = np.concatenate([[0.0], np.cumsum(1 - first)])

    def next_pair(self) -> tuple[np.ndarray, np.ndarray]:
        t = len(self.psi)
        total = np.zeros(self.depth + 1)
        extra = np.zeros(self.depth + 1)
        for k in range(t):
            c = k * self.step + 1
            zone = self.prefix[t - k - 1][np.clip(self.d - c - self.step, -1, self.depth) + 1]
            total += c * zone
            extra += zone
        beyond = self.d > t * self.step + self.m - 1
        row = np.where(beyond, np.exp(-self.p * total), 0.0)
        self.psi.append(row)
        self.prefix.append(np.concatenate([[0.0], np.cumsum(1 - row)]))
        return row, np.where(beyond, np.exp(-self.p * (total + extra)), 0.0)


class _CappedRows(_Rows):
    """The run-branching rows with every run capped at its nearest child's start (the *lead cap*): the parent's
    front, growing at the child's speed, reaches the child's start ``b`` and from then on its new tokens are the
    child's (a child born at ``b >= c_{s+1}`` in layer ``s + 1`` holds ``c_{k-s}`` tokens from ``b`` at layer ``k``,
    more than the parent's ``c_k - b``), so the parent holds ``min(c_k, b)`` distinct tokens. Decomposing the tree's
    Poisson children on the nearest one (start ``b``, layer ``s + 1``, density ``p c_s`` times no child before ``b``,
    ``G(b) = exp(-p sum_k c_k (b - c_{k+1})^+)``), the children beyond ``b`` fire from ``min(c_k, b)`` tokens::

        psi_m(d, t) = tree(d, t) + sum_{b < c_{t-1}} G(b) H(b, d) [exp(-p sum_k min(c_k, b) S_k(b, d))
                                                                  - exp(-p sum_k c_k S_k(b, d))]

    with ``tree`` the recursion of :func:`receptive.theory.causal_run_miss_table` (on the capped rows),
    ``H(b, d) = sum_{s: c_{s+1} <= b} p c_s psi_m(d - b, t - s - 1)`` and
    ``S_k(b, d) = sum_{e = max(b + 1, c_{k+1})}^{d} (1 - psi_m(d - e, t - k - 1))``; ``b >= c_{t-1}`` caps nothing.
    Siblings overlapping each other are still ignored. Cost ``O(L (a - 1) D)`` per layer and ``k``."""

    def next_pair(self) -> tuple[np.ndarray, None]:
        return self.next(), None

    def next(self) -> np.ndarray:
        t = len(self.psi)
        step, depth, p, d = self.step, self.depth, self.p, self.d
        total = np.zeros(depth + 1)
        for k in range(t):
            c = k * step + 1
            total += c * self.prefix[t - k - 1][np.clip(d - c - step, -1, depth) + 1]
        value = np.exp(-p * total)
        b = np.arange(step + 1, min((t - 1) * step + 1, depth + 1))  # the nearest child's start: c_1 .. c_{t-1} - 1
        if b.size:
            c = np.arange(t) * step + 1
            prefix = np.array([self.prefix[t - k - 1] for k in range(t)])  # row k: the zone sums of layer k's shots
            psi = np.array([self.psi[t - k - 1] for k in range(t)])
            # k <= K(b) (c_{k+1} <= b + 1): S_k(b, d) = prefix_k[d - b], the same with and without the cap
            common = np.cumsum(c[:, None] * prefix, axis=0)
            born = np.cumsum(self.p * c[:, None] * psi, axis=0)  # H: a child at b, from the layers with c_{k+1} <= b
            # k > K(b): S_k does not depend on b; the cap takes min(c_k, b) of its c_k tokens, for k >= J(b)
            ahead = prefix[np.arange(t)[:, None], np.clip(d[None, :] - c[:, None] - step + 1, 0, depth + 1)]
            suffix = np.zeros((t + 1, depth + 1))
            suffix_c = np.zeros((t + 1, depth + 1))
            suffix[:t] = np.cumsum(ahead[::-1], axis=0)[::-1]
            suffix_c[:t] = np.cumsum((c[:, None] * ahead)[::-1], axis=0)[::-1]
            last = b // step - 1  # K(b)
            first_over = (b - 1) // step + 1  # J(b): the first layer whose run is longer than b
            lag = d[None, :] - b[:, None]
            e_cap = common[last[:, None], np.clip(lag, 0, depth + 1)]
            e_cap += suffix_c[last + 1] - suffix_c[first_over] + b[:, None] * suffix[first_over]
            excess = suffix_c[first_over] - b[:, None] * suffix[first_over]  # sum_k (c_k - b)^+ S_k(b, d)
            h = np.where(lag >= 0, born[first_over[:, None] - 2, np.clip(lag, 0, depth)], 0.0)
            log_g = -self.p * np.sum(c[None, :] * np.maximum(b[:, None] - c[None, :] - step, 0), axis=1)
            gain = -np.expm1(-self.p * excess) * np.exp(-self.p * e_cap)
            value = value + np.sum(np.exp(log_g)[:, None] * h * gain, axis=0)
        row = np.where(d > t * step + self.m - 1, np.minimum(value, 1.0), 0.0)
        self.psi.append(row)
        self.prefix.append(np.concatenate([[0.0], np.cumsum(1 - row)]))
        return row


def variant_clumps(n: int, w: int, layers: int, targets: int | None, variant: str) -> np.ndarray:
    """``N_L`` for ``L = 1..layers`` of causal SA+SWA (``w_swa = w``, truncated bands) under ``variant``."""
    if variant not in VARIANTS:
        raise ValueError(f"variant: expected one of {', '.join(VARIANTS)}, got {variant!r}")
    n, w, layers = check_int("n", n, 2), check_int("w", w, 2), check_int("layers", layers, 1)
    if targets is not None and not 1 <= targets <= n:
        raise ValueError(f"targets: expected an integer in [1, {n}], got {targets}")
    a, cut_factor = w, {"cut3": 3, "cut12": 12}.get(variant, 6)
    x = np.arange(n)
    profile_model = CausalProfile(n, w, a)
    p = sa_key_probability(n, w)
    depth = min(n - 1, cut_factor * layers * (a - 1) + a)
    first_bulk = np.ones(depth + 1)
    first_bulk[1] = 0.0  # the later target is not reached by a shortcut that lands on it in the last layer
    rows = _CappedRows if variant.startswith("lead-cap") else _Rows
    one, two, bulk = rows(p, a, depth, 1), rows(p, a, depth, 2), rows(p, a, depth, 2, first_bulk)
    share = 1.0 if targets is None else targets / n
    out = []
    for layer in range(1, layers + 1):
        u, u2 = profile_model.step()
        with np.errstate(divide="ignore", invalid="ignore"):
            r_far = np.where(u > 0, 1 - u2 / u, 0.0)
        far_axes = r_far * r_far if variant == "far-both-axes" and targets is None else r_far
        profile = (n - x) * u * np.maximum(far_axes, 0.0)
        cut = min(n - 1, cut_factor * layer * (a - 1) + a)
        (p1, k1), (p2, k2), (pb, _) = one.next_pair(), two.next_pair(), bulk.next_pair()
        k1, k2 = (p1 if v is None else v for v in (k1, k2))  # the capped rows have no two-key root
        p1, k1, p2, k2, pb = (v[: cut + 1] for v in (p1, k1, p2, k2, pb))
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(p1 > 0, 1 - p2 / p1, 0.0)
            r_k = np.where(p1 > 0, 1 - k1 / p1, 0.0)
            r_b = np.where(p1 > 0, np.clip(1 - pb / p1, 0.0, 1.0), 0.0)
            f = np.where(p1 > 0, r_b / np.maximum(1 - r + r_b, 1e-300), 0.0)
        sampled = targets is not None
        if "events" in variant:
            per_pair = (r if variant.endswith("events-exact") else f) if sampled else f * f
        elif variant == "euler":
            per_pair = None
            events = (p1 - k1) if sampled else np.maximum(p1 - p2 - k1 + k2, 0.0)
        elif variant == "key-root":
            per_pair = r_k if sampled else r * r_k
        else:
            per_pair = r if sampled else r * r
        near = (n - x[: cut + 1]) * (events if per_pair is None else p1 * per_pair)
        out.append(share * (float(np.sum(near)) + float(np.sum(profile[cut + 1 :]))))
        if out[-1] < 1e-12:
            out.extend([0.0] * (layers - len(out)))
            break
    return np.array(out)


def missed_pairs(n: int, w: int, layers: int, capped: bool) -> np.ndarray:
    """Expected missed (key, query) pairs of causal SA+SWA after ``L = 1..layers`` (``w_swa = w``, truncated bands):
    ``sum_{x <= D} (n - x) psi_1(x, L) + sum_{x > D} (n - x) u_L(x)``, with the run-branching table of the model
    (``capped=False``) or the lead-capped one, the profile model beyond the cut ``D = 6 L (w - 1) + w``."""
    n, w, layers = check_int("n", n, 2), check_int("w", w, 2), check_int("layers", layers, 1)
    p = sa_key_probability(n, w)
    table = (_CappedRows if capped else _Rows)(p, w, min(n - 1, 6 * layers * (w - 1) + w), 1)
    x = np.arange(n)
    profile_model = CausalProfile(n, w, w)
    out = []
    for layer in range(1, layers + 1):
        u = profile_model.step()[0]
        cut = min(n - 1, 6 * layer * (w - 1) + w)
        near = table.next()[: cut + 1]
        out.append(float(np.sum((n - x[: cut + 1]) * near) + np.sum(((n - x) * u)[cut + 1 :])))
    return np.array(out)


def score(variant: str, dirs=pooled.DEFAULT_DIRS) -> dict:
    """The pooled evaluation of causal SA+SWA with ``variant``'s probabilities (``analysis.causal.pooled``'s code
    path, the analytic model function of ``receptive.bound.models`` swapped for the variant's while it runs)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant: expected one of {', '.join(VARIANTS)}, got {variant!r}")

    def probabilities(pattern, n, w, causal, circular, max_layers, targets):
        clumps = variant_clumps(n, w, max_layers, targets, variant)
        return tuple(float(v) for v in np.maximum.accumulate(np.exp(-clumps)))

    original = models.model_probabilities
    models.model_probabilities = probabilities
    try:
        result = pooled.pooled_evaluation(dirs, patterns=["sa+swa"], causal=(True,))
    finally:
        models.model_probabilities = original
    big = [p for p in result.points if p.n >= 1024 and p.predicted is not None]
    checks = [c["p_value"] for p in big for c in p.probability_checks]
    if "sa+swa causal" not in result.summary:
        raise ValueError(f"dirs: no causal SA+SWA runs under {', '.join(map(str, dirs))}")
    summary = result.summary["sa+swa causal"]
    return {
        "variant": variant,
        "points_n_ge_1024": len(big),
        "exact_n_ge_1024": sum(p.exact for p in big),
        "calibrated_expected_exact": float(sum(p.exact_probability for p in big)),
        "within_one_all": f"{sum(bool(p.within_one) for p in result.points)}/{len(result.points)}",
        "checks_n_ge_1024": len(checks),
        "checks_below_0.01": sum(v < 0.01 for v in checks),
        "checks_below_0.001": sum(v < 0.001 for v in checks),
        "log_likelihood_n_ge_1024": summary["log_likelihood_n_ge_1024"],
        "expected_log_likelihood_n_ge_1024": summary["expected_log_likelihood_n_ge_1024"],
        "log_likelihood_z": summary["log_likelihood_z"],
        "misses": [[p.n, p.w, p.method, p.typical, p.predicted] for p in big if not p.exact],
    }


def read_rows(path: Path) -> list[dict]:
    """The rows of an earlier ``--out`` that ``--append`` keeps, each with a known ``variant``; else a ``ValueError``
    naming ``--out``."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or "not JSON"
        raise ValueError(f"--out: cannot read {path} to append to it ({reason})") from None
    try:
        check_shape(doc, {"rows": [{"variant": frozenset(VARIANTS)}]})
    except ValueError as exc:
        raise ValueError(f"--out: {path}: {exc}; expected a file of this script to append to") from None
    return doc["rows"]


def main(argv: list[str] | None = None) -> int:
    parser = OneLineErrorParser(
        prog="python -m analysis.causal.causal_model_attempts", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    parser.add_argument(
        "--out", type=output_file("--out", parents=True, suffixes=(".json",)), required=True, help="JSON file to write"
    )
    parser.add_argument(
        "--dirs",
        default=",".join(pooled.DEFAULT_DIRS),
        help="comma-separated directories whose tasks.jsonl are pooled (default: %(default)s)",
    )
    parser.add_argument(
        "--append",
        action="store_true",
        help="keep the other variants' rows of an existing --out (their command stays; this one is listed under "
        "'appended_commands')",
    )
    args = parser.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        parser.error(f"--variants: expected names from {', '.join(VARIANTS)}, got {args.variants!r}")
    dirs = [d.strip() for d in args.dirs.split(",") if d.strip()]
    missing = [d for d in dirs if not Path(d).is_dir()]
    if missing or not dirs:
        parser.error(f"--dirs: expected existing directories, got {args.dirs!r}")
    kept = []
    if args.append and args.out.exists():
        try:
            kept = read_rows(args.out)
        except ValueError as err:
            parser.error(str(err))
    rows = []
    for variant in variants:
        try:
            rows.append(score(variant, dirs))
        except ValueError as err:
            parser.error(str(err))
        row = rows[-1]
        print(
            f"{variant}: exact {row['exact_n_ge_1024']}/{row['points_n_ge_1024']} (calibrated "
            f"{row['calibrated_expected_exact']:.1f}), within one {row['within_one_all']}, checks < 0.01 / 0.001: "
            f"{row['checks_below_0.01']} / {row['checks_below_0.001']} of {row['checks_n_ge_1024']}, "
            f"log-likelihood {row['log_likelihood_n_ge_1024']:.1f} (z "
            + ("n/a" if row["log_likelihood_z"] is None else f"{row['log_likelihood_z']:+.2f}")
            + ")",
            flush=True,
        )
    command = "python -m analysis.causal.causal_model_attempts " + " ".join(argv if argv is not None else sys.argv[1:])
    doc = {"command": command, "rows": rows}
    if args.append and args.out.exists():
        doc = json.loads(args.out.read_text())
        by_variant = {row["variant"]: row for row in kept} | {row["variant"]: row for row in rows}
        doc["rows"] = [by_variant[v] for v in VARIANTS if v in by_variant]
        doc["appended_commands"] = [*doc.get("appended_commands", []), command]
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n", option="--out", mkdir=True)
    return 0


if __name__ == "__main__":
    run_command(main)
