"""Figure 2: layers to full coverage L* vs n for several w: measured points next to the theory curves."""

from __future__ import annotations

from receptive import coverage_by_layer, make_pattern, theory

from .style import COLUMN, figure, save, styled


@styled
def make(out, quick: bool = False):
    """Write ``out/lstar_vs_n.png`` and ``.pdf``: SA's exact L* against n for several windows, next to the sharp
    model of :func:`receptive.theory.predict_full_layer`.

    Parameters
    ----------
    out : str or pathlib.Path
        The folder of the files (created if missing).
    quick : bool, default False
        n = 2^8, 2^10, 2^12 and w = 8, 64 instead of n = 2^8, 2^10, ..., 2^16 and w = 8, 32, 128.

    Returns
    -------
    list of pathlib.Path
        The PNG and the PDF.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     print([path.name for path in make(folder, quick=True)])
    ['lstar_vs_n.png', 'lstar_vs_n.pdf']
    """
    ns = [2**k for k in range(8, 13 if quick else 17, 2)]
    ws = (8, 64) if quick else (8, 32, 128)
    fig, axes = figure(COLUMN, 2.6)
    ax = axes[0, 0]
    for color, w in zip(("#1f77b4", "#d62728", "#2ca02c"), ws, strict=False):
        sizes = [n for n in ns if n > w]
        measured = [
            coverage_by_layer(make_pattern("sa", n, w, seed=0), method="exact").full_coverage_layer for n in sizes
        ]
        ax.plot(sizes, measured, "o", color=color, label=f"SA measured, w = {w}")
        ax.plot(
            sizes,
            [theory.predict_full_layer("sa", n, w)[0] for n in sizes],
            "-",
            color=color,
            lw=0.8,
            label=f"sharp model, w = {w}",
        )
        ax.plot(sizes, [theory.log_w_n(n, w) for n in sizes], ":", color=color, lw=0.8)
        ax.plot(sizes, [theory.swa_full_layer(n, w) for n in sizes], "--", color=color, lw=0.8)
    ax.plot([], [], "k:", lw=0.8, label="log_w n")
    ax.plot([], [], "k--", lw=0.8, label="SWA (exact)")
    ax.set(xscale="log", yscale="log", xlabel="sequence length n", ylabel="layers to full coverage L*")
    ax.set_yticks([1, 2, 4, 8, 16, 100, 1000], labels=["1", "2", "4", "8", "16", "100", "1000"])
    ax.legend(fontsize=5.5, ncol=2)
    ax.set_xlim(min(ns) / 1.3, max(ns) * 1.3)
    ax.minorticks_off()
    return save(fig, out, "lstar_vs_n")
