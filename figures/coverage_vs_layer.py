"""Figure 1: coverage vs layer for SWA, SA and SA+SWA; mean over seeds with the min-max band; both modes."""

from __future__ import annotations

import numpy as np

from receptive import coverage_by_layer, make_pattern

from .style import COLORS, LABELS, WIDE, figure, save, styled


@styled
def make(out, quick: bool = False):
    """Write ``out/coverage_vs_layer.png`` and ``.pdf``: mean coverage per layer of SWA, SA and SA+SWA (the band:
    minimum to maximum over seeds), bidirectional and causal.

    Parameters
    ----------
    out : str or pathlib.Path
        The folder of the files (created if missing).
    quick : bool, default False
        n = 4096, w = 32, 3 seeds, 8 layers (seconds) instead of n = 32768, w = 64, 5 seeds, 10 layers.

    Returns
    -------
    list of pathlib.Path
        The PNG and the PDF.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     print([path.name for path in make(folder, quick=True)])
    ['coverage_vs_layer.png', 'coverage_vs_layer.pdf']
    """
    n, w, seeds, layers = (4096, 32, 3, 8) if quick else (32768, 64, 5, 10)
    fig, axes = figure(WIDE, 2.4, ncols=2)
    for ax, causal in zip(axes[0], (False, True), strict=True):
        for name in ("swa", "sa", "sa+swa"):
            runs = [
                coverage_by_layer(make_pattern(name, n, w, causal, seed=s), layers)
                for s in range(1 if name == "swa" else seeds)
            ]
            means = np.array([[lc.mean for lc in run.layers] for run in runs])
            x = np.arange(1, layers + 1)
            ax.plot(x, means.mean(0), marker="o", color=COLORS[name], label=LABELS[name])
            ax.fill_between(x, means.min(0), means.max(0), color=COLORS[name], alpha=0.25, lw=0)
        ax.set(
            xlabel="layer L",
            ylabel="mean coverage |RF_L(i)| / |A(i)|",
            ylim=(-0.02, 1.02),
            title=f"{'causal' if causal else 'bidirectional'}, n = {n}, w = {w}",
        )
        ax.legend(loc="center right")
    return save(fig, out, "coverage_vs_layer")
