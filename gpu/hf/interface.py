"""The wrapper that makes an ``attend(q, k, v, causal, layer, layers)`` a transformers attention implementation
(``transformers.AttentionInterface``): :func:`hf_attention`, :func:`register_function`, and the prefill form of the
method objects :func:`gpu.hf.register` takes, so any transformers model whose attention dispatches through
``ALL_ATTENTION_FUNCTIONS`` (BERT, Llama, Qwen2, ...) runs them::

    from transformers import AutoModel
    from gpu.approx import METHODS
    from gpu.hf import register

    name = register(METHODS["performer"], 128)  # "receptive-prefill-performer-128"
    model = AutoModel.from_pretrained(path, attn_implementation=name)

An implementation receives ``(module, query, key, value, attention_mask, dropout, scaling, is_causal, **kwargs)``
with ``(batch, heads, n, d)`` tensors, as ``transformers.integrations.sdpa_attention.sdpa_attention_forward`` does,
and returns ``(output (batch, n, heads, d), None)``. What the wrapper does around the method:

* the mask: every name is also registered in ``AttentionMaskInterface`` with transformers' ``sdpa_mask``, so the
  model hands over a boolean ``(batch, 1, n, n)`` mask (``True``: attend) or ``None`` (no padding). The wrapper
  accepts key padding (left or right) combined with the causal mask, nothing else (a packed or custom mask gets a
  one-line error): each sequence's valid tokens are gathered into a dense sequence, sequences of one length share
  one call, and the method runs on them exactly as on an unpadded input; padded query rows output zeros (no valid
  token reads them);
* causality: ``is_causal`` if the model passes it, else the module's ``is_causal`` (BERT: ``False``, Llama:
  ``True``); a causal model calls ``attend(..., causal=True)``, so a method never reads a future key;
* grouped-query attention: key and value heads repeated ``num_key_value_groups`` times;
* scaling: the methods compute ``q k^T / sqrt(d)``; a module scaling ``s`` other than ``d^-1/2`` multiplies ``q``
  by ``s sqrt(d)`` (the same scores);
* the seed of layer ``l`` (``module.layer_idx``) is ``seed * num_hidden_layers + l``: a fresh draw per layer, as
  the lab's substitution study uses;
* per-layer options (``layer_options``): the calibration data of the methods fitted offline (Loki's PCA, the
  latent projection of MLA and TransMLA), captured from other text by :func:`gpu.hf.capture_keys_values`.

Prefill only: decoding with a KV cache (fewer queries than keys) gets a one-line error (run the model with
``use_cache=False``); the registered attentions are training-free (dropout > 0 is refused).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from gpu.attention.generation_patterns import GENERATION_METHODS

PREFIX = "receptive"

#: ``attend(q, k, v, causal, layer, layers) -> output`` on unpadded ``(batch, heads, n, d)`` tensors; ``layer`` counts
#: from 0, ``layers`` is the model's number of layers.
Attend = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool, int, int], torch.Tensor]


def implementation_name(method: str, budget: int | None, seed: int = 0, decode: str = "sparse", exact_layers=()) -> str:
    """The registered name: ``receptive-<method>-<budget>`` with ``-s<seed>``, ``-exact-decode`` and
    ``-exact-<layers>`` where they apply.

    Parameters
    ----------
    method : str
        The method's name (``prefill-<name>`` for a method object's prefill form), or a plan's label.
    budget : int or None
        Keys per query; ``None`` for a head plan (its label names it).
    seed : int, default 0
        Seed.
    decode : {"sparse", "exact"}, default "sparse"
        The decode protocol.
    exact_layers : iterable of int, default ()
        Layers kept exact.

    Returns
    -------
    str
        The name.

    Examples
    --------
    >>> implementation_name("sa", 64), implementation_name("sa", 64, 1, "exact", (0, 5))
    ('receptive-sa-64', 'receptive-sa-64-s1-exact-decode-exact-0.5')
    """
    name = f"{PREFIX}-{method}" + ("" if budget is None else f"-{budget}")
    name += f"-s{seed}" if seed else ""
    name += "-exact-decode" if decode == "exact" else ""
    layers = sorted(set(exact_layers))
    return name + (f"-exact-{'.'.join(map(str, layers))}" if layers else "")


def keep_mask(attention_mask: torch.Tensor, shape: tuple[int, int, int]) -> torch.Tensor:
    """A boolean ``(batch, q, n)`` keep-mask (``True``: attend) from a boolean or additive float 4-d mask.

    Parameters
    ----------
    attention_mask : torch.Tensor
        ``(batch, 1 or heads, q, n)``, boolean or additive (0 kept, the dtype's minimum masked).
    shape : tuple of int
        ``(batch, q, n)``.

    Returns
    -------
    torch.Tensor

    Raises
    ------
    ValueError
        If the mask is not 4-d or differs between heads.

    Examples
    --------
    >>> import torch
    >>> additive = torch.tensor([[[[0.0, torch.finfo(torch.float32).min]]]])
    >>> keep_mask(additive, (1, 1, 2)).tolist()
    [[[True, False]]]
    """
    if attention_mask.dim() != 4:
        raise ValueError(f"attention_mask: expected a 4-d mask (batch, heads, q, n), got {attention_mask.dim()}-d")
    keep = attention_mask
    if keep.dtype != torch.bool:  # additive: 0 where kept, the dtype's minimum where masked
        keep = keep > torch.finfo(keep.dtype).min / 2
    if keep.shape[1] != 1 and not bool((keep == keep[:, :1]).all()):
        raise ValueError("attention_mask: a mask that differs between heads is not supported")
    return keep[:, 0].expand(*shape)


def padded(attend: Attend, q, k, v, attention_mask, causal: bool, layer: int, layers: int) -> torch.Tensor:
    """``attend`` on the valid tokens of each sequence, padded query rows set to zero.

    Parameters
    ----------
    attend : callable
        ``attend(q, k, v, causal, layer, layers)`` on unpadded ``(batch, heads, n, d)`` tensors.
    q, k, v : torch.Tensor
        ``(batch, heads, n, d)``.
    attention_mask : torch.Tensor or None
        A boolean (``True``: attend) or additive 4-d mask ``(batch, 1 or heads, n, n)``; ``None``: no padding.
    causal : bool
        Whether the model is causal.
    layer, layers : int
        The layer's index and the model's number of layers.

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d_v)``.

    Raises
    ------
    ValueError
        If the mask is not key padding (with the causal mask of a causal model), or differs between heads.

    Examples
    --------
    >>> import torch
    >>> q = torch.ones(1, 1, 3, 2)
    >>> keep = torch.tensor([True, True, False])
    >>> mask = (keep[None, :] & keep[:, None])[None, None]
    >>> padded(lambda q, k, v, causal, layer, layers: q, q, q, q, mask, False, 0, 1)[0, 0, :, 0]
    tensor([1., 1., 0.])

    References
    ----------
    - Serret et al. (2026). A survey of fast attention approximations. arXiv 2604.01757.
    - Wolf et al. (2020). Transformers: state-of-the-art natural language processing. EMNLP (system
      demonstrations).
    """
    b, _, n, _ = q.shape
    if attention_mask is None:
        return attend(q, k, v, causal, layer, layers)
    keep = keep_mask(attention_mask, (b, n, n))
    valid = keep.any(dim=1)  # (b, n): keys some query reads; in self-attention, the sequence's tokens
    expected = valid[:, None, :]
    if causal:
        expected = expected & torch.ones(n, n, dtype=torch.bool, device=keep.device).tril()
    if bool(((keep != expected) & valid[:, :, None]).any()):
        raise ValueError(
            "attention_mask: only key padding (and the causal mask of a causal model) is supported, "
            "not packed or custom masks"
        )
    if bool(valid.all()):
        return attend(q, k, v, causal, layer, layers)
    out = q.new_zeros(*q.shape[:-1], v.shape[-1])
    lengths = valid.sum(dim=1)
    for length in lengths.unique().tolist():
        if length == 0:
            continue
        rows = (lengths == length).nonzero().squeeze(1)
        index = valid[rows].nonzero()[:, 1].view(len(rows), 1, length, 1)  # ascending positions of each row

        def gather(x, index=index, rows=rows):
            return x[rows].gather(2, index.expand(-1, x.shape[1], -1, x.shape[-1]))

        result = attend(gather(q), gather(k), gather(v), causal, layer, layers)
        out[rows] = out[rows].scatter(2, index.expand(-1, out.shape[1], -1, out.shape[-1]), result)
    return out


def hf_attention(attend: Attend, name: str = "receptive") -> Callable:
    """A transformers attention function around ``attend(q, k, v, causal, layer, layers)``.

    Parameters
    ----------
    attend : callable
        ``attend(q, k, v, causal, layer, layers)`` on unpadded ``(batch, heads, n, d)`` tensors.
    name : str, default "receptive"
        The implementation's name, used in error messages.

    Returns
    -------
    callable
        ``forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kwargs)``
        returning ``(output (batch, n, heads, d), None)``; it raises ``ValueError`` on dropout, on a KV cache
        (fewer queries than keys) and on ``position_bias`` or ``softcap``.

    Examples
    --------
    >>> import torch
    >>> forward = hf_attention(lambda q, k, v, causal, layer, layers: v, "identity")
    >>> x = torch.zeros(1, 2, 5, 4)  # (batch, heads, n, d)
    >>> forward(None, x, x, x, None)[0].shape
    torch.Size([1, 5, 2, 4])

    References
    ----------
    - Serret et al. (2026). A survey of fast attention approximations. arXiv 2604.01757.
    - Wolf et al. (2020). Transformers: state-of-the-art natural language processing. EMNLP (system
      demonstrations).
    """

    def forward(
        module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, is_causal=None, **kwargs
    ):
        if dropout:
            raise ValueError(f"dropout: the attention {name} is training-free; call model.eval() (got {dropout})")
        if query.shape[2] != key.shape[2]:
            raise ValueError(
                f"cache: the attention {name} runs prefill only ({query.shape[2]} queries, {key.shape[2]} keys); "
                "call the model with use_cache=False, or to generate register a method with a generation form "
                f"(gpu.hf.register: {', '.join(GENERATION_METHODS)})"
            )
        query, key, value = heads_and_scale(name, module, query, key, value, scaling, kwargs)
        causal = bool(is_causal if is_causal is not None else getattr(module, "is_causal", False))
        layer, layers = layer_of(module)
        out = padded(attend, query, key, value, attention_mask, causal, layer, layers)
        return out.transpose(1, 2).contiguous(), None

    forward.__name__ = forward.__qualname__ = f"attention_{name}"
    return forward


def heads_and_scale(name: str, module, query, key, value, scaling, kwargs: dict):
    """The inputs of a transformers attention call as the methods take them: grouped key heads repeated, ``query``
    rescaled so that ``q k^T / sqrt(d)`` gives the module's scores; bias and softcap refused.

    Parameters
    ----------
    name : str
        The implementation's name, for the error message.
    module : torch.nn.Module or None
        The attention module (``num_key_value_groups`` read from it).
    query, key, value : torch.Tensor
        ``(batch, heads, q or n, d)``.
    scaling : float or None
        The module's score scale; ``None``: ``d^-1/2``.
    kwargs : dict
        The call's other keyword arguments.

    Returns
    -------
    query, key, value : torch.Tensor

    Raises
    ------
    ValueError
        On ``position_bias`` or ``softcap``.

    Examples
    --------
    >>> import torch
    >>> q = torch.ones(1, 2, 3, 4)
    >>> kv = torch.ones(1, 1, 3, 4)
    >>> q2, k2, _ = heads_and_scale("x", None, q, kv, kv, 1.0, {})  # scale 1 = (d^-1/2) * 2
    >>> float(q2[0, 0, 0, 0]), k2.shape[1]
    (2.0, 1)
    """
    if kwargs.get("position_bias") is not None or kwargs.get("softcap") is not None:
        raise ValueError(f"position_bias, softcap: not supported by the attention {name}")
    groups = getattr(module, "num_key_value_groups", 1)
    if groups > 1:
        key, value = key.repeat_interleave(groups, dim=1), value.repeat_interleave(groups, dim=1)
    d = query.shape[-1]
    if scaling is not None and not math.isclose(scaling * math.sqrt(d), 1.0, rel_tol=1e-12):
        query = query * (scaling * math.sqrt(d))
    return query, key, value


def layer_of(module) -> tuple[int, int]:
    """The module's layer index and its model's number of layers (``0, 1`` when it names neither).

    Parameters
    ----------
    module : torch.nn.Module or None
        An attention module (``layer_idx``, ``config.num_hidden_layers``).

    Returns
    -------
    tuple of int

    Examples
    --------
    >>> layer_of(None)
    (0, 1)
    """
    layer = getattr(module, "layer_idx", None) or 0
    return layer, getattr(getattr(module, "config", None), "num_hidden_layers", 1)


def register_function(name: str, attend: Attend) -> str:
    """Register ``attend`` under ``name`` with transformers' attention and mask interfaces.

    Parameters
    ----------
    name : str
        The implementation's name (no ``/``: transformers reads that as a hub kernel).
    attend : callable
        ``attend(q, k, v, causal, layer, layers)``.

    Returns
    -------
    str
        ``name``, to pass as ``attn_implementation``.

    Raises
    ------
    ValueError
        If ``name`` is empty, not a string or contains ``/``.

    Examples
    --------
    >>> from torch.nn.functional import scaled_dot_product_attention as sdpa
    >>> register_function("receptive-doc-exact", lambda q, k, v, causal, *_: sdpa(q, k, v, is_causal=causal))
    'receptive-doc-exact'

    References
    ----------
    - Serret et al. (2026). A survey of fast attention approximations. arXiv 2604.01757.
    - Wolf et al. (2020). Transformers: state-of-the-art natural language processing. EMNLP (system
      demonstrations).
    """
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    if not isinstance(name, str) or not name or "/" in name:
        raise ValueError(f"name: expected a non-empty string without '/' (a hub kernel), got {name!r}")
    AttentionInterface.register(name, hf_attention(attend, name))
    AttentionMaskInterface.register(name, sdpa_mask)
    return name
