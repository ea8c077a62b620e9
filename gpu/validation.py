"""Argument checks of the attention backend, in the one style of the toolkit.

A wrong type raises ``TypeError`` and a bad value ``ValueError``, each with a one-line message that starts with the
argument's name and says what is allowed (:func:`check_int`, :func:`check_real`, :func:`check_bool` and
:func:`check_choice` are :mod:`graphs.validation`'s).
None of the checks reads a device tensor back to the host except ``check_perm`` with ``validate=True`` on a
permutation that already lives on the GPU and ``check_finite`` on GPU tensors (documented there): the other
per-call checks are on shapes and dtypes only.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np
import torch

from graphs.validation import check_bool, check_choice, check_int, check_real

__all__ = [
    "BACKENDS",
    "check_backend",
    "check_bool",
    "check_causal",
    "check_choice",
    "check_finite",
    "check_generator",
    "check_int",
    "check_perm",
    "check_qkv",
    "check_real",
    "check_tensor",
    "writable_folder",
]

#: the values of every ``backend=`` argument
BACKENDS = ("auto", "torch", "flex", "triton")


def check_backend(backend) -> str:
    """Check a ``backend=`` argument.

    Parameters
    ----------
    backend : str
        One of :data:`BACKENDS`.

    Returns
    -------
    str
        ``backend``.

    Raises
    ------
    TypeError
        If ``backend`` is not a string.
    ValueError
        If ``backend`` is not one of :data:`BACKENDS`.

    Examples
    --------
    >>> check_backend("torch")
    'torch'
    >>> check_backend("cuda")
    Traceback (most recent call last):
    ...
    ValueError: backend: expected one of auto, torch, flex, triton, got 'cuda'
    """
    return check_choice("backend", backend, BACKENDS)


def check_causal(causal) -> bool:
    """Check a ``causal=`` flag: it must be a bool, since ``"yes"`` or ``1`` would silently mean something.

    Parameters
    ----------
    causal : bool
        The flag (a numpy bool is accepted).

    Returns
    -------
    bool
        ``causal`` as a Python bool.

    Raises
    ------
    TypeError
        If ``causal`` is not a bool.

    Examples
    --------
    >>> check_causal(False)
    False
    >>> check_causal(1)
    Traceback (most recent call last):
    ...
    TypeError: causal: expected True or False, got 1 (int)
    """
    if not isinstance(causal, bool | np.bool_):
        raise TypeError(f"causal: expected True or False, got {causal!r} ({type(causal).__name__})")
    return bool(causal)


def check_generator(generator) -> torch.Generator | None:
    """Check a ``generator=`` argument.

    Parameters
    ----------
    generator : torch.Generator or None
        The random generator, or ``None`` for torch's default one.

    Returns
    -------
    torch.Generator or None
        ``generator``.

    Raises
    ------
    TypeError
        If ``generator`` is neither ``None`` nor a ``torch.Generator``.

    Examples
    --------
    >>> check_generator(None) is None
    True
    >>> check_generator(3)
    Traceback (most recent call last):
    ...
    TypeError: generator: expected a torch.Generator or None, got int
    """
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator: expected a torch.Generator or None, got {type(generator).__name__}")
    return generator


def check_tensor(name: str, value, ndim: int | None = None) -> torch.Tensor:
    """Check that ``value`` is a tensor, of ``ndim`` dimensions when given.

    Parameters
    ----------
    name : str
        The argument's name (the first word of an error message).
    value : torch.Tensor
        The tensor.
    ndim : int or None, default None
        The number of dimensions required.

    Returns
    -------
    torch.Tensor
        ``value``.

    Raises
    ------
    TypeError
        If ``value`` is not a tensor.
    ValueError
        If it has not ``ndim`` dimensions.

    Examples
    --------
    >>> import torch
    >>> check_tensor("q", torch.zeros(1, 1, 2, 2), ndim=4).shape
    torch.Size([1, 1, 2, 2])
    >>> check_tensor("q", [1.0])
    Traceback (most recent call last):
    ...
    TypeError: q: expected a torch.Tensor, got list
    """
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(value).__name__}")
    if ndim is not None and value.dim() != ndim:
        raise ValueError(f"{name}: expected a {ndim}-d tensor, got shape {tuple(value.shape)}")
    return value


def check_qkv(q, k, v) -> None:
    """Check the q, k, v of an attention call.

    Parameters
    ----------
    q : torch.Tensor
        ``(batch, heads, seq, head_dim)``, floating, at least one position.
    k, v : torch.Tensor
        ``(batch, kv_heads, seq, head_dim)`` with ``kv_heads`` dividing ``heads`` (GQA); q's dtype and device.

    Raises
    ------
    TypeError
        If one of them is not a tensor.
    ValueError
        If the shapes, dtypes or devices do not match as above.

    Examples
    --------
    >>> import torch
    >>> q = torch.zeros(1, 2, 4, 8)
    >>> check_qkv(q, q[:, :1], q[:, :1])  # GQA: one kv head for two query heads
    >>> check_qkv(q, q.double(), q.double())
    Traceback (most recent call last):
    ...
    ValueError: q, k, v: expected one floating dtype, got torch.float32, torch.float64, torch.float64
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(name, t)
        if t.dim() != 4:
            raise ValueError(f"{name}: expected a (batch, heads, seq, head_dim) tensor, got shape {tuple(t.shape)}")
    if k.shape != v.shape or q.shape[0] != k.shape[0] or q.shape[2:] != k.shape[2:]:
        raise ValueError(
            f"k, v: expected shape (batch, kv_heads, seq, head_dim) matching q {tuple(q.shape)}, "
            f"got {tuple(k.shape)} and {tuple(v.shape)}"
        )
    if k.shape[1] < 1 or q.shape[1] % k.shape[1]:
        raise ValueError(f"k: kv_heads = {k.shape[1]} must divide the query heads {q.shape[1]} (GQA)")
    if not (q.dtype == k.dtype == v.dtype) or not q.dtype.is_floating_point:
        raise ValueError(f"q, k, v: expected one floating dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k, v: expected one device, got {q.device}, {k.device}, {v.device}")
    if q.shape[2] < 1:
        raise ValueError("q: the sequence must hold at least one position")


def check_finite(**tensors) -> None:
    """Refuse a tensor that holds NaN or inf, naming it: attention of such an input is NaN without a word.

    Each tensor is reduced to one boolean; on a GPU reading it back synchronises with the device, which is why the
    attention functions take ``check_finite=False`` for training loops and other hot paths.

    Parameters
    ----------
    **tensors : torch.Tensor
        The tensors, by the names of their arguments (the first word of the message), checked in that order.

    Raises
    ------
    ValueError
        If one of them holds a NaN or an infinity.

    Examples
    --------
    >>> import torch
    >>> check_finite(q=torch.zeros(2), k=torch.ones(2))
    >>> check_finite(q=torch.zeros(2), k=torch.tensor([1.0, float("inf")]))
    Traceback (most recent call last):
    ...
    ValueError: k: holds NaN or inf (attention of it would be NaN; pass finite values, or check_finite=False to skip)
    """
    for name, t in tensors.items():
        if not bool(torch.isfinite(t).all()):
            raise ValueError(
                f"{name}: holds NaN or inf (attention of it would be NaN; pass finite values, or check_finite=False "
                "to skip)"
            )


def check_perm(perm, n: int, heads: int, device, validate: bool = True) -> torch.Tensor:
    """Check a permutation of the sequence and return it as an int64 tensor on ``device``.

    Shape and dtype are always checked (free). With ``validate`` the values are checked to be a permutation of
    ``0 .. n - 1`` per row: on the host, before the copy, when ``perm`` is a numpy array, a list or a CPU tensor (no
    device work); on the device when it already lives there, which reads one boolean back and so synchronises
    with the GPU: pass ``validate=False`` in a training loop once the permutation is known to be valid (a
    non-permutation then gives wrong rows, not an error).

    Parameters
    ----------
    perm : array_like or torch.Tensor
        ``(n,)`` shared by the heads or ``(heads, n)``; ``perm[p]`` is the original position at permuted position
        ``p``.
    n : int
        Sequence length.
    heads : int
        Query heads.
    device : torch.device or str
        Where the result lives.
    validate : bool, default True
        Whether to check the values.

    Returns
    -------
    torch.Tensor
        ``perm`` as int64 on ``device``.

    Raises
    ------
    TypeError
        If ``perm`` does not hold integers.
    ValueError
        If its shape is wrong, or (``validate``) a row is not a permutation.

    Examples
    --------
    >>> check_perm([2, 0, 1], 3, 4, "cpu").tolist()
    [2, 0, 1]
    >>> check_perm([0, 0, 1], 3, 4, "cpu")
    Traceback (most recent call last):
    ...
    ValueError: perm: expected a permutation of 0..2 (each position once per row)
    """
    if not isinstance(perm, torch.Tensor):
        arr = np.asarray(perm)
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"perm: expected integer positions, got dtype {arr.dtype}")
        perm = torch.from_numpy(arr.astype(np.int64, copy=False))
    if perm.dtype.is_floating_point or perm.dtype.is_complex or perm.dtype == torch.bool:
        raise TypeError(f"perm: expected integer positions, got dtype {perm.dtype}")
    if tuple(perm.shape) not in ((n,), (heads, n)):
        raise ValueError(f"perm: expected shape ({n},) or ({heads}, {n}), got {tuple(perm.shape)}")
    if validate:
        ok = torch.equal(torch.sort(perm, dim=-1).values.long(), torch.arange(n, device=perm.device).expand(perm.shape))
        if not ok:
            raise ValueError(f"perm: expected a permutation of 0..{n - 1} (each position once per row)")
    return perm.to(device=device, dtype=torch.long)


def writable_folder(name: str, folder) -> Path:
    """Create ``folder`` if missing and check that this process can write there.

    For commands whose output is a folder of their own (a training run); a command writing one file into an
    existing folder checks that folder with :func:`graphs.cli_common.output_file` instead, which refuses a missing
    one. A failed check removes the folders it created, so it leaves nothing behind.

    Parameters
    ----------
    name : str
        The argument or flag that named ``folder`` (the first word of an error message).
    folder : str or os.PathLike
        The folder.

    Returns
    -------
    pathlib.Path
        ``folder``.

    Raises
    ------
    ValueError
        If the folder cannot be created or written to.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     writable_folder("--out", pathlib.Path(tmp) / "run").is_dir()
    True
    """
    folder = Path(folder)
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        for created in missing:  # deepest first
            with contextlib.suppress(OSError):
                created.rmdir()
        raise ValueError(f"{name}: cannot write to {str(folder)!r} ({exc.strerror or type(exc).__name__})") from None
    return folder
