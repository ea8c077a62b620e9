"""Shared pieces of the methods: exact attention (the reference), the error measure, per-query key lists as the
backend's :func:`gpu.attention.neighbour.neighbour_attention` takes them, seeded generators and option checks."""

from __future__ import annotations

import torch

from gpu.attention.oracle import masked_attention

#: queries per block when a method attends over key lists (``neighbour_attention(..., method="gather",
#: chunk=LIST_CHUNK)``): the torch path, whose products and allocations torch's counters see
#: (:mod:`gpu.approx.measure`), in the blocks the cost formulas count (``gpu.approx.costs``)
LIST_CHUNK = 256


def causal_mask(n: int, device) -> torch.Tensor:
    """The causal mask ``mask[i, j] = j <= i``.

    Parameters
    ----------
    n : int
        Sequence length.
    device : torch.device or str
        Where the mask is allocated.

    Returns
    -------
    torch.Tensor
        ``(n, n)`` bool, lower triangular (diagonal included).

    Examples
    --------
    >>> from gpu.approx.families.common import causal_mask
    >>> causal_mask(3, "cpu").int()
    tensor([[1, 0, 0],
            [1, 1, 0],
            [1, 1, 1]], dtype=torch.int32)
    """
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def exact_attention(q, k, v, causal: bool = False) -> torch.Tensor:
    """Exact softmax attention [1]_, the reference every method is measured against:
    :func:`gpu.attention.oracle.masked_attention` in float32 or wider.

    ``softmax(q k^T / sqrt(d) + M) v`` with ``M = 0`` (bidirectional) or ``-inf`` above the diagonal (causal).

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d_v)``.
    causal : bool, optional
        Mask keys after the query.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import exact_attention
    >>> g = torch.Generator().manual_seed(0)
    >>> q, k, v = (torch.randn(1, 1, 4, 2, generator=g) for _ in range(3))
    >>> out = exact_attention(q, k, v, causal=True)
    >>> out.shape
    torch.Size([1, 1, 4, 2])
    >>> torch.allclose(out[..., 0, :], v[..., 0, :])  # the first query sees only the first key
    True

    References
    ----------
    .. [1] Vaswani et al., "Attention Is All You Need", NeurIPS 2017, arXiv:1706.03762, Eq. 1.
    """
    return masked_attention(wide(q), wide(k), wide(v), causal=causal).to(v.dtype)  # float32 for half types, as SDPA


def padded_keys(idx: torch.Tensor, valid: torch.Tensor | None = None, causal: bool = False) -> torch.Tensor:
    """Per-query key lists as :func:`gpu.attention.neighbour.neighbour_attention` takes them: ``idx`` with ``-1``
    where ``valid`` is off and, when ``causal``, where the key comes after its query.

    Parameters
    ----------
    idx : torch.Tensor
        int64 ``(..., n, K)``: the keys of query ``i`` in row ``i``.
    valid : torch.Tensor or None, optional
        Bool, ``idx``'s shape: the entries in use; ``None`` means every entry.
    causal : bool, optional
        Also drop keys ``idx > i`` of query ``i``.

    Returns
    -------
    torch.Tensor
        int64, ``idx``'s shape, ``-1`` = padding.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import padded_keys
    >>> idx = torch.tensor([[1, 0], [0, 2], [2, 1]])
    >>> padded_keys(idx, causal=True).tolist()
    [[-1, 0], [0, -1], [2, 1]]
    >>> padded_keys(idx, idx != 0).tolist()
    [[1, -1], [-1, 2], [2, 1]]
    """
    drop = torch.zeros_like(idx, dtype=torch.bool) if valid is None else ~valid
    if causal:
        drop = drop | (idx > torch.arange(idx.shape[-2], device=idx.device)[:, None])
    return idx.masked_fill(drop, -1)


def relative_error(approx: torch.Tensor, exact: torch.Tensor) -> float:
    """The relative Frobenius error ``||O - O_hat||_F / ||O||_F`` [1]_, computed in float64.

    Parameters
    ----------
    approx : torch.Tensor
        The approximation ``O_hat``.
    exact : torch.Tensor
        The reference ``O``, same shape.

    Returns
    -------
    float
        The error (0 for an exact result).

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import relative_error
    >>> exact = torch.ones(2, 3)
    >>> round(relative_error(1.01 * exact, exact), 6)
    0.01

    References
    ----------
    .. [1] Golub & Van Loan, "Matrix Computations", 4th ed., Johns Hopkins University Press, 2013, Sec. 2.3
       (the Frobenius norm).
    """
    return float(torch.linalg.norm((approx - exact).double()) / torch.linalg.norm(exact.double()))


def generator(seed: int) -> torch.Generator:
    """A seeded CPU generator.

    Every random draw is made on the CPU in float64, so a seed gives the same method on any device.

    Parameters
    ----------
    seed : int
        The seed.

    Returns
    -------
    torch.Generator
        A CPU generator seeded with ``seed``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import generator
    >>> torch.equal(torch.rand(3, generator=generator(7)), torch.rand(3, generator=generator(7)))
    True
    """
    return torch.Generator().manual_seed(int(seed))


def randn(g: torch.Generator, *shape, like: torch.Tensor) -> torch.Tensor:
    """Standard normal numbers drawn in float64 on the CPU from ``g``, then cast to ``like``'s device and dtype.

    Parameters
    ----------
    g : torch.Generator
        A CPU generator (:func:`generator`).
    *shape : int
        The shape of the draw.
    like : torch.Tensor
        The tensor whose device and dtype the result takes.

    Returns
    -------
    torch.Tensor
        ``shape``, on ``like.device`` in ``like.dtype``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import generator, randn
    >>> x = randn(generator(0), 2, 3, like=torch.zeros(1, dtype=torch.float16))
    >>> x.shape, x.dtype
    (torch.Size([2, 3]), torch.float16)
    """
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(like.device, like.dtype)


def wide(x: torch.Tensor) -> torch.Tensor:
    """``x`` in float32 if it is a half type: the CPU decompositions (``eigh``, ``svd``, ``pinv``) need it.

    Parameters
    ----------
    x : torch.Tensor
        Any tensor.

    Returns
    -------
    torch.Tensor
        ``x.float()`` for float16 and bfloat16, ``x`` itself otherwise.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.families.common import wide
    >>> wide(torch.zeros(2, dtype=torch.bfloat16)).dtype, wide(torch.zeros(2, dtype=torch.float64)).dtype
    (torch.float32, torch.float64)
    """
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
