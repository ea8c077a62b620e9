"""pytest collects the pages' examples (``--doctest-glob=*.md``), not the Sphinx configuration or extension.

Without CUDA the fused Triton kernel of the attention page runs on Triton's CPU interpreter, which must be chosen
before any module imports triton.
"""

import os

try:
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
except ImportError:
    pass

collect_ignore = ["conf.py", "_ext"]
collect_ignore_glob = ["_build/*", "generated/*"]
