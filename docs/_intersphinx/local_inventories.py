"""Write the small intersphinx inventories of ``docs/_intersphinx/`` that no package registry ships.

The build is offline, so every inventory it reads is a committed file. Python's and SciPy's are the ones their
projects publish (``python.inv`` from Debian's ``python3.11-doc``, ``scipy.inv`` from ``python-scipy-doc``, both at
``/usr/share/doc/*/html/objects.inv``). NumPy, networkx, PyTorch and transformers publish theirs only on their
websites, so this script writes an inventory for each with the names these docs refer to, each with its page on that
project's site (the ``intersphinx_mapping`` of ``docs/conf.py`` gives the site). A name the docs start to use is added
to :data:`INVENTORIES` and the script rerun: ``python docs/_intersphinx/local_inventories.py``.
"""

from __future__ import annotations

import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: project -> (project name, version, {name: (domain:role, uri)}); a uri ending in ``$`` ends in the name
INVENTORIES = {
    "numpy": (
        "NumPy",
        "2.4",
        {
            "numpy.ndarray": ("py:class", "reference/generated/numpy.ndarray.html#$"),
            "numpy.random.Generator": ("py:class", "reference/random/generator.html#$"),
            "numpy.random.SeedSequence": (
                "py:class",
                "reference/random/bit_generators/generated/numpy.random.SeedSequence.html#$",
            ),
            "numpy.random.default_rng": ("py:function", "reference/random/generator.html#$"),
            "numpy.dtype": ("py:class", "reference/generated/numpy.dtype.html#$"),
            "numpy.copyto": ("py:function", "reference/generated/numpy.copyto.html#$"),
        },
    ),
    "networkx": (
        "NetworkX",
        "3.6",
        {
            "networkx.Graph": ("py:class", "reference/classes/graph.html#$"),
            "networkx.DiGraph": ("py:class", "reference/classes/digraph.html#$"),
        },
    ),
    "torch": (
        "PyTorch",
        "2.13",
        {
            "torch.Tensor": ("py:class", "tensors.html#$"),
            "torch.nn.Module": ("py:class", "generated/torch.nn.Module.html#$"),
            # the name autodoc gives the base class of a module: the same page
            "torch.nn.modules.module.Module": ("py:class", "generated/torch.nn.Module.html#torch.nn.Module"),
            "torch.autograd.Function": ("py:class", "autograd.html#$"),
            "torch.device": ("py:class", "tensor_attributes.html#$"),
            "torch.dtype": ("py:class", "tensor_attributes.html#$"),
            "torch.Generator": ("py:class", "generated/torch.Generator.html#$"),
            "torch.nn.functional.scaled_dot_product_attention": (
                "py:function",
                "generated/torch.nn.functional.scaled_dot_product_attention.html#$",
            ),
            "torch.nn.attention.flex_attention.flex_attention": ("py:function", "nn.attention.flex_attention.html#$"),
            "torch.nn.attention.flex_attention.create_block_mask": (
                "py:function",
                "nn.attention.flex_attention.html#$",
            ),
            "torch.nn.attention.flex_attention.create_mask": ("py:function", "nn.attention.flex_attention.html#$"),
        },
    ),
    "transformers": (
        "transformers",
        "5.24",
        {
            "transformers.AttentionInterface": ("py:class", "attention_interface#$"),
            "transformers.PreTrainedModel": ("py:class", "main_classes/model#$"),
            "transformers.PreTrainedTokenizerBase": ("py:class", "main_classes/tokenizer#$"),
            "transformers.PretrainedConfig": ("py:class", "main_classes/configuration#$"),
            "transformers.AutoModel": ("py:class", "model_doc/auto#$"),
            "transformers.AutoModelForCausalLM": ("py:class", "model_doc/auto#$"),
            "transformers.BertModel": ("py:class", "model_doc/bert#$"),
            "transformers.LlamaForCausalLM": ("py:class", "model_doc/llama#$"),
            "transformers.DynamicCache": ("py:class", "internal/generation_utils#$"),
            "transformers.StaticCache": ("py:class", "internal/generation_utils#$"),
            "transformers.GenerationMixin.generate": ("py:method", "main_classes/text_generation#$"),
        },
    ),
}


def inventory(project: str, version: str, names: dict[str, tuple[str, str]]) -> bytes:
    """The bytes of a Sphinx ``objects.inv`` (version 2) listing ``names``."""
    header = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n"
        f"# Version: {version}\n"
        "# The remainder of this file is compressed using zlib.\n"
    )
    lines = [f"{name} {role} 1 {uri} -\n" for name, (role, uri) in sorted(names.items())]
    return header.encode() + zlib.compress("".join(lines).encode())


def main() -> None:
    for key, (project, version, names) in INVENTORIES.items():
        (HERE / f"{key}.inv").write_bytes(inventory(project, version, names))


if __name__ == "__main__":
    main()
