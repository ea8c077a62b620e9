"""Formatting of the documentation's tables: numbers, Markdown tables, and the commands of the study READMEs."""

from __future__ import annotations

import math
import re
from pathlib import Path


# -- formatting ---------------------------------------------------------------------------------------------------
def fmt(x) -> str:
    """Three significant digits, thousands separators for large numbers."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}"
    if not math.isfinite(x):
        return str(x)
    if abs(x) >= 1e5:
        return f"{x:.3g}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def pct(x) -> str:
    return f"{100 * x:.1f}%"


def secs(x) -> str:
    if x is None:
        return ""
    if x < 1:
        return ms(x)
    return f"{x:,.0f} s" if x >= 1000 else f"{x:.3g} s"


def ms(x) -> str:
    value = x * 1e3
    return f"{value:,.0f} ms" if value >= 1000 else f"{value:.3g} ms"


def ratio(a, b) -> str:
    if not a or not b or not a.get("seconds") or not b.get("seconds"):
        return ""
    return f"{a['seconds'] / b['seconds']:.2f}"


def lstar(value, depth) -> str:
    return str(value) if value is not None else f"> {depth}"


def pow2(n: int) -> str:
    k = n.bit_length() - 1
    return f"2^{k}" if n == 1 << k else f"{n:,}"


def md_table(head: list[str], rows: list[list[str]]) -> str:
    def cell(s: str) -> str:
        return str(s).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# -- commands from the study READMEs ---------------------------------------------------------------------------------
_ROW = re.compile(r"^\|(?P<files>[^|]*`[^|]*)\|(?P<command>.*)\|\s*$")


def readme_commands(root: Path) -> dict[str, str]:
    """Map result paths (checkout-relative, maybe with ``*`` or a trailing ``/``) to the command their README gives.

    Parameters
    ----------
    root : Path
        The checkout root.

    Returns
    -------
    dict
        ``{path pattern: command as Markdown}`` from the two-column tables of ``analysis/*/README.md``.
    """
    out: dict[str, str] = {}
    for readme in sorted(root.glob("analysis/*/README.md")):
        study = readme.parent.relative_to(root).as_posix()
        for line in readme.read_text().splitlines():
            m = _ROW.match(line)
            if not m:
                continue
            command = m.group("command").strip().replace("\\|", "|")
            if "`" not in command:
                continue
            tokens = [t.strip() for cell in re.findall(r"`([^`]+)`", m.group("files")) for t in cell.split(",")]
            for token in tokens:
                if "/" not in token or " " in token:
                    continue
                path = token if token.startswith(("analysis/", "benchmarks/")) else f"{study}/{token}"
                out.setdefault(path, command)
    return out
