"""The approximation lab's methods (:data:`gpu.approx.METHODS`) as prefill-only transformers attention
implementations, and the calibration data of the methods fitted offline.

References
----------
- Serret et al. (2026). A survey of fast attention approximations. arXiv 2604.01757.
- Wolf et al. (2020). Transformers: state-of-the-art natural language processing. EMNLP (system demonstrations).
"""

from __future__ import annotations

import torch

from gpu.approx import METHODS, approximate, exact_attention
from gpu.hf.interface import PREFIX, Attend, register_function
from gpu.validation import check_choice, check_int


def _layer_options(layer_options, layer: int) -> dict:
    if layer_options is None:
        return {}
    return dict(layer_options(layer) if callable(layer_options) else layer_options[layer])


def method_attend(method: str, budget: int, seed: int = 0, layer_options=None) -> Attend:
    """An ``attend`` running ``approximate(method, ..., budget, seed=seed * layers + layer, causal=causal, **options)``.

    Parameters
    ----------
    method : str
        A name of :data:`gpu.approx.METHODS`.
    budget : int
        The method's budget, at least 1.
    seed : int, default 0
        The model's seed; layer ``l`` of ``L`` draws with ``seed * L + l``.
    layer_options : list of dict or callable, optional
        The method's options per layer (a list indexed by layer, or ``layer -> dict``).

    Returns
    -------
    callable
        ``attend(q, k, v, causal, layer, layers)``.

    Raises
    ------
    TypeError
        If ``method`` is not a string or ``budget``, ``seed`` are not integers.
    ValueError
        If ``method`` is unknown, ``budget < 1`` or ``seed < 0``.

    Examples
    --------
    >>> import torch
    >>> attend = method_attend("top-k", 8)
    >>> q = torch.randn(1, 2, 8, 4)
    >>> from gpu.approx import exact_attention
    >>> torch.allclose(attend(q, q, q, False, 0, 1), exact_attention(q, q, q), atol=1e-6)
    True

    References
    ----------
    - Serret et al. (2026). A survey of fast attention approximations. arXiv 2604.01757.
    - Wolf et al. (2020). Transformers: state-of-the-art natural language processing. EMNLP (system
      demonstrations).
    """
    _validate(method, budget, seed)

    def attend(q, k, v, causal, layer, layers):
        options = _layer_options(layer_options, layer)
        return approximate(method, q, k, v, budget, seed=seed * layers + layer, causal=causal, **options)

    return attend


def capture_keys_values(model, input_ids: torch.Tensor, **inputs) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Every layer's ``(k, v)`` under exact attention on ``input_ids``: calibration data for the methods whose
    projections are fitted offline.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A model whose attention dispatches through ``ALL_ATTENTION_FUNCTIONS``; its implementation is restored.
    input_ids : torch.Tensor
        ``(batch, n)`` token ids.
    **inputs
        Further model inputs (e.g. ``attention_mask``).

    Returns
    -------
    list of (torch.Tensor, torch.Tensor)
        Per layer, ``(batch, heads, n, d)`` keys and values (key heads repeated for grouped-query attention, after
        RoPE where the model applies it).

    Examples
    --------
    >>> import torch
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> config = LlamaConfig(vocab_size=16, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
    ...                      num_attention_heads=2, num_key_value_heads=1, attn_implementation="eager")
    >>> torch.manual_seed(0) and None
    >>> captured = capture_keys_values(LlamaForCausalLM(config), torch.arange(6)[None])
    >>> len(captured), tuple(captured[0][0].shape)
    (2, (1, 2, 6, 8))

    References
    ----------
    - Serret et al. (2026). A survey of fast attention approximations. arXiv 2604.01757.
    - Wolf et al. (2020). Transformers: state-of-the-art natural language processing. EMNLP (system
      demonstrations).
    """
    captured: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def attend(q, k, v, causal, layer, layers):
        captured[layer] = (k, v)
        return exact_attention(q, k, v, causal=causal)

    previous = model.config._attn_implementation
    model.set_attn_implementation(register_function(f"{PREFIX}-capture", attend))
    try:
        with torch.no_grad():
            model(input_ids=input_ids, **inputs)
    finally:
        model.set_attn_implementation(previous)
    return [captured[layer] for layer in sorted(captured)]


def calibration_options(method: str, captured: list[tuple[torch.Tensor, torch.Tensor]]) -> list[dict] | None:
    """``layer_options`` for :func:`register` from :func:`capture_keys_values`.

    Parameters
    ----------
    method : str
        A name of :data:`gpu.approx.METHODS`.
    captured : list of (torch.Tensor, torch.Tensor)
        Per layer, keys and values.

    Returns
    -------
    list of dict or None
        ``[{"calibration": ...}, ...]`` for the methods that take it (Loki: the keys; MLA, TransMLA: keys and
        values); ``None`` for the others.

    Raises
    ------
    TypeError
        If ``method`` is not a string.
    ValueError
        If ``method`` is unknown.

    Examples
    --------
    >>> import torch
    >>> k = v = torch.zeros(1, 1, 4, 2)
    >>> calibration_options("sa", [(k, v)]) is None, list(calibration_options("mla", [(k, v)])[0])
    (True, ['calibration'])
    """
    check_choice("method", method, METHODS)
    if "calibration" not in METHODS[method].options:
        return None
    return [{"calibration": k if method == "loki" else (k, v)} for k, v in captured]


def _validate(method: str, budget: int, seed: int) -> None:
    """Raise on a bad method, budget or seed."""
    check_choice("method", method, METHODS)
    check_int("budget", budget, 1)
    check_int("seed", seed, 0)
