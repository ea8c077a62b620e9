"""Verification of the O(log_w n) coverage bound against the engine (``python -m receptive.bound``): the statistics
of a sweep (:mod:`receptive.bound.analysis`), the sharp model per point (:mod:`receptive.bound.models`) and distinct
keys per query in ``O(n)`` memory (:mod:`receptive.bound.keys`)."""

from .analysis import (
    PointResult,
    analyse_point,
    binomial_checks,
    calibrated_exact_probability,
    deviations,
    fit_log_law,
    group_results,
    log_likelihood_check,
    typical_layer,
)
from .models import interval_probabilities, model_probabilities, point_probabilities

__all__ = [
    "PointResult",
    "analyse_point",
    "binomial_checks",
    "calibrated_exact_probability",
    "deviations",
    "fit_log_law",
    "group_results",
    "interval_probabilities",
    "log_likelihood_check",
    "model_probabilities",
    "point_probabilities",
    "typical_layer",
]
