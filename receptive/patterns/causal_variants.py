"""Variants of Stochastic Attention meant to keep logarithmic coverage under the causal mask.

Causal SA masks the keys of a query's random band that come after it, so a token only hears about its near
predecessors through rare direct edges: shortcuts land at random distances, almost all of order ``n``, and the
intermediate distances (tens to thousands of positions) are left to the sliding window (``docs/theory.md`` Sec. 5).
The variants below put shortcuts at every distance scale:

* :class:`MultiScaleSA` (``sa-ms``): head ``k`` draws its permutation within blocks of size ``b_k`` (default
  ``w, w^2, ..., n``), so its band mixes tokens at distances up to ``b_k``; each head is SA's band over its
  permutation (the banded path and the fused kernel run it unchanged), a layer is the union over heads.
* :class:`KleinbergAttention` (``kleinberg``): ``m`` random keys per query at distance ``d`` with probability
  ``ln(1 + 1/d) / ln(D + 1)`` (``D`` the largest distance available; the discrete log-uniform law, ``~1/d``:
  Kleinberg 2000, "Navigation in a small world", the harmonic distribution that makes a lattice navigable).
* :class:`DilatedHeads` (``dilated``): the deterministic baseline, LongNet-style (Ding et al. 2023,
  arXiv 2307.02486): head ``k`` is a window over every ``r_k``-th position, ``r_k = w^(k-1)``.

Each exists with the sliding window added (``+swa``) and in an equal-keys form (suffix ``-eq``): every head's
window (or the number of random keys) is shrunk so that the expected number of keys a query attends to matches
SA's (causal SA keeps about ``1 + (w-1) i/(n-1)`` of its ``w`` slots, ``(w+1)/2`` on average), except that a
bidirectional dilated head keeps one key on each side, which puts ``dilated-eq`` above SA's keys at large ``n``
(:class:`DilatedHeads`).
:func:`keys_per_query` measures the distinct keys per query of any pattern's layer.

Modules, one family each: :mod:`.multiscale` (``sa-ms``, block permutations), :mod:`.kleinberg`,
:mod:`.dilated_heads` (``dilated``, :func:`dilation_permutation`), :mod:`._heads` (the heads' shared plumbing,
:func:`equal_key_window`); this module builds a variant from its name (:func:`make_variant`, :func:`variant_names`;
``registry`` registers each name in :data:`receptive.patterns.PATTERNS`), counts keys, and gathers the families'
public names (``__all__``) in one place.
"""

from __future__ import annotations

from ..validation import check_bool, check_instance, check_int
from ._heads import equal_key_window
from .base import Pattern
from .dilated_heads import DilatedHeads, dilation_permutation
from .kleinberg import KleinbergAttention
from .multiscale import MultiScaleSA, block_permutation, check_blocks, default_blocks


def keys_per_query(pattern: Pattern, layer: int = 1) -> float:
    """Mean number of distinct keys a query attends to in layer ``layer`` (self included).

    ``nnz(A_l) / n`` of the layer's adjacency (enumerates the ``O(n w)`` edges; for cross-checks and the equal-cost
    tables; ``receptive.bound.keys.mean_distinct_keys`` counts the same in ``O(n)`` memory).

    Parameters
    ----------
    pattern : Pattern
        The pattern.
    layer : int, optional
        The layer, ``>= 1``.

    Returns
    -------
    float
        ``nnz(A_l) / n``.

    Raises
    ------
    TypeError
        If ``pattern`` is not a :class:`~receptive.patterns.Pattern` or ``layer`` is not an integer.
    ValueError
        If ``layer`` is out of range (from :meth:`Pattern.adjacency`).

    Examples
    --------
    >>> from receptive import make_pattern
    >>> from receptive.patterns.causal_variants import keys_per_query
    >>> keys_per_query(make_pattern("swa", 16, 3, causal=True))  # (1 + 2 + 14 * 3) / 16
    2.8125
    """
    check_instance("pattern", pattern, Pattern, "receptive.patterns.Pattern")
    return pattern.adjacency(layer).nnz / pattern.n


def sa_expected_keys(n: int, w: int, causal: bool) -> float:
    """Expected distinct keys per query of SA with a two-sided band of ``w`` slots.

    Circular or not, edges ignored: ``w`` bidirectional; causal ``1 + (w - 1) i/(n - 1)`` at position ``i`` (each
    other slot holds a uniform other token, earlier with probability ``i/(n-1)``), ``(w + 1)/2`` averaged over ``i``.

    Parameters
    ----------
    n : int
        Sequence length, ``>= 2``.
    w : int
        Band slots, ``>= 1``.
    causal : bool
        Causal mask.

    Returns
    -------
    float
        The expected keys per query, averaged over positions.

    Raises
    ------
    TypeError
        If ``n`` or ``w`` is not an integer or ``causal`` is not a bool.
    ValueError
        If ``n`` or ``w`` is out of range.

    Examples
    --------
    >>> from receptive.patterns.causal_variants import sa_expected_keys
    >>> sa_expected_keys(1024, 8, True), sa_expected_keys(1024, 8, False)
    (4.5, 8.0)

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    """
    n, w = check_int("n", n, 2), check_int("w", w, 1)
    return (w + 1) / 2 if check_bool("causal", causal) else float(w)


VARIANT_FAMILIES = ("sa-ms", "kleinberg", "dilated")


def variant_names() -> list[str]:
    """Every registered name: ``family``, ``family+swa`` and their ``-eq`` forms.

    Returns
    -------
    list of str
        The names, family by family (``VARIANT_FAMILIES``).

    Examples
    --------
    >>> from receptive.patterns.causal_variants import variant_names
    >>> len(variant_names()), variant_names()[:4]
    (12, ['sa-ms', 'sa-ms-eq', 'sa-ms+swa', 'sa-ms+swa-eq'])
    """
    return [f + s + e for f in VARIANT_FAMILIES for s in ("", "+swa") for e in ("", "-eq")]


def make_variant(name: str, n: int, w: int, causal: bool = False, circular: bool = False, seed: int = 0) -> Pattern:
    """Build one of :func:`variant_names` (``sa-ms+swa-eq``: multi-scale SA with the window, equal keys).

    Parameters
    ----------
    name : str
        One of :func:`variant_names`.
    n : int
        Sequence length.
    w : int
        Window size.
    causal : bool, optional
        Causal mask.
    circular : bool, optional
        Circular windows.
    seed : int, optional
        Seed of the random heads (``dilated`` is deterministic and ignores it).

    Returns
    -------
    Pattern
        A :class:`MultiScaleSA`, :class:`KleinbergAttention` or :class:`DilatedHeads`.

    Raises
    ------
    TypeError
        If ``name`` is not a string, or from the pattern's constructor (an argument of the wrong type).
    ValueError
        If ``name`` is unknown, or from the pattern's constructor.

    Examples
    --------
    >>> from receptive.patterns.causal_variants import make_variant
    >>> p = make_variant("sa-ms+swa-eq", 256, 4, causal=True)
    >>> type(p).__name__, p.n, p.causal
    ('MultiScaleSA', 256, True)

    References
    ----------
    * Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754.
    * Kleinberg 2000, Navigation in a small world, Nature 406, 845.
    * Ding et al. 2023, LongNet: Scaling Transformers to 1,000,000,000 Tokens, arXiv 2307.02486.
    """
    if not isinstance(name, str):
        raise TypeError(f"name: expected a variant name (str), got {type(name).__name__}")
    if name not in variant_names():
        raise ValueError(f"name: unknown variant {name!r}; choose from {', '.join(variant_names())}")
    equal = name.endswith("-eq")
    base = name[:-3] if equal else name
    swa = base.endswith("+swa")
    family = base[:-4] if swa else base
    if family == "sa-ms":
        return MultiScaleSA(n, w, causal, circular, seed, swa=swa, equal_keys=equal)
    if family == "kleinberg":
        return KleinbergAttention(n, w, causal, circular, seed, swa=swa, equal_keys=equal)
    return DilatedHeads(n, w, causal, circular, swa=swa, equal_keys=equal)


def heads_of(n: int, w: int) -> int:
    """Number of heads of the default ``sa-ms`` (``len(default_blocks(n, w))``): ``~ log_w n``.

    Parameters
    ----------
    n : int
        Sequence length.
    w : int
        Window size (``1``: one head).

    Returns
    -------
    int
        The number of heads.

    Raises
    ------
    TypeError
        If ``n`` or ``w`` is not an integer.
    ValueError
        From :func:`default_blocks` for arguments out of range.

    Examples
    --------
    >>> from receptive.patterns.causal_variants import heads_of
    >>> heads_of(4096, 8), heads_of(4096, 1)
    (4, 1)
    """
    n, w = check_int("n", n, 1), check_int("w", w, 1)
    return len(default_blocks(n, w)) if w > 1 else 1


__all__ = [
    "DilatedHeads",
    "KleinbergAttention",
    "MultiScaleSA",
    "block_permutation",
    "check_blocks",
    "default_blocks",
    "dilation_permutation",
    "equal_key_window",
    "heads_of",
    "keys_per_query",
    "make_variant",
    "sa_expected_keys",
    "variant_names",
]
