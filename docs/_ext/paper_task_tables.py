"""The tables of the paper-task study (``analysis/paper_tasks``): a mixin of ``Tables``.

Every cell is read from ``analysis/paper_tasks/results/summary.json``, ``reach.json`` or
``benchmarks/results/eval.json``.
"""

from __future__ import annotations

from table_format import fmt, md_table

SUMMARY = "analysis/paper_tasks/results/summary.json"
REACH = "analysis/paper_tasks/results/reach.json"


def _score(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _rho(row: dict) -> str:
    if row["rho"] is None:
        return "equal for every configuration"
    return f"{row['rho']:+.2f} [{row['rho_low']:+.2f}, {row['rho_high']:+.2f}]"


def _delta(row: dict, name: str) -> str:
    if f"minus_{name}" not in row:
        return ""
    low, high = 100 * row[f"minus_{name}_low"], 100 * row[f"minus_{name}_high"]
    return f"{100 * row[f'minus_{name}']:+.1f} [{low:+.1f}, {high:+.1f}]"


def _pattern_cells(rows: list[dict], seeds: bool) -> list[list[str]]:
    """Cells of :func:`analysis.paper_tasks.summary.pattern_rows` rows, by budget (largest first), protocol, task."""
    out = []
    for r in sorted(rows, key=lambda r: (-r["budget"], r["decode"], r["task"], r["method"])):
        cells = [r["method"], str(r["budget"]), r["decode"], r["task"], str(r["items"])]
        out.append(
            cells + ([str(r["seeds"])] if seeds else []) + [_score(r["score"]), _delta(r, "swa"), _delta(r, "exact")]
        )
    return out


class PaperTaskTables:
    """Tables of the paper-task study; uses the ``load`` and ``header`` of ``results_tables.Tables``."""

    def paper_tasks_chance(self) -> str:
        d = self.load(SUMMARY)
        if d is None:
            return ""
        rows = [
            [
                t["task"],
                t["metric"],
                str(t["items"]),
                f"{t['context_median']:.0f} / {t['whole_median']:.0f}",
                f"{t['within']['64']} / {t['within']['128']}",
                _score(t["chance"]),
                f"{_score(t['exact'])} [{_score(t['exact_low'])}, {_score(t['exact_high'])}]",
                "yes" if t["informative"] else "**no**",
            ]
            for t in d["tasks"]
        ]
        head = [
            "task",
            "metric",
            "items",
            "median tokens (context / whole)",
            "items of at most 64 / 128 tokens",
            "chance",
            "full attention [95% interval]",
            "informative",
        ]
        note = (
            "Scores in percent. Tokens by SmolLM2's tokenizer; an item's whole length is its context and its "
            "longest continuation: on an item of at most m tokens a window of m keys reads every earlier token."
        )
        return self.header(SUMMARY, data=[d]) + note + "\n\n" + md_table(head, rows)

    def paper_tasks_patterns(self) -> str:
        d = self.load(SUMMARY)
        if d is None:
            return ""
        informative = {t["task"] for t in d["tasks"] if t["informative"]}
        rows = _pattern_cells([r for r in d["patterns"] if r["task"] in informative], seeds=True)
        head = ["pattern", "m", "decode", "task", "items", "seeds", "score", "minus SWA [95%]", "minus full [95%]"]
        note = (
            "Percent; differences are paired over the same items (bootstrap, 2000 resamples); a randomized "
            "pattern's item score is its mean over the seeds. *decode exact*: the pattern over the context, "
            "exact attention for the continuation.\n\n"
        )
        return self.header(SUMMARY, data=[d]) + note + md_table(head, rows)

    def paper_tasks_uninformative(self) -> str:
        d = self.load(SUMMARY)
        if d is None:
            return ""
        tasks = [t for t in d["tasks"] if not t["informative"]]
        names = {t["task"] for t in tasks}
        scores = {(r["method"], r["budget"], r["decode"], r["task"]): r["score"] for r in d["patterns"]}
        configurations = sorted({key[:3] for key in scores if key[3] in names}, key=lambda c: (-c[1], c[2], c[0]))
        if not configurations:
            return self.header(SUMMARY, data=[d]) + "No pattern has run on these tasks yet.\n"
        rows = [
            ["chance", "", ""] + [_score(t["chance"]) for t in tasks],
            ["full attention", "", ""] + [_score(t["exact"]) for t in tasks],
        ]
        for method, budget, decode in configurations:
            rows.append(
                [method, str(budget), decode] + [_score(scores.get((method, budget, decode, t["task"]))) for t in tasks]
            )
        head = ["pattern", "m", "decode"] + [t["task"] for t in tasks]
        seeds = max(r["seeds"] for r in d["patterns"] if r["task"] in names)
        note = "Percent" + (", randomized patterns at seed 0" if seeds == 1 else ", seeds averaged") + ".\n\n"
        return self.header(SUMMARY, data=[d]) + note + md_table(head, rows)

    def paper_tasks_averages(self) -> str:
        d = self.load(SUMMARY)
        if d is None:
            return ""
        rows = [
            [
                r["method"],
                str(r["budget"]),
                r["decode"],
                str(r["tasks"]),
                _score(r["informative_average"]),
                _score(r["exact_average"]),
            ]
            for r in sorted(d["averages"], key=lambda r: (-r["budget"], r["decode"], -(r["informative_average"] or 0)))
        ]
        head = ["pattern", "m", "decode", "informative tasks", "average", "full attention on them"]
        return self.header(SUMMARY, data=[d]) + md_table(head, rows)

    def paper_tasks_paper(self) -> str:
        d = self.load(SUMMARY)
        if d is None:
            return ""
        ours = {(r["method"], r["budget"], r["task"]): r["score"] for r in d["patterns"] if r["decode"] == "exact"}
        exact = {t["task"]: t["exact"] for t in d["tasks"]}
        informative = {t["task"] for t in d["tasks"] if t["informative"]}
        rows = []
        for w, patterns in sorted(d["paper_qwen3_8b"].items(), key=lambda kv: -int(kv[0])):
            for pattern, cells in patterns.items():
                for task, paper in cells.items():
                    if task == "average":
                        continue
                    mine = exact.get(task) if pattern == "full" else ours.get((pattern, int(w), task))
                    note = "" if task in informative else " (not above chance)"
                    band = _score(ours.get(("sa-band", int(w), task))) if pattern == "sa" else ""
                    rows.append([w, pattern, task, fmt(paper), _score(mine) + note, band])
        head = [
            "w / m",
            "pattern",
            "task",
            "Qwen3-8B (paper)",
            "SmolLM2-135M (ours, exact decode)",
            "ours, the paper's causal SA, band w",
        ]
        note = (
            "The paper's numbers as secondary summaries quote them (its full text is not stored offline); "
            "Qwen3-8B has 8.2B parameters, SmolLM2-135M 135M. Ours: the same tasks through OLMES's formats, "
            "m keys per query, exact attention for the continuation; the last column reads w as the band of "
            "the paper's causal SA (`sa-band`, about w / 2 keys per query; its seeds averaged).\n\n"
        )
        return self.header(SUMMARY, data=[d]) + note + md_table(head, rows)

    def paper_tasks_convention(self) -> str:
        d = self.load(SUMMARY)
        if d is None:
            return ""
        rows = [
            [
                str(r["band"]),
                str(r["m"]),
                r["task"],
                f"{r['keys_mean']:.1f}",
                f"{r['keys_last']:.1f}",
                str(r.get("items", "")),
                str(r["seeds"]),
                _score(r.get("score")),
                _score(r.get("sa_score")),
                _delta(r, "sa"),
                _score(r.get("swa_score")),
                _delta(r, "swa"),
            ]
            for r in d.get("convention", [])
        ]
        if not rows:
            return self.header(SUMMARY, data=[d]) + "No `sa-band` rows in this file yet.\n"
        head = [
            "band",
            "m",
            "task",
            "keys per query (mean)",
            "keys at the answer",
            "items",
            "seeds",
            "sa-band",
            "sa at m",
            "sa-band minus sa [95%]",
            "swa at m",
            "sa-band minus swa [95%]",
        ]
        note = (
            "Percent, exact decode. *band*: the paper's causal SA (`sa-band`), a band of that many slots in a "
            "permutation of the whole context, masked to the keys before each query; *keys*: the keys it reads, "
            "in expectation over the permutation at each item's context length, averaged over the items; the "
            "generation forms `sa` and `swa` read at most m.\n\n"
        )
        return self.header(SUMMARY, data=[d]) + note + md_table(head, rows)

    def paper_tasks_more(self) -> str:
        d = self.load(SUMMARY)
        if d is None:
            return ""
        rows = _pattern_cells(d.get("more", []), seeds=False)
        if not rows:
            return self.header(SUMMARY, data=[d]) + "No items beyond the fixed ones in this file yet.\n"
        head = ["pattern", "m", "decode", "task", "items", "score", "minus SWA [95%]", "minus full [95%]"]
        note = (
            "Percent, seed 0, on every item that the row, SWA and full attention all have (the fixed ones and "
            "those after them); differences paired over those items (bootstrap, 2000 resamples).\n\n"
        )
        return self.header(SUMMARY, data=[d]) + note + md_table(head, rows)

    def paper_tasks_search(self) -> str:
        d = self.load(SUMMARY)
        if d is None:
            return ""
        search = d.get("search") or {}
        if not search:
            return self.header(SUMMARY, data=[d]) + "The search is not complete in this file.\n"
        rows = [
            [method, _score(score), "winner" if method == search["winner"] else ""]
            for method, score in sorted(search["candidates"].items(), key=lambda kv: -kv[1])
        ]
        head = ["candidate", "selection score (ARC-Easy, PIQA; m 64, 32; both protocols)", ""]
        test = []
        for r in search["test"]:
            interval = {"minus_peer": r["difference"], "minus_peer_low": r["low"], "minus_peer_high": r["high"]}
            test.append(
                [
                    str(r["budget"]),
                    r["decode"],
                    r["task"],
                    r["peer"],
                    str(r["items"]),
                    str(r["seeds"]),
                    _score(r["winner"]),
                    _score(r["peer_score"]),
                    _delta(interval, "peer"),
                ]
            )
        head_test = ["m", "decode", "task", "peer", "items", "seeds", search["winner"], "peer", "difference [95%]"]
        note = "\nThe winner on the other informative tasks (each item's score averaged over the winner's seeds):\n\n"
        return self.header(SUMMARY, data=[d]) + md_table(head, rows) + note + md_table(head_test, test)

    def paper_tasks_reach(self) -> str:
        d = self.load(REACH)
        if d is None:
            return ""
        rows = [
            [
                r["decode"],
                r["task"],
                r["role"],
                r["measure"] + (" (chosen)" if r["measure"] == d["chosen"].get(r["decode"]) else ""),
                str(r["configurations"]),
                _rho(r),
            ]
            for r in d["correlations"]
        ]
        head = ["decode", "task", "role", "measure", "configurations", "Spearman rho [95%]"]
        note = (
            "Measures signed so that more reach is larger; *(chosen)*: the best mean rho on the search tasks, "
            "the one whose held-out rows are the test.\n\n"
        )
        return self.header(REACH, data=[d]) + note + md_table(head, rows)

    def bench_eval(self) -> str:
        rel = "benchmarks/results/eval.json"
        d = self.load(rel)
        if d is None:
            return ""
        rows = [
            [
                r["task"],
                str(r["items"]),
                str(r["requests"]),
                fmt(r["hflm_items_per_second"]),
                fmt(r["harness_items_per_second"]),
                f"{r['speedup']:.1f}x",
                f"{r['max_abs_ll_difference']:.1e}",
                str(r["same_accuracy"]),
            ]
            for r in d["rows"]
        ]
        head = [
            "task",
            "items",
            "requests",
            "HFLM items/s",
            "harness items/s",
            "speedup",
            "max abs log-lik diff",
            "same answers",
        ]
        return self.header(rel, data=[d]) + f"Model: {d['model']}, {d['threads']} threads.\n\n" + md_table(head, rows)
