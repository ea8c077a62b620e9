"""The sharp model's ``P(full after L)`` at one grid point, with the choice of model for causal SA+SWA.

Causal, non-circular SA+SWA has two models (:data:`receptive.theory.CAUSAL_SA_SWA_MODELS`): the analytic
run-branching/profile model (:func:`receptive.theory.full_probability`, milliseconds) and the interval Monte Carlo
(:func:`receptive.theory.interval_point_model`, seconds to minutes per point, deterministic for a
given seed). :func:`point_probabilities` picks one; every other pattern and mode has the analytic model only.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from .. import theory
from ..theory import interval_point_model, load_interval_model
from ..theory.interval import EVALUATION_EVENTS, EVALUATION_MAX_COST, EVALUATION_SEED

__all__ = ["MODELS", "interval_probabilities", "model_probabilities", "point_probabilities"]

#: the models of causal SA+SWA
MODELS = theory.CAUSAL_SA_SWA_MODELS


@functools.lru_cache(maxsize=4096)
def model_probabilities(
    pattern: str, n: int, w: int, causal: bool, circular: bool, max_layers: int, targets: int | None
) -> tuple[float, ...]:
    """The analytic model's ``P(full after L)``, ``L = 1..max_layers``, cached per point (the causal model costs
    seconds at n = 2^22).

    Parameters
    ----------
    pattern : str
        ``"sa"`` or ``"sa+swa"``.
    n, w : int
        Sequence length and window.
    causal, circular : bool
        The mode.
    max_layers : int
        Layers.
    targets : int or None
        ``K`` sampled targets, or ``None`` for every pair.

    Returns
    -------
    tuple of float
        :func:`receptive.theory.full_probability` as a tuple (hashable, so the cache can return it).

    Raises
    ------
    ValueError
        For arguments out of range (from :func:`receptive.theory.full_probability`).

    Examples
    --------
    >>> probs = model_probabilities("sa", 4096, 8, False, False, 8, None)
    >>> len(probs), probs[0] < 0.01 < 0.99 < probs[-1]
    (8, True)

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754; Aldous 1989, Probability Approximations via the Poisson
    Clumping Heuristic, Springer.
    """
    probs = theory.full_probability(pattern, n, w, max_layers, causal, circular, targets)
    return tuple(float(p) for p in probs)


def interval_probabilities(n: int, w: int, max_layers: int, targets: int | None, path=None) -> tuple[float, ...]:
    """``P(full after L)`` of causal SA+SWA from the interval Monte Carlo model.

    Parameters
    ----------
    n, w, max_layers : int
        The point and its layers.
    targets : int or None
        ``K`` sampled targets, or ``None`` for every pair.
    path : str, Path or None
        An interval-model result file (:func:`receptive.theory.load_interval_model`). A point it
        holds is read from it; a point it lacks is computed with the file's settings. ``None``: computed live with
        the evaluation's settings (``EVALUATION_EVENTS``, ``EVALUATION_SEED``, ``EVALUATION_MAX_COST``).

    Returns
    -------
    tuple of float
        ``max_layers`` probabilities.

    Raises
    ------
    ValueError
        If ``path`` is given and is not a readable interval-model file (the message names ``interval_file``).

    Examples
    --------
    >>> probs = interval_probabilities(256, 8, 6, None)
    >>> len(probs), probs[-1] > 0.99
    (6, True)

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754; Aldous 1989, Probability Approximations via the Poisson
    Clumping Heuristic, Springer.
    """
    table, settings = {}, {}
    if path is not None:
        if not isinstance(path, str | Path):
            raise TypeError(f"interval_file: expected a str or Path, got {type(path).__name__}")
        if not Path(path).is_file():
            raise ValueError(f"interval_file: no such file: {path}")
        try:
            table, settings = _interval_table(str(path), Path(path).stat().st_mtime_ns)
        except (ValueError, OSError) as exc:
            raise ValueError(f"interval_file: {str(exc).removeprefix('path: ')}") from None
    key = (n, w, targets, max_layers)
    if key in table:
        return tuple(table[key])
    live = _live_point(
        n,
        w,
        max_layers,
        targets,
        settings.get("events", EVALUATION_EVENTS),
        settings.get("seed", EVALUATION_SEED),
        settings.get("max_cost", EVALUATION_MAX_COST),
    )
    return live


@functools.lru_cache(maxsize=1024)
def _live_point(n, w, max_layers, targets, events, seed, max_cost) -> tuple[float, ...]:
    row = interval_point_model(n, w, max_layers, targets, events, seed, max_cost)
    return tuple(row["full_probability"])


@functools.lru_cache(maxsize=8)
def _interval_table(path: str, mtime_ns: int) -> tuple[dict, dict]:
    return load_interval_model(path)


def point_probabilities(
    pattern: str,
    n: int,
    w: int,
    causal: bool,
    circular: bool,
    max_layers: int,
    targets: int | None,
    model: str = "analytic",
    interval_file=None,
) -> np.ndarray:
    """``P(full after L)``, ``L = 1..max_layers``, of one grid point under the chosen model.

    Parameters
    ----------
    pattern, n, w, causal, circular, max_layers, targets
        The point, as in :func:`model_probabilities`.
    model : {"analytic", "interval"}
        ``"interval"``: causal, non-circular SA+SWA from :func:`interval_probabilities` (every other point keeps
        the analytic model); ``"analytic"``: :func:`model_probabilities` everywhere.
    interval_file : str, Path or None
        Passed to :func:`interval_probabilities` (only read with ``model="interval"``).

    Returns
    -------
    numpy.ndarray
        ``max_layers`` probabilities, non-decreasing.

    Raises
    ------
    ValueError
        For an unknown ``model``, or ``interval_file`` given with ``model="analytic"``.

    Examples
    --------
    >>> point_probabilities("sa+swa", 1024, 8, True, False, 12, None).shape
    (12,)

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754; Aldous 1989, Probability Approximations via the Poisson
    Clumping Heuristic, Springer.
    """
    if model not in MODELS:
        raise ValueError(f"model: expected one of {', '.join(MODELS)}, got {model!r}")
    if interval_file is not None and model != "interval":
        raise ValueError(f"interval_file: only read with model='interval', got model={model!r}")
    if model == "interval" and pattern == "sa+swa" and causal and not circular:
        return np.array(interval_probabilities(n, w, max_layers, targets, interval_file))
    return np.array(model_probabilities(pattern, n, w, causal, circular, max_layers, targets))
