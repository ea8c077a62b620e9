"""torch's and numba's thread counts: for a process (:func:`set_threads`), or for the span of one command, set on
entry and restored on exit (also on an error).

The order matters: numba launches its pool on first use, and its OpenMP layer (the GNU OpenMP runtime torch uses too)
then sets the calling thread's OpenMP count to numba's pool size, every core, undoing an earlier
``torch.set_num_threads``. A process asked for one thread would run torch on every core, and two such processes on
two cores four spinning OpenMP threads (tens of times slower under load). So numba's count is set first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


def set_threads(count: int) -> None:
    """numba's threads, then torch's, to ``count`` (numba's capped at its pool size).

    Parameters
    ----------
    count : int
        Threads, ``>= 1``.

    Raises
    ------
    ValueError
        If ``count`` is below 1.

    Examples
    --------
    >>> import torch
    >>> before = torch.get_num_threads()
    >>> set_threads(1)
    >>> torch.get_num_threads()
    1
    >>> set_threads(before)
    """
    import numba
    import torch

    if not isinstance(count, int) or count < 1:
        raise ValueError(f"threads: expected an integer >= 1, got {count!r}")
    numba.set_num_threads(min(count, numba.config.NUMBA_NUM_THREADS))
    torch.set_num_threads(count)


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run a block with torch's and numba's threads at ``count`` (:func:`set_threads`), putting the caller's settings
    back afterwards.

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
    import numba
    import torch

    before = torch.get_num_threads(), numba.get_num_threads()
    set_threads(count)
    try:
        yield
    finally:
        numba.set_num_threads(before[1])
        torch.set_num_threads(before[0])
