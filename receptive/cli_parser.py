"""The argument parser every ``python -m receptive...`` command uses."""

from __future__ import annotations

from graphs.cli_common import (
    FIGURE_SUFFIXES,
    OneLineErrorParser,
    given_options,
    output_file,
    output_folder,
    refuse_together,
)

# the parser and the output checks live in graphs (below receptive)
__all__ = [
    "FIGURE_SUFFIXES",
    "OneLineErrorParser",
    "comma_ints",
    "comma_names",
    "given_options",
    "output_file",
    "output_folder",
    "refuse_together",
]


def comma_names(option: str, text: str, allowed) -> list[str]:
    """``"sa,swa"`` -> ``["sa", "swa"]``, every name from ``allowed``; a ``ValueError`` naming ``option`` if not.

    Parameters
    ----------
    option : str
        The CLI flag, the first word of the message.
    text : str
        The comma-separated names (spaces around them are dropped).
    allowed : collection of str
        The names accepted.

    Returns
    -------
    list of str
        The names, in order.

    Raises
    ------
    ValueError
        If ``text`` holds no name or a name not in ``allowed``.

    Examples
    --------
    >>> from receptive.cli_parser import comma_names
    >>> comma_names("--patterns", "sa, swa", ("sa", "swa", "sa+swa"))
    ['sa', 'swa']
    >>> comma_names("--patterns", "full", ("sa", "swa"))
    Traceback (most recent call last):
    ...
    ValueError: --patterns: expected comma-separated names from sa, swa, got 'full'
    """
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names or any(name not in allowed for name in names):
        raise ValueError(f"{option}: expected comma-separated names from {', '.join(allowed)}, got {text!r}")
    return names


def comma_ints(option: str, text: str, low: int = 1) -> list[int]:
    """``"16,32"`` -> ``[16, 32]``, every value ``>= low``; a ``ValueError`` naming ``option`` if not.

    Parameters
    ----------
    option : str
        The CLI flag, the first word of the message.
    text : str
        The comma-separated integers.
    low : int, optional
        The smallest value accepted.

    Returns
    -------
    list of int
        The values, in order.

    Raises
    ------
    ValueError
        If ``text`` is not a comma-separated list of integers ``>= low``.

    Examples
    --------
    >>> from receptive.cli_parser import comma_ints
    >>> comma_ints("--n", "16,32")
    [16, 32]
    >>> comma_ints("--n", "0,16")
    Traceback (most recent call last):
    ...
    ValueError: --n: expected comma-separated integers >= 1, got '0,16'
    """
    try:
        values = [int(s) for s in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < low:
        raise ValueError(f"{option}: expected comma-separated integers >= {low}, got {text!r}")
    return values
