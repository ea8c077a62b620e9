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

from .validation import check_int


def window_offsets(w: int, causal: bool) -> tuple[int, int]:
    """``(left, right)``: how many keys before and after the query a window of ``w`` keys spans."""
    w = check_int("w", w, 1)
    return (w - 1, 0) if causal else (w // 2, (w - 1) // 2)


def flash_attention_window_size(w: int, causal: bool) -> tuple[int, int]:
    """FlashAttention's ``window_size=(left, right)`` for a window of ``w`` keys (it counts keys besides self)."""
    return window_offsets(w, causal)


def max_window(n: int, causal: bool, circular: bool) -> int:
    """The smallest ``w`` whose window already spans the whole sequence from every query; wider is an error.

    Causal: ``n`` (``i-n+1 .. i`` covers every earlier key). Circular: ``n``. Truncated two-sided: ``2n - 1``
    (the first and last positions need ``n - 1`` keys on one side).
    """
    return n if causal or circular else 2 * n - 1


def check_window(w, n: int, causal: bool, circular: bool) -> int:
    """``w`` as an int in ``1..max_window(n, causal, circular)``, else a ``ValueError`` that says why."""
    limit = max_window(n, causal, circular)
    if isinstance(w, bool) or not isinstance(w, int | np.integer) or not 1 <= w <= limit:
        kind = "causal" if causal else "circular" if circular else "two-sided truncated"
        raise ValueError(
            f"w: expected an integer in [1, {limit}] for n = {n} ({kind}: a window of {limit} keys already "
            f"spans the whole sequence), got {w!r}"
        )
    return int(w)
