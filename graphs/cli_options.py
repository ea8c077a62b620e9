"""The options several commands share, each added by one function so that a flag means the same thing, with the
same help and checks, in every command: :func:`add_json_option` (``--json [PATH]``), :func:`add_csv_option`
(``--csv [PATH]``), :func:`add_seed_option` (``--seed``), :func:`add_seeds_option` (``--seed`` and ``--seeds``),
:func:`add_progress_option` (``--no-progress``), :func:`add_n_option` (a sequence length), :func:`add_w_option` (a
window, ``--w``), :func:`add_out_option` (``--out DIR``) and :func:`add_budget_option` (``--budget`` or
``--budgets``); :func:`write_output` and :func:`stdout_output` write what ``--json`` and ``--csv`` name;
:func:`comma_names` and :func:`comma_ints` read comma-separated values.
"""

from __future__ import annotations

import argparse
import sys

from .cli_common import OneLineErrorParser, output_file, output_folder, write_atomic  # noqa: F401 (Examples)

__all__ = [
    "add_budget_option",
    "add_csv_option",
    "add_json_option",
    "add_n_option",
    "add_out_option",
    "add_progress_option",
    "add_seed_option",
    "add_seeds_option",
    "add_w_option",
    "comma_ints",
    "comma_names",
    "stdout_output",
    "write_output",
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


def _int_at_least(minimum: int):
    """An ``argparse`` ``type=``: an integer ``>= minimum`` (argparse names a non-integer "invalid int value")."""

    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        return value

    parse.__name__ = "int"
    return parse


def _comma_ints_text(option: str):
    """An ``argparse`` ``type=``: comma-separated integers ``>= 1`` (:func:`comma_ints`), kept as the text given."""

    def parse(text: str) -> str:
        try:
            comma_ints(option, text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{option}: ")) from None
        return text

    parse.__name__ = "comma-separated integers"
    return parse


#: where ``--json`` and ``--csv`` write, and what ``-`` (or the flag alone) means
_OUTPUT_HELP = (
    "the result {what}: to PATH ({suffix}), or to stdout in place of the table with '-' or no PATH "
    "(default: not written)"
)


def _add_output(parser: argparse.ArgumentParser, flag: str, what: str, suffix: str) -> argparse.Action:
    """``flag [PATH]``: a file checked as the line is parsed, ``-`` or the flag alone for standard output."""
    return parser.add_argument(
        flag,
        nargs="?",
        const="-",
        metavar="PATH",
        type=output_file(flag, stdout=True, suffixes=(suffix,)),
        help=_OUTPUT_HELP.format(what=what, suffix=suffix),
    )


def add_json_option(parser: argparse.ArgumentParser) -> argparse.Action:
    """Add ``--json [PATH]``: the command's result as JSON, written to ``PATH`` or, for ``-`` or the flag alone,
    printed to standard output in place of the table.

    The path is checked as the line is parsed (:func:`output_file`: a writable place, a ``.json`` name); the value
    is ``None`` (not given), ``"-"`` or a :class:`pathlib.Path`, as :func:`write_output` takes it.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.

    Returns
    -------
    argparse.Action
        The option added.

    Examples
    --------
    >>> parser = OneLineErrorParser(prog="demo")
    >>> _ = add_json_option(parser)
    >>> [parser.parse_args(argv).json for argv in ([], ["--json"], ["--json", "-"], ["--json", "out.json"])]
    [None, '-', '-', PosixPath('out.json')]
    """
    return _add_output(parser, "--json", "as JSON", ".json")


def add_csv_option(parser: argparse.ArgumentParser) -> argparse.Action:
    """Add ``--csv [PATH]``: the command's rows as CSV, written to ``PATH`` or, for ``-`` or the flag alone, printed
    to standard output in place of the table (as :func:`add_json_option`, with a ``.csv`` name).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.

    Returns
    -------
    argparse.Action
        The option added.

    Examples
    --------
    >>> parser = OneLineErrorParser(prog="demo")
    >>> _ = add_csv_option(parser)
    >>> parser.parse_args(["--csv"]).csv, parser.parse_args(["--csv", "rows.csv"]).csv
    ('-', PosixPath('rows.csv'))
    """
    return _add_output(parser, "--csv", "rows as CSV", ".csv")


def stdout_output(outputs: dict) -> str | None:
    """The flag among ``outputs`` (flag -> value of :func:`add_json_option` or :func:`add_csv_option`) that prints to
    standard output (``"-"``), or ``None``; a ``ValueError`` naming both when two would.

    Parameters
    ----------
    outputs : dict of str to object
        E.g. ``{"--json": args.json, "--csv": args.csv}``.

    Returns
    -------
    str or None
        The flag whose output takes standard output (the command then prints no table), or ``None``.

    Raises
    ------
    ValueError
        ``"--csv: prints to stdout as --json does; give one of them a PATH"``.

    Examples
    --------
    >>> stdout_output({"--json": "-", "--csv": None}), stdout_output({"--json": None})
    ('--json', None)
    >>> stdout_output({"--json": "-", "--csv": "-"})
    Traceback (most recent call last):
    ...
    ValueError: --csv: prints to stdout as --json does; give one of them a PATH
    """
    printing = [flag for flag, value in outputs.items() if value == "-"]
    if len(printing) > 1:
        raise ValueError(f"{printing[1]}: prints to stdout as {printing[0]} does; give one of them a PATH")
    return printing[0] if printing else None


def write_output(target, text: str, option: str) -> None:
    """Write ``text`` where an output option points: nothing for ``None``, standard output for ``"-"``, else the file
    (whole or not at all, :func:`write_atomic`).

    Parameters
    ----------
    target : str, pathlib.Path or None
        The option's value (:func:`add_json_option`, :func:`add_csv_option`).
    text : str
        What to write, its last newline included.
    option : str
        The flag (the first word of an error message).

    Raises
    ------
    ValueError
        If the file cannot be written.

    Examples
    --------
    >>> write_output("-", '{"n": 8}\\n', "--json")
    {"n": 8}
    >>> write_output(None, "nothing", "--json")
    """
    if target is None:
        return
    if str(target) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_atomic(target, text, option=option)


def add_seed_option(parser: argparse.ArgumentParser, default: int = 0) -> argparse.Action:
    """Add ``--seed``: the seed of every random draw of the command (permutations, sampled positions), ``>= 0``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    default : int, default 0
        The seed when the flag is not given.

    Returns
    -------
    argparse.Action
        The option added.

    Examples
    --------
    >>> parser = OneLineErrorParser(prog="demo")
    >>> _ = add_seed_option(parser)
    >>> parser.parse_args([]).seed, parser.parse_args(["--seed", "7"]).seed
    (0, 7)
    """
    return parser.add_argument(
        "--seed",
        type=_int_at_least(0),
        default=default,
        help="seed of every random draw: permutations, sampled positions (an integer >= 0; default %(default)s)",
    )


def add_seeds_option(parser: argparse.ArgumentParser, default: int) -> argparse.Action:
    """Add ``--seed`` (the first seed, ``>= 0``, default 0) and ``--seeds`` (how many: the command runs seeds
    ``SEED .. SEED + SEEDS - 1``, ``>= 1``), for a command that repeats its random draws over several seeds.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    default : int
        How many seeds when ``--seeds`` is not given.

    Returns
    -------
    argparse.Action
        The ``--seeds`` option (``--seed`` is added before it).

    Examples
    --------
    >>> parser = OneLineErrorParser(prog="demo")
    >>> _ = add_seeds_option(parser, 3)
    >>> args = parser.parse_args(["--seed", "4"])
    >>> list(range(args.seed, args.seed + args.seeds))
    [4, 5, 6]
    """
    parser.add_argument(
        "--seed",
        type=_int_at_least(0),
        default=0,
        help="the first seed of --seeds (an integer >= 0; default %(default)s)",
    )
    return parser.add_argument(
        "--seeds",
        type=_int_at_least(1),
        default=default,
        help="how many seeds: SEED .. SEED + SEEDS - 1, each a fresh draw (an integer >= 1; default %(default)s)",
    )


def add_progress_option(parser: argparse.ArgumentParser, *aliases: str) -> argparse.Action:
    """Add ``--no-progress``: no progress bar (without it, one shows on a terminal only).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    *aliases : str
        Other spellings of the same flag that command lines already use (``"--quiet"``); the help lists them.

    Returns
    -------
    argparse.Action
        The option added (destination ``no_progress``).

    Examples
    --------
    >>> parser = OneLineErrorParser(prog="demo")
    >>> _ = add_progress_option(parser, "--quiet")
    >>> parser.parse_args(["--quiet"]).no_progress, parser.parse_args([]).no_progress
    (True, False)
    """
    return parser.add_argument(
        "--no-progress",
        *aliases,
        dest="no_progress",
        action="store_true",
        help="no progress bar (without the flag, one shows on a terminal only)",
    )


def add_n_option(parser: argparse.ArgumentParser, default: int, minimum: int = 2) -> argparse.Action:
    """Add ``--n``: the sequence length in tokens, an integer ``>= minimum`` checked as the line is parsed.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    default : int
        The length when the flag is not given.
    minimum : int, default 2
        The shortest length the command takes.

    Returns
    -------
    argparse.Action
        The option added.

    Examples
    --------
    >>> import contextlib, io
    >>> parser = OneLineErrorParser(prog="demo")
    >>> _ = add_n_option(parser, 4096)
    >>> parser.parse_args([]).n
    4096
    >>> err = io.StringIO()
    >>> with contextlib.redirect_stderr(err):
    ...     try:
    ...         parser.parse_args(["--n", "1"])
    ...     except SystemExit:
    ...         pass
    >>> err.getvalue()
    'demo: error: --n: expected an integer >= 2, got 1 (see --help)\\n'
    """
    help = f"sequence length in tokens (an integer >= {minimum}; default %(default)s)"
    return parser.add_argument("--n", type=_int_at_least(minimum), default=default, help=help)


def add_w_option(parser: argparse.ArgumentParser, default: int | None, shown: int | None = None) -> argparse.Action:
    """Add ``--w``: the attention window, the keys each query reads with itself included, an integer ``>= 1``
    checked as the line is parsed.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    default : int or None
        The window when the flag is not given (``None`` to tell a given flag apart).
    shown : int, optional
        The default as the help states it, when ``default`` is ``None``.

    Returns
    -------
    argparse.Action
        The option added.

    Examples
    --------
    >>> parser = OneLineErrorParser(prog="demo")
    >>> _ = add_w_option(parser, 64)
    >>> parser.parse_args([]).w, parser.parse_args(["--w", "16"]).w
    (64, 16)
    """
    return parser.add_argument(
        "--w",
        type=_int_at_least(1),
        default=default,
        help=f"window: keys per query, the query included (an integer >= 1; default {shown or '%(default)s'})",
    )


def add_out_option(
    parser: argparse.ArgumentParser, holds: str, default: str | None = None, required: bool = False
) -> argparse.Action:
    """Add ``--out DIR``: the folder the command writes into, created if missing, checked as the line is parsed
    (:func:`output_folder`).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    holds : str
        What the command writes there, for the help (``"tasks.jsonl, bound.csv, bound.json"``).
    default : str or None, default None
        The folder when the flag is not given (``None``: none).
    required : bool, default False
        Whether the flag must be given.

    Returns
    -------
    argparse.Action
        The option added.

    Examples
    --------
    >>> parser = OneLineErrorParser(prog="demo")
    >>> _ = add_out_option(parser, "results.json", default="runs")
    >>> parser.parse_args([]).out, parser.parse_args(["--out", "runs/b"]).out
    (PosixPath('runs'), PosixPath('runs/b'))
    """
    when = "required" if required else "no default" if default is None else "default %(default)s"
    return parser.add_argument(
        "--out",
        type=output_folder("--out"),
        default=default,
        required=required,
        metavar="DIR",
        help=f"output folder, created if missing: {holds} ({when})",
    )


def add_budget_option(parser: argparse.ArgumentParser, default: str | int, many: bool = True) -> argparse.Action:
    """Add ``--budgets`` (comma-separated, ``many``) or ``--budget`` (one): what a method may spend per query, the
    keys it reads for the sparse methods, a rank or a feature count for the low-rank and kernel ones; integers
    ``>= 1``, checked as the line is parsed.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    default : str or int
        The budgets when the flag is not given (``"16,32"``; an int for ``--budget``).
    many : bool, default True
        ``--budgets``, kept as the text given (:func:`comma_ints` splits it), or ``--budget``, an int.

    Returns
    -------
    argparse.Action
        The option added.

    Examples
    --------
    >>> parser = OneLineErrorParser(prog="demo")
    >>> _ = add_budget_option(parser, "64")
    >>> parser.parse_args(["--budgets", "16,32"]).budgets
    '16,32'
    >>> parser = OneLineErrorParser(prog="demo")
    >>> _ = add_budget_option(parser, 64, many=False)
    >>> parser.parse_args([]).budget
    64
    """
    what = "what a method may spend per query: keys for the sparse methods, a rank or features for the others"
    if many:
        return parser.add_argument(
            "--budgets",
            type=_comma_ints_text("--budgets"),
            default=default,
            help=f"{what}; comma-separated integers >= 1 (default %(default)s)",
        )
    return parser.add_argument(
        "--budget", type=_int_at_least(1), default=default, help=f"{what}; an integer >= 1 (default %(default)s)"
    )
