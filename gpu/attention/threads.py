"""torch's thread count for the span of one command: set on entry, restored on exit (also on an error)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run a block with ``torch.set_num_threads(count)``, putting the caller's setting back afterwards.

    ``with torch_threads(1): ...``: a library call never changes the process's threads for good (restored on an
    error too).

    Parameters
    ----------
    count : int
        The thread count inside the block, ``>= 1``.

    Yields
    ------
    None
        Inside the block torch runs on ``count`` threads.

    Examples
    --------
    >>> import torch
    >>> before = torch.get_num_threads()
    >>> with torch_threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
