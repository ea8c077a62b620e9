"""What ``python -m gpu.bench`` times: one callable per (kind, backend) row (:func:`_paths`), the row's label
(``sa fused``: :func:`label`) and the row it is compared with in the same run (:func:`_peer`)."""

from __future__ import annotations

import torch

from gpu.attention.functional import full_attention, sa_attention, swa_attention
from gpu.attention.neighbour import resolved_method
from gpu.attention.variants import variant_attention

KINDS = ("full", "swa", "sa", "sa+swa")
TIMED_BACKENDS = ("torch", "flex", "triton")
#: the name a backend carries in a row's label (``sa fused``); the torch path keeps the bare kind (``sa``)
SUFFIX = {
    "torch": "",
    "sdpa": "",
    "flex": " flex",
    "triton": " fused",
    "gather": " gather",
    "dense": " dense",
    "kernel": " kernel",
}
#: the causal variant without a band, timed through its gathered key table (``gpu.attention.neighbour``)
GATHERED = ("kleinberg",)


def label(kind: str, backend: str) -> str:
    """A benchmark row's label: the kind and the backend's :data:`SUFFIX` (``sa fused``; bare for torch).

    Parameters
    ----------
    kind : str
        The attention (``full``, ``swa``, ``sa``, ``sa+swa``, ``sa-ms``, ``dilated``, ``kleinberg``).
    backend : str
        A key of :data:`SUFFIX`.

    Returns
    -------
    str
        The label.

    Raises
    ------
    KeyError
        If ``backend`` is not a key of :data:`SUFFIX`.

    Examples
    --------
    >>> label("sa", "triton"), label("swa", "torch"), label("kleinberg", "gather")
    ('sa fused', 'swa', 'kleinberg gather')
    """
    return kind + SUFFIX[backend]


def _paths(q, k, v, w, gate, perm, backends, ms_perm=None, variants=False) -> dict:
    """``{label: (kind, backend, fn)}``: full through SDPA, each windowed kind through every backend asked for;
    with ``ms_perm`` (per-head block permutations, ``(heads, n)``) also multi-scale SA, and with ``variants`` dilated
    heads on every backend and Kleinberg keys (gathered), both through :func:`gpu.attention.variants.variant_attention`
    with the seeded (eval-mode) keys of seed 0, layer 1, as ``StochasticAttentionLayer(variant=...)`` runs them."""
    paths = {"full": ("full", "sdpa", lambda: full_attention(q, k, v, backend="torch", check_finite=False))}
    for b in backends:

        def swa(b=b):
            return swa_attention(q, k, v, w, backend=b, check_finite=False)

        def sa(b=b):
            return sa_attention(q, k, v, w, perm=perm, backend=b, validate=False, check_finite=False)

        paths[label("swa", b)] = ("swa", b, swa)
        paths[label("sa", b)] = ("sa", b, sa)
        paths[label("sa+swa", b)] = ("sa+swa", b, lambda sa=sa, swa=swa: gate * sa() + (1 - gate) * swa())
        if ms_perm is not None:

            def sa_ms(b=b):
                return sa_attention(q, k, v, w, perm=ms_perm, backend=b, validate=False, check_finite=False)

            paths[label("sa-ms", b)] = ("sa-ms", b, sa_ms)
        if variants:

            def dilated(b=b):
                return variant_attention(q, k, v, w, "dilated", backend=b)

            paths[label("dilated", b)] = ("dilated", b, dilated)
    if variants:  # the module's path: neighbour_attention's numba kernel for CPU inference, else it gathers unless
        # n <= 32 w (then a dense mask)
        how = resolved_method(q.shape[2], w, kernel=kernel_runs(q))
        paths[label("kleinberg", how)] = ("kleinberg", how, lambda: variant_attention(q, k, v, w, "kleinberg", seed=0))
    return paths


def kernel_runs(q) -> bool:
    """Whether ``neighbour_attention``'s ``auto`` path takes its numba kernel for queries like ``q``: CPU inference in
    float32 or float64.

    Parameters
    ----------
    q : torch.Tensor
        The queries of a timed row.

    Returns
    -------
    bool

    Examples
    --------
    >>> import torch
    >>> kernel_runs(torch.zeros(1, 1, 4, 2)), kernel_runs(torch.zeros(1, 1, 4, 2, dtype=torch.float16))
    (True, False)
    """
    return q.device.type == "cpu" and q.dtype in (torch.float32, torch.float64) and not q.requires_grad


def _peer(kind: str, backends) -> str | None:
    """The row a row of ``kind`` is compared with: SDPA for full, the FlexAttention row of the same kind."""
    if kind == "full":
        return "full"
    if kind in GATHERED:
        return label("sa", backends[0])
    return label(kind, "flex") if "flex" in backends else None
