"""Shared plumbing of the multi-head causal variants (:mod:`.multiscale`'s ``sa-ms``, :mod:`.dilated_heads`'s
``dilated``; registry in :mod:`.causal_variants`): a layer is the union of ``heads`` window operators, plus the
sliding window with ``swa``; :func:`equal_key_window` sizes the heads of the equal-keys (``-eq``) forms.
"""

from __future__ import annotations

from graphs.ops import Op

from ..validation import check_bool, check_int
from .base import WindowPattern
from .local import SlidingWindow


def equal_key_window(w: int, heads: int, minimum: int = 2) -> int:
    """Per-head window so that ``heads`` heads together add about as many other keys as one window of ``w``.

    ``max(minimum, 1 + round((w - 1) / heads))``. ``minimum`` is 2 by default (a head must see one key besides the
    query); a bidirectional dilated head needs 3 (one key on each side, :class:`DilatedHeads`).

    Parameters
    ----------
    w : int
        The window to match, ``>= 1``.
    heads : int
        Number of heads, ``>= 1``.
    minimum : int, optional
        Smallest head window, ``>= 1``.

    Returns
    -------
    int
        The per-head window.

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If an argument is out of range.

    Examples
    --------
    >>> from receptive.patterns.causal_variants import equal_key_window
    >>> equal_key_window(8, 3), equal_key_window(8, 16), equal_key_window(8, 16, minimum=3)
    (3, 2, 3)
    """
    w, heads = check_int("w", w, 1), check_int("heads", heads, 1)
    return max(check_int("minimum", minimum, 1), 1 + round((w - 1) / heads))


class _HeadsPattern(WindowPattern):
    """Shared plumbing: ``heads`` window operators per layer, plus the sliding window with ``swa``."""

    two_sided_band = True

    def __init__(self, n, w, causal=False, circular=False, swa=False, w_swa=None, equal_keys=False):
        super().__init__(n, w, causal, circular)
        swa = check_bool("swa", swa)
        self.swa = (
            SlidingWindow(self.n, self.w if w_swa is None else check_int("w_swa", w_swa, 1), self.causal, self.circular)
            if swa
            else None
        )
        self.equal_keys = check_bool("equal_keys", equal_keys)

    def _named(self, base: str) -> str:
        return base + ("+swa" if self.swa is not None else "") + ("-eq" if self.equal_keys else "")

    def _swa_ops(self, layer: int) -> tuple[Op, ...]:
        return self.swa.layer_ops(layer) if self.swa is not None else ()
