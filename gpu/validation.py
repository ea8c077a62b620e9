"""Argument checks of the attention backend, in the one style of the toolkit: a ``ValueError`` whose message starts
with the argument's name and says what is allowed (``receptive.validation`` for plain integers and windows).

None of them reads a device tensor back to the host except :func:`check_perm` with ``validate=True`` on a
permutation that already lives on the GPU (documented there): the per-call checks are on shapes and dtypes only.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np
import torch

BACKENDS = ("auto", "torch", "flex", "triton")


def check_backend(backend) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    return backend


def check_qkv(q, k, v) -> None:
    """``q``: ``(batch, heads, seq, head_dim)``; ``k, v``: the same with ``kv_heads`` dividing ``heads`` (GQA); one
    floating dtype; at least one position."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"{name}: expected a (batch, heads, seq, head_dim) tensor")
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


def check_perm(perm, n: int, heads: int, device, validate: bool = True) -> torch.Tensor:
    """``perm`` (``(n,)`` shared by the heads or ``(heads, n)``, ``perm[p]`` = original position at permuted
    position ``p``) as an int64 tensor on ``device``.

    Shape and dtype are always checked (free). With ``validate`` the values are checked to be a permutation of
    ``0..n-1`` per row: on the host, before the copy, when ``perm`` is a numpy array, a list or a CPU tensor (no
    device work); on the device when it already lives there, which reads one boolean back and so synchronises
    with the GPU: pass ``validate=False`` in a training loop once the permutation is known to be valid (a
    non-permutation then gives wrong rows, not an error).
    """
    if not isinstance(perm, torch.Tensor):
        arr = np.asarray(perm)
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"perm: expected integer positions, got dtype {arr.dtype}")
        perm = torch.from_numpy(arr.astype(np.int64, copy=False))
    if perm.dtype.is_floating_point or perm.dtype.is_complex or perm.dtype == torch.bool:
        raise ValueError(f"perm: expected integer positions, got dtype {perm.dtype}")
    if tuple(perm.shape) not in ((n,), (heads, n)):
        raise ValueError(f"perm: expected shape ({n},) or ({heads}, {n}), got {tuple(perm.shape)}")
    if validate:
        ok = torch.equal(torch.sort(perm, dim=-1).values.long(), torch.arange(n, device=perm.device).expand(perm.shape))
        if not ok:
            raise ValueError(f"perm: expected a permutation of 0..{n - 1} (each position once per row)")
    return perm.to(device=device, dtype=torch.long)


def writable_folder(name: str, folder) -> Path:
    """``folder`` created if missing and probed with a temporary file; a ``ValueError`` naming ``name`` if this
    process cannot write there, after removing the folders it created (a failed check leaves nothing behind)."""
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


def check_causal(causal) -> bool:
    """``causal`` must be a bool (``"yes"`` or ``1`` would silently mean something)."""
    if not isinstance(causal, bool | np.bool_):
        raise ValueError(f"causal: expected True or False, got {causal!r}")
    return bool(causal)
