"""The tables of the trained models, the numerical-methods lab and the real pretrained model: a mixin of ``Tables``.

Every cell is read from a committed result file of ``analysis/training``, ``analysis/numerical_methods`` or
``analysis/real_models``.
"""

from __future__ import annotations

import math

from table_format import fmt, md_table, pct, secs


class ModelTables:
    """Tables of the model studies; uses the ``load`` and ``header`` of ``results_tables.Tables``."""

    def training_retrieval(self) -> str:
        rel = "analysis/training/results/retrieval.json"
        d = self.load(rel)
        if d is None:
            return ""
        rows = [
            [
                r["kind"],
                str(r["n"]),
                str(r["w"]),
                str(r["layers"]),
                fmt(r["accuracy"]),
                fmt(r["reachable"]),
                fmt(r["predicted_accuracy"]),
                fmt(r["accuracy_reachable"]) if r["accuracy_reachable"] is not None else "",
            ]
            for r in d["runs"]
        ]
        head = ["kind", "n", "w", "layers", "accuracy", "reachable share", "predicted accuracy"]
        head.append("right where reachable")
        return self.header(rel, data=[d]) + f"{d['config']['steps']} steps, causal.\n\n" + md_table(head, rows)

    def training_variants(self) -> str:
        rel = "analysis/training/results/variants/variants.json"
        d = self.load(rel)
        if d is None:
            return ""

        def span(s):
            return f"{s['mean']:.3f} [{s['min']:.3f}, {s['max']:.3f}]"

        rows = [
            [
                f"`{a['kind']}`",
                f"{a['keys_per_query']['mean']:.1f}",
                str(len(a["seeds"])),
                span(a["accuracy"]),
                span(a["reachable"]),
                span(a["accuracy_reachable"]),
            ]
            for a in d["aggregate"]
        ]
        head = ["kind", "keys / query", "seeds", "accuracy", "reachable share", "right where reachable"]
        c = d["config"]
        intro = f"Retrieval, n = {c['ns'][0]}, w = {c['ws'][0]}, L = {c['layers'][0]}, {c['steps']} steps.\n\n"
        return self.header(rel, data=[d]) + intro + md_table(head, rows)

    def training_lm(self) -> str:
        rel = "analysis/training/results/lm.json"
        d = self.load(rel)
        if d is None:
            return ""
        paper = d.get("paper", {}).get("paper_wikitext_perplexity", {})
        rows = [
            [r["kind"], fmt(r["val_perplexity"]), fmt(paper[r["kind"]]) if r["kind"] in paper else ""]
            for r in d["runs"]
        ]
        c = d["config"]
        intro = f"Character LM, n = {c['n']}, w = {c['w']}, {c['layers']} layers, {c['steps']} steps.\n\n"
        return (
            self.header(rel, data=[d])
            + intro
            + md_table(["kind", "validation perplexity", "the SA paper's WikiText perplexity"], rows)
        )

    def approx_minilm(self, budget: int = 128) -> str:
        rel = "analysis/numerical_methods/results/approx_minilm.json"
        d = self.load(rel)
        if d is None:
            return ""
        errors: dict[str, list[float]] = {}
        for e in d["errors"]:
            if e["budget"] == budget:
                errors.setdefault(e["method"], []).append(e["mean"])
        costs = {(c["method"], c["budget"]): c for c in d["costs"]}
        full = next(c for c in d["costs"] if c["method"] == "full")
        rows = []
        for s in sorted(d["substitution"], key=lambda s: -s["document_cosine_mean"]):
            if s["budget"] != budget or s["method"] == "full":
                continue
            cost = costs.get((s["method"], budget))
            err = errors.get(s["method"])
            rows.append(
                [
                    s["method"],
                    fmt(sum(err) / len(err)) if err else "",
                    fmt(s["document_cosine_mean"]),
                    fmt(s["spearman_mean"]),
                    fmt(cost["kv_cache_bytes_per_token"] / full["kv_cache_bytes_per_token"]) if cost else "",
                    fmt(cost["flops"] / full["flops"]) if cost else "",
                ]
            )
        head = [
            f"method (m = {budget})",
            "one attention: relative error",
            "every layer replaced: embedding cosine",
            "retrieval Spearman",
            "KV cache / full",
            "FLOPs / full",
        ]
        return self.header(rel, data=[d]) + md_table(head, rows)

    def approx_decoder(self) -> str:
        rel = "analysis/numerical_methods/results/approx_decoder.json"
        d = self.load(rel)
        if d is None:
            return ""
        budgets = sorted({r["budget"] for r in d["rows"] if r["method"] != "full"})
        cells: dict[str, dict[int, dict]] = {}
        for r in d["rows"]:
            cells.setdefault(r["method"], {})[r["budget"]] = r
        rows = []
        for method, by_budget in cells.items():
            if method == "full":
                r = next(iter(by_budget.values()))
                rows.append([method, fmt(r["ppl"]), *([""] * (len(budgets) - 1)), fmt(r["kv_cache_bytes_per_token"])])
                continue
            row = [method]
            for b in budgets:
                r = by_budget.get(b)
                if r is None:
                    row.append("")
                elif r.get("draws", 1) > 1:
                    row.append(f"{fmt(r['ppl'])} ± {fmt(r['ppl_std'])}")
                else:
                    row.append(fmt(r["ppl"]))
            last = by_budget.get(budgets[-1])
            row.append(fmt(last["kv_cache_bytes_per_token"]) if last else "")
            rows.append(row)
        head = ["every layer replaced", *(f"m = {b}" for b in budgets), f"KV bytes / token at m = {budgets[-1]}"]
        intro = "Validation perplexity (mean ± std over draws where randomized).\n\n"
        return self.header(rel, data=[d]) + intro + md_table(head, rows)

    def real_models(self) -> str:
        return self._real_models("analysis/real_models/results/smollm2_n2048_m128.json")

    def real_models_long(self) -> str:
        return self._real_models("analysis/real_models/results/smollm2_n8192_m128.json")

    def _real_models(self, rel: str) -> str:
        """One study file: perplexity per protocol (per seed the geometric mean over the windows, then mean and
        spread over the seeds), passkey, the needle's layer and cost (the timings are the benchmark's, timed against
        SDPA in rounds; the study's own seconds are recorded in its file)."""
        d = self.load(rel)
        if d is None:
            return ""
        nll: dict[str, dict[str, dict[int, list[float]]]] = {}
        for r in d["rows"]:
            if r["task"] == "perplexity":
                per_seed = nll.setdefault(r["label"], {}).setdefault(r["protocol"], {})
                per_seed.setdefault(r["seed"], []).append(math.log(r["perplexity"]))
        keys: dict[str, list] = {}
        for r in d["rows"]:
            if r["task"] == "passkey":
                keys.setdefault(r["label"], []).append(r)
        costs = {c["label"]: c for c in d["costs"]}

        def cell(per_seed):
            values = [math.exp(sum(v) / len(v)) for v in per_seed.values()]
            if not values:
                return ""
            mean = sum(values) / len(values)
            if len(values) == 1:
                return fmt(mean)
            std = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
            return f"{fmt(mean)} ± {fmt(std)} ({len(values)} seeds)"

        rows = []
        for label, by_protocol in nll.items():
            trials = keys.get(label, [])
            reach = sorted({r["reach_layer"] for r in trials}, key=lambda x: (x is None, x))
            c = costs.get(label, {})
            rows.append(
                [
                    label,
                    cell(by_protocol.get("sparse", {})),
                    cell(by_protocol.get("sparse-prefill", {})),
                    f"{sum(r['correct'] for r in trials)}/{len(trials)}" if trials else "",
                    ", ".join("never" if x is None else str(x) for x in reach),
                    fmt(c["keys_per_query"]) if c else "all",
                    fmt(c["kv_cache_keys"]) if c else "all",
                ]
            )
        first = d["rows"][0]
        budget = next(r["budget"] for r in d["rows"] if r["label"] != "exact")
        windows = len({r["window"] for r in d["rows"] if r["task"] == "perplexity"})
        depths = ", ".join(_depth(x) for x in sorted({r["depth"] for r in d["rows"] if r["task"] == "passkey"}))
        forward = [r["seconds"] for r in d["rows"] if r["task"] == "perplexity" and r["label"] != "exact"]
        intro = (
            f"{d['model']}, {d['layers']} layers, n = {first['n']}, m = {budget} keys per query. Perplexity of the "
            f"last {first['scored']} tokens of {windows} window(s) of the standard library's help topics: *sparse* "
            "(the pattern at every position, which equals sparse generation teacher-forced) and *sparse prefill* "
            "(exact attention for the scored tokens over the sparse cache); passkey found by greedy generation with "
            f"the pattern (depths {depths}); the layer after which the last prompt position can first depend on "
            "the key (each trial); mean keys per query over the stack; keys the KV cache must hold at length n. "
            f"A sparse pattern's perplexity row took {secs(min(forward))} to {secs(max(forward))} on "
            f"{d['threads']} CPU threads (the rows' `seconds`; timed against SDPA: the "
            "[benchmark](../benchmarks.md#a-real-models-forward-and-decode)).\n\n"
        )
        head = [
            "pattern",
            "perplexity, sparse",
            "perplexity, sparse prefill",
            "passkey",
            "needle reaches the answer after layer",
            "keys / query",
            "KV-cache keys",
        ]
        return self.header(rel, data=[d]) + intro + md_table(head, rows)

    def real_models_passkey(self) -> str:
        return self._real_models_passkey("analysis/real_models/results/smollm2_n2048_m128.json")

    def real_models_long_passkey(self) -> str:
        return self._real_models_passkey("analysis/real_models/results/smollm2_n8192_m128.json")

    def _real_models_passkey(self, rel: str) -> str:
        """Passkey trials per pattern and depth: found or not, and the layer after which the key can reach the
        answer position."""
        d = self.load(rel)
        if d is None:
            return ""
        trials = [r for r in d["rows"] if r["task"] == "passkey"]
        depths = sorted({r["depth"] for r in trials})
        labels = list(dict.fromkeys(r["label"] for r in trials))
        rows = []
        for label in labels:
            row = [label]
            for depth in depths:
                cell = [r for r in trials if r["label"] == label and r["depth"] == depth]
                row.append(
                    "; ".join(
                        f"{'found' if r['correct'] else 'not found'}, "
                        f"{'never' if r['reach_layer'] is None else 'reach ' + str(r['reach_layer'])}"
                        for r in cell
                    )
                )
            rows.append(row)
        n = sorted({r["n"] for r in trials})
        intro = (
            f"Prompt of {', '.join(f'{x:,}' for x in n)} tokens, the key at each depth; per trial: whether greedy "
            "generation returns the key, and the layer after which the answer position can first depend on it "
            "(*never*: not within the model's layers).\n\n"
        )
        head = ["pattern", *(f"depth {_depth(x)}" for x in depths)]
        return self.header(rel, data=[d]) + intro + md_table(head, rows)

    def real_models_windows(self) -> str:
        rel = "analysis/real_models/results/windows.json"
        d = self.load(rel)
        if d is None:
            return ""
        rows = [
            [f"{r['n']:,}", str(r["window"]), str(r["scored"]), str(r["context"]), pct(r["repeated_share"])]
            for r in d["rows"]
        ]
        head = ["n", "window", "scored tokens", "context (tokens)", "scored tokens whose context occurs earlier"]
        return self.header(rel, data=[d]) + md_table(head, rows)


def _depth(x: float) -> str:
    return f"{100 * x:.0f} %"
