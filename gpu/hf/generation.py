"""Generation with a KV cache for the causal patterns of :mod:`gpu.attention.generation_patterns`, as transformers
attention
implementations: ``model.generate()`` and incremental decoding run a sparse pattern.

::

    from gpu.hf import register

    name = register("sa", 128, max_length=8192)  # "receptive-sa-128"
    model.set_attn_implementation(name)
    model.generate(input_ids, max_new_tokens=20)  # prefill and every decode step read SA's keys

transformers' own caches hold the keys (``DynamicCache`` by default, or a ``StaticCache``): the model appends the new
keys and calls the attention with the queries of the new tokens and every cached key. The attention finds each row's
tokens from the mask (key padding on either side, a static cache's empty slots), gathers them into a dense sequence,
and runs the pattern for the last positions of it, so each query reads the keys the full-sequence forward gives it.
The mask is always materialised (transformers' ``sdpa_mask`` without its ``is_causal`` shortcut, which aligns the
queries of a static cache's prefill with the first slots and a decode step with the last). The common mask, causal
over a prefix of the slots with no padding (a ``DynamicCache``, or a ``StaticCache``'s filled slots), is recognised
once per model call (every layer receives the same mask) and the keys are then read in place, the prefix a view, so a
decode step costs the pattern's keys and no pass over the cache. Grouped key heads (GQA) are read in place too,
never repeated.

Options:

* ``decode="exact"``: the paper's protocol for its training-free results (Jin & Sui 2026): a call with no cached
  keys before its queries (the prefill) runs the pattern, a call after cached keys (a decode step, or a chunk of
  tokens scored after a sparse prefill) attends to every key;
* ``exact_layers``: layers that always attend to every key (as Gemma keeps global layers among local ones); the
  complement is "the pattern only in some layers";
* ``max_length``: SA's permutations are drawn over this many positions; a longer sequence is a one-line error.
  ``None``: the model's ``max_position_embeddings``;
* ``trace``: ``trace(layer, positions, keep)`` sees each call's query positions and the ``(q, n)`` keys some head
  reads, the data for following a token's influence through the stack.

References
----------
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
- Wolf et al. (2020). Transformers: state-of-the-art natural language processing. EMNLP (system demonstrations).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable

import torch

from gpu.attention.generation_patterns import GENERATION_METHODS, generation_attention
from gpu.attention.head_plans import HeadPlan, head_plan_attention
from gpu.hf.interface import heads_and_scale, implementation_name, keep_mask, layer_of
from gpu.validation import check_choice, check_int

DECODES = ("sparse", "exact")
#: Keys per query at most (past it a pattern reads every key of any sequence a model takes: use ``exact``).
MAX_BUDGET = 1 << 16


def compacted(attend: Callable, q, k, v, attention_mask) -> torch.Tensor:
    """``attend(q, k, v)`` on each row's tokens gathered into a dense sequence; queries of padding get zeros.

    A row's tokens are the keys some query reads; a query's own slot is the last key it reads (a padding query that
    repeats the previous query's keys, or reads none, gets zeros). The queries must be the row's last tokens and the
    mask causal among them: key padding on either side and a static cache's empty slots pass, a packed or custom
    mask is refused. Rows with the same numbers of tokens and queries share one call.

    Parameters
    ----------
    attend : callable
        ``attend(q, k, v)`` with ``(b, heads, q, d)`` queries at the last ``q`` of ``n`` positions.
    q : torch.Tensor
        ``(batch, heads, q, d)``.
    k, v : torch.Tensor
        ``(batch, heads, n, d)``.
    attention_mask : torch.Tensor or None
        Boolean (``True``: attend) or additive ``(batch, 1, q, n)``; ``None``: no padding, the queries last.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, q, d_v)``.

    Raises
    ------
    ValueError
        If the mask is not causal over each row's tokens with the queries last.

    Examples
    --------
    >>> import torch
    >>> x = torch.arange(4.0).view(1, 1, 4, 1)
    >>> keep = torch.tensor([False, True, True, True])  # left padding
    >>> mask = (keep[None, :] & torch.ones(4, 4, dtype=torch.bool).tril())[None, None]
    >>> compacted(lambda q, k, v: q, x, x, x, mask)[0, 0, :, 0]
    tensor([0., 1., 2., 3.])
    """
    b, _, n_q, _ = q.shape
    n = k.shape[2]
    if attention_mask is None:
        return attend(q, k, v)
    prefix = _causal_prefix(attention_mask, (b, n_q, n))
    if prefix == n:
        return attend(q, k, v)
    if prefix is not None:  # a static cache's filled slots: the prefix as a view, no gathered copy
        return attend(q, k[:, :, :prefix], v[:, :, :prefix])
    keep = keep_mask(attention_mask, (b, n_q, n))
    reads = keep.any(dim=-1)  # (b, q): query rows that read some key
    slot = torch.where(reads, n - 1 - keep.flip(-1).int().argmax(-1), -1)  # a query's own slot: its last key
    first = reads.int().argmax(1, keepdim=True)  # each row's first query
    offset = slot.gather(1, first) - first  # query i sits in slot offset + i
    if bool((reads.any(1, keepdim=True) & (offset + n_q > n)).any()):
        raise ValueError("attention_mask: the queries do not fit in the key slots; only a causal mask is supported")
    queries = reads & (slot == offset + torch.arange(n_q))  # padding queries read an earlier query's keys or none
    tokens = keep.any(dim=1)  # (b, n): the keys some query reads
    rank = tokens.cumsum(1) - 1  # each slot's position in its row's dense sequence
    count, q_count = tokens.sum(1), queries.sum(1)
    q_rank = rank.gather(1, slot.clamp(min=0))
    expected = tokens[:, None, :] & (rank[:, None, :] <= q_rank[:, :, None])
    last = q_rank == (count - q_count)[:, None] + queries.cumsum(1) - 1
    if bool(((keep != expected) & queries[:, :, None]).any()) or bool((queries & ~last).any()):
        raise ValueError(
            "attention_mask: only key padding and a causal mask over each row's tokens (queries last) are supported"
        )
    if bool(tokens.all()) and bool(queries.all()):
        return attend(q, k, v)
    out = q.new_zeros(*q.shape[:-1], v.shape[-1])
    for size, q_size in torch.stack([count, q_count], 1).unique(dim=0).tolist():
        if q_size == 0:
            continue
        rows = ((count == size) & (q_count == q_size)).nonzero().squeeze(1)
        key_index = tokens[rows].nonzero()[:, 1].view(len(rows), 1, size, 1)
        query_index = queries[rows].nonzero()[:, 1].view(len(rows), 1, q_size, 1)

        def gather(x, index, rows=rows):
            return x[rows].gather(2, index.expand(-1, x.shape[1], -1, x.shape[-1]))

        result = attend(gather(q, query_index), gather(k, key_index), gather(v, key_index))
        out[rows] = out[rows].scatter(2, query_index.expand(-1, out.shape[1], -1, out.shape[-1]), result)
    return out


#: The last mask :func:`_causal_prefix` checked and its answer: a model passes one mask to every layer of a call.
_LAST_MASK: list = [None, None, None]
#: Elements of the mask compared per block of rows (bounded memory for a long prefill's mask).
_CHECK_BLOCK = 1 << 24


def _causal_prefix(attention_mask: torch.Tensor, shape: tuple[int, int, int]) -> int | None:
    """``t`` when ``attention_mask`` is causal over the slots ``0..t-1`` of every row with the ``q`` queries last
    among them (no padding; slots from ``t`` on empty), else ``None``; remembered for the mask object it was
    computed on (a weak reference, its version and the shape), so a model's layers check it once per call.

    Examples
    --------
    >>> import torch
    >>> causal = torch.ones(3, 5, dtype=torch.bool).tril(2)[None, None]  # 3 queries at slots 2..4 of 5
    >>> _causal_prefix(causal, (1, 3, 5)), _causal_prefix(causal[..., :4].contiguous(), (1, 3, 4))
    (5, None)
    >>> static = torch.ones(1, 6, dtype=torch.bool).tril(3)[None, None]  # a decode step at slot 3, 2 slots empty
    >>> _causal_prefix(static, (1, 1, 6))
    4
    """
    # an inference tensor keeps no version counter (and cannot be changed in place outside inference mode)
    key = (None if attention_mask.is_inference() else attention_mask._version, shape)
    ref, known, answer = _LAST_MASK
    if ref is not None and ref() is attention_mask and known == key:
        return answer
    b, n_q, n = shape
    keep = keep_mask(attention_mask, shape)
    counts = keep[:, -1].sum(-1)
    t = int(counts[0]) if b else 0
    plain = b > 0 and t >= n_q and bool((counts == t).all())
    rows = max(1, _CHECK_BLOCK // max(n, 1))
    slots = torch.arange(n, device=keep.device)
    for start in range(0, n_q if plain else 0, rows):  # query i reads the slots before t - n_q + i + 1
        reads = torch.arange(start, min(n_q, start + rows), device=keep.device) + (t - n_q + 1)
        if not bool((keep[:, start : start + rows] == (slots < reads[:, None])).all()):
            plain = False
            break
    answer = t if plain else None
    _LAST_MASK[:] = [weakref.ref(attention_mask), key, answer]
    return answer


def generation_forward(
    method: str | HeadPlan,
    budget: int | None,
    seed: int = 0,
    *,
    max_length: int | None = None,
    decode: str = "sparse",
    exact_layers: Iterable[int] = (),
    trace=None,
) -> Callable:
    """A transformers attention function running ``method`` in generation form, KV cache included.

    Parameters
    ----------
    method : str or HeadPlan
        A name of :data:`gpu.attention.GENERATION_METHODS`, or a plan of per-head methods
        (:class:`gpu.attention.head_plans.HeadPlan`, its layers the model's).
    budget : int or None
        Keys per query (per head), 1 to :data:`MAX_BUDGET`; ``None`` for a plan (its heads carry their own).
    seed : int, default 0
        The model's seed; layer ``l`` of ``L`` draws SA's permutation with ``seed * L + l``.
    max_length : int, optional
        The length SA's permutations are drawn over; ``None``: the model's ``max_position_embeddings``.
    decode : {"sparse", "exact"}, default "sparse"
        ``"exact"``: calls after cached keys attend to every key (sparse prefill, exact decode).
    exact_layers : iterable of int, default ()
        Layers that attend to every key.
    trace : callable, optional
        ``trace(layer, positions, keep)`` for every call.

    Returns
    -------
    callable
        ``forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kwargs)``
        returning ``(output (batch, q, heads, d), None)``.

    Raises
    ------
    TypeError
        If ``method`` or ``decode`` is not a string, or ``budget``, ``seed``, ``max_length`` or a layer is not an
        integer.
    ValueError
        If one is out of range.

    Examples
    --------
    >>> import torch
    >>> forward = generation_forward("swa", 4)
    >>> x = torch.zeros(1, 2, 5, 8)  # (batch, heads, n, d)
    >>> forward(None, x, x, x, None, is_causal=True)[0].shape
    torch.Size([1, 5, 2, 8])

    References
    ----------
    Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
    """
    plan = method if isinstance(method, HeadPlan) else None
    if plan is None:
        check_choice("method", method, GENERATION_METHODS)
        budget = check_int("budget", budget, 1, MAX_BUDGET)
    elif budget is not None:
        raise ValueError(f"budget: a head plan carries each head's keys per query; pass None (got {budget!r})")
    seed = check_int("seed", seed, 0)
    if max_length is not None:
        max_length = check_int("max_length", max_length, 1)
    check_choice("decode", decode, DECODES)
    if isinstance(exact_layers, str | bytes) or not isinstance(exact_layers, Iterable):
        raise TypeError(f"exact_layers: expected an iterable of layer indices, got {type(exact_layers).__name__}")
    exact = frozenset(check_int("exact_layers", layer, 0) for layer in exact_layers)
    name = implementation_name(method if plan is None else plan_label(plan), budget, seed, decode, exact)

    def forward(
        module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, is_causal=None, **kwargs
    ):
        if dropout:
            raise ValueError(f"dropout: the attention {name} is training-free; call model.eval() (got {dropout})")
        if not bool(is_causal if is_causal is not None else getattr(module, "is_causal", True)):
            raise ValueError(
                f"is_causal: the attention {name} is causal and the model is not; a bidirectional model "
                "runs a method object's prefill form, e.g. register(gpu.approx.METHODS['sa'], budget)"
            )
        # grouped key heads stay grouped: the patterns and a plan's heads read them in place
        query, key, value = heads_and_scale(name, None, query, key, value, scaling, kwargs)
        layer, layers = layer_of(module)
        if plan is not None and layers != plan.layers:
            raise ValueError(f"plan: {plan.name} has {plan.layers} layers, the model {layers}")
        config = getattr(module, "config", None)
        length = max_length or getattr(config, "max_position_embeddings", None) or key.shape[2]
        layer_trace = None if trace is None else (lambda positions, keep: trace(layer, positions, keep))

        def attend(q, k, v):
            decoding = k.shape[2] > q.shape[2]
            if layer in exact or (decoding and decode == "exact"):
                return generation_attention("exact", q, k, v, 1, 0, length, layer_trace)
            if plan is not None:
                return head_plan_attention(plan, layer, q, k, v, seed * layers + layer, length, layer_trace)
            return generation_attention(method, q, k, v, budget, seed * layers + layer, length, layer_trace)

        out = compacted(attend, query, key, value, attention_mask)
        return out.transpose(1, 2).contiguous(), None

    forward.__name__ = forward.__qualname__ = f"attention_{name}"
    return forward


def plan_label(plan: HeadPlan) -> str:
    """The name a plan goes by in implementations and labels: ``plan-<name>-<digest>``.

    Parameters
    ----------
    plan : HeadPlan
        The plan.

    Returns
    -------
    str

    Examples
    --------
    >>> plan_label(HeadPlan("toy", ((("swa", 4),),)))[:9]
    'plan-toy-'
    """
    return f"plan-{plan.name}-{plan.digest}"


def _materialised_mask(*args, **kwargs):
    """transformers' ``sdpa_mask``, never ``None`` for a causal mask (the queries' alignment stays explicit)."""
    from transformers.masking_utils import sdpa_mask

    return sdpa_mask(*args, **(kwargs | {"allow_is_causal_skip": False}))
