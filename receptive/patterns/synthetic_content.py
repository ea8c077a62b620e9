"""Content-based routing (top-k, MoBA, Reformer LSH of :mod:`.content`) on synthetic queries and keys, as a
pattern of the layer-spec grammar (``top-k:K``, ``moba:BLOCK``, ``reformer``: ``registry``)."""

from __future__ import annotations

from .base import Pattern


class SyntheticContent(Pattern):
    """A content-based layer (top-k, MoBA, Reformer LSH routing of :mod:`.content`) on synthetic queries and keys:
    layer ``l`` routes :func:`.content.random_qk` ``(n, 64, seed + l - 1)``, i.i.d. Gaussian, drawn when the layer is
    first used. A stand-in for the spec grammar, not a model's routing (pass real ``q, k`` to ``topk_pattern`` and
    friends for that); the scores cost ``O(n^2 d)`` per layer, so keep ``n`` to a few thousand.

    Parameters
    ----------
    kind : str
        ``"top-k"``, ``"moba"`` or ``"reformer"``.
    n : int
        Tokens.
    causal : bool
        Causal routing.
    seed : int
        Seed of layer 1's queries and keys.
    **params
        The router's parameters (:func:`.content.random_content_pattern`).

    Examples
    --------
    >>> SyntheticContent("top-k", 16, False, 0, k_keys=2).describe()
    'top-k k_keys=2 (synthetic q, k)'
    """

    def __init__(self, kind: str, n: int, causal: bool, seed: int, **params):
        super().__init__(n, causal)
        self.name, self.params, self.seed = kind, params, seed
        self._layers: dict[int, tuple] = {}

    def layer_ops(self, layer: int):
        layer = self._check_layer(layer)
        if layer not in self._layers:
            from .content import random_content_pattern

            one = random_content_pattern(
                self.name, self.n, 1, seed=self.seed + layer - 1, causal=self.causal, **self.params
            )
            self._layers[layer] = one.layer_ops(1)
        return self._layers[layer]

    def describe(self) -> str:
        return f"{self.name} " + " ".join(f"{k}={v}" for k, v in self.params.items()) + " (synthetic q, k)"
