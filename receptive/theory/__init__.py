"""Predictions of coverage through depth, from the simple scaling laws to a sharp model of L*.

Notation: ``n`` positions, windows of ``w`` keys (self included, :mod:`receptive.windows`), ``L`` layers,
``RF_L(i)`` the receptive field of query ``i`` and ``F_L(j) = {i : j in RF_L(i)}`` the forward set of key ``j``;
coverage is full at ``L`` iff every ``F_L(j)`` is everything admissible. Derivations: ``docs/theory.md``.

Modules, one model family each; every public name of them is importable from here
(``from receptive.theory import swa_coverage``):

* :mod:`.laws`, closed forms: SWA exactly (receptive fields are intervals: :func:`swa_coverage`,
  :func:`swa_full_layer`); SA's mean field (Jin & Sui 2026, arXiv 2604.00754, Sec. 3: :func:`sa_mean_coverage`,
  :func:`sa_half_layer`, :func:`sa_full_layer_estimate` (coupon collector), :func:`sa_union_bound_layer` (explicit
  O(log_w n) bound)); the causal laws :func:`causal_sa_full_layer_estimate` and :func:`causal_swa_scaling_law`.
* Sharp models, one per regime, each giving ``P(coverage full after L layers)``: :mod:`.bidirectional`
  (:func:`sa_full_probability`, :func:`sa_swa_full_probability`) and :mod:`.causal` (:func:`causal_full_probability`
  for causal SA and SA+SWA, from :func:`causal_failure_clumps`, its profile model :class:`CausalProfile` and the
  run-branching table :func:`causal_run_miss_table`, row by row :class:`RunMissTable`, with the SA edge probability
  :func:`sa_key_probability`); :mod:`.prediction` picks one (:func:`full_probability`) and returns the first layer
  at which full coverage is more likely than not (:func:`predict_full_layer`, :func:`median_layer`).
* Causal SA+SWA by Monte Carlo of the interval process, counting failing targets and runs of failing keys:
  :mod:`.interval_process` (the simulation, :func:`interval_event_rates`) and :mod:`.interval` (the model,
  :func:`causal_interval_clumps`; seconds to two minutes per point, so :func:`predict_full_layer` uses it only when
  asked, ``model="interval"``). Its settings (the committed evaluation's events, seed and cost limit, the simulation's
  tolerances) are constants of :mod:`.interval`, not exported here.

Examples
--------
>>> from receptive.theory import predict_full_layer, swa_full_layer
>>> swa_full_layer(1024, 33, causal=True), predict_full_layer("sa", 256, 8, max_layers=8)[0]
(32, 4)
"""

from .bidirectional import sa_full_probability, sa_swa_full_probability
from .causal import (
    CausalProfile,
    RunMissTable,
    causal_failure_clumps,
    causal_full_probability,
    causal_run_miss_table,
    sa_key_probability,
)
from .interval import (
    IntervalCostError,
    causal_interval_clumps,
    interval_point_model,
    load_interval_model,
)
from .interval_process import interval_cost, interval_event_rates
from .laws import (
    SA_FORMULA,
    causal_sa_full_layer_estimate,
    causal_swa_scaling_law,
    log_w_n,
    sa_full_layer_estimate,
    sa_half_layer,
    sa_mean_coverage,
    sa_swa_growth_rate,
    sa_union_bound_layer,
    swa_coverage,
    swa_full_layer,
    swa_layers_estimate,
)
from .prediction import CAUSAL_SA_SWA_MODELS, MODELS, full_probability, median_layer, predict_full_layer

__all__ = [
    "CAUSAL_SA_SWA_MODELS",
    "MODELS",
    "SA_FORMULA",
    "CausalProfile",
    "IntervalCostError",
    "RunMissTable",
    "causal_failure_clumps",
    "causal_full_probability",
    "causal_interval_clumps",
    "causal_run_miss_table",
    "causal_sa_full_layer_estimate",
    "causal_swa_scaling_law",
    "full_probability",
    "interval_cost",
    "interval_event_rates",
    "interval_point_model",
    "load_interval_model",
    "log_w_n",
    "median_layer",
    "predict_full_layer",
    "sa_full_layer_estimate",
    "sa_full_probability",
    "sa_half_layer",
    "sa_key_probability",
    "sa_mean_coverage",
    "sa_swa_full_probability",
    "sa_swa_growth_rate",
    "sa_union_bound_layer",
    "swa_coverage",
    "swa_full_layer",
    "swa_layers_estimate",
]
