"""The sharp prediction of L*: ``P(full coverage after L layers)`` from the model of each regime
(:func:`full_probability`), and the first layer at which full coverage is more likely than not
(:func:`median_layer`, :func:`predict_full_layer`).

* bidirectional SA and SA+SWA: :func:`~receptive.theory.bidirectional.sa_full_probability`,
  :func:`~receptive.theory.bidirectional.sa_swa_full_probability`;
* causal SA and SA+SWA: :func:`~receptive.theory.causal.causal_full_probability` (the analytic clump model);
* causal SA+SWA by Monte Carlo of the interval process, ``model="interval"``
  (:func:`~receptive.theory.interval.causal_interval_clumps`; seconds to two minutes per point, so only when asked).
"""

from __future__ import annotations

import numpy as np

from ..validation import check_bool, check_choice, check_int
from .bidirectional import sa_full_probability, sa_swa_full_probability
from .causal import causal_full_probability

MODELS = {
    ("sa", False): "sa_full_probability",
    ("sa+swa", False): "sa_swa_full_probability",
    ("sa", True): "causal_full_probability(swa=False)",
    ("sa+swa", True): "causal_full_probability",
}


#: the models of causal SA+SWA that :func:`full_probability` offers (``receptive.bound.models`` dispatches between
#: them)
CAUSAL_SA_SWA_MODELS = ("analytic", "interval")


def full_probability(
    name: str,
    n: int,
    w: int,
    layers: int,
    causal: bool = False,
    circular: bool = False,
    targets: int | None = None,
    model: str = "analytic",
) -> np.ndarray:
    """``P(full after L)`` for ``L = 1..layers`` from the sharp model of ``name`` (``sa`` or ``sa+swa``).

    With ``targets = K``, the probability that ``K`` random targets are all fully covered (what a sampled run
    measures).

    ``model="interval"`` (causal, non-circular SA+SWA only): the interval Monte Carlo model
    (:func:`receptive.theory.causal_interval_clumps` with the evaluation's settings,
    ``EVALUATION_EVENTS`` events and ``EVALUATION_SEED``; seconds to two minutes per call,
    :class:`~receptive.theory.IntervalCostError` where it would cost more than ``EVALUATION_MAX_COST``
    word operations; ``docs/theory.md`` Sec. 5); the default ``"analytic"`` is the closed-form model, milliseconds
    per call.

    Receptive fields only grow, so the probability is made non-decreasing (running maximum): the clumping
    heuristics are built for rare failures and can dip where failure is all but certain anyway.

    Parameters
    ----------
    name : str
        ``"sa"`` or ``"sa+swa"``.
    n : int
        Sequence length, ``>= 2``.
    w : int
        Window size, ``>= 1``.
    layers : int
        Number of layers, ``>= 1``.
    causal : bool, optional
        Causal attention.
    circular : bool, optional
        Circular windows and bands.
    targets : int or None, optional
        ``K`` random targets, in ``1..n``; ``None``: all positions.
    model : str, optional
        One of :data:`CAUSAL_SA_SWA_MODELS`.

    Returns
    -------
    numpy.ndarray
        Non-decreasing ``P(full after L)`` for ``L = 1..layers``.

    Raises
    ------
    TypeError
        If an integer argument is not an integer, ``name`` or ``model`` is not a string, or a flag is not a bool.
    ValueError
        If an integer argument is out of range, ``name`` or ``model`` is unknown, or ``model="interval"`` is asked
        for another regime.
    receptive.theory.IntervalCostError
        If ``model="interval"`` would cost more than ``EVALUATION_MAX_COST``.

    Examples
    --------
    >>> from receptive.theory import full_probability
    >>> full_probability("sa", 256, 8, 5).round(3)
    array([0.   , 0.   , 0.   , 0.881, 1.   ])
    >>> bool((full_probability("sa+swa", 256, 8, 6, causal=True) <= 1).all())
    True

    References
    ----------
    * Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    * Aldous 1989, Probability Approximations via the Poisson Clumping Heuristic, Springer.
    """
    if not isinstance(name, str):
        raise TypeError(f"name: expected 'sa' or 'sa+swa' (a string), got {type(name).__name__}")
    causal, circular = check_bool("causal", causal), check_bool("circular", circular)
    if targets is not None:
        targets = check_int("targets", targets, 1, n)
    check_choice("model", model, CAUSAL_SA_SWA_MODELS)
    if model == "interval":
        if name != "sa+swa" or not causal or circular:
            raise ValueError(
                f"model: 'interval' covers causal, non-circular 'sa+swa' only, got {name!r} causal={causal} "
                f"circular={circular}"
            )
        from .interval import EVALUATION_EVENTS, EVALUATION_MAX_COST, EVALUATION_SEED, causal_interval_clumps

        res = causal_interval_clumps(
            n, w, layers, targets, events=EVALUATION_EVENTS, seed=EVALUATION_SEED, max_cost=EVALUATION_MAX_COST
        )
        return res["full_probability"]
    if name == "sa" and not causal:
        probs = sa_full_probability(n, w, layers, circular, targets)
    elif name == "sa+swa" and not causal:
        probs = sa_swa_full_probability(n, w, layers, circular=circular, targets=targets)
    elif name in ("sa", "sa+swa"):
        probs = causal_full_probability(n, w, layers, swa=name == "sa+swa", circular=circular, targets=targets)
    else:
        raise ValueError(f"name: the sharp models cover 'sa' and 'sa+swa', got {name!r}")
    return np.maximum.accumulate(probs)


def median_layer(probabilities) -> int | None:
    """The first layer ``L`` (1-based) with ``P(full after L) = probabilities[L-1] >= 1/2``.

    The median L* of a model whose probabilities are non-decreasing, the L* most seeds reach; ``None`` if it is
    never reached.

    Parameters
    ----------
    probabilities : array_like of float
        ``P(full after L)`` for ``L = 1, 2, ...``, 1-d.

    Returns
    -------
    int or None
        The layer, or ``None``.

    Raises
    ------
    TypeError
        If ``probabilities`` are not numbers.
    ValueError
        If ``probabilities`` is not 1-d.

    Examples
    --------
    >>> from receptive.theory import median_layer
    >>> median_layer([0.1, 0.4, 0.6, 0.9]), median_layer([0.1])
    (3, None)
    """
    probs = np.asarray(probabilities)
    if isinstance(probabilities, str | bytes) or (probs.size and probs.dtype.kind not in "iuf"):
        raise TypeError(f"probabilities: expected numbers (one per layer), got {type(probabilities).__name__}")
    probs = probs.astype(float)
    if probs.ndim != 1:
        raise ValueError(f"probabilities: expected a 1-d array (one per layer), got shape {probs.shape}")
    hits = np.flatnonzero(probs >= 0.5)
    return int(hits[0]) + 1 if hits.size else None


def predict_full_layer(
    name: str,
    n: int,
    w: int,
    causal: bool = False,
    circular: bool = False,
    max_layers: int = 64,
    targets: int | None = None,
    model: str = "analytic",
) -> tuple[int | None, np.ndarray]:
    """The sharp prediction of L* and the per-layer probabilities.

    L* is the first layer at which full coverage (of all positions, or of ``targets`` random ones) is more likely
    than not, the L* most seeds reach; ``None`` if not reached within ``max_layers``.

    Parameters
    ----------
    name : str
        ``"sa"`` or ``"sa+swa"``.
    n : int
        Sequence length, ``>= 2``.
    w : int
        Window size, ``>= 1``.
    causal : bool, optional
        Causal attention.
    circular : bool, optional
        Circular windows and bands.
    max_layers : int, optional
        Number of layers modelled.
    targets : int or None, optional
        ``K`` random targets; ``None``: all positions.
    model : str, optional
        As in :func:`full_probability`.

    Returns
    -------
    layer : int or None
        The predicted L* (:func:`median_layer`).
    probabilities : numpy.ndarray
        ``P(full after L)`` for ``L = 1..max_layers``.

    Raises
    ------
    TypeError, ValueError
        As :func:`full_probability`.

    Examples
    --------
    >>> from receptive.theory import predict_full_layer
    >>> layer, probs = predict_full_layer("sa", 256, 8, max_layers=8)
    >>> layer, probs.shape
    (4, (8,))

    References
    ----------
    * Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    * Aldous 1989, Probability Approximations via the Poisson Clumping Heuristic, Springer.
    """
    probs = full_probability(name, n, w, max_layers, causal, circular, targets, model)
    return median_layer(probs), probs
