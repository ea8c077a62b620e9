"""Pattern names: the one registry :data:`PATTERNS`, layer specs ``NAME[:ARG...]`` and stack specs.

Every pattern has one name, registered once (:func:`register`: a :class:`Kind`, its integer arguments and its
builder), and is built from that name in one of two spellings of the same thing:

* a layer spec ``NAME[:ARG...]`` (``parse_layer``, :func:`pattern_from_spec`), e.g. ``swa:1024``,
  ``global:512:2``, ``bigbird:64:3:3:2``, ``chunk:8192``; a stack spec is comma-separated layer specs with ``K*``
  repetition, ``"5*swa:1024,full"`` (``parse_stack``, :func:`stack_from_spec`), cycled to the depth;
* :func:`make_pattern` ``(name, n, w, ...)``, for the names set by a window (``Kind.windowed``): the spec
  ``NAME:w`` with its other arguments at their defaults (and SA's per-layer permutations, if given).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from graphs.memory import check_memory

from ..validation import check_bool, check_int
from .base import Pattern
from .blocks import BigBird, Chunked
from .causal_variants import make_variant, variant_names
from .dilated import DilatedWindow, LongNet
from .global_tokens import SinkWindow, WindowGlobal
from .local import FullAttention, SlidingWindow
from .names import check_names
from .random_keys import RandomKeys
from .sparse_transformer import Fixed, Strided
from .stack import LayerStack
from .stochastic import GatedSAPlusSWA, StochasticAttention
from .synthetic_content import SyntheticContent


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
    """A registered pattern name: its arguments and ``build(n, causal, circular, seed, *args)``.

    Attributes
    ----------
    name : str
        The pattern's name, the first word of its layer spec.
    params : tuple of Param
        Its integer arguments, in spec order.
    build : callable
        ``build(n, causal, circular, seed, *values) -> Pattern``, and the keyword ``permutations`` (one per layer, or
        ``None`` to draw them) where :attr:`permutations` is true.
    summary : str
        One line for listings.
    circular : bool, default False
        Whether the pattern is defined on a circular sequence too.
    permutations : bool, default False
        Whether ``build`` takes the layers' permutations (SA and SA+SWA).

    Examples
    --------
    >>> PATTERNS["global"].usage, PATTERNS["global"].windowed, PATTERNS["chunk"].windowed
    ('global:W:[GLOBALS=1]', True, False)
    """

    name: str
    params: tuple[Param, ...]
    build: Callable[..., Pattern]
    summary: str
    circular: bool = False
    permutations: bool = False

    @property
    def usage(self) -> str:
        """The layer spec's form, e.g. ``global:W:[GLOBALS=1]`` (optional arguments in brackets, with defaults)."""
        parts = [self.name]
        for p in self.params:
            parts.append(p.name.upper() if p.default is None else f"[{p.name.upper()}={p.default}]")
        return ":".join(parts)

    @property
    def windowed(self) -> bool:
        """Whether a window alone sets the pattern (:func:`make_pattern`): no arguments, or ``W`` first and defaults
        for the rest."""
        return not self.params or (self.params[0] is W and all(p.default is not None for p in self.params[1:]))


W = Param("w", "keys per query, itself included")

#: every pattern name, in listing order: name -> :class:`Kind`
PATTERNS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Add a pattern name to the registry (used by ``registry`` itself and by extensions).

    Parameters
    ----------
    kind : Kind
        The new name, its arguments and builder.

    Returns
    -------
    Kind
        ``kind``, now in :data:`PATTERNS`.

    Raises
    ------
    ValueError
        If the name is registered already.

    Examples
    --------
    >>> register(PATTERNS["swa"])
    Traceback (most recent call last):
    ...
    ValueError: name: 'swa' is registered already
    """
    if kind.name in PATTERNS:
        raise ValueError(f"name: {kind.name!r} is registered already")
    check_names([kind.name], "receptive.patterns.PATTERNS")
    PATTERNS[kind.name] = kind
    return kind


register(
    Kind(
        "swa",
        (W,),
        lambda n, causal, circular, seed, w: SlidingWindow(n, w, causal, circular),
        "sliding window of W keys",
        circular=True,
    )
)
register(
    Kind(
        "sa",
        (W,),
        lambda n, causal, circular, seed, w, permutations=None: StochasticAttention(
            n, w, causal, circular, seed, permutations
        ),
        "Stochastic Attention: a band of W slots over a fresh random permutation per layer",
        circular=True,
        permutations=True,
    )
)
register(
    Kind(
        "sa+swa",
        (W, Param("w_swa", "keys of the SWA path (default W)", 0)),
        lambda n, causal, circular, seed, w, w_swa, permutations=None: GatedSAPlusSWA(
            n, w, causal, circular, seed, permutations, w_swa=w_swa or None
        ),
        "gated SA+SWA: the union of an SA band and a sliding window",
        circular=True,
        permutations=True,
    )
)
register(
    Kind(
        "full",
        (),
        lambda n, causal, circular, seed: FullAttention(n, causal),
        "every (earlier) key",
        circular=True,  # every key either way
    )
)
for _name in variant_names():  # the causal SA variants: sa-ms, kleinberg, dilated (+swa, -eq)
    register(
        Kind(
            _name,
            (W,),
            (lambda name: lambda n, causal, circular, seed, w: make_variant(name, n, w, causal, circular, seed))(_name),
            f"{_name}: a causal SA variant with a window of W keys (receptive.patterns.causal_variants)",
            circular=True,
        )
    )
del _name

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


register(
    Kind(
        "top-k",
        (Param("k", "keys per query with the largest scores"),),
        lambda n, causal, circular, seed, k: SyntheticContent("top-k", n, causal, seed, k_keys=k),
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
        "reformer",
        (Param("buckets", "hash buckets", 8), Param("rounds", "hash rounds", 1), Param("chunk", "chunk length", 64)),
        lambda n, causal, circular, seed, b, r, c: SyntheticContent(
            "reformer", n, causal, seed, buckets=b, rounds=r, chunk=c
        ),
        "Reformer LSH routing on synthetic Gaussian q, k",
    )
)


def make_pattern(
    name: str,
    n: int,
    w: int,
    causal: bool = False,
    circular: bool = False,
    seed: int = 0,
    permutations: Sequence | None = None,
) -> Pattern:
    """Build a pattern set by a window, by its name in :data:`PATTERNS`.

    The same pattern as the layer spec ``"NAME:w"`` (:func:`pattern_from_spec`), its other arguments at their
    defaults. The names set by a window (``Kind.windowed``) are ``swa``, ``sa``, ``sa+swa``, ``full``, ``global``,
    ``sink`` and the causal SA variants (``sa-ms``, ``kleinberg``, ``dilated``, with ``+swa`` / ``-eq`` forms); the
    others (``bigbird``, ``chunk``, ...) are built from their layer specs.

    Parameters
    ----------
    name : str
        A name of :data:`PATTERNS` set by a window.
    n : int
        Sequence length.
    w : int
        Keys per query, itself included (ignored by ``full``).
    causal : bool, default False
        Attend only to keys ``j <= i``.
    circular : bool, default False
        Windows wrap around (for the patterns defined on a circular sequence).
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
        If ``name`` is unknown or not set by a window, ``circular`` is asked of a pattern without a circular form,
        ``permutations`` are given to a pattern that takes none, or a value is out of range.

    Examples
    --------
    >>> from receptive import make_pattern
    >>> make_pattern("sa+swa", 1024, 16, causal=True).name
    'sa+swa'
    >>> make_pattern("global", 64, 8).describe() == pattern_from_spec("global:8", 64).describe()
    True

    References
    ----------
    Jin & Sui 2026, Stochastic Attention, arXiv 2604.00754 (``sa``, ``sa+swa``); Beltagy et al. 2020, Longformer,
    arXiv 2004.05150 (``swa``, ``global``); Xiao et al. 2023, StreamingLLM, arXiv 2309.17453 (``sink``); Kleinberg
    2000, "Navigation in a small world", Nature 406 (``kleinberg``); Ding et al. 2023, LongNet, arXiv 2307.02486
    (``dilated``).
    """
    if not isinstance(name, str):
        raise TypeError(f"name: expected a pattern name (str), got {type(name).__name__}")
    kind = PATTERNS.get(name)
    if kind is None:
        raise ValueError(f"name: unknown pattern {name!r}; choose from {', '.join(PATTERNS)}")
    if not kind.windowed:
        raise ValueError(f"name: {name} is not set by a window; build it from its layer spec {kind.usage}")
    if check_bool("circular", circular) and not kind.circular:
        raise ValueError(f"circular: {name} is defined on a truncated sequence only")
    values = [w if param is W else param.default for param in kind.params]
    if kind.permutations:
        return kind.build(n, causal, circular, seed, *values, permutations=permutations)
    if permutations is not None:
        raise ValueError(f"permutations: {name} takes none (sa and sa+swa do); pass None")
    return kind.build(n, causal, circular, seed, *values)


def parse_layer(spec: str, default_w: int | None = None, argument: str = "stack") -> tuple[Kind, tuple[int, ...]]:
    """``"NAME[:ARG...]"`` -> (kind, integer arguments with defaults filled in). ``default_w`` fills a missing
    window ``W`` (the ``--patterns`` form); without it a missing required argument is an error. ``argument`` names
    what the spec came from in error messages.

    Parameters
    ----------
    spec : str
        ``NAME[:ARG...]``, a name of :data:`PATTERNS`.
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
    kind = PATTERNS.get(name.strip())
    if kind is None:
        raise ValueError(f"{argument}: unknown pattern {name.strip()!r} in {text!r}; choose from {', '.join(PATTERNS)}")
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
        A layer spec (``parse_layer``).
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
        As ``parse_layer``, for ``circular`` with a kind that has no circular form, or for values the pattern
        refuses.

    Examples
    --------
    >>> pattern_from_spec("global:16:2", 64).describe()
    'global w=16 globals=2'
    """
    kind, values = parse_layer(spec, default_w, argument)
    if check_bool("circular", circular) and not kind.circular:
        raise ValueError(f"circular: {kind.name} (in {argument}) is defined on a truncated sequence only")
    try:
        return kind.build(n, causal, circular, seed, *values)
    except ValueError as exc:  # an argument written in the spec is out of range: name the spec's flag first
        name, sep, _ = str(exc).partition(":")
        if sep and name not in _SHARED and ":" in spec:
            raise ValueError(f"{argument}: {spec!r}: {exc}") from None
        raise


#: the arguments every layer of a spec shares, set by the caller rather than written in the spec
_SHARED = ("n", "causal", "circular", "seed")
#: bytes one layer of a stack's period takes, at most (its spec string, the list slots, the stack's slot)
BYTES_PER_LAYER = 256


def parse_stack(spec: str, argument: str = "stack", depth: int | None = None) -> list[str]:
    """``"5*swa:1024,full"`` -> the period as layer specs ``["swa:1024"] * 5 + ["full"]`` (validated).

    Parameters
    ----------
    spec : str
        Comma-separated layer specs, each optionally ``K*`` repeated.
    argument : str, default "stack"
        The argument named in error messages.
    depth : int or None, default None
        Keep the first ``depth`` layers of the period only (the layers a stack of that depth runs).

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
    MemoryError
        If the period kept would not fit :data:`graphs.memory.DEFAULT_MAX_MEMORY` (:data:`BYTES_PER_LAYER` each).

    Examples
    --------
    >>> parse_stack("2*swa:8,full")
    ['swa:8', 'swa:8', 'full']
    >>> parse_stack("1000000000000*swa:8", depth=3)
    ['swa:8', 'swa:8', 'swa:8']
    >>> parse_stack("1000000000000*swa:8", argument="--stack")
    Traceback (most recent call last):
    ...
    MemoryError: --stack: 1000000000000 layers need about 232.83 TiB, more than the limit of 3.00 GiB
    """
    if not isinstance(spec, str):
        raise TypeError(
            f"{argument}: expected comma-separated layer specs NAME[:ARG...] (a string), got {type(spec).__name__}"
        )
    if not spec.strip():
        raise ValueError(f"{argument}: expected comma-separated layer specs NAME[:ARG...], K* to repeat; got nothing")
    items = []
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
        items.append((layer.strip(), times))
    kept = sum(times for _, times in items)
    if depth is not None:
        kept = min(kept, check_int("depth", depth, 1))
    check_memory(argument, kept * BYTES_PER_LAYER, f"{kept} layers")
    period: list[str] = []
    for layer, times in items:
        period += [layer] * min(times, kept - len(period))
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
        A stack spec (``parse_stack``).
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
        As ``parse_stack`` and :func:`pattern_from_spec`, or if ``depth`` is not an integer.
    ValueError
        As ``parse_stack`` and :func:`pattern_from_spec`, or if ``depth < 1``.

    Examples
    --------
    >>> from receptive import coverage_by_layer
    >>> stack = stack_from_spec("2*swa:8,full", 64, 6)
    >>> stack.max_layers, coverage_by_layer(stack, max_layers=6).full_coverage_layer  # layer 3 sees everything
    (6, 3)
    """
    check_int("depth", depth, 1)
    period = parse_stack(spec, argument, depth)
    built: dict[str, Pattern] = {}
    for layer in period:
        if layer not in built:
            built[layer] = pattern_from_spec(layer, n, causal, circular, seed, argument=argument)
    return LayerStack([built[layer] for layer in period], depth, name=name or spec)
