"""Receptive-field coverage through depth (the engine lives in :mod:`graphs`; the CLI in ``__main__``)."""

from .compute import coverage_by_layer, exact_fits, extend
from .results import CoverageResult, LayerCoverage

__all__ = ["CoverageResult", "LayerCoverage", "coverage_by_layer", "exact_fits", "extend"]
