"""The paper's story as figures, each built from the toolkit's public API: ``python -m figures all``."""

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
