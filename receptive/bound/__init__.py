"""Verification of the O(log_w n) coverage bound against the engine (``python -m receptive.bound``)."""

from .analysis import PointResult, analyse_point, deviations, fit_log_law, group_results

__all__ = ["PointResult", "analyse_point", "deviations", "fit_log_law", "group_results"]
