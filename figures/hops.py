"""Figure 4: hops through depth. Distribution of the first layer at which a key reaches a query (SA, SA+SWA,
bidirectional and causal) next to the path-length distribution of the connectome model."""

from __future__ import annotations

import numpy as np

from graphs import path_lengths
from graphs.smallworld import connectome_model
from receptive import make_pattern
from receptive.hops import hop_distribution

from .style import COLORS, COLUMN, LABELS, figure, save, styled


@styled
def make(out, quick: bool = False):
    """Write ``out/hops.png`` and ``.pdf``: the share of (key, query) pairs first reached at each layer for SA and
    SA+SWA, bidirectional and causal (:func:`receptive.hops.hop_distribution`), next to the path lengths of the
    connectome model.

    Parameters
    ----------
    out : str or pathlib.Path
        The folder of the files (created if missing).
    quick : bool, default False
        n = 4096, w = 32 and a 20000-neuron connectome model instead of n = 32768, w = 64 and 127978 neurons.

    Returns
    -------
    list of pathlib.Path
        The PNG and the PDF.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     print([path.name for path in make(folder, quick=True)])
    ['hops.png', 'hops.pdf']
    """
    n, w = (4096, 32) if quick else (32768, 64)
    fig, axes = figure(COLUMN, 2.5)
    ax = axes[0, 0]
    width = 0.18
    series = []
    for name, causal, hatch in (("sa", False, ""), ("sa+swa", False, ""), ("sa", True, "//"), ("sa+swa", True, "//")):
        h = hop_distribution(make_pattern(name, n, w, causal, seed=0), 12 if causal else None)
        label = f"{LABELS[name]}{' causal' if causal else ''} (mean {h.mean:.2f})"
        series.append((h.distribution, COLORS[name], hatch, label))
    model = connectome_model(20000 if quick else 127_978, seed=0)
    paths = path_lengths(model, sources=256, seed=0)
    series.append((paths.distribution, COLORS["connectome"], "", f"connectome model (mean {paths.mean:.2f})"))
    for k, (dist, color, hatch, label) in enumerate(series):
        x = np.arange(dist.size) + (k - 2) * width
        ax.bar(x[1:], dist[1:], width, color=color, hatch=hatch, alpha=0.8, label=label, edgecolor="white", lw=0.3)
    ax.set(
        xlabel="hops (layers, or synapses)",
        ylabel="share of pairs",
        xlim=(0.4, 9.6),
        title=f"attention n = {n}, w = {w}",
    )
    ax.legend(fontsize=5.5)
    return save(fig, out, "hops")
