"""Prefill-only attention implementations: a method object's ``approximate`` as every layer's attention (the
approximation lab's methods, :data:`gpu.approx.METHODS`), and the keys and values that calibrate the methods fitted
offline.

References
----------
- Serret et al. (2026). A survey of fast attention approximations. arXiv 2604.01757.
- Wolf et al. (2020). Transformers: state-of-the-art natural language processing. EMNLP (system demonstrations).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

from gpu.hf.interface import PREFIX, Attend, register_function
from gpu.validation import check_int


@runtime_checkable
class PrefillMethod(Protocol):
    """What :func:`gpu.hf.register` runs in prefill form: a ``name`` and
    ``approximate(q, k, v, budget, seed=0, causal=False, **options)`` on ``(batch, heads, n, d)`` tensors, e.g. a
    method of the approximation lab (:class:`gpu.approx.Method`).

    A structural type (``typing.Protocol``): any object with both members is one; it is not instantiated.

    Parameters
    ----------
    *args, **kwargs
        None: a protocol is not instantiated.

    Attributes
    ----------
    name : str
        The method's name, part of the registered implementation's (``receptive-prefill-<name>-<budget>``).

    Examples
    --------
    >>> class Mean:
    ...     name = "mean"
    ...     def approximate(self, q, k, v, budget, seed=0, causal=False):
    ...         return v.mean(-2, keepdim=True).expand_as(v)
    >>> isinstance(Mean(), PrefillMethod), isinstance("mean", PrefillMethod)
    (True, False)
    """

    name: str

    def approximate(self, q, k, v, budget, seed=0, causal=False, **options) -> torch.Tensor:
        """The method's attention output."""


def _layer_options(layer_options, layer: int) -> dict:
    """The options of one layer from a list indexed by layer or a ``layer -> dict`` callable."""
    if layer_options is None:
        return {}
    return dict(layer_options(layer) if callable(layer_options) else layer_options[layer])


def method_attend(method: PrefillMethod, budget: int, seed: int = 0, layer_options=None) -> Attend:
    """An ``attend`` running ``method.approximate(q, k, v, budget, seed=seed * layers + layer, causal=causal,
    **options)``.

    Parameters
    ----------
    method : PrefillMethod
        The method, e.g. ``gpu.approx.METHODS["performer"]``.
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
        If ``method`` has no ``name`` and ``approximate``, or ``budget``, ``seed`` are not integers.
    ValueError
        If ``budget < 1`` or ``seed < 0``.

    Examples
    --------
    >>> import torch
    >>> class Mean:  # every query reads the mean value
    ...     name = "mean"
    ...     def approximate(self, q, k, v, budget, seed=0, causal=False):
    ...         return v.mean(-2, keepdim=True).expand_as(v)
    >>> attend = method_attend(Mean(), 8)
    >>> v = torch.randn(1, 2, 8, 4)
    >>> torch.equal(attend(v, v, v, False, 0, 1), v.mean(-2, keepdim=True).expand_as(v))
    True

    References
    ----------
    - Serret et al. (2026). A survey of fast attention approximations. arXiv 2604.01757.
    - Wolf et al. (2020). Transformers: state-of-the-art natural language processing. EMNLP (system
      demonstrations).
    """
    _check_prefill_method(method)
    check_int("budget", budget, 1)
    check_int("seed", seed, 0)

    def attend(q, k, v, causal, layer, layers):
        options = _layer_options(layer_options, layer)
        return method.approximate(q, k, v, budget, seed=seed * layers + layer, causal=causal, **options)

    return attend


def _check_prefill_method(method) -> PrefillMethod:
    """``method`` if it has a string ``name`` and an ``approximate``; else a one-line ``TypeError``."""
    if not isinstance(method, PrefillMethod) or not isinstance(method.name, str):
        raise TypeError(
            f"method: expected a method with a name and approximate() (gpu.approx.METHODS[name]), got "
            f"{type(method).__name__}"
        )
    return method


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
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    previous = model.config._attn_implementation
    model.set_attn_implementation(register_function(f"{PREFIX}-capture", attend))
    try:
        with torch.no_grad():
            model(input_ids=input_ids, **inputs)
    finally:
        model.set_attn_implementation(previous)
    return [captured[layer] for layer in sorted(captured)]
