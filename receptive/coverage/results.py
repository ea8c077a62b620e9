"""Result types of a coverage computation."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np


@dataclass(frozen=True)
class LayerCoverage:
    """Coverage statistics after ``layer`` layers.

    ``mean``: mean over positions of ``|RF_L(i)| / |A(i)|``; ``min``: the worst-served position; ``full_fraction``:
    the share of positions with ``RF_L(i) = A(i)``. For sampled targets ``mean`` and ``full_fraction`` estimate the
    values over all positions (:mod:`receptive.coverage.sampling`), ``min`` is over the sample, ``mean_ci`` is a
    95% confidence interval of the mean (hedged betting, valid for bounded skewed data) and ``full_fraction_ci``
    an exact (Clopper-Pearson) 95% interval of the full share.
    """

    layer: int
    mean: float
    min: float
    full_fraction: float
    mean_ci: tuple[float, float] | None = None
    full_fraction_ci: tuple[float, float] | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        for key in ("mean_ci", "full_fraction_ci"):
            if d[key] is None:
                del d[key]
            else:
                d[key] = list(d[key])
        return d


@dataclass(frozen=True)
class CoverageResult:
    """Coverage of one pattern through depth.

    ``method``: ``closed-form`` (intervals, SWA and full), ``exact`` (every receptive field, all slabs) or
    ``sampled`` (the receptive fields of ``targets`` random positions, each exact). ``full_coverage_layer`` is the
    first layer L* at which every position (sampled: every sampled target) sees all of ``A(i)``; ``None`` if not
    reached within the layers computed. ``sizes[l - 1, k]`` is ``|RF_l|`` of position ``positions[k]``.
    """

    pattern: str
    description: str
    n: int
    causal: bool
    method: str
    layers: list[LayerCoverage]
    full_coverage_layer: int | None
    targets: int | None = None
    note: str = ""
    sizes: np.ndarray | None = field(default=None, repr=False, compare=False)
    positions: np.ndarray | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        """The JSON form: ``{"layers": [{"layer", "mean", "min", "full_fraction"}, ...], "full_coverage_layer",
        "method", ...}`` (sizes omitted)."""
        d = {
            "description": self.description,
            "method": self.method,
            "layers": [lc.to_dict() for lc in self.layers],
            "full_coverage_layer": self.full_coverage_layer,
        }
        if self.targets is not None:
            d["targets"] = self.targets
        if self.note:
            d["note"] = self.note
        return d

    def __repr__(self) -> str:
        last = self.layers[-1] if self.layers else None
        tail = f", after {last.layer} layers mean={last.mean:.4f} min={last.min:.4f}" if last else ""
        return (
            f"CoverageResult({self.description}, n={self.n}, causal={self.causal}, method={self.method}, "
            f"L*={self.full_coverage_layer}{tail})"
        )
