"""The argument parser every ``python -m receptive...`` command uses."""

from __future__ import annotations

from graphs.cli_common import OneLineErrorParser

__all__ = ["OneLineErrorParser", "comma_ints", "comma_names"]  # the parser lives in graphs (below receptive)


def comma_names(option: str, text: str, allowed) -> list[str]:
    """``"sa,swa"`` -> ``["sa", "swa"]``, every name from ``allowed``; a ``ValueError`` naming ``option`` if not."""
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names or any(name not in allowed for name in names):
        raise ValueError(f"{option}: expected comma-separated names from {', '.join(allowed)}, got {text!r}")
    return names


def comma_ints(option: str, text: str, low: int = 1) -> list[int]:
    """``"16,32"`` -> ``[16, 32]``, every value ``>= low``; a ``ValueError`` naming ``option`` if not."""
    try:
        values = [int(s) for s in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < low:
        raise ValueError(f"{option}: expected comma-separated integers >= {low}, got {text!r}")
    return values
