"""The one vocabulary of pattern and attention-method names: every name the toolkit gives a key set, defined once.

The toolkit's tables are keyed from :data:`NAMES` and hold no name it lacks: the layer specs of
:data:`receptive.patterns.PATTERNS` (graphs), and, in ``gpu``, the generation forms (``GENERATION_METHODS``), the
causal variants (``VARIANTS``) and the approximation lab's methods (``gpu.approx.METHODS``); each table checks its
names with :func:`check_names` when it is built. A name means one key set wherever it appears, with one exception
still standing: causal ``sa``. In a model (the generation form, ``gpu.hf.register("sa", m)``, the harness) it is the
band among the keys before the query; as a graph (``receptive``'s ``sa`` with ``causal=True``) and on tensors
(``gpu.attention.sa_attention(..., causal=True)``, the causal variant ``sa``) it is the paper's permuted band masked
to the past, the key set the approximation lab and the harness call ``sa-band``. ``w`` is a window of positions,
``m`` a method's budget (keys per query for the sparse methods).
"""

from __future__ import annotations

from collections.abc import Iterable

#: name -> the key set (or computation) it stands for, one line each
NAMES: dict[str, str] = {
    # windows and Stochastic Attention
    "swa": "sliding window: the w keys around the query (causal: the w - 1 before it and itself)",
    "swa+sink": "a sliding window of m - 1 keys and the first position (one attention sink)",
    "sa": "Stochastic Attention: the w slots around the query in a layer's random order (causal, in a model's "
    "generation form: the band among the keys before the query, about m keys; as a causal graph or tensor "
    "attention: the key set of sa-band)",
    "sa-band": "the paper's causal SA: the band of m slots around the query in a random order of the sequence, "
    "masked to the past in original positions (about (m + 1) / 2 keys)",
    "sa+sink": "SA's band of m - 1 and the first position",
    "sa-band+sink": "sa-band of m - 1 slots and the first position",
    "sa+swa": "SA and a sliding window in one layer: as a graph their union, in a model the mean of an SA path of "
    "m / 2 and a window of m / 2 (equal gates)",
    "sa-band+swa": "the mean of an sa-band path of m / 2 slots and a causal window of m / 2 keys (equal gates)",
    "sa+swa-union": "one softmax over an SA band of m / 2 and a sliding window of m / 2",
    "swa+sink+sa": "one softmax over a window of m - m/4 - 1, the first position and an SA band of m / 4",
    "full": "every key (causal: every earlier key and itself), as a graph",
    "exact": "exact attention, every key through SDPA: the graph full as a model's own attention",
    # causal variants of SA (receptive.patterns.causal_variants)
    "sa-ms": "multi-scale SA: each head takes SA's band of w in a permutation drawn within blocks of its distance "
    "scale (w, w^2, ..., n)",
    "sa-ms-eq": "sa-ms with each head's window shrunk to causal SA's expected keys per query",
    "sa-ms+swa": "sa-ms and a sliding window of w",
    "sa-ms+swa-eq": "sa-ms-eq and a sliding window of w",
    "kleinberg": "Kleinberg keys: random keys at distance d with probability ln(1 + 1/d) / ln(D + 1) (~ 1 / d)",
    "kleinberg-eq": "kleinberg with as many random keys as causal SA's expected keys per query (when causal)",
    "kleinberg+swa": "kleinberg and a sliding window of w",
    "kleinberg+swa-eq": "kleinberg-eq and a sliding window of w",
    "dilated": "dilated heads, LongNet-style: head k a window of w over every r_k-th position, r_k = w^(k-1)",
    "dilated-eq": "dilated with each head's window shrunk to causal SA's expected keys per query",
    "dilated+swa": "dilated and a sliding window of w",
    "dilated+swa-eq": "dilated-eq and a sliding window of w",
    # other sparse patterns (graphs of receptive.patterns)
    "global": "Longformer: a window of w and global tokens attending and attended by all",
    "sink": "StreamingLLM: a window of w and the first SINKS positions",
    "random": "k random keys per query, fresh per layer, and itself",
    "bigbird": "BigBird ITC: window, random and global blocks",
    "dilated-window": "Longformer's dilated window: w keys spaced DILATION apart",
    "longnet": "LongNet: dilated segments (w_i, r_i) = (SEGMENT a^i, a^i)",
    "chunk": "chunked attention: the query's own block of SIZE positions",
    "strided": "Sparse Transformer strided: the previous l positions and every l-th",
    "fixed": "Sparse Transformer fixed: the own block and c summary positions per block",
    # content-based routing (graphs on synthetic q, k; in a model on its q, k)
    "top-k": "the m keys of largest score per query (an oracle: reads every score)",
    "moba": "MoBA: the top blocks by q . mean(k), the query's own block causal",
    "reformer": "Reformer: queries and keys hashed by LSH, sorted together, attending within chunks",
    # the approximation lab's other methods (gpu.approx.METHODS)
    "routing": "Routing Transformer: k-means clusters of queries and keys, attending within a cluster",
    "hyperattention": "HyperAttention: sortLSH blocks and uniformly sampled columns",
    "kdeformer": "KDEformer: columns sampled by kernel-density importance",
    "linformer": "Linformer: keys and values mean-pooled to length m",
    "linformer-jl": "Linformer: keys and values projected to length m by separate random matrices",
    "nystromformer": "Nystromformer: the Nystrom approximation through m landmarks",
    "skyformer": "Skyformer: Nystrom on the Gaussian kernel of [Q; K] with m landmarks",
    "cholesky": "the rank-m pivoted Cholesky factor of exp([Q; K][Q; K]^T / sqrt d)",
    "loki": "Loki: the top m keys by scores in a low-dimensional PCA of the keys",
    "performer": "Performer: m positive orthogonal random features of the softmax kernel",
    "polysketch": "PolySketchFormer: a sketched polynomial kernel",
    "levattention": "LevAttention: the m keys of largest leverage score",
    "mla": "multi-head latent attention: keys and values through a latent of width m per token",
    "transmla": "TransMLA: a balanced latent of width m per token",
    "tpa": "Tensor Product Attention: per-token rank-m factors of keys and values",
    "svd": "the rank-m truncated SVD of the attention matrix (an oracle)",
}


def check_names(names: Iterable[str], table: str) -> None:
    """Refuse a table that holds a name :data:`NAMES` lacks (one line naming the table and the name).

    Parameters
    ----------
    names : iterable of str
        The table's names.
    table : str
        The table, for the message.

    Raises
    ------
    ValueError
        If a name is not in :data:`NAMES`.

    Examples
    --------
    >>> check_names(["swa", "sa-band"], "mine")
    >>> check_names(["swa", "lab:sa"], "mine")
    Traceback (most recent call last):
    ...
    ValueError: mine: the name 'lab:sa' is not in receptive.patterns.names.NAMES (one vocabulary; add it there)
    """
    unknown = [name for name in names if name not in NAMES]
    if unknown:
        raise ValueError(
            f"{table}: the name {unknown[0]!r} is not in receptive.patterns.names.NAMES (one vocabulary; add it there)"
        )


__all__ = ["NAMES", "check_names"]
