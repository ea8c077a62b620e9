"""One way to put a pattern into a transformers model: :func:`register` makes a method at a number of keys per query
a named attention implementation, for prefill and for generation with a KV cache.

::

    from gpu.hf import register

    name = register("sa", 128)  # "receptive-sa-128"
    model.set_attn_implementation(name)
    model.generate(input_ids, max_new_tokens=20)  # prefill and every decode step read SA's keys

What runs depends on what is registered:

* a name of :data:`gpu.attention.GENERATION_METHODS` (``swa``, ``swa+sink``, ``sa``, ``sa+sink``, ``sa+swa``,
  ``sa+swa-union``, ``swa+sink+sa``, ``sa-ms``, ``moba``, ``top-k``, ``exact``) runs its generation form in a causal
  model (:mod:`gpu.hf.generation`): each query reads about ``budget`` keys among the positions before it, in the
  prefill and at every decode step, and the cached decode equals the full-sequence forward;
* a :class:`gpu.attention.head_plans.HeadPlan` runs per layer and head a generation form at its own keys per query;
* a method object (:class:`gpu.hf.prefill.PrefillMethod`: a ``name`` and ``approximate``, such as the approximation
  lab's ``gpu.approx.METHODS[name]``) runs prefill only (:mod:`gpu.hf.prefill`), causal or bidirectional as the
  model is: such methods draw or fit over the whole sequence they see, and a call with cached keys gets a one-line
  error naming the fix. The lab's ``sa-band`` is the paper's causal SA (the permuted window of ``budget`` keys
  around the query, masked to the past in original positions, about ``(budget + 1) / 2`` keys per query), a
  different key set from the generation form's ``"sa"`` (about ``budget`` keys).

References
----------
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
- Serret et al. (2026). A survey of fast attention approximations. arXiv 2604.01757.
- Wolf et al. (2020). Transformers: state-of-the-art natural language processing. EMNLP (system demonstrations).
"""

from __future__ import annotations

from collections.abc import Iterable

from gpu.attention.generation_patterns import GENERATION_METHODS
from gpu.attention.head_plans import HeadPlan
from gpu.hf.generation import DECODES, MAX_BUDGET, _materialised_mask, generation_forward
from gpu.hf.interface import hf_attention, implementation_name
from gpu.hf.prefill import PrefillMethod, _check_prefill_method, method_attend
from gpu.validation import check_choice, check_int


def register(
    method: str | HeadPlan | PrefillMethod,
    budget: int | None,
    seed: int = 0,
    *,
    decode: str = "sparse",
    exact_layers: Iterable[int] = (),
    max_length: int | None = None,
    layer_options=None,
    trace=None,
) -> str:
    """Register ``method`` at ``budget`` keys per query with transformers' attention and mask interfaces.

    Parameters
    ----------
    method : str, HeadPlan or PrefillMethod
        A name of :data:`gpu.attention.GENERATION_METHODS` (generation form, causal models), a
        :class:`gpu.attention.head_plans.HeadPlan` (per layer and head such a name and its keys per query), or a
        method object with ``name`` and ``approximate`` such as ``gpu.approx.METHODS["performer"]`` (prefill form,
        causal or bidirectional models); see the module's text.
    budget : int or None
        Keys per query (per head), 1 to :data:`gpu.hf.generation.MAX_BUDGET`; for the lab's latent and tensor
        methods, their rank; ``None`` for a plan.
    seed : int, default 0
        The model's seed; layer ``l`` of ``L`` draws with ``seed * L + l``.
    decode : {"sparse", "exact"}, default "sparse"
        Generation form only. ``"exact"``: calls after cached keys attend to every key (sparse prefill, exact decode,
        the protocol of the SA paper's training-free results).
    exact_layers : iterable of int, default ()
        Generation form only: layers that attend to every key.
    max_length : int, optional
        Generation form only: the length SA's permutations are drawn over; ``None``: the model's
        ``max_position_embeddings``.
    layer_options : list of dict or callable, optional
        Prefill form only: the method's options per layer, e.g. ``gpu.approx.Method.calibration_options`` for the
        methods fitted offline (Loki, MLA, TransMLA).
    trace : callable, optional
        Generation form only: ``trace(layer, positions, keep)`` for every call.

    Returns
    -------
    str
        The name to pass as ``attn_implementation`` (``"receptive-<method>-<budget>"``, with ``-s<seed>`` and the
        protocol where they apply).

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``method`` is unknown, an argument is out of range, or an option does not apply to the method's form.

    Examples
    --------
    >>> import torch
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
    ...                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    >>> torch.manual_seed(0) and None
    >>> model = LlamaForCausalLM(config).eval()
    >>> model.set_attn_implementation(register("sa", 4))
    >>> model.generate(torch.arange(8)[None], max_new_tokens=3, do_sample=False).shape
    torch.Size([1, 11])
    >>> class Mean:  # a method object: prefill form, every query reads the mean value
    ...     name = "mean"
    ...     def approximate(self, q, k, v, budget, seed=0, causal=False):
    ...         return v.mean(-2, keepdim=True).expand_as(v)
    >>> register(Mean(), 4)
    'receptive-prefill-mean-4'

    References
    ----------
    - Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
    - Wolf et al. (2020). Transformers. EMNLP (system demonstrations).
    """
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    if not isinstance(method, str | HeadPlan):
        return _register_prefill(
            _check_prefill_method(method), budget, seed, decode, exact_layers, max_length, layer_options, trace
        )
    if isinstance(method, str) and method not in GENERATION_METHODS:
        raise ValueError(
            f"method: expected one of {', '.join(GENERATION_METHODS)} (generation forms), got {method!r}; "
            "a method of the approximation lab is registered as its object, gpu.approx.METHODS[name]"
        )
    if layer_options is not None:
        label = "a head plan" if isinstance(method, HeadPlan) else method
        raise ValueError(
            f"layer_options: {label} runs generation forms, which take no calibration; the calibrated "
            f"methods are the lab's loki, mla and transmla (gpu.approx.METHODS)"
        )
    generate = generation_forward(
        method, budget, seed, max_length=max_length, decode=decode, exact_layers=exact_layers, trace=trace
    )
    name = generate.__name__.removeprefix("attention_")  # exact_layers may be an iterator, read once
    AttentionInterface.register(name, generate)
    AttentionMaskInterface.register(name, _materialised_mask)
    return name


def _register_prefill(
    method: PrefillMethod, budget, seed, decode, exact_layers, max_length, layer_options, trace
) -> str:
    """Register a method object's prefill form as ``receptive-prefill-<name>-<budget>[-s<seed>]``."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    budget = check_int("budget", budget, 1, MAX_BUDGET)
    seed = check_int("seed", seed, 0)
    check_choice("decode", decode, DECODES)
    options = {
        "decode": decode != "sparse",
        "exact_layers": bool(tuple(exact_layers)),
        "max_length": max_length is not None,
        "trace": trace is not None,
    }
    given = [flag for flag, value in options.items() if value]
    if given:
        raise ValueError(
            f"{given[0]}: {method.name} runs prefill only (a method object's form); the generation "
            f"options apply to {', '.join(GENERATION_METHODS)}"
        )
    name = implementation_name(f"prefill-{method.name}", budget, seed)
    forward = hf_attention(method_attend(method, budget, seed, layer_options), name)
    AttentionInterface.register(name, forward)
    AttentionMaskInterface.register(name, sdpa_mask)
    return name
