"""The registry of approximation methods and the one interface to them.

``approximate(method, q, k, v, budget, seed=0, causal=False, **options)`` maps ``(batch, heads, n, d)`` tensors to
an approximation of ``softmax(q k^T / sqrt d) v`` (causal: over keys ``j <= i``). ``METHODS[name]`` says what the
budget means (``budget_meaning``: keys per query for most methods, a rank or latent width for the latent and tensor
methods, ``budget_kind``), whether the seed matters (``randomized``), whether a causal and a bidirectional version
exist (``causal``, ``bidirectional``; SA's causal forms are the ``sa-band`` methods, the paper's permuted band
masked to the past), the method's options, and its cost: :func:`method_cost` gives FLOPs, peak memory and KV-cache
bytes per token (``gpu.approx.costs``). The methods live in :mod:`gpu.approx.families`, one module per family, each
with its cost function beside it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import torch

from gpu.approx import costs
from gpu.approx.costs import Cost
from gpu.approx.families import (
    clustering,
    kernels,
    latent,
    lowrank,
    lsh,
    oracles,
    psd_lowrank,
    sampling,
    tensor,
    windows,
)
from gpu.approx.families.common import exact_attention, relative_error, wide
from gpu.validation import check_bool, check_choice, check_int
from gpu.validation import check_finite as _check_finite
from receptive.patterns.names import check_names


def _no_limit(n: int, d: int, heads: int) -> None:
    """No largest budget."""
    return None


@dataclass(frozen=True)
class Method:
    """One approximation method: its family in the survey's classification and what its budget means.

    Parameters
    ----------
    name : str
        The key in :data:`METHODS`.
    family : str
        The family in the classification of Serret et al. (2026).
    budget_meaning : str
        What the budget ``m`` means for this method (keys per query, landmarks, features, rank).
    run : callable
        ``run(q, k, v, m, seed, causal, **options)`` on ``(batch, heads, n, d)`` tensors.
    cost : callable
        ``cost(n, d, m, heads, causal, element_bytes, **options)`` returning a :class:`Cost`.
    randomized : bool, default True
        Whether the seed changes the output.
    causal : bool, default False
        Whether a causal version exists.
    bidirectional : bool, default True
        Whether a bidirectional version exists (``False``: causal only, e.g. ``sa-band``).
    budget_kind : {"keys", "rank", "features"}, default "keys"
        The kind of budget; more keys than ``n`` means every key.
    options : tuple of str, default ()
        Keyword options :func:`approximate` passes on.
    max_budget : callable, default no limit
        ``(n, d, heads) -> int or None``, the largest valid budget.
    paper : str, default ""
        The method's source.

    Examples
    --------
    >>> METHODS["performer"].family, METHODS["performer"].budget_kind
    ('kernel', 'features')

    References
    ----------
    Serret et al. (2026). A survey of fast attention approximations. arXiv 2604.01757.
    """

    name: str
    family: str
    budget_meaning: str
    run: Callable
    cost: Callable
    randomized: bool = True  # False: the seed does not change the output
    causal: bool = False  # True: a causal version exists (``approximate(..., causal=True)``)
    bidirectional: bool = True  # False: causal only
    budget_kind: str = "keys"  # "keys" (per query; more than n means every key), "rank" or "features"
    options: tuple[str, ...] = ()  # keyword options ``approximate`` passes on
    max_budget: Callable[[int, int, int], int | None] = _no_limit  # (n, d, heads) -> the largest valid budget
    paper: str = ""

    def has_version(self, causal: bool) -> bool:
        """Whether the method has a causal (``causal=True``) or a bidirectional version.

        Examples
        --------
        >>> METHODS["sa"].has_version(causal=True), METHODS["sa-band"].has_version(causal=True)
        (False, True)
        """
        return self.causal if causal else self.bidirectional

    def approximate(
        self, q, k, v, budget: int, seed: int = 0, causal: bool = False, check_finite: bool = True, **options
    ) -> torch.Tensor:
        """This method's approximation of ``softmax(q k^T / sqrt d) v``: :func:`approximate`'s arguments after the
        name.

        Examples
        --------
        >>> import torch
        >>> q = torch.randn(1, 2, 16, 8)
        >>> METHODS["top-k"].approximate(q, q, q, 16).shape
        torch.Size([1, 2, 16, 8])
        """
        budget = _check_budget(self.name, budget)
        for name, t in (("q", q), ("k", k), ("v", v)):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
        if q.dim() != 4 or k.shape != q.shape:
            raise ValueError("q, k, v: expected (batch, heads, n, d) tensors of one shape")
        if v.shape != q.shape or not (q.dtype == k.dtype == v.dtype) or not q.dtype.is_floating_point:
            raise ValueError("q, k, v: expected (batch, heads, n, d) tensors of one floating dtype")
        seed = check_int("seed", seed, 0)
        causal = check_bool("causal", causal)
        _check_version(self, causal, options)
        if check_bool("check_finite", check_finite):
            _check_finite(q=q, k=k, v=v)
        out = self.run(wide(q), wide(k), wide(v), budget, int(seed), causal, **options)
        return out.to(q.dtype)

    def calibration_options(self, captured: list[tuple[torch.Tensor, torch.Tensor]]) -> list[dict] | None:
        """Per-layer options from captured keys and values (:func:`gpu.hf.capture_keys_values`) for the methods
        fitted offline; ``None`` for the others.

        Parameters
        ----------
        captured : list of (torch.Tensor, torch.Tensor)
            Per layer, keys and values.

        Returns
        -------
        list of dict or None
            ``[{"calibration": ...}, ...]`` (Loki: the keys; MLA, TransMLA: keys and values), or ``None``.

        Examples
        --------
        >>> import torch
        >>> k = v = torch.zeros(1, 1, 4, 2)
        >>> METHODS["sa"].calibration_options([(k, v)]) is None, list(METHODS["mla"].calibration_options([(k, v)])[0])
        (True, ['calibration'])
        """
        if "calibration" not in self.options:
            return None
        return [{"calibration": k if self.name == "loki" else (k, v)} for k, v in captured]


def _m(name, family, meaning, run, cost, **kw) -> Method:
    """A registry entry."""
    return Method(name, family, meaning, run, cost, **kw)


_LATENT = {"budget_kind": "rank", "options": ("calibration",), "max_budget": lambda n, d, h: 2 * h * d}

# fmt: off
METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        _m("swa", "sparsity (window)", "window of m keys", windows.sliding_window, windows.sliding_window_cost,
           randomized=False, causal=True, paper="sliding window (Beltagy et al. 2020)"),
        _m("sa", "sparsity (window)", "window of m keys in a random order", windows.stochastic,
           windows.stochastic_cost, paper="Jin & Sui 2026, arXiv 2604.00754"),
        _m("sa+swa", "sparsity (window)", "two paths of m/2 keys, equal gates", windows.stochastic_plus_window,
           windows.stochastic_plus_window_cost, paper="Jin & Sui 2026 (gated SA+SWA)"),
        _m("swa+sink", "sparsity (window)", "window of m - 1 keys and the first key",
           windows.with_sink(windows.sliding_window), lambda *a: windows.sliding_window_cost(*a, sink=True),
           randomized=False, causal=True, paper="Xiao et al. 2024 (StreamingLLM)"),
        _m("sa+sink", "sparsity (window)", "SA window of m - 1 keys and the first key",
           windows.with_sink(windows.stochastic), lambda *a: windows.stochastic_cost(*a, sink=True),
           paper="Jin & Sui 2026; Xiao et al. 2024"),
        _m("sa-band", "sparsity (window)", "SA window of m slots masked to the past: about (m + 1) / 2 keys",
           windows.stochastic, windows.stochastic_cost, causal=True, bidirectional=False,
           paper="Jin & Sui 2026 (causal SA, mask in original positions)"),
        _m("sa-band+swa", "sparsity (window)", "sa-band of m/2 slots and a causal window of m/2 keys, equal gates",
           windows.stochastic_plus_window, windows.stochastic_plus_window_cost, causal=True, bidirectional=False,
           paper="Jin & Sui 2026 (gated SA+SWA, causal)"),
        _m("sa-band+sink", "sparsity (window)", "sa-band of m - 1 slots and the first key",
           windows.with_sink(windows.stochastic), lambda *a: windows.stochastic_cost(*a, sink=True), causal=True,
           bidirectional=False, paper="Jin & Sui 2026; Xiao et al. 2024"),
        _m("reformer", "sparsity (LSH)", "2 rounds, chunks of m/2 items (about m/2 keys each)", lsh.reformer_lsh,
           lsh.reformer_lsh_cost, causal=True, options=("rounds",), paper="Kitaev et al. 2020"),
        _m("moba", "sparsity (block routing)", "4 blocks of m/4 keys", clustering.moba, clustering.moba_cost,
           randomized=False, causal=True, options=("blocks_per_query",), paper="Lu et al. 2025, arXiv 2502.13189"),
        _m("routing", "clustering", "ceil(n/m) k-means clusters of m keys", clustering.routing, clustering.routing_cost,
           options=("iterations",), paper="Roy et al. 2021"),
        _m("hyperattention", "importance sampling", "m/2 sortLSH keys + m/2 uniform columns", sampling.hyperattention,
           sampling.hyperattention_cost, causal=True, paper="Han et al. 2024, arXiv 2310.05869"),
        _m("kdeformer", "importance sampling", "m columns by KDE importance (m probe queries)", sampling.kdeformer,
           sampling.kdeformer_cost, paper="Zandieh et al. 2023, arXiv 2302.02451"),
        _m("linformer", "low rank", "keys and values mean-pooled to length m", lowrank.linformer,
           lowrank.linformer_cost, randomized=False, paper="Wang et al. 2020 (untrained mean pooling)"),
        _m("linformer-jl", "low rank", "separate random projections E, F to length m", lowrank.linformer_jl,
           lowrank.linformer_cost, paper="Wang et al. 2020 (random E, F)"),
        _m("nystromformer", "low rank", "m landmarks", lowrank.nystromformer, lowrank.nystromformer_cost,
           randomized=False, paper="Xiong et al. 2021"),
        _m("skyformer", "low rank (PSD kernel)", "Nystrom with m landmarks of [Q; K]", psd_lowrank.skyformer,
           psd_lowrank.skyformer_cost, budget_kind="rank", paper="Chen et al. 2021"),
        _m("cholesky", "low rank (PSD kernel)", "rank m pivoted Cholesky of exp(XX^T/sqrt d), X = [Q; K]",
           psd_lowrank.pivoted_cholesky, psd_lowrank.pivoted_cholesky_cost, randomized=False, budget_kind="rank",
           options=("tolerance",), max_budget=lambda n, d, h: 2 * n, paper="Harbrecht et al. 2012"),
        _m("loki", "low rank (keys)", "top m keys by scores in d/4 PCA dimensions", lowrank.loki, lowrank.loki_cost,
           randomized=False, causal=True, options=("rank", "calibration"), paper="Singhania et al. 2024"),
        _m("performer", "kernel", "m random features", kernels.performer, kernels.performer_cost, causal=True,
           budget_kind="features", paper="Choromanski et al. 2021"),
        _m("polysketch", "kernel (polynomial)", "degree 4, sketch of floor(sqrt m)^2 features", kernels.polysketch,
           kernels.polysketch_cost, causal=True, budget_kind="features", options=("degree",),
           paper="Kacham et al. 2024"),
        _m("levattention", "kernel (leverage scores)", "the m keys of largest leverage", kernels.levattention,
           kernels.levattention_cost, randomized=False, paper="Kannan et al. 2024, arXiv 2410.05462"),
        _m("mla", "latent", "latent of width r = m per token (SVD of [K V])", latent.mla, latent.mla_cost,
           randomized=False, causal=True, paper="DeepSeek-AI 2024 (DeepSeek-V2)", **_LATENT),
        _m("transmla", "latent", "balanced latent of width r = m (SVD of [K/alpha V])", latent.transmla,
           latent.mla_cost, randomized=False, causal=True, paper="Meng et al. 2025 (TransMLA)", **_LATENT),
        _m("tpa", "tensor", "per-token rank R = m of keys and values (heads x d)", tensor.tensor_product,
           tensor.tensor_product_cost, randomized=False, causal=True, budget_kind="rank",
           max_budget=lambda n, d, h: min(h, d), paper="Zhang et al. 2025 (Tensor Product Attention)"),
        _m("top-k", "oracle", "the m largest scores per row", oracles.top_k, oracles.top_k_cost, randomized=False,
           causal=True),
        _m("svd", "oracle", "rank m of the attention matrix", oracles.truncated_svd, oracles.truncated_svd_cost,
           randomized=False, budget_kind="rank"),
    )
}
# fmt: on
check_names(METHODS, "gpu.approx.METHODS")


def _check_budget(name: str, budget) -> int:
    """The budget as an int >= 1."""
    return check_int("budget", budget, 1)


def _check_version(method: Method, causal: bool, options: dict) -> None:
    """Refuse a direction the method lacks (naming the methods that have it) and options that are not its own."""
    if causal and not method.causal:
        causal_ones = ", ".join(n for n, m in METHODS.items() if m.causal)
        raise ValueError(f"causal: {method.name} has no causal version (causal methods: {causal_ones})")
    if not causal and not method.bidirectional:
        raise ValueError(
            f"causal: {method.name} is causal only (the paper's causal SA); bidirectional it is "
            f"{method.name.replace('sa-band', 'sa')}"
        )
    unknown = set(options) - set(method.options)
    if unknown:
        raise ValueError(
            f"options: {method.name} takes {', '.join(method.options) or 'no options'}, got {sorted(unknown)}"
        )


def _check_method(method) -> Method:
    """The registered method of that name."""
    return METHODS[check_choice("method", method, METHODS)]


def approximate(
    method: str, q, k, v, budget: int, seed: int = 0, causal: bool = False, check_finite: bool = True, **options
) -> torch.Tensor:
    """An approximation of ``softmax(q k^T / sqrt d) v`` by ``method`` at ``budget``.

    float16 and bfloat16 inputs run in float32 (as SDPA accumulates them) and the output is cast back, so a finite
    input whose scores overflow the half type still gives finite rows.

    Parameters
    ----------
    method : str
        A name of :data:`METHODS` (``swa``, ``sa``, ``sa+swa``, ``reformer``, ``moba``, ``performer``, ...).
    q, k, v : torch.Tensor
        ``(batch, heads, n, d)`` tensors of one shape and floating dtype.
    budget : int
        The method's budget ``m`` (``METHODS[method].budget_meaning``), at least 1.
    seed : int, default 0
        Seed of the randomized methods (``METHODS[method].randomized``).
    causal : bool, default False
        Attend to keys ``j <= i`` only (methods with ``METHODS[method].causal``; ``False`` needs
        ``METHODS[method].bidirectional``).
    check_finite : bool, default True
        Refuse a q, k or v holding NaN or inf (``gpu.validation.check_finite``; on a GPU a synchronisation).
    **options
        The method's keyword options (``METHODS[method].options``), e.g. Reformer's ``rounds``.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d)``, the approximate attention output.

    Raises
    ------
    TypeError
        If ``method`` is not a string, q, k, v are not tensors, or ``budget``, ``seed``, ``causal`` have the
        wrong type.
    ValueError
        If ``method`` is unknown, the tensors' shapes or dtypes differ, ``budget < 1``, ``seed < 0``, the method
        has no version in that direction, an option is not the method's, or (``check_finite``) an input holds NaN
        or inf.

    Examples
    --------
    >>> import torch
    >>> q, k, v = torch.randn(3, 1, 2, 16, 8).unbind(0)
    >>> torch.allclose(approximate("top-k", q, k, v, 16), exact_attention(q, k, v), atol=1e-6)
    True
    >>> approximate("performer", q, k, v, 32, seed=1).shape
    torch.Size([1, 2, 16, 8])

    References
    ----------
    Serret et al. (2026). A survey of fast attention approximations. arXiv 2604.01757. Each method's own source is
    ``METHODS[method].paper``: e.g. Beltagy et al. (2020) Longformer; Jin & Sui (2026) arXiv 2604.00754; Kitaev et
    al. (2020) Reformer; Lu et al. (2025) MoBA, arXiv 2502.13189; Wang et al. (2020) Linformer, arXiv 2006.04768;
    Xiong et al. (2021) Nystromformer; Choromanski et al. (2021) Performer, arXiv 2009.14794; DeepSeek-AI (2024)
    DeepSeek-V2 (MLA).
    """
    return _check_method(method).approximate(q, k, v, budget, seed, causal, check_finite, **options)


def method_cost(
    method: str, n: int, d: int, budget: int, heads: int = 1, causal: bool = False, element_bytes: int = 4, **options
) -> Cost:
    """FLOPs and peak bytes of one forward of length ``n``, and KV-cache bytes per token, of ``method`` at ``budget``.

    The conventions are those of ``gpu.approx.costs``. Options that change the cost (Reformer's ``rounds``,
    PolySketch's ``degree``, ...) are passed on; calibration data costs nothing here.

    Parameters
    ----------
    method : str
        A name of :data:`METHODS`.
    n, d : int
        Sequence length and head dimension, at least 1.
    budget : int
        The method's budget, at least 1.
    heads : int, default 1
        Number of heads.
    causal : bool, default False
        The causal version (methods with ``METHODS[method].causal``; ``False`` needs
        ``METHODS[method].bidirectional``).
    element_bytes : int, default 4
        Bytes per number.
    **options
        The method's keyword options.

    Returns
    -------
    Cost
        ``flops``, ``peak_bytes`` and ``kv_cache_bytes_per_token``.

    Raises
    ------
    TypeError
        If ``method`` is not a string or a size is not an integer.
    ValueError
        If ``method`` is unknown, a size or ``budget`` is below 1, the method has no version in that direction, or an
        option is not the method's.

    Examples
    --------
    >>> method_cost("swa", 4096, 64, 64).kv_cache_bytes_per_token  # 2 d w / n numbers of 4 bytes
    8.0
    >>> method_cost("swa", 4096, 64, 64).flops < exact_cost(4096, 64).flops
    True

    References
    ----------
    Serret et al. (2026). A survey of fast attention approximations. arXiv 2604.01757.
    """
    spec = _check_method(method)
    budget = _check_budget(method, budget)
    _check_sizes(n, d, heads, element_bytes)
    _check_version(spec, check_bool("causal", causal), options)
    accepted = inspect.signature(spec.cost).parameters
    return spec.cost(n, d, budget, heads, causal, element_bytes, **{k: v for k, v in options.items() if k in accepted})


def exact_cost(n: int, d: int, heads: int = 1, causal: bool = False, element_bytes: int = 4) -> Cost:
    """The cost of exact attention, the reference of every ratio.

    Parameters
    ----------
    n, d : int
        Sequence length and head dimension, at least 1.
    heads : int, default 1
        Number of heads.
    causal : bool, default False
        Causal attention (half the score FLOPs).
    element_bytes : int, default 4
        Bytes per number.

    Returns
    -------
    Cost
        ``4 n^2 d + 5 n^2`` FLOPs per head (halved when causal), the ``n^2`` scores held, a full KV cache.

    Raises
    ------
    TypeError
        If a size is not an integer.
    ValueError
        If a size is below 1.

    Examples
    --------
    >>> exact_cost(16, 4).flops  # 4 * 16**2 * 4 + 5 * 16**2
    5376.0

    References
    ----------
    Serret et al. (2026). arXiv 2604.01757.
    """
    _check_sizes(n, d, heads, element_bytes)
    return costs.full(n, d, n, heads, causal, element_bytes)


def _check_sizes(n, d, heads, element_bytes):
    """Each size an int >= 1."""
    for name, value in (("n", n), ("d", d), ("heads", heads), ("element_bytes", element_bytes)):
        check_int(name, value, 1)


__all__ = ["METHODS", "Cost", "Method", "approximate", "exact_attention", "exact_cost", "method_cost", "relative_error"]
