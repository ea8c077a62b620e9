"""One way to put a pattern into a transformers model: :func:`register` makes a method at a number of keys per query
a named attention implementation, for prefill and for generation with a KV cache.

::

    from gpu.hf import register

    name = register("sa", 128)  # "receptive-sa-128"
    model.set_attn_implementation(name)
    model.generate(input_ids, max_new_tokens=20)  # prefill and every decode step read SA's keys

Which form runs, by method and model:

* a method of :data:`gpu.attention.GENERATION_METHODS` (``swa``, ``swa+sink``, ``sa``,
  ``sa+sink``, ``sa+swa``, ``sa+swa-union``, ``swa+sink+sa``, ``sa-ms``, ``moba``, ``top-k``, ``exact``) runs its
  generation form in a causal model (:mod:`gpu.hf.generation`): each query reads about ``budget`` keys among the
  positions before it, in the prefill and at every decode step, and the cached decode equals the full-sequence
  forward. In a bidirectional model (BERT) the methods the approximation lab also has (``swa``, ``sa``, ``sa+swa``,
  ``swa+sink``, ``sa+sink``, ``moba``, ``top-k``) run the lab's bidirectional form, the same definition there;
* a method only the lab has (:data:`gpu.approx.METHODS`: Performer, Linformer, MLA, ...) runs prefill only
  (:mod:`gpu.hf.prefill`): these read every key or are fitted offline, and a call with cached keys gets a one-line
  error naming the fix;
* ``"lab:<method>"`` runs the lab's own form of any lab method, prefill only. Its causal SA is a different reading
  of SA from the generation form: the permuted window of ``budget`` keys around the query, masked to the past in
  original positions, so a query reads about ``(budget + 1) / 2`` keys (``"sa"``: about ``budget``); likewise
  the SA path of the lab's causal ``sa+sink`` and ``sa+swa``. The lab's causal ``swa``, ``swa+sink``, ``moba`` and
  ``top-k`` read the same keys as the generation forms.

References
----------
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
- Serret et al. (2026). A survey of fast attention approximations. arXiv 2604.01757.
- Wolf et al. (2020). Transformers: state-of-the-art natural language processing. EMNLP (system demonstrations).
"""

from __future__ import annotations

from collections.abc import Iterable

from gpu.approx import METHODS as LAB_METHODS
from gpu.attention.generation_patterns import GENERATION_METHODS
from gpu.attention.head_plans import HeadPlan
from gpu.hf.generation import DECODES, MAX_BUDGET, _materialised_mask, generation_forward
from gpu.hf.interface import hf_attention, implementation_name
from gpu.hf.prefill import method_attend
from gpu.validation import check_choice, check_int

#: The prefix that selects the approximation lab's own (prefill-only) form of a method.
LAB_PREFIX = "lab:"


def registered_methods() -> dict[str, str]:
    """Every name :func:`register` takes, with its form: ``"generation"`` (prefill and decode) or ``"prefill"``.

    Returns
    -------
    dict of str to str
        Name to form; the ``lab:`` names are prefill only.

    Examples
    --------
    >>> forms = registered_methods()
    >>> forms["sa"], forms["performer"], forms["lab:sa"]
    ('generation', 'prefill', 'prefill')
    """
    forms = {name: "generation" for name in GENERATION_METHODS}
    forms |= {name: "prefill" for name in LAB_METHODS if name not in GENERATION_METHODS}
    return forms | {LAB_PREFIX + name: "prefill" for name in LAB_METHODS}


def register(method: str | HeadPlan, budget: int | None, seed: int = 0, *, decode: str = "sparse",
             exact_layers: Iterable[int] = (), max_length: int | None = None, layer_options=None,
             trace=None) -> str:  # fmt: skip
    """Register ``method`` at ``budget`` keys per query with transformers' attention and mask interfaces.

    Parameters
    ----------
    method : str or HeadPlan
        A name of :func:`registered_methods` (see the module's text for which form runs where), or a
        :class:`gpu.attention.head_plans.HeadPlan` (per layer and head a position-only method and its keys per query;
        generation form, causal models only).
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
        Prefill form only: the method's options per layer, e.g. :func:`gpu.hf.prefill.calibration_options` for the
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
    >>> register("performer", 4)
    'receptive-performer-4'

    References
    ----------
    - Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
    - Wolf et al. (2020). Transformers. EMNLP (system demonstrations).
    """
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    if isinstance(method, HeadPlan):
        if layer_options is not None:
            raise ValueError("layer_options: a head plan runs generation forms, which take no calibration")
        generate = generation_forward(method, budget, seed, max_length=max_length, decode=decode,
                                      exact_layers=exact_layers, trace=trace)  # fmt: skip
        name = generate.__name__.removeprefix("attention_")
        AttentionInterface.register(name, generate)
        AttentionMaskInterface.register(name, _materialised_mask)
        return name
    forms = registered_methods()
    check_choice("method", method, forms)
    budget = check_int("budget", budget, 1, MAX_BUDGET)
    seed = check_int("seed", seed, 0)
    check_choice("decode", decode, DECODES)
    lab_name = method.removeprefix(LAB_PREFIX)
    if forms[method] == "prefill":
        options = {"decode": decode != "sparse", "exact_layers": bool(exact_layers),
                   "max_length": max_length is not None, "trace": trace is not None}  # fmt: skip
        given = [flag for flag, value in options.items() if value]
        if given:
            raise ValueError(f"{given[0]}: {method} runs prefill only (the approximation lab's form); the generation "
                             f"options apply to {', '.join(GENERATION_METHODS)}")  # fmt: skip
        name = implementation_name(method, budget, seed)
        forward = hf_attention(method_attend(lab_name, budget, seed, layer_options), name)
        AttentionInterface.register(name, forward)
        AttentionMaskInterface.register(name, sdpa_mask)
        return name
    if layer_options is not None:
        raise ValueError(f"layer_options: {method} runs its generation form, which takes no calibration; the "
                         f"calibrated methods are the lab's loki, mla and transmla")  # fmt: skip
    generate = generation_forward(method, budget, seed, max_length=max_length, decode=decode,
                                  exact_layers=exact_layers, trace=trace)  # fmt: skip
    name = generate.__name__.removeprefix("attention_")  # exact_layers may be an iterator, read once
    bidirectional = hf_attention(method_attend(method, budget, seed), name) if method in LAB_METHODS else None

    def forward(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, is_causal=None,
                **kwargs):  # fmt: skip
        causal = bool(is_causal if is_causal is not None else getattr(module, "is_causal", True))
        if causal or bidirectional is None:
            return generate(module, query, key, value, attention_mask, dropout, scaling, is_causal, **kwargs)
        return bidirectional(module, query, key, value, attention_mask, dropout, scaling, False, **kwargs)

    forward.__name__ = forward.__qualname__ = f"attention_{name}"
    AttentionInterface.register(name, forward)
    AttentionMaskInterface.register(name, _materialised_mask)
    return name
