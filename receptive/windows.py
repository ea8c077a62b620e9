r"""The window convention shared by every pattern, the coverage engine and the attention backend.

``w`` counts the keys a query sees in a full window, itself included (the Mistral / Hugging Face
``sliding_window`` convention). With ``left`` keys before and ``right`` keys after the query:

* causal: query ``i`` sees keys ``i-w+1 .. i``; ``(left, right) = (w-1, 0)``; FlashAttention
  ``window_size=(w-1, 0)``; FlexAttention ``mask_mod``: ``(q_idx - kv_idx < w) & (kv_idx <= q_idx)``.
* bidirectional: query ``i`` sees keys ``i-left .. i+right`` with ``(left, right) = (w//2, (w-1)//2)``;
  FlashAttention ``window_size=(w//2, (w-1)//2)``; FlexAttention:
  ``(q_idx - kv_idx <= w // 2) & (kv_idx - q_idx <= (w - 1) // 2)``.

So an even bidirectional window has one more key on the left (w = 4: ``i-2 .. i+1``). FlashAttention's
``window_size=(a, b)`` sees ``a + 1 + b`` keys, which is why HF passes ``(w - 1, 0)`` for a causal window of ``w``.

Near the sequence edges windows are truncated (fewer keys) by default; ``circular=True`` wraps them modulo ``n``
(the setting of the SA paper's theory). Stochastic Attention always uses the two-sided (bidirectional) band in
permuted order; its causal variant keeps the band and masks keys whose *original* position is after the query's.
"""

from __future__ import annotations

import numpy as np

from .validation import check_bool, check_int


def window_offsets(w: int, causal: bool) -> tuple[int, int]:
    """How many keys before and after the query a window of ``w`` keys spans.

    Parameters
    ----------
    w : int
        Keys per query, itself included (``>= 1``).
    causal : bool
        Causal windows look only back.

    Returns
    -------
    tuple of int
        ``(left, right)``: ``(w - 1, 0)`` causal, ``(w // 2, (w - 1) // 2)`` bidirectional.

    Raises
    ------
    TypeError
        If ``w`` is not an integer or ``causal`` is not a bool.
    ValueError
        If ``w < 1``.

    Examples
    --------
    >>> from receptive import window_offsets
    >>> window_offsets(4, causal=False), window_offsets(4, causal=True)
    ((2, 1), (3, 0))

    References
    ----------
    Beltagy, Peters & Cohan 2020, "Longformer: The Long-Document Transformer", arXiv 2004.05150.
    """
    w = check_int("w", w, 1)
    return (w - 1, 0) if check_bool("causal", causal) else (w // 2, (w - 1) // 2)


def flash_attention_window_size(w: int, causal: bool) -> tuple[int, int]:
    """FlashAttention's ``window_size=(left, right)`` for a window of ``w`` keys (it counts keys besides self).

    Parameters
    ----------
    w : int
        Keys per query, itself included.
    causal : bool
        Causal window.

    Returns
    -------
    tuple of int
        The same offsets as :func:`window_offsets`.

    Raises
    ------
    TypeError
        If ``w`` is not an integer or ``causal`` is not a bool.
    ValueError
        If ``w < 1``.

    Examples
    --------
    >>> from receptive import flash_attention_window_size
    >>> flash_attention_window_size(4096, causal=True)
    (4095, 0)

    References
    ----------
    Dao 2024, "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning", ICLR,
    arXiv 2307.08691.
    """
    return window_offsets(w, causal)


def max_window(n: int, causal: bool, circular: bool) -> int:
    """The smallest ``w`` whose window already spans the whole sequence from every query; wider is an error.

    Causal: ``n`` (``i-n+1 .. i`` covers every earlier key). Circular: ``n``. Truncated two-sided: ``2n - 1``
    (the first and last positions need ``n - 1`` keys on one side).

    Parameters
    ----------
    n : int
        Sequence length.
    causal : bool
        Causal window.
    circular : bool
        Windows wrap around.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        If ``n`` is not an integer or a flag is not a bool.
    ValueError
        If ``n < 1``.

    Examples
    --------
    >>> from receptive import max_window
    >>> max_window(8, causal=True, circular=False), max_window(8, causal=False, circular=False)
    (8, 15)
    """
    n = check_int("n", n, 1)
    causal, circular = check_bool("causal", causal), check_bool("circular", circular)
    return n if causal or circular else 2 * n - 1


def check_window(w, n: int, causal: bool, circular: bool) -> int:
    """``w`` as an int in ``1..max_window(n, causal, circular)``.

    Parameters
    ----------
    w : int
        The window to check.
    n : int
        Sequence length.
    causal, circular : bool
        The window's kind (they set the largest meaningful ``w``).

    Returns
    -------
    int

    Raises
    ------
    TypeError
        If ``w`` or ``n`` is not an integer or a flag is not a bool.
    ValueError
        If ``w`` is out of range (the message says why), or ``n < 1``.

    Examples
    --------
    >>> from receptive.windows import check_window
    >>> check_window(4, 16, causal=True, circular=False)
    4
    """
    limit = max_window(n, causal, circular)
    if isinstance(w, bool) or not isinstance(w, int | np.integer):
        raise TypeError(f"w: expected an integer, got {w!r} ({type(w).__name__})")
    if not 1 <= w <= limit:
        kind = "causal" if causal else "circular" if circular else "two-sided truncated"
        raise ValueError(
            f"w: expected an integer in [1, {limit}] for n = {n} ({kind}: a window of {limit} keys already "
            f"spans the whole sequence), got {w!r}"
        )
    return int(w)
