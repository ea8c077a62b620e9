"""The benchmark tables of the documentation, from ``benchmarks/results/*.json``: a mixin of ``Tables``."""

from __future__ import annotations

import math

from table_format import fmt, md_table, ms, pct, pow2, ratio, secs  # noqa: F401


class BenchmarkTables:
    """Tables of the committed benchmark results; uses the ``load`` and ``header`` of ``results_tables.Tables``."""

    def bench_coverage(self) -> str:
        rel = "benchmarks/results/coverage.json"
        d = self.load(rel)
        if d is None:
            return ""
        rows = [[r["benchmark"], secs(r["seconds"]), r["note"]] for r in d["rows"]]
        return self.header(rel, data=[d]) + md_table(["benchmark", "time", "note"], rows)

    def bench_graphs(self) -> str:
        rel = "benchmarks/results/graphs.json"
        d = self.load(rel)
        if d is None:
            return ""
        rows = [
            [
                r["work"],
                secs(r["ours_s"]),
                r["peer"] or "(no peer)",
                secs(r["peer_s"]) if r["peer_s"] is not None else "",
                fmt(r["ours_over_peer"]) if r["ours_over_peer"] is not None else "",
                r["note"],
            ]
            for r in d["rows"]
        ]
        load = d.get("load_rows", {}).get("command")
        extra = f"The load rows: `{load}`.\n\n" if load else ""
        return (
            self.header(rel, data=[d])
            + extra
            + md_table(["work", "ours", "peer, same run", "peer", "ours / peer", "note"], rows)
        )

    def bench_gpu(self) -> str:
        rel = "benchmarks/results/gpu_bench.json"
        d = self.load(rel)
        if d is None:
            return ""
        kinds = ("full", "swa", "sa", "sa+swa")
        times = {(r["n"], r["path"]): r for r in d["rows"]}
        cost = {(r["n"], r["path"]): r for r in d["cost_to_full_coverage"]}
        rows = []
        for n in sorted({r["n"] for r in d["rows"]}):
            row = [f"{n:,}"]
            row += [ms(times[(n, k)]["seconds"]) if (n, k) in times else "" for k in kinds]
            if (n, "sa") in times:
                row.append(f"{times[(n, 'sa')]['speedup_over_full']:.1f}x")
            row.append(
                " / ".join(
                    f"{secs(cost[(n, k)]['seconds_to_full_coverage'])} (L* {cost[(n, k)]['full_coverage_layer']})"
                    for k in kinds
                    if (n, k) in cost
                )
            )
            rows.append(row)
        p = d["parameters"]
        intro = (
            f"{d['device']}, torch {d['torch']}, {p['dtype']}, {p['heads']} heads, d = {p['d']}, w = {p['w']}, "
            f"forward, median of {p['repeats']} rounds, {d.get('torch_threads')} threads.\n\n"
        )
        head = ["n", *kinds, "SA speedup over full", "to full coverage: full / SWA / SA / SA+SWA"]
        return self.header(rel, data=[d]) + intro + md_table(head, rows)

    def bench_gpu_check(self) -> str:
        rel = "benchmarks/results/gpu_check.json"
        d = self.load(rel)
        if d is None:
            return ""
        paths = ("full", "swa flex", "swa fused", "sa", "sa flex", "sa fused", "sa+swa fused")
        t = {(r["n"], r["path"], r["direction"]): r for r in d["timings"]}
        rows = []
        for n in sorted({r["n"] for r in d["timings"]}):
            row = [f"{n:,}"]
            for path in paths:
                r = t.get((n, path, "forward"))
                if r is None:
                    row.append("")
                elif r["seconds"] is None or not math.isfinite(r["seconds"]):
                    row.append(r.get("note") or "-")
                else:
                    row.append(f"{r['seconds'] * 1e3:.3g}")
            sa, swa, full = (t.get((n, k, "forward")) for k in ("sa fused", "swa fused", "full"))
            row.append(ratio(sa, swa))
            row.append(ratio(full, sa))
            rows.append(row)
        env, s = d["environment"], d["sizes"]
        intro = (
            f"{env['gpu']}, torch {env['torch']}, Triton {env['triton']}; {s['dtype']}, {s['heads']} heads, "
            f"d = {s['d']}, w = {s['w']}, batch 1, forward, ms. Correctness: "
            f"{sum(c['ok'] for c in d['correctness']['checks'])} of {len(d['correctness']['checks'])} checks pass.\n\n"
        )
        head = ["n", *(f"{p}" for p in paths), "SA fused / SWA fused", "full / SA fused"]
        return self.header(rel, data=[d]) + intro + md_table(head, rows)

    def bench_sa_layer(self) -> str:
        rel = "benchmarks/results/sa_layer.json"
        d = self.load(rel)
        if d is None:
            return ""
        rows = [[name, ms(sec), f"{d['ratio_to_floor'][name]:.2f}x"] for name, sec in d["seconds"].items()]
        intro = (
            f"n = {d['n']:,}, w = {d['w']}, {d['words_per_row']} words per row ({d['slab_bytes'] / 2**20:.0f} MiB), "
            f"{d['threads']} threads; best of each row.\n\n"
        )
        return self.header(rel, data=[d]) + intro + md_table(["row", "time", "over the floor"], rows)

    def bench_banded(self) -> str:
        rel = "benchmarks/results/banded.json"
        d = self.load(rel)
        if d is None:
            return ""
        keep = ("chunked", "one shot", "1-head calls, chunked")
        rows = [
            [f"{r['n']:,}", r["pass"], r["path"], ms(r["seconds"]), f"{r['ratio_to_one_shot']:.2f}x"]
            for r in d["rows"]
            if r["path"] in keep
        ]
        intro = f"{d['device']}, {d['torch_threads']} thread, {d['chunk_scores']:,} score elements per chunk.\n\n"
        return self.header(rel, data=[d]) + intro + md_table(["n", "pass", "path", "median", "over one shot"], rows)

    def bench_generation(self) -> str:
        return self._generation("benchmarks/results/generation.json")

    def bench_generation_long(self) -> str:
        return self._generation("benchmarks/results/generation_long.json")

    def _generation(self, rel: str) -> str:
        d = self.load(rel)
        if d is None:
            return ""
        intro = (
            f"{d['model']}, {d['layers']} layers, {d['budget']} keys per query, {d['threads']} threads, load average "
            f"{d['load_average_before'][0]:.1f} before and {d['load_average_after'][0]:.1f} after. Floor: the one-key "
            "model's time plus the row's attention FLOPs at SDPA's measured rate; forward: median of the rounds "
            f"without a cache; decode: median step, {d.get('decode_cache', 'one filled cache')}.\n\n"
        )
        forward = [
            [
                f"{r['n']:,}" + (" (last logits)" if r.get("logits") == "last" else ""),
                r["attention"],
                f"{r['keys_per_query']:,.0f}",
                secs(r["seconds"]),
                secs(r["floor_seconds"]),
                f"{r['over_floor']:.2f}x",
                f"{r['over_sdpa']:.2f}x",
            ]
            for r in d["forward"]
        ]
        decode = [
            [
                f"{r['context']:,}",
                r["attention"],
                f"{r['keys_per_query']:,.0f}",
                ms(r["seconds"]),
                ms(r["floor_seconds"]),
                f"{r['over_floor']:.2f}x",
                f"{r['over_sdpa']:.2f}x",
                f"{r['growth']:.2f}",
            ]
            for r in d["decode"]
        ]
        text = self.header(rel, data=[d]) + intro
        if forward:
            head = ["n", "attention", "keys / query", "forward", "floor", "over floor", "over SDPA"]
            text += md_table(head, forward) + "\n"
        if decode:
            head = ["context", "attention", "keys / query", "step", "floor", "over floor", "over SDPA", "growth"]
            text += md_table(head, decode)
        return text

    def bench_generation_profile(self) -> str:
        rels = ("benchmarks/results/generation_before.json", "benchmarks/results/generation.json")
        docs = [self.load(rel) for rel in rels]
        if any(d is None or not d.get("profile") for d in docs):
            return ""
        rows = []
        for when, d in zip(("before", "after"), docs, strict=True):
            context = d["profile"]["context"]
            median = {r["attention"]: r["seconds"] for r in d["decode"] if r["context"] == context}
            for label, step in d["profile"]["steps"].items():
                if label not in ("sdpa", "one-key", "sa", "swa"):
                    continue
                top = ", ".join(f"{r['name'].removeprefix('aten::')} {r['self_cpu_ms']:.1f}" for r in step["rows"][:5])
                rows.append([when, label, ms(median[label]), f"{step['self_cpu_ms_total']:.1f}", top])
        intro = (
            f"One decode step after {docs[1]['profile']['context']:,} tokens, `torch.profiler` (CPU): the self CPU "
            "time of the torch operators in the profiled step (the numba kernel is not one of them) and the five "
            "largest, ms, beside the median step of the timed rounds.\n\n"
        )
        head = ["code", "attention", "median step", "operators, ms", "largest operators (self ms)"]
        return self.header(*rels, data=docs) + intro + md_table(head, rows)
