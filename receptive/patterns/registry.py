"""Pattern names: the registry behind ``make_pattern`` and the command-line tools."""

from __future__ import annotations

from collections.abc import Sequence

from .base import Pattern
from .causal_variants import registry_constructors
from .local import FullAttention, SlidingWindow
from .stochastic import GatedSAPlusSWA, StochasticAttention

#: name -> constructor(n, w, causal, circular, seed, permutations)
PATTERNS = {
    "swa": lambda n, w, causal, circular, seed, permutations: SlidingWindow(n, w, causal, circular),
    "sa": lambda n, w, causal, circular, seed, permutations: StochasticAttention(
        n, w, causal, circular, seed, permutations
    ),
    "sa+swa": lambda n, w, causal, circular, seed, permutations: GatedSAPlusSWA(
        n, w, causal, circular, seed, permutations
    ),
    "full": lambda n, w, causal, circular, seed, permutations: FullAttention(n, causal),
}
PATTERNS.update(registry_constructors())  # issue 13: sa-ms, kleinberg, dilated (+swa, -eq)


def make_pattern(
    name: str,
    n: int,
    w: int,
    causal: bool = False,
    circular: bool = False,
    seed: int = 0,
    permutations: Sequence | None = None,
) -> Pattern:
    """Build a registered pattern by name (``swa``, ``sa``, ``sa+swa``, ``full``)."""
    if name not in PATTERNS:
        raise ValueError(f"patterns: unknown pattern {name!r}; choose from {', '.join(PATTERNS)}")
    return PATTERNS[name](n, w, causal, circular, seed, permutations)
