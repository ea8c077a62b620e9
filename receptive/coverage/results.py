"""Result types of a coverage computation."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

__all__ = ["CoverageResult", "LayerCoverage"]


@dataclass(frozen=True)
class LayerCoverage:
    """Coverage statistics after ``layer`` layers.

    ``mean``: mean over positions of ``|RF_L(i)| / |A(i)|``; ``min``: the worst-served position; ``full_fraction``:
    the share of positions with ``RF_L(i) = A(i)``. For sampled targets ``mean`` and ``full_fraction`` estimate the
    values over all positions (``receptive.coverage.sampling``), ``min`` is over the sample, ``mean_ci`` is a
    95% confidence interval of the mean (hedged betting, valid for bounded skewed data) and ``full_fraction_ci``
    an exact (Clopper-Pearson) 95% interval of the full share.

    Attributes
    ----------
    layer : int
        Layers applied (1-based).
    mean : float
        Mean coverage.
    min : float
        Smallest coverage of a position (of the sample).
    full_fraction : float
        Share of fully covered positions.
    mean_ci : tuple of float or None, default None
        95% interval of ``mean`` (sampled targets only).
    full_fraction_ci : tuple of float or None, default None
        95% interval of ``full_fraction`` (sampled targets only).

    Examples
    --------
    >>> from receptive import coverage_by_layer, make_pattern
    >>> first = coverage_by_layer(make_pattern("sa", 256, 8, seed=0)).layers[0]
    >>> first.layer, first.mean, first.min  # one layer: 8 of 256 keys, the truncated ends fewer
    (1, 0.031005859375, 0.015625)
    >>> sorted(first.to_dict())  # the intervals appear only when there are any
    ['full_fraction', 'layer', 'mean', 'min']
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

    Attributes
    ----------
    pattern : str
        The pattern's name.
    description : str
        Its :meth:`~receptive.patterns.base.Pattern.describe`.
    n : int
        Sequence length.
    causal : bool
        Whether the pattern is causal.
    method : str
        ``"closed-form"``, ``"exact"`` or ``"sampled"``.
    layers : list of LayerCoverage
        One entry per layer computed.
    full_coverage_layer : int or None
        L*, or ``None`` when not reached.
    targets : int or None, default None
        Sampled targets (``sampled`` only).
    note : str, default ""
        What the method implies for reading the numbers.
    sizes : numpy.ndarray or None, default None
        ``|RF_l|`` per layer and position, when kept.
    positions : numpy.ndarray or None, default None
        The positions of the columns of ``sizes``.

    Examples
    --------
    >>> from receptive import coverage_by_layer, make_pattern
    >>> result = coverage_by_layer(make_pattern("sa", 256, 8, seed=0))
    >>> result
    CoverageResult(sa w=8, n=256, causal=False, method=exact, L*=4, after 4 layers mean=1.0000 min=1.0000)
    >>> result.to_dict()["full_coverage_layer"]
    4
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
