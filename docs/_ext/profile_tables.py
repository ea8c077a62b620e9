"""The tables of the attention-profile study (``analysis/attention_profile``): a mixin of ``Tables``.

Every cell is read from ``analysis/attention_profile/results/predict.json``, ``heads.json``, ``profile.json`` or
``design/summary.json``.
"""

from __future__ import annotations

from table_format import md_table

PREDICT = "analysis/attention_profile/results/predict.json"
HEADS = "analysis/attention_profile/results/heads.json"
PROFILE = "analysis/attention_profile/results/profile.json"
DESIGN = "analysis/attention_profile/results/design/summary.json"
TASK_ORDER = ("arc_easy", "piqa", "hellaswag", "lambada")


def _rho(row: dict | None) -> str:
    if row is None:
        return "-"
    if row["rho"] is None:
        return "equal for every configuration"
    return f"{row['rho']:+.2f} [{row['rho_low']:+.2f}, {row['rho_high']:+.2f}]"


class ProfileTables:
    """Tables of the attention-profile study; uses the ``load`` and ``header`` of ``results_tables.Tables``."""

    def attention_profile_prediction(self) -> str:
        d = self.load(PREDICT)
        if d is None:
            return ""
        by = {(r["decode"], r["task"], r["measure"], r["subset"]): r for r in d["correlations"]}
        measures = list(dict.fromkeys((r["measure"], r["family"]) for r in d["correlations"]))
        rows = []
        for decode in ("exact", "sparse"):
            for measure, family in measures:
                subset = "all" if family == "profile" else "reach"
                cells = [_rho(by.get((decode, task, measure, subset))) for task in TASK_ORDER]
                n = next(
                    (
                        r["configurations"]
                        for k, r in by.items()
                        if k[0] == decode and k[2] == measure and k[3] == subset
                    ),
                    0,
                )
                chosen = " (chosen)" if d["chosen"]["any"].get(decode) == measure else ""
                rows.append([decode, f"{measure}{chosen}", family, str(n), *cells])
        head = [
            "decode",
            "measure",
            "family",
            "configurations",
            "ARC-Easy (search)",
            "PIQA (search)",
            "HellaSwag (held out)",
            "LAMBADA (held out)",
        ]
        note = (
            "Spearman's rho across configurations between the measure (signed: larger is closer to exact "
            "attention) and the configuration's accuracy, with 95% bootstrap intervals over configurations and "
            "items. The reach family has no MoBA and top-k rows."
        )
        return self.header(PREDICT, data=[d]) + note + "\n\n" + md_table(head, rows)

    def attention_profile_same_rows(self) -> str:
        d = self.load(PREDICT)
        if d is None:
            return ""
        rows = []
        for r in d["correlations"]:
            if r["subset"] == "reach" and r["task"] in ("hellaswag", "lambada"):
                rows.append([r["decode"], r["task"], r["measure"], r["family"], str(r["configurations"]), _rho(r)])
        head = ["decode", "task", "measure", "family", "configurations", "rho [95%]"]
        note = "Both families on the same configurations (the reach measures' rows), held-out tasks."
        return self.header(PREDICT, data=[d]) + note + "\n\n" + md_table(head, rows)

    def attention_profile_cost(self) -> str:
        d = self.load(PREDICT)
        if d is None:
            return ""
        s = d["seconds"]
        rows = [
            ["every exact-forward measure of every configuration", f"{s['exact_forward_measures_per_text']:.1f}"],
            ["the KL of every configuration", f"{s['kl_per_text']:.1f}"],
            ["the KL of one configuration", f"{s['kl_per_text_and_configuration']:.2f}"],
        ]
        note = f"Seconds per text, {s['configurations']} configurations, one torch thread."
        return self.header(PREDICT, data=[d]) + note + "\n\n" + md_table(["what", "seconds per text"], rows)

    def attention_profile_bench(self) -> str:
        rel = "benchmarks/results/profile.json"
        d = self.load(rel)
        if d is None:
            return ""
        steps = ("forward", "profile_scored", "profile", "profile_kl")
        rows = [
            [
                r["task"],
                str(r["items"]),
                f"{r['tokens_mean']:.0f}",
                f"{r['harness_seconds']:.1f}",
                *(f"{r[f'{step}_over_harness']:.2f}" for step in steps),
            ]
            for r in d["rows"]
        ]
        head = ["task", "items", "tokens", "harness s", "forward", "scored positions", "every position", "with KL"]
        note = (
            f"Time over the harness's (scoring {d['rows'][0]['harness_pattern']} under both protocols), "
            f"patterns {', '.join(d['rows'][0]['patterns'])}; {d['threads']} threads."
        )
        return self.header(rel, data=[d]) + note + "\n\n" + md_table(head, rows)

    def attention_profile_heads(self) -> str:
        d = self.load(HEADS)
        if d is None:
            return ""
        rows = []
        for label, value in d["recall_mean"].items():
            far = d["recall_far_heads"].get(label)
            rows.append([label, f"{value:.3f}", "-" if far is None else f"{far:.3f}"])
        mean = d["mean"]
        note = (
            f"Mass averaged over layers, heads, positions and the four tasks: sink {mean['sink']:.3f}, within "
            f"distance {d['budget']} {mean['window']:.3f}, beyond {mean['far']:.3f}. Far heads (at least "
            f"{d['far_head_threshold']:.2f} of their mass beyond {d['budget']}, the sink excluded): "
            f"{len(d['far_heads'])} of {d['heads']}; heads with at least half their mass on the sink: "
            f"{d['sink_heads']}."
        )
        head = ["pattern", "recall (every head)", "recall (far heads)"]
        return self.header(HEADS, data=[d]) + note + "\n\n" + md_table(head, rows)

    def attention_profile_layers(self) -> str:
        d = self.load(HEADS)
        if d is None:
            return ""
        layers: dict = {}
        for r in d["per_head"]:
            layers.setdefault(r["layer"], []).append(r)
        recall_keys = [k for k in d["per_head"][0] if k.startswith("recall ")]
        rows = []
        for layer, heads in sorted(layers.items()):
            cells = [f"{sum(h[k] for h in heads) / len(heads):.2f}" for k in ("sink", "window", "far", *recall_keys)]
            far = sum(h["far"] >= d["far_head_threshold"] for h in heads)
            rows.append([str(layer), *cells, str(far)])
        head = [
            "layer",
            "sink",
            f"within {d['budget']}",
            "beyond",
            *[k.removeprefix("recall ") for k in recall_keys],
            "far heads",
        ]
        note = "Per layer, the mass (heads averaged) and each pattern's recall at m = 64."
        return self.header(HEADS, data=[d]) + note + "\n\n" + md_table(head, rows)

    def attention_profile_design(self) -> str:
        d = self.load(DESIGN)
        if d is None:
            return ""

        def diff(r, other):
            return (
                f"{100 * r[f'minus_{other}']:+.1f} [{100 * r[f'minus_{other}_low']:+.1f}, "
                f"{100 * r[f'minus_{other}_high']:+.1f}]"
            )

        rows = [
            [
                r["decode"],
                r["task"],
                f"{100 * r['plan']:.1f}",
                f"{100 * r['reference']:.1f}",
                f"{100 * r['exact']:.1f}",
                diff(r, "reference"),
                diff(r, "exact"),
            ]
            for r in d["rows"]
        ]
        keys = ", ".join(f"{t} {k['plan']:.1f} ({k['reference']:.1f})" for t, k in d["keys"].items())
        choices = ", ".join(f"{label}: {count}" for label, count in d["choices"].items())
        note = (
            f"Plan `{d['plan']}`. Heads per candidate: {choices}. Keys per query, the plan's (SWA + sink at "
            f"m = {d['budget']}'s): {keys}."
        )
        head = [
            "protocol",
            "task",
            "plan",
            f"swa+sink m={d['budget']}",
            "full",
            "plan - swa+sink [95%]",
            "plan - full [95%]",
        ]
        sa = [
            [
                r["candidate"],
                r["window"],
                f"{r['heads_above']} of {r['heads']}",
                f"{r['recall']:.3f}",
                f"{r['window_recall']:.3f}",
            ]
            for r in d["sa_against_window"]
        ]
        sa_head = ["SA candidate", "window at the same m", "heads where SA holds more", "SA recall", "window recall"]
        return self.header(DESIGN, data=[d]) + note + "\n\n" + md_table(head, rows) + "\n\n" + md_table(sa_head, sa)
