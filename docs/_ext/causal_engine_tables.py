"""The tables of the causal study that set the engine's failures against the models: a mixin of ``Tables``.

Every cell is read from a committed result file of ``analysis/causal/results`` or computed at build time from one.
"""

from __future__ import annotations

from causal_tables import CAUSAL, INTERVAL_FILES, _targets
from table_format import fmt, md_table, pow2


class CausalEngineTables:
    """The engine's clumps, failing targets and interval cuts against the models; uses ``load`` and ``header`` of
    ``results_tables.Tables``."""

    def causal_clumps(self) -> str:
        """Exact runs: the engine's clumps of missed pairs and its full share against the analytic model."""
        rel = f"{CAUSAL}/causal_clumps.json"
        d = self.load(rel)
        if d is None:
            return ""
        rows = [
            [
                pow2(r["n"]),
                str(r["w"]),
                str(r["layer"]),
                str(len(r["seeds"])),
                fmt(r["mean_clumps"]),
                fmt(r["var_clumps"] / r["mean_clumps"]) if r["mean_clumps"] else "",
                fmt(r["full_share"]),
                fmt(r["exp_minus_mean_clumps"]),
                fmt(r["model_clumps"]),
                fmt(r["mean_clumps"] / r["model_clumps"]) if r["model_clumps"] else "",
                fmt(r["model_full_probability"]),
            ]
            for r in d["rows"]
        ]
        head = [
            "n",
            "w",
            "layer",
            "seeds",
            "engine: clumps per seed",
            "variance / mean",
            "full share",
            "exp(-clumps)",
            "model: clumps N_L",
            "engine / model",
            "model: P(full)",
        ]
        intro = "Every (key, query) pair exact; clumps are 8-connected sets of missed pairs.\n\n"
        return self.header(rel, data=[d]) + intro + md_table(head, rows)

    def causal_clumps_sampled(self) -> str:
        """Sampled targets: the engine's failing targets (and missed pairs) against the analytic model."""
        rels = (f"{CAUSAL}/causal_clumps.json", f"{CAUSAL}/causal_clumps_far.json")
        docs = [self.load(r) for r in rels]
        rows = []
        for d in docs:
            if d is None:
                continue
            for r in d["sampled_rows"]:
                pairs = r.get("mean_missed_pairs")
                rows.append(
                    [
                        pow2(r["n"]),
                        str(r["w"]),
                        str(r["layer"]),
                        f"{len(r['seeds'])} x {r['targets']:,}",
                        ", ".join(f"{x:,}" for x in r["failing_targets"]),
                        fmt(r["mean_failing_targets"]),
                        fmt(r["model_failing_targets"]),
                        fmt(r["mean_failing_targets"] / r["model_failing_targets"]),
                        fmt(pairs) if pairs is not None else "",
                        fmt(r["model_missed_pairs"]) if pairs is not None else "",
                    ]
                )
        head = [
            "n",
            "w",
            "layer",
            "seeds x targets",
            "engine: failing targets per seed",
            "engine: mean",
            "model",
            "engine / model",
            "engine: missed (key, target) pairs",
            "model: missed pairs",
        ]
        intro = "A failing target misses at least one key; every sampled target's backward set exact.\n\n"
        return self.header(*rels, data=docs) + intro + md_table(head, rows)

    def causal_far_offsets(self) -> str:
        """Where the last failures of n = 2^20, w = 256 sit: the missed keys of every failing target."""
        rel, model_rel = f"{CAUSAL}/causal_far_offsets.json", INTERVAL_FILES[0]
        d, model = self.load(rel), self.load(model_rel)
        if d is None or model is None:
            return self.header(rel, model_rel, data=[d, model])
        s = d["summary"]
        point = next(p for p in model["points"] if (p["n"], p["w"]) == (d["n"], d["w"]))
        first = 6 * point["simulated_layers"] * (d["w"] - 1) + d["w"]
        nearest = s["nearest_offsets_sorted"]
        traced = [t["offsets"] for seed in d["seeds"] for t in seed["traced"]]
        contiguous = sum(1 for x in traced if x[-1] - x[0] + 1 == len(x))
        keys = sorted(len(x) for x in traced)
        rows = [
            ["failing targets (all seeds)", f"{s['failing_targets']} ({s['traced']} traced)"],
            ["failing targets per seed", ", ".join(str(seed["failing_targets"]) for seed in d["seeds"])],
            [
                "missed keys per failing target: mean, median, max",
                f"{fmt(s['missed_keys_per_failing_target_mean'])}, "
                f"{fmt(_median(keys))}, {s['missed_keys_per_failing_target_max']}",
            ],
            ["span of a target's missed offsets: median, max", f"{fmt(s['span_median'])}, {s['span_max']}"],
            ["targets whose missed offsets are contiguous", str(contiguous)],
            ["nearest missed offset: min, median, max", f"{nearest[0]:,}, {fmt(_median(nearest))}, {nearest[-1]:,}"],
            [f"nearest missed offset beyond the first cut ({first:,})", str(sum(1 for x in nearest if x > first))],
            [
                f"nearest missed offset beyond the interval model's cut ({point['cut']:,}; wanted "
                f"{point['cut_wanted']:,})",
                str(sum(1 for x in nearest if x > point["cut"])),
            ],
        ]
        intro = (
            f"n = {pow2(d['n'])}, w = {d['w']}, after layer {d['layer']}, {len(d['seeds'])} seeds x "
            f"{d['targets']:,} targets. The first cut is `6 L_s (w - 1) + w` with the interval model's "
            f"{point['simulated_layers']} simulated layers `L_s`.\n\n"
        )
        return self.header(rel, model_rel, data=[d, model]) + intro + md_table(["statistic", "value"], rows)

    def causal_interval_check(self) -> str:
        """The interval model against the engine's counts: exact runs, sampled targets, and the gap rule."""
        rel = f"{CAUSAL}/causal_interval_check.json"
        d = self.load(rel)
        if d is None:
            return ""
        exact = [r for r in d["rows"] if r["kind"] == "exact"]
        sampled = [r for r in d["rows"] if r["kind"] == "sampled"]
        out = self.header(rel, data=[d]) + f"Interval model: {d['events']} events, MC seed {d['seed']}.\n\n"
        out += "Exact runs:\n\n" + md_table(
            ["n", "w", "layer", "engine seeds", "engine: full share", "interval model: P(full)", "analytic: P(full)"],
            [
                [
                    pow2(r["n"]),
                    str(r["w"]),
                    str(r["layer"]),
                    str(r["seeds"]),
                    f"{r['engine_full_share']:.3f}",
                    f"{r['interval_full_probability']:.3f}",
                    f"{r['analytic_full_probability']:.3f}",
                ]
                for r in exact
            ],
        )
        out += "\nSampled targets (failing targets per seed):\n\n" + md_table(
            ["n", "w", "layer", "targets", "engine", "interval model", "of which beyond its cut", "cut", "analytic"],
            [
                [
                    pow2(r["n"]),
                    str(r["w"]),
                    str(r["layer"]),
                    f"{r['targets']:,}",
                    fmt(r["engine_failing_targets"]),
                    fmt(r["interval_failing_targets"]),
                    fmt(r["interval_far_part"]),
                    f"{r['interval_cut']:,}",
                    fmt(r["analytic_clumps"]),
                ]
                for r in sampled
            ],
        )
        gaps = d.get("gaps", [])
        if gaps:
            widths = sorted(int(k.rsplit("_", 1)[1]) for k in gaps[0] if k.startswith("events_gap_"))
            out += "\nThe gap rule: event counts with `g` keys before a start:\n\n" + md_table(
                ["n", "w", "layer", *(f"g = {g}" for g in widths)],
                [
                    [pow2(r["n"]), str(r["w"]), str(r["layer"]), *(f"{r[f'events_gap_{g}']:.3f}" for g in widths)]
                    for r in gaps
                ],
            )
        return out

    def causal_interval_points(self) -> str:
        """The points where the interval model's cut grows or the analytic model is kept on cost."""
        rel = INTERVAL_FILES[0]
        d = self.load(rel)
        if d is None:
            return ""
        rows = []
        kept = 0
        for p in d["points"]:
            if p["method"] != "interval":
                kept += 1
                rows.append([pow2(p["n"]), str(p["w"]), _targets(p), "analytic (cost)", "", "", ""])
                continue
            first = 6 * p["simulated_layers"] * (p["w"] - 1) + p["w"]
            if p["cut"] > first or p["cut_wanted"] > p["cut"]:
                rows.append(
                    [
                        pow2(p["n"]),
                        str(p["w"]),
                        _targets(p),
                        "interval",
                        f"{first:,}",
                        f"{p['cut']:,}",
                        f"{p['cut_wanted']:,}",
                    ]
                )
        intro = (
            f"{len(d['points'])} points; {d['events']} events at N = 1, MC seed {d['seed']}, cost limit "
            f"{d['max_cost']:.0e} word operations; {kept} points keep the analytic model. Every other point's cut is "
            "its first one, `6 L_s (w - 1) + w` (capped at n - 1).\n\n"
        )
        head = ["n", "w", "targets", "model", "first cut", "cut", "cut wanted"]
        return self.header(rel, data=[d]) + intro + md_table(head, rows)


def _median(values: list) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2
