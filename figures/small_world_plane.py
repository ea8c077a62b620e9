"""Figure 3: the small-world plane. C / C_lattice and L / L_lattice of one attention layer as the SA share of each
window grows from pure SWA (a lattice) to pure SA (a relabelled lattice) and in the SA+SWA union, Watts-Strogatz
style, with the connectome model for comparison."""

from __future__ import annotations

import numpy as np

from graphs import Graph, average_clustering, path_lengths
from graphs.smallworld import connectome_model, lattice_clustering
from receptive.attention_graphs import attention_graph

from .style import COLORS, COLUMN, figure, save, styled


def _mixed_layer(n: int, w: int, share: float, seed: int) -> Graph:
    """Each token keeps ``(1 - share)`` of its ``w - 1`` other keys in its SWA window and takes the rest from its
    SA window (same permutation sampling as receptive)."""
    k_sa = round(share * (w - 1))
    parts = []
    if w - 1 - k_sa > 0:
        parts.append(attention_graph("swa", n, w - k_sa, directed=False))
    if k_sa > 0:
        parts.append(attention_graph("sa", n, k_sa + 1, seed=seed, directed=False))
    rows = np.concatenate([np.repeat(np.arange(n), g.out_degree) for g in parts])
    cols = np.concatenate([g.indices for g in parts])
    return Graph.from_edges(n, rows, cols, directed=False)


def _measure(graph: Graph, sources: int):
    return average_clustering(graph), path_lengths(graph, sources=sources, seed=0).mean


@styled
def make(out, quick: bool = False):
    """Write ``out/small_world_plane.png`` and ``.pdf``: clustering and path length of one attention layer, each
    relative to the SWA lattice, as the SA share of the window grows, with the connectome model beside them.

    Parameters
    ----------
    out : str or pathlib.Path
        The folder of the files (created if missing).
    quick : bool, default False
        n = 2048 with 6 shares and 64 path sources instead of n = 8192 with 11 shares and 256 sources.

    Returns
    -------
    list of pathlib.Path
        The PNG and the PDF.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     print([path.name for path in make(folder, quick=True)])
    ['small_world_plane.png', 'small_world_plane.pdf']
    """
    n, w, sources = (2048, 16, 64) if quick else (8192, 16, 256)
    shares = np.linspace(0, 1, 6 if quick else 11)
    c0, l0 = _measure(_mixed_layer(n, w, 0.0, 0), sources)
    points = np.array([_measure(_mixed_layer(n, w, s, 0), sources) for s in shares]) / [c0, l0]
    fig, axes = figure(COLUMN, 2.5)
    ax = axes[0, 0]
    ax.plot(shares, points[:, 0], "o-", color=COLORS["swa"], label="C / C(lattice)")
    ax.plot(shares, points[:, 1], "s-", color=COLORS["sa"], label="L / L(lattice)")
    union = np.array(_measure(attention_graph("sa+swa", n, w, seed=0, directed=False), sources)) / [c0, l0]
    ax.plot([0.5, 0.5], union, "*", color=COLORS["sa+swa"], ms=8, label="SA+SWA union (2w keys)")
    model = connectome_model(5000 if quick else 20000, seed=0).undirected()
    k = model.mean_degree
    c_model, l_model = _measure(model, sources)
    latt_c, latt_l = lattice_clustering(k), model.n / (2 * k)  # ring lattice with the same mean degree
    ax.plot(
        [0.5, 0.5],
        [c_model / latt_c, l_model / latt_l],
        "D",
        color=COLORS["connectome"],
        ms=5,
        label="connectome model (vs ring lattice)",
    )
    ax.set(
        xlabel="SA share of each window",
        ylabel="relative to the SWA lattice",
        yscale="log",
        title=f"one layer, n = {n}, w = {w}",
    )
    ax.legend(fontsize=6)
    return save(fig, out, "small_world_plane")
