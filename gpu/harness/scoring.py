"""Log-likelihood evaluation of a causal LM under a sparse attention pattern, as lm-evaluation-harness and OLMES
score multiple-choice and cloze tasks (the command line: ``python -m gpu.harness``).

Scoring (Gao et al. 2024; Gu et al. 2024): each request's context and continuation are tokenised together and split
at the context's length (the context's trailing spaces move to the continuation; no BOS unless asked), and the
continuation's log-likelihood is the sum of its tokens' log-probabilities given everything before them. From the
per-choice log-likelihoods: ``acc`` (the highest sum), ``acc_per_char`` (divided by the continuation's characters),
``acc_per_token`` (by its tokens); a ``target`` task (LAMBADA) scores its single continuation: ``acc`` is 1 when
greedy decoding reproduces every target token, ``bpb`` the bits per UTF-8 byte of the target (OLMES's
``logits_per_byte``, averaged over items).

Attention (:class:`EvalAttention`): any method of :data:`gpu.attention.GENERATION_METHODS` in
generation form (``exact``: transformers' SDPA), or a per-head plan (:class:`gpu.attention.head_plans.HeadPlan`),
under one of two protocols:

* ``decode="sparse"``: the pattern at every position, continuation included;
* ``decode="exact"``: the pattern over the context, exact attention for the continuation's tokens over that cache
  (the SA paper's training-free protocol: the pattern in the prefill, exact attention in the decode).

The approximation lab's causal methods whose keys no generation form reads (:data:`PREFILL_METHODS`) score under
``decode="exact"`` only: each runs over one whole context at a time (they draw or fit over the sequence they see, so a
context cannot be continued from a shared prefix's cache). Among them ``"sa-band"`` is the paper's literal causal SA:
the band of ``budget`` slots around each query in a permutation of the context, masked to the keys at or before the
query (about ``(budget + 1) / 2`` keys per query on average, every slot for the context's last token).

How an item is computed: the generation-form patterns are causal and incremental (a KV cache holds exactly what the
full-sequence forward computes, :mod:`gpu.hf.generation`), so

1. the prefix the items of a group share (OLMES's fixed few-shot examples: most of each context) runs once per
   attention and group into a cache;
2. each item's own context tokens run once on a copy of that cache;
3. the item's continuations run as one batch over its context's cache (right-padded): with exact attention every
   choice reads its context's keys in place (:mod:`gpu.harness.shared_context`), with a pattern each choice has its own
   copy of them (a pattern picks keys by position).

An item therefore costs its question and its answers, not its context once per choice. Items run in chunks of
``batch_size`` items of one group, sorted so that the chunks pad as few tokens as they can (by context length, by
longest continuation or by both: PIQA's answers of a sentence pad more than its questions).

References
----------
- Gao et al. (2024). The language model evaluation harness (lm-evaluation-harness), v0.4. Zenodo.
- Gu et al. (2024). OLMES: a standard for language model evaluations. arXiv 2406.08446.
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

from gpu.approx import METHODS as LAB_METHODS
from gpu.attention.generation_patterns import GENERATION_METHODS
from gpu.attention.head_plans import HeadPlan
from gpu.harness.shared_context import SHARED_CONTEXT, shared_context_attention
from gpu.harness.tasks import EvalItem
from gpu.hf.generation import DECODES, MAX_BUDGET, plan_label
from gpu.hf.implementations import register
from graphs.reachability import _quiet
from graphs.validation import check_choice, check_int

__all__ = [
    "PREFILL_METHODS",
    "EvalAttention",
    "check_fits",
    "encode_pair",
    "item_scores",
    "prefill_method",
    "score_items",
    "shared_prefixes",
    "task_scores",
]


#: The prefill-only names the harness scores (``decode="exact"``): the approximation lab's causal methods that need no
#: calibration and whose keys no generation form reads (the lab's causal ``swa``, ``swa+sink``, ``moba`` and
#: ``top-k`` read the generation forms' keys, and run as those).
PREFILL_METHODS = tuple(
    name
    for name, m in LAB_METHODS.items()
    if m.causal and "calibration" not in m.options and name not in GENERATION_METHODS
)


def prefill_method(name: str):
    """The approximation lab's method that a name of :data:`PREFILL_METHODS` runs.

    Parameters
    ----------
    name : str
        A name of :data:`PREFILL_METHODS`.

    Returns
    -------
    gpu.approx.Method

    Raises
    ------
    ValueError
        If ``name`` is not one.

    Examples
    --------
    >>> prefill_method("performer").family, prefill_method("sa-band").budget_meaning
    ('kernel', 'SA window of m slots masked to the past: about (m + 1) / 2 keys')
    """
    return LAB_METHODS[check_choice("method", name, PREFILL_METHODS)]


def _randomized(method: str) -> bool:
    if method in GENERATION_METHODS:
        return GENERATION_METHODS[method].randomized
    return prefill_method(method).randomized


def _sorted_layers(exact_layers) -> tuple[int, ...]:
    """The exact layers, checked, sorted and without repeats."""
    if isinstance(exact_layers, str) or not isinstance(exact_layers, Sequence):
        raise TypeError(f"exact_layers: expected a sequence of integers, got {type(exact_layers).__name__}")
    return tuple(sorted({check_int("exact_layers", layer, 0) for layer in exact_layers}))


@dataclass(frozen=True)
class EvalAttention:
    """An attention configuration to evaluate: a generation-form method, its keys per query, seed and protocol.

    Parameters
    ----------
    method : str, default "exact"
        A name of :data:`gpu.attention.GENERATION_METHODS` (``exact`` runs transformers' SDPA) or of
        :data:`PREFILL_METHODS` (with ``decode="exact"`` only).
    budget : int, default 0
        Keys per query, 1 to 65536 (``exact``: ignored, 0).
    seed : int, default 0
        The pattern's seed (randomized methods).
    decode : {"sparse", "exact"}, default "sparse"
        The continuation's attention: the pattern, or every key.
    exact_layers : tuple of int, default ()
        Layers that attend to every key throughout.
    plan : HeadPlan, optional
        A per-head plan in place of ``method`` and ``budget`` (``method`` becomes the plan's label
        ``plan-<name>-<digest>``, ``budget`` 0).

    Raises
    ------
    TypeError
        If a field has the wrong type.
    ValueError
        If a field is out of range.

    Examples
    --------
    >>> EvalAttention("sa", 64, seed=1, decode="exact").label
    'sa-64-s1-exact-decode'
    >>> EvalAttention().label
    'exact'
    >>> EvalAttention("sa", 0)
    Traceback (most recent call last):
    ...
    ValueError: budget: expected an integer in [1, 65536], got 0
    >>> EvalAttention("sa-band", 128, decode="exact").label
    'sa-band-128-exact-decode'
    >>> EvalAttention(plan=HeadPlan("toy", ((("swa+sink", 8),),)), decode="exact").label[:9]
    'plan-toy-'
    """

    method: str = "exact"
    budget: int = 0
    seed: int = 0
    decode: str = "sparse"
    exact_layers: tuple[int, ...] = ()
    plan: HeadPlan | None = None

    def __post_init__(self):
        if self.plan is not None:
            self._plan_fields()
            return
        check_choice("method", self.method, (*GENERATION_METHODS, *PREFILL_METHODS))
        check_choice("decode", self.decode, DECODES)
        if self.method in PREFILL_METHODS and self.decode != "exact":
            raise ValueError(
                f"decode: {self.method} runs prefill only (the approximation lab's form): score it "
                "with decode='exact' (the pattern over the context, exact attention after)"
            )
        seed = check_int("seed", self.seed, 0)
        layers = _sorted_layers(self.exact_layers)
        budget = 0 if self.method == "exact" else check_int("budget", self.budget, 1, MAX_BUDGET)
        if layers and self.method in PREFILL_METHODS:
            raise ValueError(
                f"exact_layers: {self.method} runs prefill only; exact layers apply to the generation "
                f"forms ({', '.join(GENERATION_METHODS)})"
            )
        randomized = _randomized(self.method)
        object.__setattr__(self, "budget", budget)
        object.__setattr__(self, "seed", seed if randomized else 0)
        object.__setattr__(self, "decode", "sparse" if self.method == "exact" else self.decode)
        object.__setattr__(self, "exact_layers", () if self.method == "exact" else layers)

    def _plan_fields(self):
        """The fields of a plan's configuration: its label as the method, budget 0, the seed where it draws."""
        if not isinstance(self.plan, HeadPlan):
            raise TypeError(f"plan: expected a HeadPlan, got {type(self.plan).__name__}")
        if self.method not in ("exact", plan_label(self.plan)) or self.budget not in (0, None):
            raise ValueError("plan: a plan carries its own methods and keys; leave method and budget unset")
        check_choice("decode", self.decode, DECODES)
        layers = _sorted_layers(self.exact_layers)
        seed = check_int("seed", self.seed, 0)
        object.__setattr__(self, "method", plan_label(self.plan))
        object.__setattr__(self, "budget", 0)
        object.__setattr__(self, "seed", seed if self.plan.randomized else 0)
        object.__setattr__(self, "exact_layers", layers)

    @property
    def prefill_only(self) -> bool:
        """Whether the context runs the lab's prefill-only form (one whole context per call, no shared prefix)."""
        return self.method in PREFILL_METHODS

    @property
    def label(self) -> str:
        """A short unique name: method, budget, seed, protocol and exact layers."""
        if self.method == "exact":
            return "exact"
        label = self.method if self.plan is not None else f"{self.method}-{self.budget}"
        label += f"-s{self.seed}" if self.seed else ""
        label += "-exact-decode" if self.decode == "exact" else ""
        return label + (f"-exact-{'.'.join(map(str, self.exact_layers))}" if self.exact_layers else "")

    def to_dict(self) -> dict:
        """The fields as plain data, with the label.

        Returns
        -------
        dict

        Examples
        --------
        >>> EvalAttention("swa", 32).to_dict()["label"]
        'swa-32'
        """
        plan = None if self.plan is None else self.plan.to_dict()
        return asdict(self) | {"exact_layers": list(self.exact_layers), "label": self.label, "plan": plan}

    def implementations(self, max_length: int | None = None) -> tuple[str, str]:
        """The registered transformers attentions for the context and for the continuation.

        Parameters
        ----------
        max_length : int, optional
            The length SA's permutations are drawn over (``None``: the model's ``max_position_embeddings``).

        Returns
        -------
        tuple of str
            ``(context, continuation)`` ``attn_implementation`` names.

        Examples
        --------
        >>> EvalAttention().implementations()
        ('sdpa', 'sdpa')
        >>> EvalAttention("swa", 8, decode="exact").implementations()
        ('receptive-swa-8', 'sdpa')
        """
        if self.method == "exact":
            return "sdpa", "sdpa"
        if self.prefill_only:
            return register(prefill_method(self.method), self.budget, self.seed), "sdpa"
        if self.plan is not None:
            context = register(self.plan, None, self.seed, max_length=max_length, exact_layers=self.exact_layers)
            return context, ("sdpa" if self.decode == "exact" else context)
        context = register(self.method, self.budget, self.seed, max_length=max_length, exact_layers=self.exact_layers)
        return context, ("sdpa" if self.decode == "exact" else context)


def encode_pair(tokenizer, context: str, continuation: str, add_bos_token: bool = False) -> tuple[list, list]:
    """Token ids of a (context, continuation) pair as lm-evaluation-harness's ``HFLM`` makes them.

    The context's trailing whitespace moves to the continuation; the pair is encoded whole and split at the length
    of the context's own encoding, so the boundary token is the one the model would see. An empty context is the
    tokenizer's end-of-text token (lm-evaluation-harness's ``prefix_token_id``).

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
        The model's tokenizer.
    context, continuation : str
        The request.
    add_bos_token : bool, default False
        Prepend the tokenizer's special tokens (lm-evaluation-harness's ``add_bos_token``).

    Returns
    -------
    tuple of list of int
        Context ids and continuation ids.

    Examples
    --------
    >>> class Chars:  # a tokenizer of one token per character
    ...     eos_token_id = 0
    ...     def __call__(self, text, add_special_tokens=False):
    ...         return {"input_ids": [ord(c) for c in text]}
    >>> encode_pair(Chars(), "Q: ", "a")
    ([81, 58], [32, 97])

    References
    ----------
    Gao et al. (2024). lm-evaluation-harness v0.4, ``HFLM._encode_pair``.
    """
    spaces = len(context) - len(context.rstrip())
    if spaces:
        context, continuation = context[:-spaces], context[-spaces:] + continuation
    if not context:
        prefix = tokenizer.bos_token_id if add_bos_token and tokenizer.bos_token_id is not None else None
        token = prefix if prefix is not None else tokenizer.eos_token_id
        return [token], tokenizer(continuation, add_special_tokens=False)["input_ids"]
    whole = tokenizer(context + continuation, add_special_tokens=add_bos_token)["input_ids"]
    context_ids = tokenizer(context, add_special_tokens=add_bos_token)["input_ids"]
    return list(whole[: len(context_ids)]), list(whole[len(context_ids) :])


@dataclass(frozen=True)
class _Encoded:
    item: EvalItem
    contexts: tuple[tuple[int, ...], ...]  # per request
    continuations: tuple[tuple[int, ...], ...]


def _encode(tokenizer, items, add_bos_token) -> list[_Encoded]:
    encoded = []
    for item in items:
        pairs = [encode_pair(tokenizer, r.context, r.continuation, add_bos_token) for r in item.requests]
        encoded.append(_Encoded(item, tuple(tuple(c) for c, _ in pairs), tuple(tuple(x) for _, x in pairs)))
    return encoded


def _check_fits(model, encoded: list[_Encoded]) -> None:
    limit = getattr(model.config, "max_position_embeddings", None)
    for enc in encoded:
        longest = max(len(c) + len(x) for c, x in zip(enc.contexts, enc.continuations, strict=True))
        if limit is not None and longest > limit:
            raise ValueError(
                f"items: {enc.item.task} item {enc.item.doc_id} has {longest} tokens, more than the "
                f"model's max_position_embeddings {limit}"
            )


def check_fits(model, tokenizer, items: Sequence[EvalItem], add_bos_token: bool = False) -> None:
    """Refuse items whose context and continuation together are longer than the model's positions.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The model (its ``config.max_position_embeddings``).
    tokenizer : transformers.PreTrainedTokenizerBase
        Its tokenizer.
    items : sequence of EvalItem
        The items.
    add_bos_token : bool, default False
        As :func:`encode_pair`.

    Raises
    ------
    ValueError
        Naming the first item that does not fit.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from gpu.harness.tasks import EvalRequest
    >>> class Chars:
    ...     eos_token_id = 0
    ...     def __call__(self, text, add_special_tokens=False):
    ...         return {"input_ids": [ord(c) for c in text]}
    >>> model = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=8))
    >>> check_fits(model, Chars(), [EvalItem("t", 4, 0, (EvalRequest(0, "Question", " x"),), "t")])
    Traceback (most recent call last):
    ...
    ValueError: items: t item 4 has 10 tokens, more than the model's max_position_embeddings 8
    """
    _check_fits(model, _encode(tokenizer, items, add_bos_token))


def shared_prefixes(tokenizer, items: Sequence[EvalItem], add_bos_token: bool = False) -> dict[str, int]:
    """Per group, the number of leading context tokens every request of the group's items shares.

    At most each context's length less one, so that every item keeps its last context token (whose output predicts
    the continuation's first token).

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
        The model's tokenizer.
    items : sequence of EvalItem
        The items (all of a task, so that shards of it share the same prefix).
    add_bos_token : bool, default False
        As :func:`encode_pair`.

    Returns
    -------
    dict of str to int
        Group -> shared prefix length in tokens.

    Examples
    --------
    >>> from gpu.harness.tasks import EvalRequest
    >>> class Chars:
    ...     eos_token_id = 0
    ...     def __call__(self, text, add_special_tokens=False):
    ...         return {"input_ids": [ord(c) for c in text]}
    >>> items = [EvalItem("t", i, 0, (EvalRequest(0, "abc" + q, " x"),), "t") for i, q in enumerate(["d", "ef"])]
    >>> shared_prefixes(Chars(), items)
    {'t': 3}
    """
    shared: dict[str, int] = {}
    firsts: dict[str, tuple[int, ...]] = {}
    for enc in _encode(tokenizer, items, add_bos_token):
        group = enc.item.group
        for context in enc.contexts:
            first = firsts.setdefault(group, context)
            common = min(shared.get(group, len(first)), len(context) - 1)
            ids = np.asarray(context[:common]) != np.asarray(first[:common])
            shared[group] = int(ids.argmax()) if ids.any() else common
    return shared


def _forward(model, implementation: str, ids, cache, mask, positions, keep: int = 0):
    model.set_attn_implementation(implementation)
    out = model(
        input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache, use_cache=True, logits_to_keep=keep
    )
    logits = out.logits
    return logits.to(torch.promote_types(logits.dtype, torch.float32)).log_softmax(-1)  # float32 at least


def _cache(kv, batch: int | None = None):
    """A ``DynamicCache`` holding ``kv`` (per layer ``(keys, values)``), its batch-1 rows repeated ``batch`` times."""
    from transformers import DynamicCache

    if not kv:
        return DynamicCache()
    if batch is not None:
        kv = [(k.expand(batch, *k.shape[1:]), v.expand(batch, *v.shape[1:])) for k, v in kv]
    return DynamicCache(ddp_cache_data=kv)


def _kv(cache) -> list:
    return [(layer.keys, layer.values) for layer in cache.layers]


def _right_padded(rows: list, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token rows padded on the right to ``width``, and which slots hold a token."""
    ids = torch.tensor([list(r) + [0] * (width - len(r)) for r in rows]).view(len(rows), width)
    return ids, torch.arange(width)[None, :] < torch.tensor([len(r) for r in rows])[:, None]


def _moved_cache(cache, lengths: torch.Tensor, rows: torch.Tensor, real: torch.Tensor):
    """A cache of one row per continuation holding its context row's keys moved to the right (left key padding, no
    gap before the continuation), and the attention mask over that cache and the continuation's tokens."""
    span = int(lengths.max())
    source = torch.arange(span)[None, :] - (span - lengths)[:, None]  # slot s of row j holds key s - shift_j
    kv = [
        tuple(
            x[rows].gather(2, source.clamp(min=0)[:, None, :, None].expand(-1, x.shape[1], -1, x.shape[3]))
            for x in layer
        )
        for layer in _kv(cache)
    ]
    return _cache(kv), torch.cat([source >= 0, real], 1).long()


def _register_shared(context_kv: list, valid: torch.Tensor, rows: torch.Tensor) -> None:
    """Register :data:`SHARED_CONTEXT` over these contexts (the mask is built inside: causal own tokens)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    AttentionInterface.register(SHARED_CONTEXT, shared_context_attention(context_kv, valid, rows))
    AttentionMaskInterface.register(SHARED_CONTEXT, _no_mask)


def _no_mask(*args, **kwargs):
    return None


def _score_chunk(model, encs: list[_Encoded], prefix_kv, prefix: int, context_name: str, continuation_names) -> list:
    """Per continuation attention, the records of a chunk of items of one group.

    1. Every distinct (item, context) runs as one row of a batch over the shared prefix's cache, right-padded.
    2. Every choice whose continuation has more than one token runs as one row of a batch, its tokens right-padded:
       under exact attention over its context row's keys read in place (:func:`shared_context_attention`), under a
       pattern over a copy of them moved to the right of its cache row (left key padding, no gap before the
       continuation).
    Positions are given explicitly, so padding never shifts a token's position.
    """
    contexts = list(dict.fromkeys((e, c) for e, enc in enumerate(encs) for c in enc.contexts))
    row_of = {key: r for r, key in enumerate(contexts)}
    own = [c[prefix:] for _, c in contexts]
    width = max(map(len, own))
    ids, real = _right_padded(own, width)
    mask = torch.cat([torch.ones(len(own), prefix, dtype=torch.bool), real], 1).long()
    keep = width - min(map(len, own)) + 1  # the logits of every row's last context token
    cache = _cache(prefix_kv, len(own))
    logp = _forward(model, context_name, ids, cache, mask, (prefix + torch.arange(width)).expand(len(own), -1), keep)
    last = logp[torch.arange(len(own)), torch.tensor([len(o) for o in own]) - 1 - (width - keep)]
    choices = [(e, i, row_of[e, c]) for e, enc in enumerate(encs) for i, c in enumerate(enc.contexts)]
    longer = [(e, i, r) for e, i, r in choices if len(encs[e].continuations[i]) > 1]
    tails = {}
    if longer:
        lengths = torch.tensor([prefix + len(own[r]) for _, _, r in longer])
        rows = torch.tensor([r for _, _, r in longer])
        step = max(len(encs[e].continuations[i]) for e, i, _ in longer) - 1
        tokens, real = _right_padded([encs[e].continuations[i][:-1] for e, i, _ in longer], step)
        positions = lengths[:, None] + torch.arange(step)
        for name in continuation_names:
            if name == "sdpa":  # exact: every choice reads its context's keys in place
                _register_shared(_kv(cache), mask.bool(), rows)
                out = _forward(model, SHARED_CONTEXT, tokens, _cache([]), None, positions)
            else:  # a pattern reads keys by position: each choice's own copy, its context moved to the right
                out = _forward(model, name, tokens, *_moved_cache(cache, lengths, rows, real), positions)
            tails[name] = {(e, i): out[j] for j, (e, i, _) in enumerate(longer)}
    records = []
    for name in continuation_names:
        per_item = [[None] * len(enc.continuations) for enc in encs]
        for e, i, r in choices:
            cont, request = encs[e].continuations[i], encs[e].item.requests[i]
            logp = torch.cat([last[r][None], tails[name][e, i][: len(cont) - 1]]) if len(cont) > 1 else last[r][None]
            target = torch.tensor(cont)
            per_item[e][i] = {
                "ll": float(logp.gather(1, target[:, None]).sum()),
                "tokens": len(cont),
                "chars": len(request.continuation),
                "bytes": len(request.continuation.encode("utf-8")),
                "greedy": bool((logp.argmax(-1) == target).all()),
            }
        records.append(
            [
                {
                    "doc_id": enc.item.doc_id,
                    "label": enc.item.label,
                    "context_tokens": max(map(len, enc.contexts)),
                    "choices": per_item[e],
                }
                for e, enc in enumerate(encs)
            ]
        )
    return records


def _padded_tokens(encs: list[_Encoded], prefix: int) -> int:
    """The tokens :func:`_score_chunk` runs for these items, padding included: its context rows at their longest
    and its continuation rows (all but their last token) at their longest."""
    own = [len(c) - prefix for enc in encs for c in dict.fromkeys(enc.contexts)]  # distinct per item, as run
    tails = [len(x) - 1 for enc in encs for x in enc.continuations if len(x) > 1]
    return len(own) * max(own) + (len(tails) * max(tails) if tails else 0)


def _chunks(encoded: list[_Encoded], prefixes: dict[str, int], batch_size: int) -> list[list[int]]:
    """Chunks of up to ``batch_size`` items of one group, in group order: per group, the items sorted by their
    context length, by their longest continuation or by both, whichever runs the fewest padded tokens
    (:func:`_padded_tokens`). Which dominates depends on the task: few-shot contexts of similar lengths with
    answers of a sentence (PIQA) pad the continuations; one-token answers pad only the contexts (LAMBADA)."""

    def context(j):
        return max(map(len, encoded[j].contexts))

    def continuation(j):
        return max(map(len, encoded[j].continuations))

    keys = (context, continuation, lambda j: (context(j), continuation(j)), lambda j: (continuation(j), context(j)))
    groups: dict[str, list[int]] = {}
    for j, enc in enumerate(encoded):
        groups.setdefault(enc.item.group, []).append(j)
    chunks = []
    for group, members in groups.items():
        prefix = prefixes.get(group, 0)
        candidates = []
        for key in keys:
            order = sorted(members, key=key)
            split = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
            candidates.append((sum(_padded_tokens([encoded[j] for j in c], prefix) for c in split), split))
        chunks += min(candidates, key=lambda candidate: candidate[0])[1]
    return chunks


def score_items(
    model,
    tokenizer,
    items: Sequence[EvalItem],
    attention=None,
    *,
    prefixes: dict[str, int] | None = None,
    add_bos_token: bool = False,
    batch_size: int = 4,
    progress: bool | None = None,
):
    """Score every request of ``items`` under ``attention``: one record per item, in order.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM in eval mode whose attention transformers can switch (``set_attn_implementation``).
    tokenizer : transformers.PreTrainedTokenizerBase
        Its tokenizer.
    items : sequence of EvalItem
        The items (:func:`gpu.harness.tasks.load_task`).
    attention : EvalAttention or sequence of EvalAttention, optional
        The configuration (default: exact attention); several that differ only in ``decode`` share the context's
        computation (the continuations run once per protocol).
    prefixes : dict of str to int, optional
        Shared prefix length per group (:func:`shared_prefixes` of the whole task, so that every shard of a task
        computes the same prefix); ``None``: computed from ``items``.
    add_bos_token : bool, default False
        As :func:`encode_pair`.
    batch_size : int, default 4
        Items per forward (each item's contexts and choices are rows of it): more rows make larger matrix products,
        but each choice row holds a copy of its context's keys.
    progress : bool or None, default None
        Show a progress bar (``None``: tqdm decides from the terminal).

    Returns
    -------
    list of dict, or dict of str to list of dict
        ``{"doc_id", "label", "context_tokens", "choices": [{"ll", "tokens", "chars", "bytes", "greedy"}]}`` per item:
        every metric of :func:`item_scores` follows from these. For a sequence of attentions, a dict from each
        label to its records.

    Raises
    ------
    TypeError
        If ``attention`` is not an :class:`EvalAttention` or ``items`` holds something else than items.
    ValueError
        If the attentions differ in more than ``decode``, a request is longer than the model's
        ``max_position_embeddings``, or a prefix leaves an item no context token.

    Examples
    --------
    >>> import torch
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> from gpu.harness.tasks import EvalRequest
    >>> class Chars:
    ...     eos_token_id = 0
    ...     def __call__(self, text, add_special_tokens=False):
    ...         return {"input_ids": [ord(c) % 64 for c in text]}
    >>> config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
    ...                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    >>> model = LlamaForCausalLM(config).eval()
    >>> item = EvalItem("t", 0, 1, (EvalRequest(0, "Q: 1+1", " 3"), EvalRequest(1, "Q: 1+1", " 2")), "t")
    >>> [record] = score_items(model, Chars(), [item], EvalAttention("sa", 4), progress=False)
    >>> [choice["tokens"] for choice in record["choices"]]
    [2, 2]
    """
    single = attention is None or isinstance(attention, EvalAttention)
    attentions = [attention or EvalAttention()] if single else list(attention)
    if not attentions or not all(isinstance(a, EvalAttention) for a in attentions):
        raise TypeError("attention: expected an EvalAttention or a non-empty sequence of them")
    if len({(a.method, a.budget, a.seed, a.exact_layers) for a in attentions}) > 1:
        raise ValueError("attention: the attentions scored together must differ in decode only")
    if not all(isinstance(item, EvalItem) for item in items):
        raise TypeError("items: expected EvalItem objects (gpu.harness.tasks.load_task)")
    batch_size = check_int("batch_size", batch_size, 1, 1024)
    encoded = _encode(tokenizer, items, add_bos_token)
    _check_fits(model, encoded)
    prefixes = shared_prefixes(tokenizer, items, add_bos_token) if prefixes is None else prefixes
    if attentions[0].prefill_only:
        prefixes = {}  # each context runs whole: the form draws or fits over the sequence it sees
    names = [a.implementations() for a in attentions]
    context_name, continuation_names = names[0][0], list(dict.fromkeys(n[1] for n in names))
    for enc in encoded:
        size = prefixes.get(enc.item.group, 0)
        if size >= min(map(len, enc.contexts)):
            raise ValueError(
                f"prefixes: {size} shared tokens for group {enc.item.group!r} leave item "
                f"{enc.item.doc_id} no context token of its own"
            )
    chunks = _chunks(encoded, prefixes, batch_size)  # records keep the input order
    previous = model.config._attn_implementation
    records: dict[str, list] = {name: [None] * len(encoded) for name in continuation_names}
    prefix_kv: dict[str, list] = {}
    bar = tqdm(total=len(encoded), unit="item", desc=attentions[0].label, disable=_quiet(progress))
    try:
        with torch.inference_mode():
            for chunk in chunks:
                group = encoded[chunk[0]].item.group
                size = prefixes.get(group, 0)
                if group not in prefix_kv:
                    prefix_kv.clear()  # one group's prefix at a time: the chunks come grouped
                    cache = _cache([])
                    if size:
                        ids = torch.tensor([encoded[chunk[0]].contexts[0][:size]])
                        _forward(model, context_name, ids, cache, None, None, keep=1)
                    prefix_kv[group] = _kv(cache) if size else []
                scored = _score_chunk(
                    model, [encoded[j] for j in chunk], prefix_kv[group], size, context_name, continuation_names
                )
                for name, chunk_records in zip(continuation_names, scored, strict=True):
                    for j, record in zip(chunk, chunk_records, strict=True):
                        records[name][j] = record
                bar.update(len(chunk))
    finally:
        bar.close()
        model.set_attn_implementation(previous)
    by_label = {a.label: records[n[1]] for a, n in zip(attentions, names, strict=True)}
    return by_label[attentions[0].label] if single else by_label


def item_scores(record: dict, kind: str = "choice") -> dict[str, float]:
    """The metrics of one scored item (a record of :func:`score_items`).

    Parameters
    ----------
    record : dict
        ``{"label", "choices": [{"ll", "tokens", "chars", "bytes", "greedy"}]}``.
    kind : {"choice", "target"}, default "choice"
        ``choice``: ``acc``, ``acc_per_char``, ``acc_per_token`` (ties go to the first choice, as ``numpy.argmax``);
        ``target``: ``acc`` (greedy match of every target token) and ``bpb``.

    Returns
    -------
    dict of str to float

    Examples
    --------
    >>> record = {"label": 1, "choices": [{"ll": -2.0, "tokens": 1, "chars": 2, "bytes": 2, "greedy": True},
    ...                                   {"ll": -3.0, "tokens": 3, "chars": 9, "bytes": 9, "greedy": False}]}
    >>> item_scores(record)
    {'acc': 0.0, 'acc_per_char': 1.0, 'acc_per_token': 1.0}
    >>> round(item_scores({"label": 0, "choices": record["choices"][:1]}, "target")["bpb"], 4)
    1.4427
    """
    check_choice("kind", kind, ("choice", "target"))
    choices = record["choices"]
    if kind == "target":
        choice = choices[0]
        return {"acc": float(choice["greedy"]), "bpb": -choice["ll"] / choice["bytes"] / math.log(2)}
    ll = np.array([c["ll"] for c in choices])
    label = record["label"]
    return {
        "acc": float(ll.argmax() == label),
        "acc_per_char": float((ll / np.array([c["chars"] for c in choices])).argmax() == label),
        "acc_per_token": float((ll / np.array([c["tokens"] for c in choices])).argmax() == label),
    }


def task_scores(records: Sequence[dict], kind: str = "choice") -> dict[str, float]:
    """Each metric of :func:`item_scores` averaged over ``records``, with ``items``, their number.

    Parameters
    ----------
    records : sequence of dict
        Records of :func:`score_items`.
    kind : {"choice", "target"}, default "choice"
        As :func:`item_scores`.

    Returns
    -------
    dict of str to float

    Examples
    --------
    >>> choices = [{"ll": -1.0, "tokens": 1, "chars": 2, "bytes": 2, "greedy": True}]
    >>> task_scores([{"label": 0, "choices": choices}] * 2, "target")["items"]
    2
    """
    scores = [item_scores(r, kind) for r in records]
    if not scores:
        return {"items": 0}
    return {key: float(np.mean([s[key] for s in scores])) for key in scores[0]} | {"items": len(scores)}
