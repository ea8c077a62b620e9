"""Argument checks shared by ``graphs`` and ``receptive``.

A wrong type raises :class:`TypeError`, a value of the right type outside the allowed range raises
:class:`ValueError`; every message is one line that starts with the argument's name.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import numpy as np


def _kind(value) -> str:
    return f"{value!r} ({type(value).__name__})"


def check_int(name: str, value, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an ``int`` after checking its type and range.

    Parameters
    ----------
    name : str
        Argument name, the first word of any error message.
    value : object
        The value to check: a Python or NumPy integer (``bool`` is refused).
    low, high : int or None, optional
        Inclusive bounds; ``None`` leaves that side open.

    Returns
    -------
    int
        ``value`` converted to a Python ``int``.

    Raises
    ------
    TypeError
        If ``value`` is not an integer (``bool``, ``float``, ``str``, ``None``, ...).
    ValueError
        If ``value`` lies outside ``[low, high]``.

    Examples
    --------
    >>> check_int("n", 8, low=1)
    8
    >>> check_int("n", 0, low=1)
    Traceback (most recent call last):
    ...
    ValueError: n: expected an integer in [1, inf], got 0
    >>> check_int("n", 2.0)
    Traceback (most recent call last):
    ...
    TypeError: n: expected an integer, got 2.0 (float)
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {_kind(value)}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        lo = "-inf" if low is None else low
        hi = "inf" if high is None else high
        raise ValueError(f"{name}: expected an integer in [{lo}, {hi}], got {value}")
    return value


def check_real(
    name: str,
    value,
    low: float = -math.inf,
    high: float = math.inf,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` after checking its type and range.

    Parameters
    ----------
    name : str
        Argument name, the first word of any error message.
    value : object
        A real number (Python or NumPy; integers accepted, ``bool`` refused).
    low, high : float, optional
        Bounds of the allowed interval (default: the whole real line).
    low_open, high_open : bool, optional
        Exclude ``low`` (``high``) itself from the interval.

    Returns
    -------
    float
        ``value`` converted to a Python ``float``.

    Raises
    ------
    TypeError
        If ``value`` is not a real number (``bool``, ``str``, ``None``, complex, ...).
    ValueError
        If ``value`` is NaN or infinite or lies outside the interval.

    Examples
    --------
    >>> check_real("beta", 0.25, 0, 1)
    0.25
    >>> check_real("beta", 1.5, 0, 1)
    Traceback (most recent call last):
    ...
    ValueError: beta: expected a number in [0, 1], got 1.5
    >>> check_real("beta", "0.5", 0, 1)
    Traceback (most recent call last):
    ...
    TypeError: beta: expected a real number, got '0.5' (str)
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number, got {_kind(value)}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name}: expected a finite real number, got {value}")
    below = number <= low if low_open else number < low
    above = number >= high if high_open else number > high
    if below or above:
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise ValueError(f"{name}: expected a number in {interval}, got {value}")
    return number


def check_bool(name: str, value, *, none: bool = False) -> bool | None:
    """Return ``value`` as a ``bool`` if it is one (a NumPy bool included).

    Parameters
    ----------
    name : str
        Argument name, the first word of any error message.
    value : object
        The value to check.
    none : bool, optional
        Accept ``None`` too (returned as it is), as for a ``progress`` flag whose ``None`` means "on a terminal".

    Returns
    -------
    bool or None

    Raises
    ------
    TypeError
        If ``value`` is not a boolean (``0``/``1`` and strings are refused).

    Examples
    --------
    >>> check_bool("directed", True)
    True
    >>> check_bool("directed", 1)
    Traceback (most recent call last):
    ...
    TypeError: directed: expected a bool, got 1 (int)
    >>> check_bool("progress", None, none=True) is None
    True
    """
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if none and value is None:
        return None
    raise TypeError(f"{name}: expected a bool{' or None' if none else ''}, got {_kind(value)}")


def check_choice(name: str, value, allowed: Iterable[str]) -> str:
    """Return ``value`` if it is one of the strings ``allowed``.

    Parameters
    ----------
    name : str
        Argument name, the first word of any error message.
    value : object
        The value to check.
    allowed : iterable of str
        The accepted values.

    Returns
    -------
    str

    Raises
    ------
    TypeError
        If ``value`` is not a string.
    ValueError
        If ``value`` is a string outside ``allowed``.

    Examples
    --------
    >>> check_choice("reference", "lattice", ("random", "lattice"))
    'lattice'
    >>> check_choice("reference", "grid", ("random", "lattice"))
    Traceback (most recent call last):
    ...
    ValueError: reference: expected one of random, lattice, got 'grid'
    """
    allowed = tuple(allowed)
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected one of {', '.join(allowed)} (a string), got {_kind(value)}")
    if value not in allowed:
        raise ValueError(f"{name}: expected one of {', '.join(allowed)}, got {value!r}")
    return value


def check_instance(name: str, value, cls: type, what: str | None = None):
    """Return ``value`` if it is an instance of ``cls``.

    Parameters
    ----------
    name : str
        Argument name, the first word of any error message.
    value : object
        The value to check.
    cls : type
        The required class.
    what : str, optional
        How the message names the class (default ``cls.__qualname__``).

    Returns
    -------
    object
        ``value`` unchanged.

    Raises
    ------
    TypeError
        If ``value`` is not an instance of ``cls``.

    Examples
    --------
    >>> check_instance("label", "x", str)
    'x'
    >>> check_instance("label", 3, str)
    Traceback (most recent call last):
    ...
    TypeError: label: expected a str, got int
    """
    if not isinstance(value, cls):
        raise TypeError(f"{name}: expected a {what or cls.__qualname__}, got {type(value).__name__}")
    return value
