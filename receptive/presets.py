"""The preset layouts shipped inside the package (``receptive/layout_configs/*.json``): Hugging Face ``config.json``
files and stack specs written from the papers, read by ``python -m receptive.layouts`` and by
``python -m receptive.coverage --hf-config NAME``."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["preset_dir"]


def preset_dir() -> Path:
    """The folder of the preset layouts shipped inside the package (``receptive/layout_configs/*.json``).

    Returns
    -------
    pathlib.Path
        The installed folder; it does not depend on the working directory or on a checkout.

    Raises
    ------
    ValueError
        If the package is installed in a form (a zip archive) whose data files are not on the file system.

    Examples
    --------
    >>> from receptive.presets import preset_dir
    >>> "mistral-7b-v0.1" in [p.stem for p in preset_dir().glob("*.json")]
    True
    """
    root = resources.files("receptive").joinpath("layout_configs")
    if not isinstance(root, Path):
        raise ValueError("--configs: the preset layouts are not on the file system here; pass --configs DIR")
    return root
