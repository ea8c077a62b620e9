"""The tables of the causal variants (``analysis/causal/results/variants``): a mixin of ``Tables``.

Every cell is read from the committed variants file, or computed at build time from it (a closed-form path length
of the dilated heads evaluated at a point of the file, marked as such in the table's head).
"""

from __future__ import annotations

import math
import re

from causal_tables import CAUSAL, VARIANTS
from table_format import md_table, pow2


class VariantsTables:
    """Tables of the committed variants runs; uses the ``load`` and ``header`` of ``results_tables.Tables``."""

    def causal_variants(self) -> str:
        return self._variants(True, 8)

    def variants_causal_w64(self) -> str:
        return self._variants(True, 64)

    def variants_causal_w256(self) -> str:
        return self._variants(True, 256)

    def variants_bidirectional_w8(self) -> str:
        return self._variants(False, 8)

    def variants_bidirectional_w64(self) -> str:
        return self._variants(False, 64)

    def _variants(self, causal: bool, w: int) -> str:
        d = self.load(VARIANTS)
        if d is None:
            return ""
        points = [p for p in d["points"] if p["causal"] == causal and p["w"] == w]
        ns = sorted({p["n"] for p in points})
        order = []
        for p in points:
            if p["pattern"] not in order:
                order.append(p["pattern"])
        rows = []
        for name in order:
            cells = {p["n"]: p for p in points if p["pattern"] == name}
            row = [f"`{name}`"]
            keys = [c["keys_per_query"] for c in cells.values() if c.get("keys_per_query")]
            row.append(f"{min(keys):.1f}-{max(keys):.1f}" if keys else "")
            for n in ns:
                c = cells.get(n)
                if c is None:
                    row.append("")
                    continue
                layers = [x for x in c["full_layers"] if x is not None]
                typical = c["typical"] if c["typical"] is not None else f"> {d['parameters']['max_layers']}"
                spread = f" ({min(layers)}-{max(layers)})" if layers and min(layers) != max(layers) else ""
                row.append(f"{typical}{spread}{'' if c['method'] == 'exact' else ' s'}")
            rows.append(row)
        sampled = sorted({p["method"] for p in points if p["method"] != "exact"})
        seeds = sorted({len(p["seeds"]) for p in points if not p.get("deterministic")})
        intro = "Typical L* (the seeds' range in brackets)"
        if seeds:
            intro += f", {'-'.join(map(str, (seeds[0], seeds[-1]) if len(seeds) > 1 else seeds))} seeds"
        intro += ", one run of the deterministic dilated heads"
        if sampled:
            intro += f"; *s*: {', '.join(sampled)} targets (a lower bound per seed), every other cell exact"
        intro += ".\n\n"
        head = [f"{'causal' if causal else 'bidirectional'}, w = {w}", "keys / query", *(pow2(n) for n in ns)]
        return self.header(VARIANTS, data=[d]) + intro + md_table(head, rows)

    def variants_dilated(self) -> str:
        """Dilated heads: the measured L* against the layers of the explicit digit-by-digit path (causal)."""
        d = self.load(VARIANTS)
        if d is None:
            return ""
        rows = []
        equal = causal_points = 0
        for p in sorted(
            (p for p in d["points"] if p["pattern"].startswith("dilated")),
            key=lambda p: (not p["causal"], p["pattern"], p["w"], p["n"]),
        ):
            m = re.search(r"head_w=(\d+) dilations=\[([^\]]*)\]", p.get("config") or "")
            if m is None:
                continue
            h, dilations = int(m.group(1)), [int(x) for x in m.group(2).split(",")]
            path = ""
            if p["causal"]:
                path = _digit_path(p["n"], p["w"], h, "+swa" in p["pattern"])
                causal_points += 1
                equal += path == p["typical"]
            rows.append(
                [
                    f"`{p['pattern']}`",
                    "causal" if p["causal"] else "bidirectional",
                    str(p["w"]),
                    pow2(p["n"]),
                    str(h),
                    str(len(dilations)),
                    p["method"],
                    str(p["typical"]) if p["typical"] is not None else f"> {d['parameters']['max_layers']}",
                    str(path),
                ]
            )
        intro = (
            f"Causal: the digit path's layer count (`[d_0 > 0] + sum_(k>=1) ceil(d_k/(h-1))` over the base-w digits "
            f"of n - 1 with the window, head 1 taking `ceil(d_0/(h-1))` without it) equals the measured L* at "
            f"{equal} of {causal_points} points. `h`: the head window, from each point's `config`.\n\n"
        )
        head = ["pattern", "mode", "w", "n", "h", "heads", "targets", "L*", "digit path"]
        return self.header(VARIANTS, data=[d]) + intro + md_table(head, rows)

    def variants_sampled_check(self) -> str:
        """Sampled L* (1024 targets) against the exact L* on the same pattern instances."""
        rel = f"{CAUSAL}/variants/sampled-check/variants.json"
        check, full = self.load(rel), self.load(VARIANTS)
        if check is None or full is None:
            return self.header(rel, VARIANTS, data=[check, full])
        exact = {(p["pattern"], p["causal"], p["n"], p["w"]): p for p in full["points"] if p["method"] == "exact"}
        tally: dict[tuple, list[int]] = {}
        for s in check["points"]:
            e = exact.get((s["pattern"], s["causal"], s["n"], s["w"]))
            if e is None:
                continue
            by_seed = dict(zip(e["seeds"], e["full_layers"], strict=True))
            t = tally.setdefault((s["pattern"], s["causal"]), [0, 0, 0, 0])
            for seed, a in zip(s["seeds"], s["full_layers"], strict=True):
                if seed not in by_seed:
                    continue
                b = by_seed[seed]
                a_, b_ = (math.inf if a is None else a), (math.inf if b is None else b)
                t[0] += 1
                t[1] += a_ == b_
                t[2] += a_ == b_ - 1
                t[3] += a_ > b_
        rows = [
            [f"`{name}`", "causal" if causal else "bidirectional", str(t[0]), str(t[1]), str(t[2]), str(t[3])]
            for (name, causal), t in sorted(tally.items())
        ]
        total = [sum(t[i] for t in tally.values()) for i in range(4)]
        rows.append(["all", "", *map(str, total)])
        ns = sorted({s["n"] for s in check["points"]})
        intro = f"n = {', '.join(pow2(n) for n in ns)}; per seed, the sampled and the exact L* of one instance.\n\n"
        head = ["pattern", "mode", "seeds", "equal", "one layer below", "above the exact L*"]
        return self.header(rel, VARIANTS, data=[check, full]) + intro + md_table(head, rows)


def _digit_path(n: int, w: int, h: int, swa: bool) -> int:
    """Layers of the explicit causal path over ``n - 1`` by base-``w`` digits (dilations ``w^k``, head window ``h``)."""
    rest, digits = n - 1, []
    while rest:
        digits.append(rest % w)
        rest //= w
    first = int(digits[0] > 0) if swa else -(-digits[0] // (h - 1))
    return first + sum(-(-x // (h - 1)) for x in digits[1:])
