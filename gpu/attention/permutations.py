"""Permutations of the sequence as torch tensors: the torch counterpart of :mod:`receptive.permutations`.

References
----------
- Jin & Sui (2026). Stochastic Attention. arXiv:2604.00754.
"""

from __future__ import annotations

import torch

from gpu.validation import check_tensor

__all__ = ["inverse_permutation"]


def inverse_permutation(perm: torch.Tensor) -> torch.Tensor:
    """The inverse ``inv`` with ``inv[..., perm[..., p]] = p`` along the last axis: where original position ``i``
    sits in permuted order, for one permutation ``(n,)`` or a stack of them (per head ``(heads, n)``, or any leading
    axes), by one scatter (``O(n)`` per row, no sort), on ``perm``'s device and in its dtype.

    :func:`receptive.permutations.inverse_permutation` is the same map on numpy arrays. The values are not checked
    (that would read the device back to the host): a row that is not a permutation of ``0 .. n - 1`` gives a wrong
    row, with the positions it never hits left at 0. :func:`gpu.validation.check_perm` checks them.

    Parameters
    ----------
    perm : torch.Tensor
        Integer, at least one axis; each row along the last axis a permutation of ``0 .. n - 1``.

    Returns
    -------
    torch.Tensor
        The inverse, same shape, dtype and device.

    Raises
    ------
    TypeError
        If ``perm`` is not a tensor of integers.
    ValueError
        If ``perm`` has no axis.

    Examples
    --------
    >>> import torch
    >>> inverse_permutation(torch.tensor([2, 0, 1])).tolist()
    [1, 2, 0]
    >>> inverse_permutation(torch.tensor([[2, 0, 1], [0, 2, 1]])).tolist()  # one row per head
    [[1, 2, 0], [0, 2, 1]]

    References
    ----------
    Jin & Sui (2026). Stochastic Attention. arXiv:2604.00754.
    """
    check_tensor("perm", perm)
    if perm.dtype.is_floating_point or perm.dtype.is_complex or perm.dtype == torch.bool:
        raise TypeError(f"perm: expected integer positions, got dtype {perm.dtype}")
    if perm.dim() == 0:
        raise ValueError("perm: expected at least one axis, got a 0-d tensor")
    positions = torch.arange(perm.shape[-1], dtype=perm.dtype, device=perm.device).expand_as(perm)
    return torch.zeros_like(perm).scatter_(-1, perm.long(), positions)
