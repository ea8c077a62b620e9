"""Latent attention: keys and values of all heads from one low-rank latent per token, the KV cache of Multi-head
Latent Attention (MLA, DeepSeek-AI 2024, DeepSeek-V2, arXiv 2405.04434, Sec. 2.1) and the training-free conversion
of per-head keys and values to such a latent (TransMLA, Meng, Tang, Zhang, Wu et al. 2025, arXiv 2502.07864).

Per token the ``h`` heads' keys and values are one row ``x_t = [k_t^1 .. k_t^h, v_t^1 .. v_t^h]`` of width
``2 h d``; MLA caches ``c_t = x_t W`` (``W``: ``2hd x r``, orthonormal columns) and reconstructs ``x_t ~ c_t W^T``
(DeepSeek's up-projections ``W^UK, W^UV``). Training-free, ``W`` is the top-``r`` right singular subspace of the
stacked rows (the PCA without centring, which minimises ``sum_t |x_t - x_t W W^T|^2``); exact at ``r = 2hd``.
DeepSeek's decoupled RoPE part is not modelled (the inputs carry no positional rotation here).
"""

from __future__ import annotations

import torch

from .common import exact_attention, wide


def _rows(k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``(b, n, 2 h d)``: every token's keys and values of all heads in one row."""
    b, h, n, d = k.shape
    return torch.cat([k.transpose(1, 2).reshape(b, n, h * d), v.transpose(1, 2).reshape(b, n, h * d)], dim=-1)


def _split(x: torch.Tensor, h: int, d: int):
    b, n, _ = x.shape
    k, v = x[..., : h * d], x[..., h * d :]
    return (t.reshape(b, n, h, d).transpose(1, 2) for t in (k, v))


def check_rank(r, h: int, d: int, what: str) -> int:
    """A latent width in ``[1, 2 h d]``, else a one-line ``ValueError`` naming the budget."""
    if isinstance(r, bool) or not isinstance(r, int) or not 1 <= r <= 2 * h * d:
        raise ValueError(f"budget: the {what} latent width r must be an integer in [1, 2 heads d = {2 * h * d}], "
                         f"got {r!r}")  # fmt: skip
    return int(r)


def latent_basis(k: torch.Tensor, v: torch.Tensor, rank: int, balance: float = 1.0) -> torch.Tensor:
    """``W`` (``2hd x rank``): the top right singular vectors of the rows ``[k / balance, v]`` pooled over the
    batch (eigenvectors of their second-moment matrix)."""
    x = wide(_rows(k / balance, v))
    second = torch.einsum("bni,bnj->ij", x, x)
    _, vectors = torch.linalg.eigh(second)
    return vectors[:, -rank:].flip(-1).to(k.dtype)


def _calibration(k, v, calibration, causal, name):
    if calibration is None:
        if causal:
            raise ValueError(
                f"calibration: causal {name} needs calibration=(k, v) from other text (its latent projection is a "
                "weight and must not see the sequence itself)"
            )
        return k, v
    if not isinstance(calibration, tuple | list) or len(calibration) != 2:
        raise ValueError("calibration: expected a pair (k, v) of (batch, heads, N, d) tensors")
    ck, cv = calibration
    if ck.dim() != 4 or ck.shape[1:2] + ck.shape[3:] != k.shape[1:2] + k.shape[3:] or cv.shape != ck.shape:
        raise ValueError(f"calibration: expected k, v of shape (batch, {k.shape[1]}, N, {k.shape[3]}), got "
                         f"{tuple(ck.shape)} and {tuple(cv.shape)}")  # fmt: skip
    return ck.to(k.dtype), cv.to(k.dtype)


def compress(k, v, basis: torch.Tensor, balance: float = 1.0):
    """``(k_hat, v_hat)``: keys and values reconstructed from the latent ``c_t = [k_t / balance, v_t] W``."""
    h, d = k.shape[1], k.shape[3]
    x = _rows(k / balance, v)
    k_hat, v_hat = _split((x @ basis) @ basis.T, h, d)
    return k_hat * balance, v_hat


def mla(q, k, v, m, seed, causal=False, calibration=None):
    """MLA with a latent of width ``r = m`` per token (KV cache ``r`` numbers per token instead of ``2 h d``):
    ``W`` from the SVD of ``[K V]`` of ``calibration=(k, v)`` or, bidirectional, of the given layer; exact
    attention on the reconstructed keys and values (causal: over ``j <= i``, exact at ``r = 2hd``)."""
    r = check_rank(m, k.shape[1], k.shape[3], "MLA")
    ck, cv = _calibration(k, v, calibration, causal, "mla")
    k_hat, v_hat = compress(k, v, latent_basis(ck, cv, r))
    return exact_attention(q, k_hat, v_hat, causal=causal)


def key_value_balance(k: torch.Tensor, v: torch.Tensor) -> float:
    """TransMLA's key-value balancing factor ``alpha = |K|_F / |V|_F``: keys are divided by it before the joint
    PCA, so that the larger-norm keys do not take the whole latent."""
    return float(torch.linalg.norm(k.double()) / torch.linalg.norm(v.double()).clamp_min(1e-300))


def transmla(q, k, v, m, seed, causal=False, calibration=None):
    """TransMLA-style training-free conversion: the per-head keys and values of a pretrained layer become a shared
    latent of rank ``r = m`` by the SVD of the balanced rows ``[K / alpha, V]`` (``alpha`` =
    :func:`key_value_balance` of the calibration data), then exact attention on the reconstruction. TransMLA also
    rotates RoPE into few dimensions (RoRoPE) and fine-tunes afterwards; neither is done here."""
    r = check_rank(m, k.shape[1], k.shape[3], "TransMLA")
    ck, cv = _calibration(k, v, calibration, causal, "transmla")
    alpha = key_value_balance(ck, cv)
    k_hat, v_hat = compress(k, v, latent_basis(ck, cv, r, alpha), alpha)
    return exact_attention(q, k_hat, v_hat, causal=causal)


def latent_errors(k, v, ranks, balance: bool = True) -> list[dict]:
    """The conversion error against the rank: for every ``r`` in ``ranks`` the relative Frobenius errors of the
    reconstructed keys and values, ``|K - K_hat|_F / |K|_F`` and ``|V - V_hat|_F / |V|_F``, with (TransMLA) or
    without (plain MLA) key-value balancing; the basis is fitted on the same ``k, v``."""
    h, d = k.shape[1], k.shape[3]
    alpha = key_value_balance(k, v) if balance else 1.0
    rows = []
    for r in ranks:
        r = check_rank(r, h, d, "TransMLA" if balance else "MLA")
        k_hat, v_hat = compress(k, v, latent_basis(k, v, r, alpha), alpha)
        rows.append({
            "rank": r,
            "key_error": float(torch.linalg.norm((k - k_hat).double()) / torch.linalg.norm(k.double())),
            "value_error": float(torch.linalg.norm((v - v_hat).double()) / torch.linalg.norm(v.double())),
        })  # fmt: skip
    return rows
