"""torch's thread count for the span of one command: set on entry, restored on exit (also on an error)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """``with torch_threads(1): ...`` runs the block with ``torch.set_num_threads(count)`` and puts the caller's
    setting back afterwards, so a library call never changes the process's threads for good."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
