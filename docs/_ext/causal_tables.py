"""The tables of the causal study (``analysis/causal/results``) and of its theory page: a mixin of ``Tables``.

Every cell is read from a committed result file, or computed at build time from one (a sum over its rows, the first
layer at which one of its probabilities reaches 1/2), or is a closed form of :mod:`receptive.theory` evaluated at a
point of the file (marked as such in the table's head).
"""

from __future__ import annotations

import math

from table_format import fmt, md_table, pct, pow2, secs

CAUSAL = "analysis/causal/results"

#: the evaluations of causal SA+SWA against the committed seeds: (label, pooled file)
SCORES = (
    ("grid", f"{CAUSAL}/pooled.json"),
    ("grid", f"{CAUSAL}/pooled_analytic.json"),
    ("hold-out round 1", f"{CAUSAL}/holdout/pooled.json"),
    ("hold-out round 1", f"{CAUSAL}/holdout/pooled_analytic.json"),
    ("hold-out round 2", f"{CAUSAL}/holdout2/pooled.json"),
    ("hold-out round 2", f"{CAUSAL}/holdout2/pooled_analytic.json"),
    ("round 2, seeds 0-39 at its misses", f"{CAUSAL}/holdout2-s15-39/pooled.json"),
)

#: the pre-registered hold-out rounds: (label, pooled file, predictions file)
HOLDOUT = (
    ("round 1", f"{CAUSAL}/holdout/pooled.json", f"{CAUSAL}/holdout/predictions.json"),
    ("round 2", f"{CAUSAL}/holdout2/pooled.json", f"{CAUSAL}/holdout2/predictions.json"),
)

#: the interval model's committed files, one per Monte Carlo seed
INTERVAL_FILES = tuple(f"{CAUSAL}/interval_model{suffix}.json" for suffix in ("", "_seed1", "_seed2"))

VARIANTS = f"{CAUSAL}/variants/variants.json"
BOUND = "analysis/bound/results/bound.json"


def _median_layer(probabilities) -> int | None:
    """The first layer (1-based) with ``P(full) >= 1/2``: the predicted L* (``receptive.theory.median_layer``)."""
    return next((i + 1 for i, p in enumerate(probabilities) if p >= 0.5), None)


def _causal_points(d: dict) -> list[dict]:
    return [p for p in d["points"] if p["pattern"] == "sa+swa" and p["causal"]]


def _key(p: dict) -> tuple:
    return p["n"], p["w"], p.get("targets")


def _seeds(summary: dict) -> str:
    lo, hi = summary["seeds_min"], summary["seeds_max"]
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _p(x: float) -> str:
    return f"{x:.2g}" if x >= 1e-3 else f"{x:.1e}"


class CausalTables:
    """Tables of the committed causal results; uses the ``load`` and ``header`` of ``results_tables.Tables``."""

    # -- the scores of the two models ---------------------------------------------------------------------------
    def causal_scores(self) -> str:
        """One row per evaluation of causal SA+SWA (pooled file), and the two hold-out rounds together."""
        docs = [self.load(rel) for _, rel in SCORES]
        rows = []
        for (label, _), d in zip(SCORES, docs, strict=True):
            if d is None:
                continue
            s = d["summary"]["sa+swa causal"]
            rows.append(
                [
                    label,
                    d["model"],
                    str(s["points"]),
                    f"{s['runs']:,}",
                    _seeds(s),
                    secs(s["seconds"]),
                    f"{s['exact_n_ge_1024']} of {s['points_n_ge_1024']} ({pct(s['exact_share_n_ge_1024'])})",
                    f"{s['expected_exact_n_ge_1024']:.1f} (sd {s['expected_exact_sd']:.1f})",
                    f"{s['within_one']} of {s['points']}",
                    f"{s['probability_checks_rejected_at_1pct']} of {s['probability_checks']}",
                    _p(s["min_p_value"]),
                    f"{s['log_likelihood_z']:+.2f}",
                ]
            )
        rounds = [d["summary"]["sa+swa causal"] for d in (docs[2], docs[4]) if d is not None]
        if len(rounds) == 2:
            exact = sum(s["exact_n_ge_1024"] for s in rounds)
            points = sum(s["points_n_ge_1024"] for s in rounds)
            sd = math.sqrt(sum(s["expected_exact_sd"] ** 2 for s in rounds))
            ll = sum(s["log_likelihood_n_ge_1024"] - s["expected_log_likelihood_n_ge_1024"] for s in rounds)
            ll_sd = math.sqrt(sum(s["expected_log_likelihood_sd"] ** 2 for s in rounds))
            rows.append(
                [
                    "hold-out rounds 1 and 2 (sums)",
                    docs[2]["model"],
                    str(sum(s["points"] for s in rounds)),
                    f"{sum(s['runs'] for s in rounds):,}",
                    _seeds(_span(rounds)),
                    secs(sum(s["seconds"] for s in rounds)),
                    f"{exact} of {points} ({pct(exact / points)})",
                    f"{sum(s['expected_exact_n_ge_1024'] for s in rounds):.1f} (sd {sd:.1f})",
                    f"{sum(s['within_one'] for s in rounds)} of {sum(s['points'] for s in rounds)}",
                    f"{sum(s['probability_checks_rejected_at_1pct'] for s in rounds)} of "
                    f"{sum(s['probability_checks'] for s in rounds)}",
                    _p(min(s["min_p_value"] for s in rounds)),
                    f"{ll / ll_sd:+.2f}",
                ]
            )
        head = [
            "evaluation",
            "model",
            "points",
            "runs",
            "seeds per point",
            "task time of the runs",
            "exact (n ≥ 1024)",
            "a calibrated model expects",
            "within one layer",
            "binomial checks below 0.01",
            "smallest p",
            "log-likelihood z",
        ]
        intro = (
            "Causal SA+SWA. *Exact*: the predicted L* (first layer with P(full) ≥ 1/2) equals the typical L* of the "
            "seeds; *a calibrated model expects*: the exact count if the model's probabilities were the truth; "
            "*log-likelihood z*: the seeds' log-likelihood under the model against the model's own law (0 for a "
            "calibrated model). The last row adds up the two rounds.\n\n"
        )
        return self.header(*(rel for _, rel in SCORES), data=docs) + intro + md_table(head, rows)

    def causal_misses(self) -> str:
        """Every point where the predicted L* is not the typical one, with the seeds at the deciding layer."""
        files = [SCORES[0], SCORES[1], SCORES[2], SCORES[4], SCORES[6]]
        docs = [self.load(rel) for _, rel in files]
        rows = []
        for (label, _), d in zip(files, docs, strict=True):
            if d is None:
                continue
            points = {(p["n"], p["w"], p["method"]): p for p in _causal_points(d)}
            for m in d["summary"]["sa+swa causal"]["misses"]:
                p = points[m["n"], m["w"], m["method"]]
                layer = min(m["typical"], m["predicted"])
                full = sum(1 for x in p["full_layers"] if x is not None and x <= layer)
                check = next((c for c in p["probability_checks"] if c["layer"] == layer), None)
                rows.append(
                    [
                        f"{label} ({d['model']})",
                        pow2(m["n"]),
                        str(m["w"]),
                        m["method"],
                        str(m["seeds"]),
                        str(m["typical"]),
                        str(m["predicted"]),
                        m["direction"],
                        str(layer),
                        f"{full} of {len(p['full_layers'])}",
                        f"{p['probabilities'][layer - 1]:.2f}",
                        _p(check["p_value"]) if check else "",
                        f"{p['exact_probability']:.2f}",
                    ]
                )
        head = [
            "evaluation",
            "n",
            "w",
            "targets",
            "seeds",
            "typical L*",
            "predicted",
            "model is",
            "deciding layer L",
            "seeds full after L",
            "model's P(full after L)",
            "binomial p",
            "model's P(exact)",
        ]
        intro = (
            "The deciding layer is the earlier of the two L*; *model's P(exact)*: the probability that the seeds' "
            "typical L* equals the prediction if the model's probabilities were the truth.\n\n"
        )
        return self.header(*(rel for _, rel in files), data=docs) + intro + md_table(head, rows)

    def causal_holdout_rule(self) -> str:
        """The pre-registered rule of each hold-out round, part by part."""
        rels, data, rows = [], [], []
        for label, pooled_rel, predictions_rel in HOLDOUT:
            pooled, predictions = self.load(pooled_rel), self.load(predictions_rel)
            rels += [predictions_rel, pooled_rel]
            data += [predictions, pooled]
            if pooled is None or predictions is None:
                continue
            s = pooled["summary"]["sa+swa causal"]
            expected = predictions["expected_exact"]
            need = expected["mean"] - 2 * expected["sd"]
            unsure = sum(1 for p in predictions["points"] if p["exact_probability"] < 0.95)
            parts = [
                ("within one layer", f"{s['within_one']} of {s['points']}", "all", s["within_one"] == s["points"]),
                (
                    "exact count",
                    f"{s['exact_n_ge_1024']} of {s['points_n_ge_1024']}",
                    f"≥ {need:.1f} (calibrated {expected['mean']:.1f} less 2 sd {expected['sd']:.1f})",
                    s["exact_n_ge_1024"] >= need,
                ),
                (
                    "log-likelihood z",
                    f"{s['log_likelihood_z']:+.2f}",
                    "within ±2",
                    abs(s["log_likelihood_z"]) < 2,
                ),
                ("smallest binomial p", _p(s["min_p_value"]), "above 0.001", s["min_p_value"] > 0.001),
            ]
            for i, (part, value, needed, ok) in enumerate(parts):
                where = f"{label}: {len(predictions['points'])} points, {unsure} with P(exact) < 0.95" if i == 0 else ""
                rows.append([where, part, value, needed, "passes" if ok else "**fails**"])
        head = ["round", "part of the rule", "result", "the rule asks", "verdict"]
        return self.header(*rels, data=data) + md_table(head, rows)

    def causal_holdout_points(self) -> str:
        """The model's confidence at the hold-out points: how many it is sure of."""
        rows, rels, data = [], [], []
        for label, _, rel in HOLDOUT:
            d = self.load(rel)
            rels.append(rel)
            data.append(d)
            if d is None:
                continue
            q = sorted(p["exact_probability"] for p in d["points"])
            seeds = sorted({p["seeds"] for p in d["points"]})
            ns = sorted({p["n"] for p in d["points"]})
            ws = sorted({p["w"] for p in d["points"]})
            rows.append(
                [
                    label,
                    ", ".join(pow2(n) for n in ns),
                    ", ".join(map(str, ws)),
                    str(len(q)),
                    "-".join(map(str, (seeds[0], seeds[-1]) if len(seeds) > 1 else seeds)),
                    str(sum(1 for x in q if x > 0.99)),
                    str(sum(1 for x in q if x < 0.95)),
                    f"{q[0]:.2f}",
                ]
            )
        head = ["round", "n", "w", "points", "seeds", "P(exact) > 0.99", "P(exact) < 0.95", "smallest P(exact)"]
        intro = "P(exact): the probability, under the model, that the seeds' typical L* equals its prediction.\n\n"
        return self.header(*rels, data=data) + intro + md_table(head, rows)

    def causal_mc_seeds(self) -> str:
        """The interval model with three Monte Carlo seeds: its exact count and the points where they disagree."""
        pooled_rel = SCORES[0][1]
        pooled = self.load(pooled_rel)
        files = [self.load(rel) for rel in INTERVAL_FILES]
        if pooled is None or any(d is None for d in files):
            return self.header(pooled_rel, *INTERVAL_FILES, data=[pooled, *files])
        measured = {_key(p): p for p in _causal_points(pooled)}
        preds = [{_key(p): p["full_probability"] for p in d["points"]} for d in files]
        differ = sorted(k for k in measured if len({_median_layer(pr[k]) for pr in preds}) > 1)
        rows = []
        for d, pr in zip(files, preds, strict=True):
            big = [k for k, p in measured.items() if p["n"] >= 1024]
            exact = sum(1 for k in big if _median_layer(pr[k]) == measured[k]["typical"])
            cells = []
            for k in differ:
                lstar = _median_layer(pr[k])
                layer = min(_median_layer(q[k]) for q in preds)
                cells.append(f"{lstar} (P(full after {layer}) {pr[k][layer - 1]:.3f})")
            rows.append([str(d["seed"]), f"{exact} of {len(big)}", *cells])
        head = ["MC seed", "exact (n ≥ 1024)"]
        head += [f"n = {pow2(k[0])}, w = {k[1]} (typical {measured[k]['typical']})" for k in differ]
        intro = "The predicted L* at the points where the three Monte Carlo seeds disagree.\n\n"
        return self.header(*INTERVAL_FILES, pooled_rel, data=[*files, pooled]) + intro + md_table(head, rows)

    # -- measured L* against the laws --------------------------------------------------------------------------
    def causal_swa_lstar(self) -> str:
        """Typical L* of causal SA+SWA at every committed point, and its ratio to the scaling law where w³ < n."""
        from receptive.theory import causal_swa_scaling_law

        rel = SCORES[0][1]
        d = self.load(rel)
        if d is None:
            return ""
        points = {(p["n"], p["w"]): p for p in _causal_points(d)}
        ns = sorted({n for n, _ in points})
        ws = sorted({w for _, w in points})
        rows = []
        for w in ws:
            row = [str(w)]
            law_points = []
            for n in ns:
                p = points.get((n, w))
                if p is None:
                    row.append("")
                    continue
                cell = str(p["typical"])
                if w**3 < n:
                    cell += f" ({p['typical'] / causal_swa_scaling_law(n, w):.2f})"
                    if n >= 1024:
                        law_points.append((n, p["typical"]))
                row.append(cell)
            if len(law_points) >= 2:
                (n0, l0), (n1, l1) = law_points[0], law_points[-1]
                row.append(f"{math.log(l1 / l0) / math.log(n1 / n0):.2f} ({pow2(n0)} to {pow2(n1)})")
            else:
                row.append("")
            rows.append(row)
        seeds = d["summary"]["sa+swa causal"]
        sampled = [p for p in points.values() if p["method"] != "exact"]
        where = ""
        if sampled:
            first = min(sampled, key=lambda p: p["n"])
            where = f"; from n = {pow2(first['n'])} on {_targets(first)} sampled targets (a lower bound per seed)"
        intro = (
            f"Typical L* over each point's seeds ({_seeds(seeds)}){where}; in brackets, where w³ < n, its ratio to "
            "the law `receptive.theory.causal_swa_scaling_law(n, w)` (closed form). Last column: the local exponent "
            "ln(L*₁/L*₀)/ln(n₁/n₀) between the first and last n ≥ 1024 with w³ < n.\n\n"
        )
        head = ["w", *(pow2(n) for n in ns), "exponent of n"]
        return self.header(rel, data=[d]) + intro + md_table(head, rows)

    def causal_sa(self) -> str:
        """Pure causal SA: the seeds' L* against the median estimate and the sharp model."""
        from receptive.theory import causal_sa_full_layer_estimate

        d = self.load(BOUND)
        if d is None:
            return ""
        rows = []
        for p in d["points"]:
            if p["pattern"] != "sa" or not p["causal"]:
                continue
            estimate = causal_sa_full_layer_estimate(p["n"], p["w"])
            rows.append(
                [
                    pow2(p["n"]),
                    str(p["w"]),
                    ", ".join(map(str, p["full_layers"])),
                    str(p["typical"]),
                    fmt(estimate) if estimate is not None else "",
                    str(p["predicted"]),
                ]
            )
        skipped = [s for s in d.get("skipped", []) if s["pattern"] == "sa" and s["causal"]]
        cap = d["parameters"]["max_layers"]
        note = f"\n{len(skipped)} more causal SA points are predicted beyond the layer cap ({cap}) and not run.\n"
        head = ["n", "w", "L* per seed", "median", "`causal_sa_full_layer_estimate` (closed form)", "sharp model"]
        return self.header(BOUND, data=[d]) + md_table(head, rows) + note

    def bound_union(self) -> str:
        """Bidirectional grid points at which some seed needs more layers than the mean-field union bound."""
        d = self.load(BOUND)
        if d is None:
            return ""
        rows = []
        for regime in ("sa", "sa+swa"):
            points = [p for p in d["points"] if p["pattern"] == regime and not p["causal"]]
            out = [p for p in points if p["bound_holds"] is False]
            rows.append(
                [
                    regime.upper(),
                    str(len(points)),
                    str(len(points) - len(out)),
                    "; ".join(
                        f"n = {pow2(p['n'])}, w = {p['w']}: L* {', '.join(map(str, p['full_layers']))}, "
                        f"bound {p['bound']}"
                        for p in out
                    )
                    or "none",
                ]
            )
        head = ["pattern (bidirectional)", "points", "every seed within the bound", "exceptions"]
        return (
            self.header(BOUND, data=[d])
            + "The bound: `sa_union_bound_layer`, column `bound`.\n\n"
            + md_table(head, rows)
        )

    # -- the changes to the model that were tried -------------------------------------------------------------------
    def causal_model_attempts(self) -> str:
        """The changes to the analytic model, scored on all seeds and on the forty-seed extension's runs alone."""
        rels = (f"{CAUSAL}/causal_model_attempts.json", f"{CAUSAL}/causal_model_attempts_holdout.json")
        every, new = (self.load(r) for r in rels)
        if every is None or new is None:
            return self.header(*rels, data=[every, new])
        held = {r["variant"]: r for r in new["rows"]}

        def scores(r):
            return [
                f"{r['exact_n_ge_1024']} of {r['points_n_ge_1024']} ({r['calibrated_expected_exact']:.1f})",
                f"{r['checks_below_0.01']} / {r['checks_below_0.001']} of {r['checks_n_ge_1024']}",
                f"{r['log_likelihood_n_ge_1024']:.1f} ({r['log_likelihood_z']:+.2f})",
            ]

        rows = [[f"`{r['variant']}`", *scores(r), *scores(held[r["variant"]])] for r in every["rows"]]
        head = [
            "attempt",
            "all seeds: exact (calibrated)",
            "all seeds: checks below 0.01 / 0.001",
            "all seeds: log-likelihood (z)",
            "new runs: exact (calibrated)",
            "new runs: checks below 0.01 / 0.001",
            "new runs: log-likelihood (z)",
        ]
        intro = "n ≥ 1024; `model` is the analytic model unchanged.\n\n"
        return self.header(*rels, data=[every, new]) + intro + md_table(head, rows)


def _span(summaries: list[dict]) -> dict:
    return {"seeds_min": min(s["seeds_min"] for s in summaries), "seeds_max": max(s["seeds_max"] for s in summaries)}


def _targets(p: dict) -> str:
    return "all (exact)" if p.get("targets") is None else f"{p['targets']:,}"
