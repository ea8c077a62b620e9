"""The attention layout of a Hugging Face ``config.json``, read offline: which layers slide, chunk or see all.

Fields read (others are ignored): ``num_hidden_layers``; ``layer_types`` (``"sliding_attention"``,
``"full_attention"``, ``"chunked_attention"``); ``sliding_window`` (keys per query, itself included: HF's
convention, a query sees positions ``i - W + 1 .. i``); ``attention_chunk_size`` with ``no_rope_layers`` (Llama 4:
chunked layers use RoPE, every fourth layer is global without it); the older encodings ``sliding_window_pattern`` /
``_sliding_window_pattern`` (Gemma 3: layer ``l`` slides unless ``(l + 1) % pattern == 0``), Gemma 2's alternation
(``model_type`` ``gemma2``, sliding first) and ``use_sliding_window`` + ``max_window_layers`` (Qwen2: layers at or
above it slide). A nested ``text_config`` (multimodal configs) is read instead of the top level. Decoders are causal.
Encoder layouts: Longformer's ``attention_window`` (two-sided, per layer) and BigBird's ``block_sparse``.

References
----------
Hugging Face Transformers, the ``config.json`` fields of ``Gemma2Config``, ``Gemma3TextConfig``, ``Llama4TextConfig``,
``MistralConfig``, ``Qwen2Config``, ``LongformerConfig`` and ``BigBirdConfig``
(https://huggingface.co/docs/transformers).
"""

from __future__ import annotations

import json
import os

from graphs.memory import check_memory

from ..validation import check_int
from .base import Pattern
from .registry import BYTES_PER_LAYER, pattern_from_spec
from .stack import LayerStack

__all__ = ["KNOWN_LAYER_TYPES", "layer_specs", "load_config", "pattern_from_config"]

KNOWN_LAYER_TYPES = ("sliding_attention", "full_attention", "chunked_attention")


def load_config(path: str | os.PathLike) -> dict:
    """The JSON object of a config file (``config.json`` or a folder holding one).

    Parameters
    ----------
    path : str or os.PathLike
        The file, or a folder holding ``config.json``.

    Returns
    -------
    dict
        The parsed object.

    Raises
    ------
    TypeError
        If ``path`` is not a str or os.PathLike (one line starting ``hf_config:``).
    ValueError
        If the file cannot be read, is not JSON or holds no JSON object (one line starting ``hf_config:``).

    Examples
    --------
    >>> load_config("/nonexistent/config.json")
    Traceback (most recent call last):
    ...
    ValueError: hf_config: cannot read '/nonexistent/config.json': No such file or directory
    """
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"hf_config: expected a path (str or os.PathLike), got {type(path).__name__}")
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    try:
        with open(path) as fh:
            config = json.load(fh)
    except OSError as exc:
        raise ValueError(f"hf_config: cannot read {path!r}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"hf_config: {path!r} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except UnicodeDecodeError:
        raise ValueError(f"hf_config: {path!r} is not a text file (a config.json is UTF-8 JSON)") from None
    if not isinstance(config, dict):
        raise ValueError(f"hf_config: {path!r} holds {type(config).__name__}, expected a JSON object")
    return config


def _int_field(config: dict, name: str, low: int = 1) -> int:
    value = config.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"hf_config: field {name!r} must be an integer >= {low}, got {value!r}")
    return value


def layer_specs(config: dict) -> tuple[list[str], bool, str]:
    """``(one layer spec per layer, causal, name)`` of a config (see the module docstring for the fields).

    Parameters
    ----------
    config : dict
        A parsed ``config.json``.

    Returns
    -------
    tuple
        ``(specs, causal, model_type)``: one :func:`receptive.patterns.registry.pattern_from_spec` spec per layer
        (``"swa:W"``, ``"chunk:C"``, ``"full"``, ...), whether the model is a decoder, and its ``model_type``.

    Raises
    ------
    ValueError
        If a field the layout needs is missing or malformed, or ``layer_types`` holds a type this reader does not
        know.
    MemoryError
        If ``num_hidden_layers`` is more layers than :data:`graphs.memory.DEFAULT_MAX_MEMORY` holds.

    Examples
    --------
    >>> layer_specs({"model_type": "gemma3", "num_hidden_layers": 6, "sliding_window": 4, "sliding_window_pattern": 3})
    (['swa:4', 'swa:4', 'full', 'swa:4', 'swa:4', 'full'], True, 'gemma3')
    >>> layer_specs({"model_type": "longformer", "num_hidden_layers": 2, "attention_window": 4})  # 2 keys a side
    (['swa:5', 'swa:5'], False, 'longformer')
    """
    if isinstance(config.get("text_config"), dict):
        config = {**config["text_config"], "model_type": config.get("model_type", "")}
    model_type = str(config.get("model_type", "model"))
    layers = _int_field(config, "num_hidden_layers")
    check_memory("hf_config", layers * BYTES_PER_LAYER, f"{layers} layers (field 'num_hidden_layers')")

    if model_type == "longformer" or "attention_window" in config:
        window = config.get("attention_window")
        windows = window if isinstance(window, list) else [window] * layers
        if len(windows) != layers or not all(isinstance(x, int) and x >= 2 and x % 2 == 0 for x in windows):
            raise ValueError(f"hf_config: field 'attention_window' must be an even integer >= 2 or {layers} of them")
        return [f"swa:{x + 1}" for x in windows], False, model_type  # x / 2 keys on each side plus the query
    if config.get("attention_type") == "block_sparse":
        block = _int_field(config, "block_size")
        random = _int_field(config, "num_random_blocks", 0)
        return [f"bigbird:{block}:3:{random}:2"] * layers, False, model_type

    window = config.get("sliding_window")
    if window is not None:
        window = _int_field(config, "sliding_window")
    types = config.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers:
            raise ValueError(f"hf_config: field 'layer_types' must list {layers} layer types (num_hidden_layers)")
        unknown = sorted({t for t in types if t not in KNOWN_LAYER_TYPES}, key=str)
        if unknown:
            raise ValueError(
                f"hf_config: field 'layer_types' has {unknown[0]!r}, which this reader cannot interpret "
                f"(known: {', '.join(KNOWN_LAYER_TYPES)})"
            )
    elif "attention_chunk_size" in config and config["attention_chunk_size"] is not None:
        nope = config.get("no_rope_layers")
        if nope is None:
            interval = _int_field(
                {"no_rope_layer_interval": config.get("no_rope_layer_interval", 4)}, "no_rope_layer_interval"
            )
            nope = [int((k + 1) % interval != 0) for k in range(layers)]
        if not isinstance(nope, list) or len(nope) != layers:
            raise ValueError(f"hf_config: field 'no_rope_layers' must list {layers} flags (1: RoPE + chunked)")
        types = ["chunked_attention" if flag else "full_attention" for flag in nope]
    elif window is not None:
        pattern = config.get("sliding_window_pattern", config.get("_sliding_window_pattern"))
        if pattern is not None:
            pattern = _int_field({"sliding_window_pattern": pattern}, "sliding_window_pattern")
            types = ["full_attention" if (k + 1) % pattern == 0 else "sliding_attention" for k in range(layers)]
        elif model_type == "gemma2":
            types = ["sliding_attention" if k % 2 == 0 else "full_attention" for k in range(layers)]
        elif "use_sliding_window" in config:
            first = _int_field(config, "max_window_layers", 0) if config["use_sliding_window"] else layers
            types = ["sliding_attention" if k >= first else "full_attention" for k in range(layers)]
        else:
            types = ["sliding_attention"] * layers  # Mistral: the window in every layer
    else:
        types = ["full_attention"] * layers

    specs = []
    for t in types:
        if t == "sliding_attention":
            if window is None:
                raise ValueError("hf_config: field 'sliding_window' is missing but 'layer_types' has sliding layers")
            specs.append(f"swa:{window}")
        elif t == "chunked_attention":
            specs.append(f"chunk:{_int_field(config, 'attention_chunk_size')}")
        else:
            specs.append("full")
    return specs, True, model_type


def pattern_from_config(path_or_config, n: int, *, seed: int = 0) -> Pattern:
    """The layer stack a config describes on ``n`` positions (one pattern per distinct layer kind).

    Parameters
    ----------
    path_or_config : dict, str or os.PathLike
        A parsed config, or the path of one (see :func:`load_config`).
    n : int
        Sequence length; windows and chunks wider than ``n`` are clipped to it.
    seed : int, default 0
        Seed of the random layers (BigBird's random blocks).

    Returns
    -------
    LayerStack
        One layer per ``num_hidden_layers``, named after ``model_type``.

    Raises
    ------
    TypeError
        If ``path_or_config`` is neither a dict nor a path, or ``n`` or ``seed`` is not an integer.
    ValueError
        As :func:`load_config` and :func:`layer_specs`, or for an ``n`` a layer cannot take.

    Examples
    --------
    >>> from receptive import coverage_by_layer
    >>> config = {"model_type": "gemma3", "num_hidden_layers": 6, "sliding_window": 4, "sliding_window_pattern": 3}
    >>> stack = pattern_from_config(config, 32)
    >>> stack.max_layers, coverage_by_layer(stack, max_layers=6).full_coverage_layer  # layer 3 is global
    (6, 3)
    """
    n, seed = check_int("n", n, 1), check_int("seed", seed, 0)
    config = path_or_config if isinstance(path_or_config, dict) else load_config(path_or_config)
    specs, causal, name = layer_specs(config)
    built: dict[str, Pattern] = {}
    for spec in specs:
        if spec not in built:
            # a window wider than the sequence is the whole causal prefix: clip it to n (HF masks the same)
            kind, _, arg = spec.partition(":")
            if kind in ("swa", "chunk") and int(arg) > n:
                built[spec] = pattern_from_spec("full" if kind == "swa" else f"chunk:{n}", n, causal, seed=seed)
            else:
                built[spec] = pattern_from_spec(spec, n, causal, seed=seed)
    return LayerStack([built[s] for s in specs], len(specs), name=name)
