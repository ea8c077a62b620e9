"""The tables of the documentation, read at build time from the committed result files of the studies.

Each table is headed by the file it reads and the command that wrote it (from the table of its study's
``analysis/<study>/README.md``, or the file's own ``command`` field); a missing file or command is recorded in
``Tables.missing``, which the extension reports as a warning, so ``sphinx -W`` fails on it.
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path

from bench_tables import BenchmarkTables
from causal_engine_tables import CausalEngineTables
from causal_tables import CausalTables
from model_tables import ModelTables
from paper_task_tables import PaperTaskTables
from profile_tables import ProfileTables
from table_format import fmt, lstar, md_table, ms, pct, pow2, ratio, readme_commands, secs  # noqa: F401
from variants_tables import VariantsTables


class Tables(
    BenchmarkTables, CausalTables, CausalEngineTables, VariantsTables, ModelTables, PaperTaskTables, ProfileTables
):
    """Read the committed result files of a checkout and format the documentation's tables.

    Parameters
    ----------
    root : Path
        The checkout root (the folder holding ``analysis/`` and ``benchmarks/``).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.commands = readme_commands(root)
        self.missing: list[str] = []

    # -- reading ------------------------------------------------------------------------------------------------
    def load(self, rel: str) -> dict | None:
        path = self.root / rel
        if not path.is_file():
            self.missing.append(rel)
            return None
        return json.loads(path.read_text())

    def command(self, rel: str, data: dict | None) -> str:
        """The command that wrote ``rel``: its study README's row, else the file's own ``command`` field."""
        for pattern, command in self.commands.items():
            if rel == pattern or fnmatch.fnmatch(rel, pattern) or (pattern.endswith("/") and rel.startswith(pattern)):
                return command
        if isinstance(data, dict) and isinstance(data.get("command"), str):
            return f"`{data['command']}`"
        self.missing.append(f"{rel} (no command in its README or the file)")
        return "(command not recorded)"

    def header(self, *rels: str, data: list[dict | None] | None = None) -> str:
        data = data or [None] * len(rels)
        lines = [f"*File* `{rel}`, *written by* {self.command(rel, d)}" for rel, d in zip(rels, data, strict=True)]
        return "\n\n".join(lines) + "\n\n"

    # -- the tables ---------------------------------------------------------------------------------------------
    def coverage_headline(self) -> str:
        rels = (
            "analysis/receptive_fields/results/coverage_n32768_w64.json",
            "analysis/receptive_fields/results/coverage_n32768_w64_causal.json",
        )
        files = [self.load(r) for r in rels]
        rows = []
        for data in files:
            if data is None:
                continue
            mode = "causal" if data["causal"] else "bidirectional"
            theory = data["theory"]
            sharp = theory.get("sharp_full_coverage_layer") or {}
            for name in ("swa", "sa", "sa+swa"):
                pattern = data["patterns"].get(name)
                if pattern is None:
                    continue
                last = pattern["layers"][-1]
                lstar = pattern["full_coverage_layer"]
                measured = str(lstar) if lstar is not None else f"> {last['layer']}"
                if name == "swa":
                    predicted = f"{theory['swa_full_coverage_layer']} (closed form)"
                else:
                    value = sharp.get(name)
                    median = theory.get("causal_sa_median_full_coverage_layer")
                    if value is not None:
                        predicted = str(value)
                    elif name == "sa" and median is not None:
                        predicted = f"about {median:,.0f} (model median)"
                    else:
                        predicted = "beyond the layer cap"
                rows.append(
                    [
                        name.upper(),
                        mode,
                        measured,
                        predicted,
                        str(last["layer"]),
                        fmt(last["mean"]),
                        fmt(last["min"]),
                    ]
                )
        first = next((d for d in files if d), None)
        intro = ""
        if first:
            intro = f"n = {first['n']}, w = {first['w']}, log_w n = {fmt(first['theory']['log_w_n'])}, exact.\n\n"
        head = [
            "pattern",
            "mode",
            "L* measured",
            "L* predicted",
            "layers run",
            "mean coverage after them",
            "worst position",
        ]
        return self.header(*rels, data=files) + intro + md_table(head, rows)

    def coverage_layers(self) -> str:
        rel = "analysis/receptive_fields/results/coverage_n32768_w64.json"
        data = self.load(rel)
        if data is None:
            return ""
        names = [p for p in ("swa", "sa", "sa+swa") if p in data["patterns"]]
        depth = max(len(data["patterns"][p]["layers"]) for p in names)
        rows = []
        for i in range(depth):
            row = [str(i + 1)]
            for p in names:
                layers = data["patterns"][p]["layers"]
                row.append(f"{fmt(layers[i]['mean'])} / {fmt(layers[i]['min'])}" if i < len(layers) else "")
            rows.append(row)
        head = ["layer", *(f"{p.upper()} mean / worst" for p in names)]
        return self.header(rel, data=[data]) + md_table(head, rows)

    def bound_point(self) -> str:
        rel = "analysis/receptive_fields/results/bound_n32768_w64/bound.json"
        data = self.load(rel)
        if data is None:
            return ""
        rows = [
            [
                p["pattern"].upper(),
                "causal" if p["causal"] else "bidirectional",
                ", ".join(map(str, p["full_layers"])),
                str(p["typical"]),
                str(p["predicted"]),
                str(p["ceil_log_w_n"]),
                str(p["coupon_collector"]),
            ]
            for p in data["points"]
        ]
        skipped = [f"{s['pattern']} {'causal' if s['causal'] else 'bidirectional'}" for s in data.get("skipped", [])]
        note = f"\n\nNot measured (predicted beyond the layer cap): {', '.join(skipped)}." if skipped else ""
        head = ["pattern", "mode", "L* per seed", "typical L*", "sharp model", "ceil(log_w n)", "coupon collector"]
        return self.header(rel, data=[data]) + md_table(head, rows) + note + "\n"

    def smallworld_connectome(self) -> str:
        rel = "analysis/receptive_fields/results/smallworld_connectome.json"
        d = self.load(rel)
        if d is None:
            return ""
        pub = d["published"]

        def ci(value, interval):
            return f"{value:.3f} ± {(interval[1] - interval[0]) / 2:.3f}" if interval else fmt(value)

        rows = [
            ["neurons", f"{d['n']:,}", f"{pub['n']:,}"],
            ["connections", f"{d['edges']:,}", f"{pub['edges']:,}"],
            ["mean out-degree", fmt(d["mean_degree"]), fmt(pub["mean_degree"])],
            ["reciprocity", fmt(d["reciprocity"]), fmt(pub["reciprocity"])],
            ["clustering C (undirected average)", fmt(d["C"]), fmt(pub["C"])],
            ["L directed (giant SCC)", ci(d["L_directed"], d.get("L_directed_ci")), fmt(pub["L_directed"])],
            ["L undirected (giant WCC)", ci(d["L"], d.get("L_ci")), fmt(pub["L"])],
            ["C_r, L_r (Erdős–Rényi)", f"{fmt(d['C_r'])}, {fmt(d['L_r'])}", f"{fmt(pub['C_r'])}, {fmt(pub['L_r'])}"],
            ["sigma", fmt(d["sigma"]), fmt(pub["sigma"])],
            ["giant SCC share", pct(d["giant_scc_fraction"]), pct(pub["giant_scc_fraction"])],
        ]
        return (
            self.header(rel, data=[d])
            + f"L from {d['L_method']}.\n\n"
            + md_table(["statistic", "connectome model", "FlyWire (published, `graphs.smallworld.FLYWIRE`)"], rows)
        )

    def smallworld_attention(self) -> str:
        rels = (
            "analysis/receptive_fields/results/smallworld_attention_n32768_w64.json",
            "analysis/receptive_fields/results/smallworld_connectome.json",
        )
        att, con = (self.load(r) for r in rels)
        rows = []
        if att:
            for name, r in att["rows"].items():
                rows.append(
                    [
                        f"{name.upper()} (one layer, n = {r['n']})",
                        fmt(r["mean_degree"]),
                        fmt(r["C"]),
                        f"{fmt(r['L'])} [{fmt(r['L_ci'][0])}, {fmt(r['L_ci'][1])}]" if r.get("L_ci") else fmt(r["L"]),
                        fmt(r["L_r"]),
                        fmt(r["sigma"]),
                    ]
                )
        if con:
            rows.append(
                [
                    f"connectome model (n = {con['n']:,})",
                    fmt(con["mean_degree"]),
                    fmt(con["C"]),
                    f"{fmt(con['L'])} [{fmt(con['L_ci'][0])}, {fmt(con['L_ci'][1])}]",
                    fmt(con["L_r"]),
                    fmt(con["sigma"]),
                ]
            )
        head = ["graph (undirected)", "mean degree", "C", "L [95% interval]", "L_r (random)", "sigma"]
        return self.header(*rels, data=[att, con]) + md_table(head, rows)

    def hops(self) -> str:
        rel = "analysis/receptive_fields/results/hops_n32768_w64.json"
        d = self.load(rel)
        if d is None:
            return ""
        rows = [
            [
                r["pattern"].upper(),
                "causal" if r["causal"] else "bidirectional",
                fmt(r["mean"]),
                pct(r["unreached"]),
                r["method"],
            ]
            for r in d["rows"]
        ]
        head = ["pattern", "mode", "mean layers from key to query", "pairs not yet connected", "method"]
        return self.header(rel, data=[d]) + f"n = {d['n']}, w = {d['w']}.\n\n" + md_table(head, rows)

    def layouts(self) -> str:
        rel = "analysis/layouts/results/layouts.json"
        d = self.load(rel)
        if d is None:
            return ""
        rows = []
        for entry in d["layouts"]:
            lay = entry["layout"]
            kv = lay["kv_cache_entries"]
            if isinstance(kv, list):
                kv = sum(kv)
            matched = entry["matched"]
            rows.append(
                [
                    lay["name"],
                    "causal" if lay["causal"] else "bidirectional",
                    str(lay["depth"]),
                    lstar(lay["full_coverage_layer"], lay["depth"]),
                    f"{lay['last_token_span']:,}",
                    fmt(lay["mean_pairs_relative"]),
                    fmt(kv) if kv is not None else "-",
                    *(
                        f"{matched[k]['window']}, {lstar(matched[k]['full_coverage_layer'], matched[k]['depth'])}"
                        for k in ("sa", "sa+swa")
                    ),
                ]
            )
        head = [
            "layout",
            "mode",
            "layers",
            "L*",
            "last token sees back",
            "pairs / full",
            "KV entries / token",
            "SA at matched pairs: w, L*",
            "SA+SWA: w, L*",
        ]
        intro = f"n = {d['n']:,}; coverage from {d['targets']} sampled targets per layer, each exact.\n\n"
        return self.header(rel, data=[d]) + intro + md_table(head, rows)

    def bound_grid(self) -> str:
        rel = "analysis/bound/results/bound.json"
        d = self.load(rel)
        if d is None:
            return ""
        rows = [
            [
                p["pattern"].upper(),
                f"{p['n']:,}",
                ", ".join(map(str, p["full_layers"])),
                str(p["ceil_log_w_n"]),
                str(p["coupon_collector"]),
                str(p["predicted"]),
                str(p["bound"]),
                fmt(p["n_over_w"]),
                p["method"],
            ]
            for p in d["points"]
            if not p["causal"] and p["w"] == 64
        ]
        head = [
            "pattern",
            "n",
            "L* per seed",
            "ceil(log_w n)",
            "coupon collector",
            "sharp model",
            "union bound",
            "n/w",
            "method",
        ]
        return self.header(rel, data=[d]) + "Bidirectional, w = 64.\n\n" + md_table(head, rows)

    def bound_fits(self) -> str:
        rel = "analysis/bound/results/bound.json"
        d = self.load(rel)
        if d is None:
            return ""
        by_regime = d["deviations"].get("by_regime", {})
        rows = []
        for regime, fit in d["fits"].items():
            dev = by_regime.get(regime, {})
            rows.append(
                [
                    regime,
                    f"L* = {fit['a']:.2f} log_w n + {fit['b']:.2f}",
                    f"{fit['r2']:.3f}",
                    pct(dev["sharp_exact_share_n_ge_1024"]) if "sharp_exact_share_n_ge_1024" in dev else "",
                    pct(dev["sharp_within_one_share"]) if "sharp_within_one_share" in dev else "",
                ]
            )
        head = ["regime", "least-squares fit", "R²", "sharp model exact (n ≥ 1024)", "sharp model within one layer"]
        n_points, n_skipped = len(d["points"]), len(d.get("skipped", []))
        intro = f"{n_points} grid points measured, {n_skipped} skipped (predicted beyond the layer cap).\n\n"
        return self.header(rel, data=[d]) + intro + md_table(head, rows)

    def causal_pooled(self) -> str:
        rel = "analysis/causal/results/pooled.json"
        d = self.load(rel)
        if d is None:
            return ""
        rows = []
        for regime, s in d["summary"].items():
            rows.append(
                [
                    regime,
                    str(s["points"]),
                    str(s["runs"]),
                    f"{s['seeds_min']}-{s['seeds_max']}",
                    f"{s['exact_n_ge_1024']} of {s['points_n_ge_1024']}",
                    f"{s['expected_exact_n_ge_1024']:.1f} (sd {s['expected_exact_sd']:.1f})",
                    f"{s['within_one']} of {s['points']}",
                ]
            )
        head = [
            "regime",
            "points",
            "runs",
            "seeds per point",
            "predicted L* exact (n ≥ 1024)",
            "a calibrated model expects",
            "within one layer",
        ]
        return self.header(rel, data=[d]) + f"Sharp model: `{d['model']}`.\n\n" + md_table(head, rows)

    def all(self) -> dict[str, str]:
        """Every table, by file name."""
        names = [n for n in dir(self) if not n.startswith("_") and n not in ("all", "load", "command", "header")]
        return {name: getattr(self, name)() for name in sorted(names) if callable(getattr(self, name))}
