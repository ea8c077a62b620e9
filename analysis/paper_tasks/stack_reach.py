"""How one scored position of a layer stack gathers the context: graph measures of the generation-form causal
patterns of :mod:`gpu.attention.generation_keys` stacked as a model uses them.

Layer ``l`` of an ``L``-layer model reads, at query ``i``, the union over its heads of the keys
``gpu.attention.generation_keys.position_keys`` gives with the seed ``seed * L + l`` (information moves through any
head), and the residual stream keeps what a position already holds. A path from position ``j`` to the scored position
takes attention edges at strictly increasing layers and may skip layers. Its number of attention edges is the
distance the measures count.

The distances to one target are a dynamic program over layers run backwards from the target: ``e_L(i) = 0`` at the
target and ``inf`` elsewhere, and ``e_{l-1}(k) = min(e_l(k), min_{i : k in keys_l(i)} e_l(i) + 1)``. It is the
transpose of the forward program over all sources (``d_l(i) = min(d_{l-1}(i), min_{k in keys_l(i)} d_{l-1}(k) +
1)``, ``d_0`` zero at the source), so ``e_0(j)`` is the forward ``d_L(j -> target)``, at about ``L n K`` steps
instead of ``L n^2 K`` for ``K`` keys per query.

References
----------
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
- Xiao et al. (2024). Efficient streaming language models with attention sinks. arXiv 2309.17453.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np
import torch

from gpu.attention.generation_keys import position_keys, sa_ms_blocks
from gpu.attention.generation_patterns import GENERATION_METHODS
from gpu.validation import check_choice, check_int

__all__ = ["STACK_METHODS", "StackReach", "stack_reach"]

#: the methods :func:`stack_reach` measures: every position-only one of :data:`gpu.attention.GENERATION_METHODS`
STACK_METHODS = tuple(name for name, g in GENERATION_METHODS.items() if not g.data_dependent)

#: the most memory the key indices of one measure may take
MAX_BYTES = 2 * 2**30


@dataclass(frozen=True)
class StackReach:
    """What the scored position of a layer stack reaches, as returned by :func:`stack_reach`.

    Attributes
    ----------
    method : str
        The generation-form method.
    budget : int
        Keys per query (per head).
    n : int
        Sequence length.
    layers : int
        Layers of the stack.
    heads : int
        Heads per layer.
    seed : int
        The model's seed.
    max_length : int
        The length SA's permutations are drawn over.
    target : int
        The scored position; the context is ``0..target``.
    exact_layers : tuple of int
        The layers that attend to every earlier key.
    full_layer : int or None
        The first layer count after which the target's receptive field holds all of ``0..target``; ``None`` if
        not within ``layers``.
    reach_share : dict of int to float
        For each hop budget ``h``, the share of ``0..target-1`` that reaches the target by at most ``h``
        attention edges.
    reach_share_all : float
        The share of ``0..target-1`` that reaches the target after all ``layers`` layers.
    mean_hops : float or None
        The mean least number of attention edges over the positions that reach the target; ``None`` if none does.
    unreached : int
        Positions of ``0..target-1`` that do not reach the target.

    Examples
    --------
    >>> r = stack_reach("swa", 2, 5, layers=4)
    >>> r.full_layer, r.reach_share, r.mean_hops
    (4, {1: 0.25, 2: 0.5, 3: 0.75}, 2.5)
    """

    method: str
    budget: int
    n: int
    layers: int
    heads: int
    seed: int
    max_length: int
    target: int
    exact_layers: tuple[int, ...]
    full_layer: int | None
    reach_share: dict[int, float]
    reach_share_all: float
    mean_hops: float | None
    unreached: int

    def to_dict(self) -> dict:
        """Return the measures and their arguments as a JSON-ready ``dict``."""
        d = asdict(self)
        d["exact_layers"] = list(self.exact_layers)
        d["reach_share"] = {str(h): share for h, share in self.reach_share.items()}
        return d

    def __repr__(self) -> str:
        within = ", ".join(f"{h}: {share:.4f}" for h, share in self.reach_share.items())
        mean = "None" if self.mean_hops is None else f"{self.mean_hops:.3f}"
        exact = f", exact_layers={list(self.exact_layers)}" if self.exact_layers else ""
        return (
            f"StackReach({self.method}, budget={self.budget}, n={self.n}, layers={self.layers}, heads={self.heads}, "
            f"seed={self.seed}{exact}, target={self.target}: full_layer={self.full_layer}, "
            f"reach_share={{{within}}}, reach_share_all={self.reach_share_all:.4f}, mean_hops={mean}, "
            f"unreached={self.unreached})"
        )


def _int_list(name: str, values, low: int, high: int | None = None) -> tuple[int, ...]:
    """``values`` as a tuple of checked integers; a non-iterable (or a string) is a ``TypeError`` naming ``name``."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise TypeError(f"{name}: expected an iterable of integers, got {values!r} ({type(values).__name__})")
    return tuple(check_int(name, v, low, high) for v in values)


def _distinct_heads(method: str, heads: int, budget: int, max_length: int) -> int:
    """The heads with different keys: one but for sa-ms, whose head ``h`` takes the scale ``blocks[h % len(blocks)]``
    (so heads beyond the scales repeat)."""
    return min(heads, len(sa_ms_blocks(max_length, budget))) if method == "sa-ms" else 1


def _layer_keys(method: str, q: int, budget: int, heads: int, seed: int, max_length: int) -> np.ndarray:
    """``(q, K)`` int32: the union over heads of the keys of queries ``0..q-1``; an empty slot holds the query
    itself, which the residual already carries, so it changes no distance."""
    idx, valid = position_keys(
        method, torch.arange(q), q, budget, _distinct_heads(method, heads, budget, max_length), seed, max_length
    )
    own = torch.arange(q)[None, :, None]
    keys = torch.where(valid, idx, own).permute(1, 0, 2).reshape(q, -1)
    return keys.numpy().astype(np.int32)


def _step_back(e: np.ndarray, keys: np.ndarray | None, inf: int) -> np.ndarray:
    """One layer of the backward program: ``e`` before the layer from ``e`` after it (``keys is None``: an exact
    layer, where query ``i`` reads every key ``k <= i``)."""
    if keys is None:
        later = np.minimum.accumulate(e[::-1])[::-1]  # the least distance among the queries i >= k, which read k
        return np.minimum(e, np.minimum(later + 1, inf))
    out = e.copy()
    for v in np.unique(e[e < inf]):  # ascending, so the first value a key gets is its least
        src = keys[e == v].ravel()
        out[src[out[src] > v + 1]] = v + 1
    return out


def _distances(stack: list, target: int, inf: int) -> np.ndarray:
    """Least attention edges from each position ``0..target`` to ``target`` through ``stack`` (``inf``: never)."""
    e = np.full(target + 1, inf, dtype=np.int32)
    e[target] = 0
    for keys in reversed(stack):
        e = _step_back(e, keys, inf)
    return e


def stack_reach(
    method: str,
    budget: int,
    n: int,
    *,
    layers: int = 30,
    heads: int = 9,
    seed: int = 0,
    max_length: int = 8192,
    target: int | None = None,
    hops: Iterable[int] = (1, 2, 3),
    exact_layers: Iterable[int] = (),
) -> StackReach:
    """Measure how the scored position of a stack of generation-form causal attention layers reaches its context.

    Layer ``l`` reads at query ``i`` the union over heads of the keys of
    ``gpu.attention.generation_keys.position_keys`` with the seed ``seed * layers + l``, as
    :func:`gpu.hf.generation.generation_forward` runs them; the layers of ``exact_layers`` read every key
    ``0..i``. Information moves by an attention edge per layer at most and stays at its position through the
    residual. A path from ``j`` to ``target`` takes its edges at strictly increasing layers (skipping any), and the
    measures count its attention edges.

    Parameters
    ----------
    method : str
        One of :data:`STACK_METHODS`: ``swa``, ``swa+sink``, ``sa``, ``sa+sink``, ``sa+swa``, ``sa+swa-union``,
        ``sa-ms`` or ``exact``. ``sa+swa`` averages two attention paths, SA's band of ``budget // 2`` and the window of
        ``budget // 2``; information moves through either, so its stack is that of ``sa+swa-union`` (the same keys).
    budget : int
        Keys per query per head (the budget), at least 1.
    n : int
        Sequence length, at least 2.
    layers : int, default 30
        Layers of the stack, at least 1.
    heads : int, default 9
        Heads per layer, at least 1 (only ``sa-ms`` gives heads different keys).
    seed : int, default 0
        The model's seed, at least 0.
    max_length : int, default 8192
        The length SA's permutations are drawn over, at least ``n``.
    target : int, optional
        The scored position, in ``1..n-1``; default ``n - 1`` (the last context token, whose output predicts the
        first continuation token). The context is ``0..target``.
    hops : iterable of int, default (1, 2, 3)
        The edge budgets of ``reach_share``, each at least 1.
    exact_layers : iterable of int, default ()
        Layers (``0..layers-1``) that attend to every earlier key.

    Returns
    -------
    StackReach
        ``full_layer``, ``reach_share`` per hop budget, ``reach_share_all``, ``mean_hops`` and ``unreached``.

    Raises
    ------
    TypeError
        If ``method`` is not a string or an integer argument (or an entry of ``hops``, ``exact_layers``) is not an
        integer.
    ValueError
        If an argument is out of range, ``method`` is unknown or data-dependent (``moba``, ``top-k``: their keys
        depend on the content, so they need a traced model), or the key indices would take more than 2 GiB.

    Examples
    --------
    >>> r = stack_reach("swa", 2, 5, layers=4)  # position 0 reaches 4 by four edges of the window
    >>> r.full_layer, r.reach_share, r.reach_share_all, r.mean_hops, r.unreached
    (4, {1: 0.25, 2: 0.5, 3: 0.75}, 1.0, 2.5, 0)
    >>> stack_reach("exact", 8, 100, hops=(1,)).reach_share
    {1: 1.0}
    >>> stack_reach("sa", 8, 512, layers=6, exact_layers=[5]).full_layer
    6

    References
    ----------
    - Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
    - Xiao et al. (2024). Efficient streaming language models with attention sinks. arXiv 2309.17453.
    """
    if isinstance(method, str) and method in GENERATION_METHODS and GENERATION_METHODS[method].data_dependent:
        raise ValueError(f"method: {method}'s keys depend on the content (queries and keys); measure a traced model")
    check_choice("method", method, STACK_METHODS)
    budget = check_int("budget", budget, 1)
    n = check_int("n", n, 2)
    layers = check_int("layers", layers, 1)
    heads = check_int("heads", heads, 1)
    seed = check_int("seed", seed, 0)
    max_length = check_int("max_length", max_length, n)
    target = n - 1 if target is None else check_int("target", target, 1, n - 1)
    hops = _int_list("hops", hops, 1)
    exact = frozenset(_int_list("exact_layers", exact_layers, 0, layers - 1))
    keys_method = "sa+swa-union" if method == "sa+swa" else method

    sparse = [] if method == "exact" else [layer for layer in range(layers) if layer not in exact]
    randomized = GENERATION_METHODS[method].randomized
    q = target + 1  # later queries never reach the target, and a row depends on the positions before it only
    per_query = _distinct_heads(method, heads, budget, max_length) * (budget + 1)
    kept = len(sparse) if randomized else min(1, len(sparse))
    needed = q * per_query * (4 * kept + 29)  # the int32 keys kept, and the int64 and bool tensors made on the way
    if needed > MAX_BYTES:
        raise ValueError(
            f"n: n = {n} with budget = {budget} and {len(sparse)} sparse layers needs about {needed / 2**30:.1f} "
            f"GiB of key indices, more than {MAX_BYTES / 2**30:.0f} GiB"
        )
    fixed = _layer_keys(keys_method, q, budget, heads, seed, max_length) if sparse and not randomized else None
    stack = [
        None
        if layer not in sparse
        else fixed
        if not randomized
        else _layer_keys(keys_method, q, budget, heads, seed * layers + layer, max_length)
        for layer in range(layers)
    ]

    inf = layers + 1
    e = _distances(stack, target, inf)[:target]
    reached = e < inf

    def full_after(depth: int) -> bool:
        return bool((_distances(stack[:depth], target, inf)[:target] < inf).all())

    # the receptive field only grows with depth (the residual), so the first full depth is found by bisection
    full_layer = 1 + bisect_left(range(1, layers + 1), True, key=full_after) if reached.all() else None
    return StackReach(
        method=method,
        budget=budget,
        n=n,
        layers=layers,
        heads=heads,
        seed=seed,
        max_length=max_length,
        target=target,
        exact_layers=tuple(sorted(exact)),
        full_layer=full_layer,
        reach_share={h: float(np.mean(reached & (e <= h))) for h in hops},
        reach_share_all=float(reached.mean()),
        mean_hops=float(e[reached].mean()) if reached.any() else None,
        unreached=int((~reached).sum()),
    )
