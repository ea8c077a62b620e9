"""Pattern names: the registry behind ``make_pattern``, layer specs ``NAME[:ARG...]`` and stack specs.

Two ways to name a pattern:

* :func:`make_pattern` ``(name, n, w, ...)``: the window-parameterised patterns of :data:`PATTERNS`.
* A layer spec ``NAME[:ARG...]`` (:data:`KINDS`, :func:`parse_layer`), e.g. ``swa:1024``, ``global:512:2``,
  ``bigbird:64:3:3:2``, ``chunk:8192``; a stack spec is comma-separated layer specs with ``K*`` repetition,
  ``"5*swa:1024,full"`` (:func:`parse_stack`, :func:`stack_from_spec`), cycled to the depth.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..validation import check_bool, check_int
from .base import Pattern
from .blocks import BigBird, Chunked
from .causal_variants import registry_constructors
from .dilated import DilatedWindow, LongNet
from .global_tokens import SinkWindow, WindowGlobal
from .local import FullAttention, SlidingWindow
from .random_keys import RandomKeys
from .sparse_transformer import Fixed, Strided
from .stack import LayerStack
from .stochastic import GatedSAPlusSWA, StochasticAttention

#: name -> constructor(n, w, causal, circular, seed, permutations)
PATTERNS = {
    "swa": lambda n, w, causal, circular, seed, permutations: SlidingWindow(n, w, causal, circular),
    "sa": lambda n, w, causal, circular, seed, permutations: StochasticAttention(
        n, w, causal, circular, seed, permutations
    ),
    "sa+swa": lambda n, w, causal, circular, seed, permutations: GatedSAPlusSWA(
        n, w, causal, circular, seed, permutations
    ),
    "full": lambda n, w, causal, circular, seed, permutations: FullAttention(n, causal),
}
PATTERNS.update(registry_constructors())  # the causal SA variants: sa-ms, kleinberg, dilated (+swa, -eq)


def make_pattern(
    name: str,
    n: int,
    w: int,
    causal: bool = False,
    circular: bool = False,
    seed: int = 0,
    permutations: Sequence | None = None,
) -> Pattern:
    """Build a window-parameterised pattern by name.

    Parameters
    ----------
    name : str
        A key of :data:`PATTERNS`: ``swa``, ``sa``, ``sa+swa``, ``full`` and the causal SA variants (``sa-ms``,
        ``kleinberg``, ``dilated``, with ``+swa`` / ``-eq`` forms). The other zoo patterns are built from layer
        specs (:func:`pattern_from_spec`).
    n : int
        Sequence length.
    w : int
        Keys per query, itself included (ignored by ``full``).
    causal : bool, default False
        Attend only to keys ``j <= i``.
    circular : bool, default False
        Windows wrap around.
    seed : int, default 0
        Seed of the random draws (permutations, random keys).
    permutations : sequence of array_like, optional
        One permutation per layer for ``sa`` and ``sa+swa``.

    Returns
    -------
    Pattern

    Raises
    ------
    TypeError
        If ``name`` is not a string, an integer argument is not an integer, ``causal`` or ``circular`` is not a
        bool, or ``permutations`` is not a sequence of integer arrays.
    ValueError
        If ``name`` is unknown or a value is out of range.

    Examples
    --------
    >>> from receptive import make_pattern
    >>> make_pattern("sa+swa", 1024, 16, causal=True).name
    'sa+swa'

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754 (``sa``, ``sa+swa``); Beltagy et al. 2020, Longformer,
    arXiv 2004.05150 (``swa``); Kleinberg 2000, "Navigation in a small world", Nature 406 (``kleinberg``); Ding et
    al. 2023, LongNet, arXiv 2307.02486 (``dilated``).
    """
    if not isinstance(name, str):
        raise TypeError(f"name: expected a pattern name (str), got {type(name).__name__}")
    if name not in PATTERNS:
        raise ValueError(f"name: unknown pattern {name!r}; choose from {', '.join(PATTERNS)}")
    check_bool("circular", circular)  # checked here too: full attention ignores it
    return PATTERNS[name](n, w, causal, circular, seed, permutations)


@dataclass(frozen=True)
class Param:
    """One integer argument of a layer spec; ``default`` ``None`` means required.

    Attributes
    ----------
    name : str
        The argument's name (upper-cased in :attr:`Kind.usage`).
    help : str
        What it means, for error messages and ``--help``.
    default : int or None, default None
        Its value when the spec leaves it out; ``None``: required.

    Examples
    --------
    >>> Param("globals", "global tokens", 1)
    Param(name='globals', help='global tokens', default=1)
    """

    name: str
    help: str
    default: int | None = None


@dataclass(frozen=True)
class Kind:
    """A pattern name of the spec grammar: its arguments and ``build(n, causal, circular, seed, *args)``.

    Attributes
    ----------
    name : str
        The name a spec starts with.
    params : tuple of Param
        Its integer arguments, in spec order.
    build : callable
        ``build(n, causal, circular, seed, *values) -> Pattern``.
    summary : str
        One line for listings.
    circular : bool, default False
        Whether the pattern is defined on a circular sequence too.

    Examples
    --------
    >>> KINDS["global"].usage
    'global:W:[GLOBALS=1]'
    """

    name: str
    params: tuple[Param, ...]
    build: Callable[..., Pattern]
    summary: str
    circular: bool = False

    @property
    def usage(self) -> str:
        parts = [self.name]
        for p in self.params:
            parts.append(p.name.upper() if p.default is None else f"[{p.name.upper()}={p.default}]")
        return ":".join(parts)


W = Param("w", "keys per query, itself included")

KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Add a pattern name to the spec grammar (used by :mod:`.registry` itself and by extensions).

    Parameters
    ----------
    kind : Kind
        The new name, its arguments and builder.

    Returns
    -------
    Kind
        ``kind``, now in :data:`KINDS`.

    Raises
    ------
    ValueError
        If the name is registered already.

    Examples
    --------
    >>> register(KINDS["swa"])
    Traceback (most recent call last):
    ...
    ValueError: name: 'swa' is registered already
    """
    if kind.name in KINDS:
        raise ValueError(f"name: {kind.name!r} is registered already")
    KINDS[kind.name] = kind
    return kind


for _name in PATTERNS:
    if _name in ("full", "sa+swa"):
        continue
    register(
        Kind(
            _name,
            (W,),
            (lambda name: lambda n, causal, circular, seed, w: PATTERNS[name](n, w, causal, circular, seed, None))(
                _name
            ),
            f"{_name} with a window of W keys (see receptive.patterns)",
            circular=True,
        )
    )
register(
    Kind(
        "sa+swa",
        (W, Param("w_swa", "keys of the SWA path (default W)", 0)),
        lambda n, causal, circular, seed, w, w_swa: GatedSAPlusSWA(
            n, w, causal, circular, seed, None, w_swa=w_swa or None
        ),
        "gated SA+SWA: the union of an SA band and a sliding window",
        circular=True,
    )
)
register(Kind("full", (), lambda n, causal, circular, seed: FullAttention(n, causal), "every (earlier) key"))
register(
    Kind(
        "global",
        (W, Param("globals", "global tokens (the first positions)", 1)),
        lambda n, causal, circular, seed, w, g: WindowGlobal(n, w, g, causal),
        "Longformer: window + global tokens attending and attended by all",
    )
)
register(
    Kind(
        "sink",
        (W, Param("sinks", "attention sinks (the first positions)", 4)),
        lambda n, causal, circular, seed, w, s: SinkWindow(n, w, s, causal),
        "StreamingLLM: window + attention sinks",
    )
)
register(
    Kind(
        "random",
        (Param("k", "random keys per query, per layer"),),
        lambda n, causal, circular, seed, k: RandomKeys(n, k, causal, seed),
        "k random keys per query (fresh per layer) + itself",
    )
)
register(
    Kind(
        "bigbird",
        (
            Param("block", "block size", 64),
            Param("window", "window blocks", 3),
            Param("random", "random blocks per query block", 3),
            Param("globals", "global blocks (first and last)", 2),
        ),
        lambda n, causal, circular, seed, b, wb, r, g: BigBird(n, b, wb, r, g, causal, seed),
        "BigBird ITC: window, random and global blocks",
    )
)
register(
    Kind(
        "dilated-window",
        (W, Param("dilation", "gap between keys + 1")),
        lambda n, causal, circular, seed, w, r: DilatedWindow(n, w, r, causal),
        "dilated sliding window (Longformer): W keys spaced DILATION apart",
    )
)
register(
    Kind(
        "longnet",
        (Param("segment", "first segment length", 2048), Param("ratio", "ratio of segments and dilations", 2)),
        lambda n, causal, circular, seed, w0, a: LongNet(n, w0, a, causal),
        "LongNet dilated segments (w_i, r_i) = (SEGMENT a^i, a^i)",
    )
)
register(
    Kind(
        "chunk",
        (Param("size", "chunk length"),),
        lambda n, causal, circular, seed, c: Chunked(n, c, causal),
        "chunked (block-local) attention, Llama 4",
    )
)
register(
    Kind(
        "strided",
        (Param("stride", "window length and stride l"),),
        lambda n, causal, circular, seed, stride: Strided(n, stride, causal),
        "Sparse Transformer strided: previous l + every l-th",
    )
)
register(
    Kind(
        "fixed",
        (Param("block", "block length l"), Param("summary", "summary positions c per block", 1)),
        lambda n, causal, circular, seed, block, c: Fixed(n, block, c, causal),
        "Sparse Transformer fixed: own block + c summary positions per block",
    )
)


class SyntheticContent(Pattern):
    """A content-based layer (top-k, MoBA, Reformer LSH routing of :mod:`.content`) on synthetic queries and keys:
    layer ``l`` routes :func:`.content.random_qk` ``(n, 64, seed + l - 1)``, i.i.d. Gaussian, drawn when the layer is
    first used. A stand-in for the spec grammar, not a model's routing (pass real ``q, k`` to ``topk_pattern`` and
    friends for that); the scores cost ``O(n^2 d)`` per layer, so keep ``n`` to a few thousand.

    Parameters
    ----------
    kind : str
        ``"topk"``, ``"moba"`` or ``"lsh"``.
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
    >>> SyntheticContent("topk", 16, False, 0, k_keys=2).describe()
    'topk k_keys=2 (synthetic q, k)'
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


register(
    Kind(
        "topk",
        (Param("k", "keys per query with the largest scores"),),
        lambda n, causal, circular, seed, k: SyntheticContent("topk", n, causal, seed, k_keys=k),
        "top-k routing on synthetic Gaussian q, k",
    )
)
register(
    Kind(
        "moba",
        (Param("block", "key block length"), Param("top_blocks", "blocks per query, its own included", 3)),
        lambda n, causal, circular, seed, b, k: SyntheticContent("moba", n, causal, seed, block=b, top_blocks=k),
        "MoBA block routing on synthetic Gaussian q, k",
    )
)
register(
    Kind(
        "lsh",
        (Param("buckets", "hash buckets", 8), Param("rounds", "hash rounds", 1), Param("chunk", "chunk length", 64)),
        lambda n, causal, circular, seed, b, r, c: SyntheticContent(
            "lsh", n, causal, seed, buckets=b, rounds=r, chunk=c
        ),
        "Reformer LSH routing on synthetic Gaussian q, k",
    )
)


def parse_layer(spec: str, default_w: int | None = None, argument: str = "stack") -> tuple[Kind, tuple[int, ...]]:
    """``"NAME[:ARG...]"`` -> (kind, integer arguments with defaults filled in). ``default_w`` fills a missing
    window ``W`` (the ``--patterns`` form); without it a missing required argument is an error. ``argument`` names
    what the spec came from in error messages.

    Parameters
    ----------
    spec : str
        ``NAME[:ARG...]``, a name of :data:`KINDS`.
    default_w : int or None, default None
        The window to use when the spec leaves out a required ``W``.
    argument : str, default "stack"
        The argument (or CLI flag) named in error messages.

    Returns
    -------
    tuple
        ``(kind, values)``: the :class:`Kind` and its integer arguments, defaults filled in.

    Raises
    ------
    TypeError
        If ``spec`` is not a string.
    ValueError
        If the name is unknown, an argument is not an integer, there are too many, or a required one is missing.

    Examples
    --------
    >>> kind, values = parse_layer("global:512:2")
    >>> kind.name, values
    ('global', (512, 2))
    >>> parse_layer("swa", default_w=64)[1]
    (64,)
    >>> parse_layer("swa")
    Traceback (most recent call last):
    ...
    ValueError: stack: 'swa' needs W (keys per query, itself included): swa:W
    """
    if not isinstance(spec, str):
        raise TypeError(f"{argument}: expected a layer spec NAME[:ARG...] (a string), got {type(spec).__name__}")
    text = spec.strip()
    name, *raw = text.split(":")
    kind = KINDS.get(name.strip())
    if kind is None:
        raise ValueError(f"{argument}: unknown layer {name.strip()!r} in {text!r}; choose from {', '.join(KINDS)}")
    if len(raw) > len(kind.params):
        most = len(kind.params)
        raise ValueError(f"{argument}: {text!r} has {len(raw)} arguments; {kind.usage} takes at most {most}")
    values = []
    for k, param in enumerate(kind.params):
        if k < len(raw):
            try:
                values.append(int(raw[k]))
            except ValueError:
                raise ValueError(f"{argument}: {param.name} of {text!r} must be an integer, got {raw[k]!r}") from None
        elif param.default is not None:
            values.append(param.default)
        elif param is W and default_w is not None:
            values.append(default_w)
        else:
            raise ValueError(f"{argument}: {text!r} needs {param.name.upper()} ({param.help}): {kind.usage}")
    return kind, tuple(values)


def pattern_from_spec(
    spec: str,
    n: int,
    causal: bool = False,
    circular: bool = False,
    seed: int = 0,
    default_w: int | None = None,
    argument: str = "stack",
) -> Pattern:
    """One pattern from a layer spec, e.g. ``pattern_from_spec("global:512:2", n=4096)``.

    Parameters
    ----------
    spec : str
        A layer spec (:func:`parse_layer`).
    n : int
        Sequence length.
    causal : bool, default False
        Attend only to keys ``j <= i``.
    circular : bool, default False
        Windows wrap around (only for the kinds that allow it).
    seed : int, default 0
        Seed of the random draws.
    default_w : int or None, default None
        The window of a spec without ``W``.
    argument : str, default "stack"
        The argument named in error messages.

    Returns
    -------
    Pattern

    Raises
    ------
    TypeError
        If ``spec`` is not a string, ``circular`` is not a bool, or from the pattern's constructor.
    ValueError
        As :func:`parse_layer`, for ``circular`` with a kind that has no circular form, or for values the pattern
        refuses.

    Examples
    --------
    >>> pattern_from_spec("global:16:2", 64).describe()
    'global w=16 globals=2'
    """
    kind, values = parse_layer(spec, default_w, argument)
    if check_bool("circular", circular) and not kind.circular:
        raise ValueError(f"circular: {kind.name} is defined on a truncated sequence only")
    names = [param.name for param in kind.params]
    try:
        return kind.build(n, causal, circular, seed, *values)
    except ValueError as exc:  # an argument written in the spec is out of range: name the spec's flag first
        name, sep, _ = str(exc).partition(":")
        if sep and name in names and ":" in spec:
            raise ValueError(f"{argument}: {spec!r}: {exc}") from None
        raise


def parse_stack(spec: str, argument: str = "stack") -> list[str]:
    """``"5*swa:1024,full"`` -> the period as layer specs ``["swa:1024"] * 5 + ["full"]`` (validated).

    Parameters
    ----------
    spec : str
        Comma-separated layer specs, each optionally ``K*`` repeated.
    argument : str, default "stack"
        The argument named in error messages.

    Returns
    -------
    list of str
        One layer spec per layer of the period.

    Raises
    ------
    TypeError
        If ``spec`` is not a string.
    ValueError
        If ``spec`` is empty, a repetition is not an integer ``>= 1``, or a layer spec is invalid.

    Examples
    --------
    >>> parse_stack("2*swa:8,full")
    ['swa:8', 'swa:8', 'full']
    """
    if not isinstance(spec, str):
        raise TypeError(
            f"{argument}: expected comma-separated layer specs NAME[:ARG...] (a string), got {type(spec).__name__}"
        )
    if not spec.strip():
        raise ValueError(f"{argument}: expected comma-separated layer specs NAME[:ARG...], K* to repeat; got nothing")
    period = []
    for item in spec.split(","):
        item = item.strip()
        count, star, layer = item.partition("*")
        if not star:
            count, layer = "1", item
        try:
            times = int(count)
        except ValueError:
            raise ValueError(f"{argument}: repetition of {item!r} must be an integer K in K*NAME") from None
        if times < 1 or not layer.strip():
            raise ValueError(f"{argument}: {item!r}: expected K*NAME[:ARG...] with K >= 1")
        parse_layer(layer, argument=argument)
        period += [layer.strip()] * times
    return period


def stack_from_spec(
    spec: str,
    n: int,
    depth: int,
    causal: bool = False,
    circular: bool = False,
    seed: int = 0,
    name: str | None = None,
    argument: str = "stack",
) -> LayerStack:
    """The stack of a spec, cycled to ``depth`` layers; layers with the same spec share one pattern object.

    Parameters
    ----------
    spec : str
        A stack spec (:func:`parse_stack`).
    n : int
        Sequence length.
    depth : int
        Layers of the stack (the period is cycled).
    causal, circular : bool, default False
        As :func:`pattern_from_spec`.
    seed : int, default 0
        Seed of the random draws.
    name : str or None, default None
        The stack's name (default: ``spec``).
    argument : str, default "stack"
        The argument named in error messages.

    Returns
    -------
    LayerStack

    Raises
    ------
    TypeError
        As :func:`parse_stack` and :func:`pattern_from_spec`, or if ``depth`` is not an integer.
    ValueError
        As :func:`parse_stack` and :func:`pattern_from_spec`, or if ``depth < 1``.

    Examples
    --------
    >>> from receptive import coverage_by_layer
    >>> stack = stack_from_spec("2*swa:8,full", 64, 6)
    >>> stack.max_layers, coverage_by_layer(stack, max_layers=6).full_coverage_layer  # layer 3 sees everything
    (6, 3)
    """
    period = parse_stack(spec, argument)
    check_int("depth", depth, 1)
    built: dict[str, Pattern] = {}
    for layer in period:
        if layer not in built:
            built[layer] = pattern_from_spec(layer, n, causal, circular, seed)
    return LayerStack([built[layer] for layer in period], depth, name=name or spec)
