"""Sphinx extension: the tables of the cost-quality frontier (``analysis/frontier``), written into
``docs/generated/tables/`` when the configuration is read, as ``receptive_docs`` writes the others.

Every cell is read from ``analysis/frontier/results/frontier.json``; the header names the command that wrote it (the
study README's table). A missing file is a Sphinx warning, so ``sphinx -W`` fails on it.
"""

from __future__ import annotations

from pathlib import Path

from results_tables import Tables
from sphinx.util import logging
from table_format import md_table

logger = logging.getLogger(__name__)

FRONTIER = "analysis/frontier/results/frontier.json"
TASK_NAMES = {"arc_easy": "ARC-Easy", "hellaswag": "HellaSwag", "piqa": "PIQA", "lambada": "LAMBADA"}


def _label(c: dict) -> str:
    head, _, layers = c["label"].partition(", layers ")
    return f"{head} + full layers {layers.removesuffix(' exact')}" if layers else head


class FrontierTables(Tables):
    """The frontier's tables; :class:`results_tables.Tables` reads the file and names its command."""

    def tables(self) -> dict[str, str]:
        """Every table of the frontier page, by file name."""
        return {"frontier_front": self.frontier_front(), "frontier_all": self.frontier_all()}

    def frontier_front(self) -> str:
        d = self.load(FRONTIER)
        if d is None:
            return ""
        rows = []
        for protocol in ("sparse", "exact"):
            points = [
                c for c in d["configurations"] if c["protocol"] == protocol and (c["on_front"] or c["on_front_whole"])
            ]
            for c in sorted(points, key=lambda c: c["seconds_per_item"]):
                rows.append(
                    [
                        protocol,
                        _label(c),
                        f"{c['mean']:.3f}",
                        f"{c['seconds_per_item']:.3f}",
                        f"{c['seconds_per_item_whole']:.3f}",
                        "yes" if c["on_front"] else "",
                        "yes" if c["on_front_whole"] else "",
                    ]
                )
        full = d["full_attention"]
        note = (
            f"The configurations on the Pareto front of each protocol under either seconds convention. Full "
            f"attention: {full['mean']:.3f} at {full['seconds_per_item']:.3f} s per item; chance "
            f"{d['chance']:.3f}. Stores: {', '.join(f'`{s}`' for s in d['stores'])}."
        )
        head = [
            "decode",
            "configuration",
            "mean accuracy",
            "s per item and protocol",
            "s per item, whole row",
            "on the front (split)",
            "on the front (whole row)",
        ]
        return self.header(FRONTIER, data=[d]) + note + "\n\n" + md_table(head, rows)

    def frontier_all(self) -> str:
        d = self.load(FRONTIER)
        if d is None:
            return ""
        tasks = d["informative_tasks"]
        rows = []
        for c in d["configurations"]:
            front = (
                "both"
                if c["on_front"] and c["on_front_whole"]
                else "split"
                if c["on_front"]
                else "whole row"
                if c["on_front_whole"]
                else ""
            )
            rows.append(
                [
                    c["protocol"],
                    _label(c),
                    str(len(c["seeds"])),
                    *(f"{c['accuracy'][t]:.3f}" for t in tasks),
                    f"{c['mean']:.3f}",
                    f"{c['seconds_per_item']:.3f}",
                    f"{c['seconds_low']:.3f} - {c['seconds_high']:.3f}",
                    f"{c['seconds_per_item_whole']:.3f}",
                    str(c["rows"]),
                    front,
                ]
            )
        note = (
            "Every configuration, by protocol and seconds per item and protocol (the median over each task's "
            "rows, averaged over the tasks; the range: each task's fastest and slowest row, averaged). Accuracy: "
            "OLMES's primary metric on the 200 fixed items, a randomized pattern's per-item score averaged over "
            "its seeds."
            + (f" Left out for lacking an informative task: {', '.join(d['incomplete'])}." if d["incomplete"] else "")
        )
        head = [
            "decode",
            "configuration",
            "seeds",
            *(TASK_NAMES.get(t, t) for t in tasks),
            "mean",
            "s per item and protocol",
            "fastest - slowest",
            "s per item, whole row",
            "rows",
            "front",
        ]
        return self.header(FRONTIER, data=[d]) + note + "\n\n" + md_table(head, rows)


def generate(app, config) -> None:
    srcdir = Path(app.srcdir)
    tables = FrontierTables(srcdir.parent)
    for name, text in tables.tables().items():
        path = srcdir / "generated" / "tables" / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    for problem in tables.missing:
        logger.warning("frontier_tables: missing %s", problem)


def setup(app):
    app.connect("config-inited", generate)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
