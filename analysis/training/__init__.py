"""Small trained models where receptive-field coverage decides success (``python -m analysis.training``).

:mod:`.models` (a tiny pre-norm transformer with full, SWA, SA or gated SA+SWA attention), :mod:`.tasks`
(retrieval, counting and character-level stdlib text), :mod:`.reach` (the coverage, L* and reachability
``receptive`` predicts for a model), :mod:`.configs` (validated experiment configs, quick and full presets) and
:mod:`.runner` (training with checkpoints, resume, continuation to more steps and JSON results; its bookkeeping of
resumed and extended runs in :mod:`.extend`, one optimiser step with its schedule, model and data in :mod:`.step`,
the evaluation of a trained run in :mod:`.evaluate`); beside them, not imported here, :mod:`.reach_grid` (the readout's
reachable share of untrained patterns at long ``n``) and :mod:`.step_time` (seconds per training step).
"""

from .configs import FULL, QUICK, LMConfig, SyntheticConfig, preset
from .models import KINDS, TinyTransformer, parameter_counts
from .runner import Interrupted, run_experiment

__all__ = [
    "FULL",
    "KINDS",
    "QUICK",
    "Interrupted",
    "LMConfig",
    "SyntheticConfig",
    "TinyTransformer",
    "parameter_counts",
    "preset",
    "run_experiment",
]
