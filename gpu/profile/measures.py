"""Where a causal LM's attention mass goes, and what a sparse pattern keeps of it: the attention profile of one exact
forward per text (the command line: ``python -m gpu.profile``).

The graph measures of :mod:`receptive` count which tokens a pattern lets a token reach; a trained model puts its
probability mass on a few of them. For each text, one exact forward (transformers' SDPA, the model unchanged) records
every layer's queries, keys and values; then, per layer, head and query position:

* **regions**: the exact softmax mass on the sink (keys ``0 .. sink-1``), on each distance band of
  ``bands`` (``[0]``, ``[1]``, ``[2, 3]``, ...) and on the rest (``far``);
* for each pattern (:class:`ProfilePattern`: a method of :data:`gpu.attention.GENERATION_METHODS` at a budget,
  with the key sets, per-layer seeds and ``max_length`` that :func:`gpu.hf.register` draws, per-head patterns and
  exact layers included; MoBA and top-k choose their keys from the exact forward's queries and keys):
  **recall**, the exact mass its keys hold, and the relative error of the layer's output (per head, and after the
  output projection) when that layer alone reads only those keys, its softmax renormalised;
* the **weighted receptive field**: attention rollout (Abnar & Zuidema 2020: the head-averaged weights, with the
  residual as ``0.5 A + 0.5 I``, multiplied through the stack) at each scored position, of the exact model and of
  the pattern-restricted weights, and their **overlap** ``sum_j min(r_j, r'_j)`` (1: the same weighted field);
* **kl**: the end-to-end ``KL(exact || pattern)`` of the next-token distribution at the scored positions, from a
  second forward with the pattern in every layer (the harness's implementation, :func:`gpu.hf.register`).

Memory: the recorded ``q, k, v`` take ``layers * n * (heads + 2 kv_heads) * d`` numbers, the per-position results
``layers * heads * n * (regions + 2 patterns)``; attention is computed in blocks of query rows of at most
``block_bytes`` (:func:`gpu.profile.layer.block_rows`), never a whole ``n x n`` array per head beyond that. The
estimate is checked against ``max_memory`` before anything is allocated.

References
----------
- Abnar & Zuidema (2020). Quantifying attention flow in transformers. ACL, arXiv 2005.00928.
- Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
- Xiao et al. (2024). Efficient streaming language models with attention sinks. ICLR, arXiv 2309.17453.
- Xiao et al. (2024). DuoAttention: efficient long-context LLM inference with retrieval and streaming heads.
  arXiv 2410.10819.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from gpu.attention.generation_keys import position_keys
from gpu.attention.generation_patterns import GENERATION_METHODS, moba_keys
from gpu.hf.interface import layer_of
from gpu.profile.layer import block_rows, dense_block, keyed_block, region_names, rollout_step
from gpu.validation import check_choice, check_int
from graphs.validation import check_bool

__all__ = ["DEFAULT_BANDS", "MEASURES", "AttentionProfile", "ProfilePattern", "TextProfile", "attention_profile"]

#: Distance band edges: ``[0]``, ``[1]``, ``[2, 3]``, ..., ``[512, 1023]``, then ``far``.
DEFAULT_BANDS = tuple(2**b for b in range(11))
#: The summary measures of a pattern, each with the sign that makes "closer to exact attention" larger.
MEASURES = {"recall": 1, "recall_scored": 1, "error": -1, "error_scored": -1, "overlap": 1, "kl": -1}
_RECORDER = "receptive-profile-recorder"


@dataclass(frozen=True)
class ProfilePattern:
    """A position-only or content-routed causal pattern at a budget, as :func:`gpu.hf.register` runs it.

    Parameters
    ----------
    method : str
        A name of :data:`gpu.attention.GENERATION_METHODS`.
    budget : int, default 0
        Keys per query (``exact``: 0).
    seed : int, default 0
        The model's seed (layer ``l`` of ``L`` draws with ``seed * L + l``); 0 for methods that draw nothing.
    exact_layers : tuple of int, default ()
        Layers that read every key.

    Examples
    --------
    >>> ProfilePattern("sa", 64, seed=1).label
    'sa-64-s1'
    >>> ProfilePattern("swa", 64, seed=3).seed  # a deterministic pattern has no seed
    0
    """

    method: str
    budget: int = 0
    seed: int = 0
    exact_layers: tuple[int, ...] = ()

    def __post_init__(self):
        check_choice("method", self.method, GENERATION_METHODS)
        exact = self.method == "exact"
        budget = 0 if exact else check_int("budget", self.budget, 1, 1 << 16)
        seed = check_int("seed", self.seed, 0) if GENERATION_METHODS[self.method].randomized else 0
        if isinstance(self.exact_layers, str) or not isinstance(self.exact_layers, Sequence):
            raise TypeError(f"exact_layers: expected a sequence of integers, got {type(self.exact_layers).__name__}")
        layers = () if exact else tuple(sorted({check_int("exact_layers", x, 0) for x in self.exact_layers}))
        object.__setattr__(self, "budget", budget)
        object.__setattr__(self, "seed", seed)
        object.__setattr__(self, "exact_layers", layers)

    @property
    def label(self) -> str:
        """``method-budget``, ``-s<seed>`` and ``-exact-<layers>`` where they apply (the harness's labels)."""
        if self.method == "exact":
            return "exact"
        label = f"{self.method}-{self.budget}" + (f"-s{self.seed}" if self.seed else "")
        return label + (f"-exact-{'.'.join(map(str, self.exact_layers))}" if self.exact_layers else "")


@dataclass(frozen=True, repr=False)
class TextProfile:
    """The profile of one text: arrays per layer, head and query position (float32).

    Attributes
    ----------
    tokens : int
        The text's length ``n``.
    scored : numpy.ndarray
        ``(s,)`` the scored positions.
    regions : numpy.ndarray
        ``(layers, heads, q, len(region_names))`` exact mass per region at the ``q`` measured query positions
        (``measured``).
    recall, head_error : numpy.ndarray
        ``(patterns, layers, heads, q)``.
    layer_error : numpy.ndarray
        ``(patterns, layers, q)``: after the output projection (NaN where the module has none).
    rollout : numpy.ndarray
        ``(s, n)`` the exact model's rollout at each scored position (NaN when not computed).
    pattern_rollout : numpy.ndarray
        ``(patterns, s, n)``.
    overlap, kl : numpy.ndarray
        ``(patterns, s)`` (NaN when not computed).
    measured : numpy.ndarray or None, default None
        The query positions of the per-position arrays; ``None``: every position ``0 .. n-1``.

    Examples
    --------
    >>> import numpy as np
    >>> empty = np.zeros((0, 1, 1, 3), np.float32)
    >>> TextProfile(3, np.array([2]), np.zeros((1, 1, 3, 4), np.float32), empty, empty, np.zeros((0, 1, 3)),
    ...             np.zeros((1, 3)), np.zeros((0, 1, 3)), np.zeros((0, 1)), np.zeros((0, 1)))
    TextProfile(tokens=3, scored=[2], layers=1, heads=1, patterns=0)
    """

    tokens: int
    scored: np.ndarray
    regions: np.ndarray
    recall: np.ndarray
    head_error: np.ndarray
    layer_error: np.ndarray
    rollout: np.ndarray
    pattern_rollout: np.ndarray
    overlap: np.ndarray
    kl: np.ndarray
    measured: np.ndarray | None = None

    def __repr__(self) -> str:
        layers, heads = self.regions.shape[:2]
        return (
            f"TextProfile(tokens={self.tokens}, scored={self.scored.tolist()}, layers={layers}, heads={heads}, "
            f"patterns={self.recall.shape[0]})"
        )


@dataclass(frozen=True, repr=False)
class AttentionProfile:
    """The attention profile of a model over texts (:func:`attention_profile`).

    Attributes
    ----------
    patterns : tuple of ProfilePattern
    regions : tuple of str
        Region names (:func:`gpu.profile.layer.region_names`).
    texts : tuple of TextProfile
    parameters : dict
        ``positions``, ``sink``, ``bands``, ``max_length``, ``layers``, ``heads``, ``kv_heads``.
    seconds : dict
        ``forward`` (the exact forwards and the per-layer measures) and ``kl`` (the patterns' forwards).

    Examples
    --------
    >>> AttentionProfile((), ("sink", "far"), (), {"sink": 1})
    AttentionProfile(texts=0, patterns=[], regions=2)
    """

    patterns: tuple
    regions: tuple
    texts: tuple
    parameters: dict
    seconds: dict = field(default_factory=dict)

    def per_text(self) -> dict[str, dict[str, list[float]]]:
        """Each pattern's measures of :data:`MEASURES`, one value per text (its positions averaged first).

        Returns
        -------
        dict
            ``{label: {measure: [per text]}}``: ``recall`` (mean over layers, heads and positions),
            ``recall_scored`` (at the scored positions), ``error`` and ``error_scored`` (the relative output error
            after the output projection, or per head where there is none), ``overlap`` and ``kl`` (at the scored
            positions).

        Examples
        --------
        >>> AttentionProfile((), ("sink", "far"), (), {}).per_text()
        {}
        """
        out = {}
        for p, pattern in enumerate(self.patterns):
            rows: dict[str, list[float]] = {m: [] for m in MEASURES}
            for t in self.texts:
                error = t.layer_error[p] if not np.isnan(t.layer_error[p]).all() else t.head_error[p].mean(1)
                every = t.measured is None  # the means over all positions need every position
                scored = t.scored if every else np.searchsorted(t.measured, t.scored)
                values = {
                    "recall": t.recall[p].mean() if every else np.nan,
                    "recall_scored": t.recall[p][:, :, scored].mean(),
                    "error": error.mean() if every else np.nan,
                    "error_scored": error[:, scored].mean(),
                    "overlap": t.overlap[p].mean(),
                    "kl": t.kl[p].mean(),
                }
                for m in MEASURES:
                    rows[m].append(float(values[m]))
            out[pattern.label] = rows
        return out

    def summary(self) -> list[dict]:
        """One row per pattern: each measure of :meth:`per_text`, averaged over the texts.

        Returns
        -------
        list of dict
            ``label``, ``method``, ``budget``, ``seed``, ``exact_layers``, and the measures.
        """
        per_text = self.per_text()
        return [
            {
                "label": p.label,
                "method": p.method,
                "budget": p.budget,
                "seed": p.seed,
                "exact_layers": list(p.exact_layers),
            }
            | {m: float(np.mean(v)) for m, v in per_text[p.label].items()}
            for p in self.patterns
        ]

    def predicted_rank(self, measure: str = "kl") -> dict[str, int]:
        """Each pattern's rank by ``measure`` (1: closest to exact attention).

        Parameters
        ----------
        measure : str, default "kl"
            A name of :data:`MEASURES`.

        Returns
        -------
        dict of str to int
            Label to rank (ties share the lower rank).

        Raises
        ------
        ValueError
            If the profile did not measure ``measure`` (``kl=False``; ``positions="scored"`` for the means over
            every position and the overlap).
        """
        check_choice("measure", measure, MEASURES)
        values = {row["label"]: MEASURES[measure] * row[measure] for row in self.summary()}
        if any(np.isnan(v) for v in values.values()):
            raise ValueError(f"measure: {measure} was not measured in this profile (positions, kl)")
        return {label: 1 + sum(v > value for v in values.values()) for label, value in values.items()}

    def layer_head_regions(self) -> np.ndarray:
        """``(layers, heads, regions)``: the mass per region averaged over texts and measured query positions."""
        return np.mean([t.regions.mean(2) for t in self.texts], axis=0)

    def layer_head(self, what: str = "recall") -> np.ndarray:
        """``(patterns, layers, heads)``: ``recall`` or ``head_error`` averaged over texts and measured positions.

        Parameters
        ----------
        what : {"recall", "head_error"}, default "recall"

        Returns
        -------
        numpy.ndarray
        """
        check_choice("what", what, ("recall", "head_error"))
        return np.mean([getattr(t, what).mean(3) for t in self.texts], axis=0)

    def to_dict(self) -> dict:
        """The parameters, the summary rows and the per-layer-and-head means as plain data (no per-position arrays).

        Returns
        -------
        dict
        """
        return {
            "parameters": self.parameters,
            "regions": list(self.regions),
            "texts": len(self.texts),
            "tokens": [t.tokens for t in self.texts],
            "seconds": self.seconds,
            "summary": self.summary(),
            "layer_head_regions": self.layer_head_regions().round(6).tolist(),
            "layer_head_recall": {
                p.label: x.round(6).tolist() for p, x in zip(self.patterns, self.layer_head("recall"), strict=True)
            },
        }

    def __repr__(self) -> str:
        labels = ", ".join(p.label for p in self.patterns)
        return f"AttentionProfile(texts={len(self.texts)}, patterns=[{labels}], regions={len(self.regions)})"


def _recorder(store: dict, prefix: dict):
    """A transformers attention: SDPA's exact output, and each layer's ``q, k, v`` and scaling kept in ``store``
    (the queries of a shared prefix recorded earlier, ``prefix``, put before the call's own)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    def forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kwargs):
        out = sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
        )
        dtype = torch.promote_types(query.dtype, torch.float32)
        scale = scaling if scaling is not None else query.shape[-1] ** -0.5
        layer = layer_of(module)[0]
        q = query[0].to(dtype)
        if layer in prefix:
            q = torch.cat([prefix[layer], q], 1)
        store[layer] = (q, key[0].to(dtype), value[0].to(dtype), scale, module)
        return out

    return forward


def _shared_prefix(ids: list, scored: list) -> int:
    """The leading tokens every text shares, short of each text's first scored position (0 for a single text)."""
    if len(ids) < 2:
        return 0
    limit = min(int(s.min()) for s in scored)
    first = np.asarray(ids[0][:limit])
    for tokens in ids[1:]:
        same = first[: min(limit, len(tokens))] == np.asarray(tokens[: min(limit, len(tokens))])
        limit = int(same.argmin()) if not same.all() else len(same)
        first = first[:limit]
    return limit


def _prefix_cache(model, implementation: str, prefix: list) -> list:
    """The per-layer ``(keys, values)`` of ``prefix`` run with ``implementation``."""
    model.set_attn_implementation(implementation)
    cache = model(input_ids=torch.tensor([prefix]), use_cache=True, logits_to_keep=1).cache
    return [(layer.keys, layer.values) for layer in cache.layers]


def _parts(pattern: ProfilePattern, layer: int, layers: int, q, k, positions, n: int, max_length: int, top):
    """The pattern's key tables for a block of query positions at ``layer``; ``None``: every key."""
    if pattern.method == "exact" or layer in pattern.exact_layers:
        return None
    heads = q.shape[0]
    seed = pattern.seed * layers + layer
    if pattern.method == "top-k":
        return [(1.0, *top[pattern.budget])]
    if pattern.method == "moba":
        idx, valid = moba_keys(q[None, :, positions], k[None], positions, pattern.budget)
        return [(1.0, idx[0], valid[0])]
    if pattern.method == "sa+swa":
        half = max(1, pattern.budget // 2)
        return [(0.5, *position_keys(name, positions, n, half, heads, seed, max_length)) for name in ("sa", "swa")]
    return [(1.0, *position_keys(pattern.method, positions, n, pattern.budget, heads, seed, max_length))]


def _relative(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``|a - b| / |b|`` over the last axis (0 where both are 0)."""
    norm = b.norm(dim=-1)
    return ((a - b).norm(dim=-1) / norm.clamp(min=torch.finfo(norm.dtype).tiny)).masked_fill(norm == 0, 0.0)


def _profile_layers(store, patterns, scored, sink, bands, max_length, block_bytes, every: bool = True):
    """Every layer's measures, from the top layer down, carrying the rollouts with them; ``every=False``: the
    per-position measures at the scored positions only and no rollout (it needs every query row's weights)."""
    layers = len(store)
    heads, n, _ = store[0][0].shape
    dtype = store[0][0].dtype
    rows_per_block = block_rows(n, heads, block_bytes)
    queries = np.arange(n) if every else scored
    blocks = [queries[i : i + rows_per_block] for i in range(0, len(queries), rows_per_block)]
    # contiguous rows index as slices (views, not copies)
    blocks = [slice(int(b[0]), int(b[-1]) + 1) if every else torch.as_tensor(b) for b in blocks]
    shape = (len(patterns), layers, heads, len(queries))
    regions = np.zeros((layers, heads, len(queries), len(bands) + 2), np.float32)
    recall, head_error = np.ones(shape, np.float32), np.zeros(shape, np.float32)
    layer_error = np.zeros(shape[:2] + shape[3:], np.float32)
    carry = torch.zeros(len(scored), n, dtype=dtype)
    carry[torch.arange(len(scored)), torch.as_tensor(scored)] = 1.0
    carries = [carry.clone() for _ in patterns]
    top_k = tuple(sorted({p.budget for p in patterns if p.method == "top-k"}))
    for layer in reversed(range(layers)):
        q, k, v, scaling, module = store[layer]
        k, v = (x.repeat_interleave(heads // x.shape[0], dim=0) for x in (k, v))  # transformers' repeat_kv
        projection = getattr(module, "o_proj", None)
        exact_step = torch.zeros_like(carry)
        steps = [torch.zeros_like(carry) for _ in patterns]
        done = 0
        for rows in blocks:
            positions = torch.arange(n)[rows]
            at = slice(done, done + len(positions))  # the block's place along the measured positions
            done = at.stop
            weights, out, mass, mean_weights, top = dense_block(q, k, v, rows, scaling, sink, bands, top_k)
            regions[layer, :, at] = mass.numpy()
            if every:
                exact_step += rollout_step(carry, rows, mean_weights)
            projected = None if projection is None else _project(projection, out)
            for p, pattern in enumerate(patterns):
                parts = _parts(pattern, layer, layers, q, k, positions, n, max_length, top)
                if parts is None:
                    if every:
                        steps[p] += rollout_step(carries[p], rows, mean_weights)
                    continue
                held, approx, restricted = keyed_block(weights, q, k, v, rows, scaling, parts)
                recall[p, layer, :, at] = held.numpy()
                head_error[p, layer, :, at] = _relative(approx, out).numpy()
                if projected is not None:
                    layer_error[p, layer, at] = _relative(_project(projection, approx), projected).numpy()
                if every:
                    steps[p] += rollout_step(carries[p], rows, restricted)
        if projection is None:
            layer_error[:, layer] = np.nan
        carry = 0.5 * carry + 0.5 * exact_step
        carries = [0.5 * c + 0.5 * s for c, s in zip(carries, steps, strict=True)]
    rollout = carry.numpy().astype(np.float32)
    pattern_rollout = (
        np.stack([c.numpy() for c in carries]).astype(np.float32)
        if patterns
        else np.zeros((0, len(scored), n), np.float32)
    )
    overlap = np.minimum(pattern_rollout, rollout[None]).sum(-1)
    if not every:
        rollout, pattern_rollout, overlap = (np.full_like(x, np.nan) for x in (rollout, pattern_rollout, overlap))
    return regions, recall, head_error, layer_error, rollout, pattern_rollout, overlap


def _project(projection, out: torch.Tensor) -> torch.Tensor:
    """The output projection of per-head outputs ``(heads, rows, d)``, in their dtype: ``(rows, hidden)``."""
    heads, rows, d = out.shape
    bias = None if projection.bias is None else projection.bias.to(out.dtype)
    return torch.nn.functional.linear(
        out.transpose(0, 1).reshape(rows, heads * d), projection.weight.to(out.dtype), bias
    )


def _next_token_logp(model, implementation: str, ids: list, scored: np.ndarray, prefix_kv: list) -> torch.Tensor:
    """Log-probabilities of the next token at the scored positions, with ``implementation`` in every layer, the
    text's first ``len(prefix)`` tokens taken from a cache of them (``prefix_kv``, left unchanged)."""
    from transformers import DynamicCache

    model.set_attn_implementation(implementation)
    shared = prefix_kv[0][0].shape[2] if prefix_kv else 0
    keep = len(ids) - int(scored.min())
    cache = DynamicCache(ddp_cache_data=prefix_kv) if prefix_kv else None
    x = torch.tensor([ids[shared:]])
    logits = model(input_ids=x, cache=cache, use_cache=cache is not None, logits_to_keep=keep).logits[0]
    logits = logits[torch.as_tensor(scored) - (len(ids) - keep)]
    return logits.to(torch.promote_types(logits.dtype, torch.float64)).log_softmax(-1)


def _memory(model, n: int, patterns: int, regions: int, block_bytes: int) -> int:
    """Bytes the profile of one text of ``n`` tokens needs (recorded ``q, k, v``, per-position results, a block)."""
    config = model.config
    layers, heads = config.num_hidden_layers, config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    d = getattr(config, "head_dim", None) or config.hidden_size // heads
    recorded = layers * n * (heads + 2 * kv_heads) * d * 8
    results = layers * heads * n * (regions + 2 * patterns) * 4 + layers * n * patterns * 4
    return recorded + results + 2 * block_bytes


def attention_profile(
    model,
    texts,
    patterns: Sequence[ProfilePattern] = (),
    *,
    tokenizer=None,
    scored=None,
    positions: str = "all",
    sink: int = 1,
    bands: Sequence[int] = DEFAULT_BANDS,
    kl: bool = True,
    max_length: int | None = None,
    share_prefix: bool = True,
    block_bytes: int = 1 << 26,
    max_memory: int = 8 << 30,
    progress: bool | None = None,
) -> AttentionProfile:
    """The attention profile of ``model`` on ``texts``: one exact forward per text, then every layer's measures.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM in eval mode whose attention transformers can switch (``set_attn_implementation``); every
        layer's attention module has ``layer_idx`` (Llama, Qwen2, Mistral, ...).
    texts : sequence of str or of sequences of int
        The texts (tokenised by ``tokenizer`` without special tokens) or their token ids.
    patterns : sequence of ProfilePattern, default ()
        The patterns to measure.
    tokenizer : transformers.PreTrainedTokenizerBase, optional
        Needed for string texts.
    scored : sequence of sequences of int, optional
        Per text, the positions whose rollout and next-token KL are measured; default: each text's last token.
    positions : {"all", "scored"}, default "all"
        The query positions of the per-position measures (regions, recall, output errors): every position, with
        the rollout; or the scored positions alone, without the rollout (it needs every row's weights), at about
        the cost of the exact forward (the measures at the scored positions are the same numbers either way).
    sink : int, default 1
        Sink tokens (keys ``0 .. sink-1``), 0 to 64.
    bands : sequence of int, default :data:`DEFAULT_BANDS`
        Increasing distance band edges, the first at least 1.
    kl : bool, default True
        Run each pattern's forward for the end-to-end KL (one more forward per pattern and text).
    max_length : int, optional
        The length SA's permutations are drawn over; ``None``: the model's ``max_position_embeddings``, as
        :func:`gpu.hf.register`.
    share_prefix : bool, default True
        Run the tokens every text shares (a few-shot prompt) once into a cache per attention and each text's own
        tokens over it, as the harness does; the numbers are those of whole-text forwards (up to rounding).
    block_bytes : int, default 64 MiB
        The memory a block of query rows may take (at least 1 KiB).
    max_memory : int, default 8 GiB
        Refuse a text whose estimated memory is larger.
    progress : bool or None, default None
        Show a progress bar (``None``: tqdm decides from the terminal).

    Returns
    -------
    AttentionProfile

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If an argument is out of range, a text is empty or longer than ``max_length``, a scored position lies outside
        its text, or a text needs more than ``max_memory``.

    Examples
    --------
    >>> import torch
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
    ...                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    >>> torch.manual_seed(0) and None
    >>> model = LlamaForCausalLM(config).eval()
    >>> profile = attention_profile(model, [list(range(20))], [ProfilePattern("swa", 4), ProfilePattern("sa", 4)],
    ...                             progress=False)
    >>> profile
    AttentionProfile(texts=1, patterns=[swa-4, sa-4], regions=13)
    >>> [row["label"] for row in profile.summary()]
    ['swa-4', 'sa-4']
    >>> float(profile.texts[0].regions.sum(-1).mean())  # every row's mass is somewhere
    1.0

    References
    ----------
    - Abnar & Zuidema (2020). Quantifying attention flow in transformers. ACL, arXiv 2005.00928.
    - Jin & Sui (2026). Stochastic attention. arXiv 2604.00754.
    """
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    from gpu.hf.implementations import register

    patterns = tuple(patterns)
    if not all(isinstance(p, ProfilePattern) for p in patterns):
        raise TypeError("patterns: expected ProfilePattern objects")
    if len({p.label for p in patterns}) != len(patterns):
        raise ValueError("patterns: a pattern is listed twice")
    sink = check_int("sink", sink, 0, 64)
    bands = tuple(check_int("bands", b, 1) for b in bands)
    if not bands or any(b >= c for b, c in itertools.pairwise(bands)):
        raise ValueError(f"bands: expected increasing edges >= 1, got {list(bands)}")
    check_choice("positions", positions, ("all", "scored"))
    kl = check_bool("kl", kl)
    share_prefix = check_bool("share_prefix", share_prefix)
    block_bytes = check_int("block_bytes", block_bytes, 1 << 10)
    max_memory = check_int("max_memory", max_memory, 1)
    limit = getattr(model.config, "max_position_embeddings", None)
    max_length = limit if max_length is None else check_int("max_length", max_length, 1)
    if isinstance(texts, str) or not isinstance(texts, Sequence) or not texts:
        raise TypeError("texts: expected a non-empty sequence of strings or of token id sequences")
    ids = []
    vocab = model.config.vocab_size
    for i, text in enumerate(texts):
        if isinstance(text, str):
            if tokenizer is None:
                raise ValueError("tokenizer: string texts need the model's tokenizer")
            text = tokenizer(text, add_special_tokens=False)["input_ids"]
        tokens = [check_int("texts", t, 0, vocab - 1) for t in text]
        if not tokens:
            raise ValueError(f"texts: text {i} has no token")
        if max_length is not None and len(tokens) > max_length:
            raise ValueError(f"texts: text {i} has {len(tokens)} tokens, more than max_length = {max_length}")
        ids.append(tokens)
    if scored is None:
        scored = [[len(t) - 1] for t in ids]
    if len(scored) != len(ids):
        raise ValueError(f"scored: expected one list of positions per text ({len(ids)}), got {len(scored)}")
    scored = [
        np.asarray(sorted({check_int("scored", s, 0, len(t) - 1) for s in rows}), np.int64)
        for rows, t in zip(scored, ids, strict=True)
    ]
    if any(len(s) == 0 for s in scored):
        raise ValueError("scored: every text needs at least one scored position")
    need = _memory(model, max(map(len, ids)), len(patterns), len(bands) + 2, block_bytes)
    if need > max_memory:
        raise ValueError(
            f"max_memory: the longest text needs about {need / 2**30:.2f} GiB, more than "
            f"max_memory = {max_memory / 2**30:.2f} GiB (profile shorter texts or raise it)"
        )
    for layer in {x for p in patterns for x in p.exact_layers}:
        check_int("exact_layers", layer, 0, model.config.num_hidden_layers - 1)
    store: dict = {}
    prefix_queries: dict = {}
    AttentionInterface.register(_RECORDER, _recorder(store, prefix_queries))
    AttentionMaskInterface.register(_RECORDER, sdpa_mask)
    names = [
        None
        if p.method == "exact"
        else register(p.method, p.budget, p.seed, max_length=max_length, exact_layers=p.exact_layers)
        for p in patterns
    ]
    previous = model.config._attn_implementation
    seconds = {"forward": 0.0, "kl": 0.0}
    profiles = []
    shared = _shared_prefix(ids, scored) if share_prefix else 0
    bar = tqdm(total=len(ids), unit="text", desc="profile", disable=None if progress is None else not progress)
    try:
        with torch.inference_mode():
            caches = {}
            if shared:
                caches[_RECORDER] = _prefix_cache(model, _RECORDER, ids[0][:shared])
                prefix_queries.update({layer: q[:, :shared] for layer, (q, *_) in store.items()})
                caches |= {name: _prefix_cache(model, name, ids[0][:shared]) for name in names if kl and name}
            every = positions == "all"
            for tokens, at in zip(ids, scored, strict=True):
                start = time.perf_counter()
                store.clear()
                exact = _next_token_logp(model, _RECORDER, tokens, at, caches.get(_RECORDER))
                measured = _profile_layers(
                    store, patterns, at, sink, bands, max_length or len(tokens), block_bytes, every
                )
                store.clear()
                seconds["forward"] += time.perf_counter() - start
                start = time.perf_counter()
                divergence = np.full((len(patterns), len(at)), np.nan, np.float32)
                for p, name in enumerate(names):
                    if name is None:
                        divergence[p] = 0.0
                    elif kl:
                        logp = _next_token_logp(model, name, tokens, at, caches.get(name))
                        divergence[p] = (exact.exp() * (exact - logp)).sum(-1).clamp(min=0).numpy()
                seconds["kl"] += time.perf_counter() - start
                profiles.append(TextProfile(len(tokens), at, *measured, divergence, None if every else at))
                bar.update(1)
    finally:
        bar.close()
        model.set_attn_implementation(previous)
    config = model.config
    parameters = {
        "positions": positions,
        "sink": sink,
        "bands": list(bands),
        "max_length": max_length,
        "layers": config.num_hidden_layers,
        "heads": config.num_attention_heads,
        "kv_heads": getattr(config, "num_key_value_heads", None) or config.num_attention_heads,
    }
    return AttentionProfile(patterns, tuple(region_names(sink, bands)), tuple(profiles), parameters, seconds)
