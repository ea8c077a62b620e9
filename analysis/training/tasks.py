"""Training data: two synthetic tasks with a controlled dependency, and character-level text from CPython's stdlib.

Synthetic batches are :class:`Batch` ``(tokens, targets, readout, sources)``: the model reads its prediction at
position ``readout`` of each sequence and the answer depends on the positions ``sources`` (``-1``: unused slot), so
the answer is reachable after ``L`` layers exactly when every source lies in the receptive field ``RF_L(readout)``
(:func:`analysis.training.reach.reachable`). Every draw is vectorised over the batch and uses only the given
``torch.Generator``, so a run is a function of its seed.

* :func:`retrieval`: filler tokens, one key-value pair ``KEY v`` at a random position ``p`` (value ``v`` from its
  own vocabulary); every later position must output ``v``; source ``p + 1``. Causal readout: the last token, so
  the dependency distance ``n - 2 - p`` is uniform on ``1..n-2``; bidirectional: a random position.
* :func:`counting`: filler tokens with ``c`` (uniform on ``0..max_count``) ``MARK`` tokens at distinct random
  positions; positions output the number of marks (causal: so far); sources are the marks. It needs every token:
  a model that sees a fraction ``f`` of the positions sees all ``c`` marks with probability about ``f^c``.
* :func:`load_corpus` / :func:`lm_batch`: bytes of the stdlib's ``.py`` sources (``sysconfig.get_paths()["stdlib"]``,
  sorted relative paths, tests excluded), every tenth file held out for validation; :func:`copy_probe_mask` marks
  the tokens whose useful context lies beyond a receptive field (the long-context probe).
"""

from __future__ import annotations

import hashlib
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

# synthetic vocabulary: 0 KEY, 1 MARK, then fillers, then values
KEY, MARK = 0, 1
N_FILLERS = 16
FIRST_FILLER = 2
FIRST_VALUE = FIRST_FILLER + N_FILLERS
N_VALUES = 16
SYNTHETIC_VOCAB = FIRST_VALUE + N_VALUES
TEXT_VOCAB = 128  # ASCII; every byte >= 128 becomes 127


@dataclass(frozen=True)
class Batch:
    """``tokens (b, n)``; ``dense (b, n)`` training targets (class index per position, ``IGNORE`` where none);
    ``targets (b,)`` the class at the evaluation readout ``readout (b,)``; ``sources (b, s)`` the positions that
    answer depends on (``-1`` = none)."""

    tokens: torch.Tensor
    dense: torch.Tensor
    targets: torch.Tensor
    readout: torch.Tensor
    sources: torch.Tensor


IGNORE = -100  # torch.nn.functional.cross_entropy's default ignore_index


def _fillers(batch: int, n: int, generator: torch.Generator) -> torch.Tensor:
    return torch.randint(FIRST_FILLER, FIRST_FILLER + N_FILLERS, (batch, n), generator=generator)


def _readout(batch: int, n: int, causal: bool, generator: torch.Generator) -> torch.Tensor:
    if causal:
        return torch.full((batch,), n - 1, dtype=torch.long)
    return torch.randint(0, n, (batch,), generator=generator)


def retrieval(batch: int, n: int, causal: bool, generator: torch.Generator) -> Batch:
    """Filler tokens with one pair ``KEY v`` at positions ``p, p + 1``; every position that may know the answer
    is a query and must output the value class ``v`` in ``0..N_VALUES-1`` (causal: the positions after ``p + 1``;
    bidirectional: all but ``p, p + 1``). Dense targets give a signal at every distance, so short hops are learnt
    first. The evaluation readout is the last position (causal; ``p`` uniform on ``0..n-3``, so the distance
    ``n - 2 - p`` is uniform on ``1..n-2``) or a uniform position outside the pair (bidirectional). Chance
    ``1 / N_VALUES``."""
    if n < 4:
        raise ValueError(f"n: retrieval needs at least 4 tokens, got {n}")
    rows = torch.arange(batch)
    tokens = _fillers(batch, n, generator)
    values = torch.randint(0, N_VALUES, (batch,), generator=generator)
    positions = torch.arange(n)[None, :]
    if causal:
        p = torch.randint(0, n - 2, (batch,), generator=generator)
        readout = torch.full((batch,), n - 1, dtype=torch.long)
        asked = positions > (p + 1)[:, None]
    else:  # p uniform on 0..n-2, readout uniform on the n-2 positions outside {p, p+1}
        p = torch.randint(0, n - 1, (batch,), generator=generator)
        r = torch.randint(0, n - 2, (batch,), generator=generator)
        readout = torch.where(r < p, r, r + 2)
        asked = (positions != p[:, None]) & (positions != (p + 1)[:, None])
    tokens[rows, p] = KEY
    tokens[rows, p + 1] = FIRST_VALUE + values
    dense = torch.where(asked, values[:, None], IGNORE)
    return Batch(tokens, dense, values, readout, (p + 1)[:, None])


def counting(batch: int, n: int, causal: bool, generator: torch.Generator, max_count: int = 3) -> Batch:
    """``c ~ U{0..max_count}`` ``MARK`` tokens at distinct uniform positions among fillers. Every position outputs
    how many marks it may see: causal, those at or before it (a running count); bidirectional, all ``c``. The
    evaluation readout is the last position (causal: the total ``c``) or a uniform position; its sources are all
    the marks, so it needs every token. Chance ``1 / (max_count + 1)`` at the readout."""
    if not 1 <= max_count <= n - 1:
        raise ValueError(f"max_count: expected an integer in [1, {n - 1}], got {max_count}")
    rows = torch.arange(batch)
    tokens = _fillers(batch, n, generator)
    readout = _readout(batch, n, causal, generator)
    counts = torch.randint(0, max_count + 1, (batch,), generator=generator)
    slots = torch.rand(batch, n, generator=generator).argsort(dim=1)[:, :max_count]
    used = torch.arange(max_count)[None, :] < counts[:, None]
    sources = torch.where(used, slots, torch.full_like(slots, -1))
    marked = torch.zeros(batch, n, dtype=torch.bool)
    marked[rows[:, None].expand_as(slots)[used], slots[used]] = True
    tokens[marked] = MARK
    dense = marked.long().cumsum(dim=1) if causal else counts[:, None].expand(batch, n).clone()
    return Batch(tokens, dense, dense[rows, readout], readout, sources)


TASKS = {"retrieval": retrieval, "counting": counting}
TASK_CLASSES = {"retrieval": N_VALUES, "counting": None}  # counting: max_count + 1


# ---------------------------------------------------------------- character-level text


@dataclass(frozen=True)
class Corpus:
    """Train and validation byte streams (``uint8``, values ``< TEXT_VOCAB``) and what they were built from."""

    train: np.ndarray
    validation: np.ndarray
    files: int
    validation_files: int
    sha256: str
    source: str

    def describe(self) -> dict:
        return {
            "source": self.source,
            "python": sys.version.split()[0],
            "files": self.files,
            "validation_files": self.validation_files,
            "train_chars": int(self.train.size),
            "validation_chars": int(self.validation.size),
            "sha256": self.sha256,
        }


_EXCLUDED_PARTS = {"test", "tests", "idle_test", "site-packages", "__pycache__", "dist-packages"}


def stdlib_files(root: str | Path | None = None) -> list[Path]:
    """The stdlib's ``.py`` files (test suites and installed packages excluded), sorted by relative path."""
    root = Path(sysconfig.get_paths()["stdlib"] if root is None else root)
    files = [p for p in root.rglob("*.py") if not _EXCLUDED_PARTS & set(p.relative_to(root).parts[:-1])]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def load_corpus(max_chars: int, validation_every: int = 10, root: str | Path | None = None) -> Corpus:
    """Read sorted stdlib files until ``max_chars`` bytes; file ``k`` goes to validation when ``k % validation_every
    == 0``. Bytes ``>= 128`` map to 127; files are joined by a newline."""
    if max_chars < 1000:
        raise ValueError(f"max_chars: expected at least 1000, got {max_chars}")
    files = stdlib_files(root)
    if not files:
        raise FileNotFoundError(f"no .py files under the stdlib directory {root or sysconfig.get_paths()['stdlib']}")
    train, val, total, used, n_val = [], [], 0, 0, 0
    digest = hashlib.sha256()
    for k, path in enumerate(files):
        data = path.read_bytes() + b"\n"
        digest.update(data)
        (val if k % validation_every == 0 else train).append(data)
        n_val += k % validation_every == 0
        used, total = k + 1, total + len(data)
        if total >= max_chars:
            break

    def stream(parts):
        arr = np.frombuffer(b"".join(parts), dtype=np.uint8)
        return np.minimum(arr, TEXT_VOCAB - 1).astype(np.uint8)

    return Corpus(stream(train), stream(val), used, n_val, digest.hexdigest()[:16], "CPython stdlib *.py (sorted)")


def lm_batch(stream: np.ndarray, batch: int, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` random windows of ``n + 1`` bytes: inputs ``x[:, :n]``, next-byte targets ``x[:, 1:]``."""
    if stream.size < n + 2:
        raise ValueError(f"n: the text stream holds {stream.size} characters, fewer than n + 2 = {n + 2}")
    starts = torch.randint(0, stream.size - n - 1, (batch,), generator=generator)
    index = starts[:, None] + torch.arange(n + 1)[None, :]
    x = torch.from_numpy(stream.astype(np.int64))[index]
    return x[:, :-1], x[:, 1:]


def validation_windows(stream: np.ndarray, n: int, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Up to ``count`` non-overlapping, evenly spaced windows of ``n + 1`` bytes (deterministic)."""
    available = (stream.size - 1) // n
    if available < 1:
        raise ValueError(f"n: the validation stream holds {stream.size} characters, fewer than n + 1")
    picks = np.linspace(0, available - 1, min(count, available)).astype(np.int64)
    index = picks[:, None] * n + np.arange(n + 1)[None, :]
    x = torch.from_numpy(stream.astype(np.int64)[index])
    return x[:, :-1], x[:, 1:]


def copy_probe_mask(tokens: np.ndarray, targets: np.ndarray, field: int, k: int = 12) -> dict[str, np.ndarray]:
    """Which next-byte targets a copy from far away predicts: the long-context probe.

    For target ``t`` (the byte at input position ``t + 1``), let ``g_t`` be the ``(k+1)``-gram of inputs
    ``t-k+1 .. t`` followed by the target, and ``e`` the input position of the byte that ends its most recent
    earlier occurrence in the same window (``e <= t``). The target is ``far`` when ``t - e >= field`` (the earlier
    copy, and the context that identifies it, lies outside the receptive field ``[t - field + 1, t]`` of SWA,
    ``field = L (w - 1) + 1`` causal) and ``near`` when ``t - e < field``. Returns boolean ``(b, n)`` masks ``far``
    and ``near``.
    """
    tokens, targets = np.asarray(tokens), np.asarray(targets)
    b, n = tokens.shape
    seq = np.concatenate([tokens, targets[:, -1:]], axis=1).astype(np.uint64)  # (b, n + 1) bytes
    grams = np.lib.stride_tricks.sliding_window_view(seq, k + 1, axis=1)  # (b, n - k + 1, k + 1), ends at k..n
    weights = np.uint64(257) ** np.arange(k + 1, dtype=np.uint64)  # polynomial hash, wraps mod 2^64
    h = (grams * weights).sum(axis=-1, dtype=np.uint64)
    ends = np.arange(k, n + 1)  # end position in seq; target index t = end - 1
    rows = np.repeat(np.arange(b), ends.size)
    flat_h, flat_end = h.reshape(-1), np.tile(ends, b)
    order = np.lexsort((flat_end, flat_h, rows))
    same = (rows[order][1:] == rows[order][:-1]) & (flat_h[order][1:] == flat_h[order][:-1])
    distance = np.full(flat_h.size, -1, dtype=np.int64)
    distance[order[1:][same]] = (flat_end[order][1:] - flat_end[order][:-1])[same]
    distance = distance.reshape(b, ends.size)
    far = np.zeros((b, n), dtype=bool)
    near = np.zeros((b, n), dtype=bool)
    back = distance - 1  # t - e: the earlier copy's last byte sits at input position end_prev
    far[:, ends - 1] = back >= field
    near[:, ends - 1] = (distance > 0) & (back < field)
    return {"far": far, "near": near}
