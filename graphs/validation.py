"""Argument checks shared by ``graphs`` and ``receptive``: each names the argument and the allowed range."""

from __future__ import annotations

import math
import numbers


def check_int(name: str, value, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an ``int`` in ``[low, high]``; ``ValueError`` naming ``name`` otherwise (bools rejected)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}: expected an integer, got {value!r}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        lo = "-inf" if low is None else low
        hi = "inf" if high is None else high
        raise ValueError(f"{name}: expected an integer in [{lo}, {hi}], got {value}")
    return value


def check_real(name: str, value, low: float, high: float) -> float:
    """``value`` as a finite ``float`` in ``[low, high]``; ``ValueError`` naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite real number, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name}: expected a number in [{low}, {high}], got {value}")
    return float(value)
