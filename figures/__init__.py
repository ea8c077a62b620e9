"""The paper's story as figures, each built from the toolkit's public API or from result files given as arguments:
``python -m figures NAME --out DIR``.

``FIGURES[name](out, quick=False, **inputs)`` writes ``out/name.png`` and ``.pdf`` and returns the two paths; the
figures drawn from result files take them as keyword arguments (``bench=`` for ``cost_*``, ``results=`` for
``approx_*``, ``layouts`` and ``training``, and ``decoder=`` for ``approx_kv_cache``; ``python -m figures`` passes
its flags, listed in its ``--help``).
"""

from . import approx, causal, cost, coverage_vs_layer, hops, layouts, lstar_vs_n, small_world_plane, training
from .style import styled

#: each figure drawn in the project's style (a ``matplotlib.rc_context``; nothing global changes at import)
FIGURES = {
    name: styled(make)
    for name, make in {
        "coverage_vs_layer": coverage_vs_layer.make,
        "lstar_vs_n": lstar_vs_n.make,
        "small_world_plane": small_world_plane.make,
        "hops": hops.make,
        "cost_per_layer": cost.make_per_layer,
        "cost_to_coverage": cost.make_to_coverage,
        "approx_spectra": approx.make_spectra,
        "approx_methods": approx.make_methods,
        "approx_kv_cache": approx.make_kv_cache,
        "training": training.make,
        "layouts": layouts.make,
        "causal": causal.make,
    }.items()
}

__all__ = ["FIGURES"]
