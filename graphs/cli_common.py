"""What every command line of the toolkit shares, at the bottom of the dependency chain (``graphs`` imports nothing
of ``receptive``; ``receptive.cli_parser`` and ``receptive.plotting`` re-export these):

* :class:`OneLineErrorParser`: an ``argparse`` parser whose errors are one line naming the argument (exit 2);
* :func:`write_atomic`: write a file whole or not at all (a temporary file in the same folder, then a rename);
* :func:`save_png_pdf`: a matplotlib figure as PNG and PDF side by side, each written atomically;
* :func:`output_file`: an ``argparse`` ``type=`` that checks, while the command line is parsed (before any work),
  that a file can be written at the path an option names;
* :func:`check_shape`: a parsed JSON result file against the shape its reader needs, naming the first entry that
  is not (a reader puts its flag and what it expected in front);
* :func:`run_command`: a command's ``main`` run to its exit status, errors as one line.

The options several commands share are added by :mod:`graphs.cli_options`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

from ._atomic import atomic_write, check_writable, write_text_atomic

__all__ = [
    "FIGURE_SUFFIXES",
    "NUMBER",
    "OneLineErrorParser",
    "atomic_write",
    "check_shape",
    "given_options",
    "output_file",
    "output_folder",
    "refuse_together",
    "run_command",
    "save_png_pdf",
    "write_atomic",
]


class OneLineErrorParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line that names the argument (exit status 2).

    The library's errors start with the name of the argument at fault (``"w: expected ..."``); ``options`` maps
    those names to the flags that set them, so that a command line reports the flag its user typed.

    Parameters
    ----------
    *args, **kwargs
        As :class:`argparse.ArgumentParser`.
    options : dict of str to str or None, default None
        Library argument name -> flag, e.g. ``{"w": "--w", "max_memory": "--max-memory"}``.

    Examples
    --------
    >>> import contextlib, io
    >>> parser = OneLineErrorParser(prog="demo")
    >>> _ = parser.add_argument("--n", type=int)
    >>> err = io.StringIO()
    >>> with contextlib.redirect_stderr(err):
    ...     try:
    ...         parser.parse_args(["--n", "x"])
    ...     except SystemExit as exit:
    ...         code = exit.code
    >>> code, err.getvalue()
    (2, "demo: error: --n: invalid int value: 'x' (see --help)\\n")
    >>> parser = OneLineErrorParser(prog="demo", options={"max_memory": "--max-memory", "w": "--w"})
    >>> with contextlib.redirect_stderr(err):
    ...     try:
    ...         parser.error("w: 10 keys need more than max_memory")
    ...     except SystemExit:
    ...         pass
    >>> err.getvalue().splitlines()[-1]
    'demo: error: --w: 10 keys need more than --max-memory (see --help)'
    """

    def __init__(self, *args, options: dict[str, str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.options = dict(options or {})

    def error(self, message: str):
        """Exit with status 2 and ``message`` on one line, its leading argument name replaced by its flag.

        Parameters
        ----------
        message : str
            The error, e.g. ``"w: expected an integer >= 1, got 0"``.
        """
        message = " ".join(str(message).split())  # never more than one line
        message = message.removeprefix("argument ")  # argparse's "argument --n: ...": the flag comes first, as ours
        name, sep, rest = message.partition(":")
        if sep and name in self.options:
            message = self.options[name] + sep + rest
        for name, flag in self.options.items():  # "a larger max_memory" -> "a larger --max-memory"
            if "_" in name:  # a compound name cannot be an ordinary word of the message
                message = re.sub(rf"(?<![\w-]){name}(?!\w)", flag, message)
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def given_options(parser: argparse.ArgumentParser, argv: list[str] | None) -> set[str]:
    """The destinations of the options ``argv`` sets itself (not left at their defaults).

    ``argv`` is parsed a second time with every default suppressed, so an option given with its default value, an
    abbreviation or ``--flag=value`` counts as given. Call it after ``parser.parse_args(argv)`` succeeded.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    argv : list of str or None
        The arguments (``None``: ``sys.argv[1:]``).

    Returns
    -------
    set of str
        E.g. ``{"model", "w"}``.

    Examples
    --------
    >>> parser = OneLineErrorParser(prog="demo")
    >>> _ = parser.add_argument("--w", type=int, default=16)
    >>> _ = parser.add_argument("--causal", action="store_true")
    >>> sorted(given_options(parser, ["--w", "16"])), sorted(given_options(parser, []))
    (['w'], [])
    """
    defaults = [(action, action.default) for action in parser._actions]
    try:
        for action, _ in defaults:
            action.default = argparse.SUPPRESS
        return set(vars(parser.parse_args(argv)))
    finally:
        for action, default in defaults:
            action.default = default


def refuse_together(given: set[str], first: str, second: str, why: str) -> None:
    """``ValueError`` naming both options when both are in ``given`` (destinations, as :func:`given_options`).

    Parameters
    ----------
    given : set of str
        The destinations the command line set.
    first, second : str
        The flags, e.g. ``"--w"`` and ``"--hf-config"`` (their destinations: without dashes, ``-`` as ``_``).
    why : str
        Why they do not go together, e.g. ``"the config sets the windows"``.

    Raises
    ------
    ValueError
        ``"--w: does not apply with --hf-config (the config sets the windows)"``.

    Examples
    --------
    >>> refuse_together({"w", "hf_config"}, "--w", "--hf-config", "the config sets the windows")
    Traceback (most recent call last):
    ...
    ValueError: --w: does not apply with --hf-config (the config sets the windows)
    """
    if all(flag.lstrip("-").replace("-", "_") in given for flag in (first, second)):
        raise ValueError(f"{first}: does not apply with {second} ({why})")


def run_command(main, argv: list[str] | None = None) -> NoReturn:
    """Run a command line's ``main(argv)`` and exit with its status, with one line for an interrupt or a closed pipe.

    Ctrl-C (``KeyboardInterrupt``) ends with ``<command>: interrupted`` on stderr and status 130, as a shell reports
    SIGINT; what the command wrote is whole (files are written atomically) and result stores resume. A closed
    standard output (``... | head``) ends quietly with status 1 once stdout is pointed at ``os.devnull`` (the recipe
    of the Python documentation, "Note on SIGPIPE"), so the interpreter's last flush raises nothing.

    Parameters
    ----------
    main : callable
        ``main(argv) -> int | None``.
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Raises
    ------
    SystemExit
        Always, with the exit status.

    Examples
    --------
    >>> def main(argv):
    ...     raise KeyboardInterrupt
    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     try:
    ...         run_command(main, [])
    ...     except SystemExit as exit:
    ...         code = exit.code
    >>> code, err.getvalue().endswith("interrupted\\n")
    (130, True)
    """
    module = getattr(main, "__module__", None) or "__main__"
    command = (
        "python -m " + module.removesuffix(".__main__").removesuffix(".cli")
        if module != "__main__"
        else (os.path.basename(sys.argv[0]))
    )
    try:
        code = main(argv)
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        code = 130
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = 1
    sys.exit(code)


#: what :func:`save_png_pdf` writes: a figure option takes a path ending in one of these, or a prefix with no
#: extension (both files are written)
FIGURE_SUFFIXES = (".png", ".pdf", "")


def _probe_writable(folder: Path) -> None:
    """``argparse.ArgumentTypeError`` unless a file can be created in ``folder`` (tried, then removed).

    Permission bits say nothing about root, nor about folders such as ``/proc`` that take no new files, so a
    temporary file is created and removed at once.
    """
    try:
        handle, name = tempfile.mkstemp(dir=folder, prefix=".write-check-")
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot write to {folder} ({exc.strerror or exc})") from None
    os.close(handle)
    os.unlink(name)


def _check_suffix(text: str, suffixes: tuple[str, ...] | None) -> None:
    """``argparse.ArgumentTypeError`` unless ``text`` ends in one of ``suffixes`` (any, where ``None``)."""
    if suffixes is not None and Path(text).suffix.lower() not in suffixes:
        names = [suffix or "no extension" for suffix in suffixes]
        allowed = " or ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " or " + names[-1]
        message = f"expected a path ending in {allowed} (what this command writes), got {text!r}"
        raise argparse.ArgumentTypeError(message)


def output_file(option: str, stdout: bool = False, parents: bool = False, suffixes: tuple[str, ...] | None = None):
    """An ``argparse`` ``type=`` for a file the command will write, checked as the command line is parsed.

    A folder, a missing or read-only parent folder, a folder that takes no new files (``/proc``) and an extension
    the command does not write are refused then, before any work and without leaving anything behind, as one line
    naming ``option`` (through :class:`OneLineErrorParser`, exit status 2). A default of ``None`` is left as it is:
    argparse converts string values only.

    Parameters
    ----------
    option : str
        The flag, e.g. ``"--json"``.
    stdout : bool, default False
        Accept ``"-"`` (standard output), returned as the string ``"-"``.
    parents : bool, default False
        Accept a missing parent folder that the command could create (checked as :func:`output_folder` checks a
        folder; nothing is created here), for a command that writes with ``write_atomic(..., mkdir=True)``.
    suffixes : tuple of str or None, default None
        The extensions the command writes, lower case with their dot (``(".json",)``; :data:`FIGURE_SUFFIXES` for a
        figure written by :func:`save_png_pdf`; ``""``: no extension); ``None`` accepts any.

    Returns
    -------
    callable
        ``str -> pathlib.Path`` (or ``"-"``), raising ``argparse.ArgumentTypeError`` for a path that cannot be
        written.

    Examples
    --------
    >>> import contextlib, io, tempfile
    >>> parser = OneLineErrorParser(prog="demo")
    >>> _ = parser.add_argument("--json", type=output_file("--json", suffixes=(".json",)))
    >>> parser.parse_args(["--json", "out.json"]).json
    PosixPath('out.json')
    >>> err = io.StringIO()
    >>> with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stderr(err):
    ...     for bad in (folder, "/proc/out.json", "out.csv"):
    ...         try:
    ...             parser.parse_args(["--json", bad])
    ...         except SystemExit as exit:
    ...             assert exit.code == 2
    >>> print(err.getvalue().replace(folder, "FOLDER"))  # doctest: +NORMALIZE_WHITESPACE
    demo: error: --json: FOLDER is a directory; expected a file path (see --help)
    demo: error: --json: cannot write to /proc (No such file or directory) (see --help)
    demo: error: --json: expected a path ending in .json (what this command writes), got 'out.csv' (see --help)
    >>> _ = parser.add_argument("--out", type=output_file("--out", parents=True))
    >>> parser.parse_args(["--out", "new/folder/out.json"]).out
    PosixPath('new/folder/out.json')
    """
    folder = output_folder(option)

    def parse(text: str) -> Path | str:
        if stdout and text == "-":
            return text
        path = Path(text)
        if parents and text and not path.parent.exists():
            path = folder(str(path.parent)) / path.name
        else:
            try:
                path = check_writable(text, option)
            except ValueError as exc:
                raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{option}: ")) from None
            _probe_writable(path.parent)
        _check_suffix(text, suffixes)
        return path

    parse.__name__ = "output file"  # argparse's fallback message: "invalid output file value"
    return parse


def output_folder(option: str):
    """An ``argparse`` ``type=`` for a folder the command will create or write into, checked as the command line is
    parsed, without leaving anything behind.

    Refused, as one line naming ``option`` (through :class:`OneLineErrorParser`, exit status 2): a path that exists
    and is not a folder, a path below a file, and a path whose nearest existing folder takes no new file from this
    process (tried with a temporary file, removed at once).

    Parameters
    ----------
    option : str
        The flag, e.g. ``"--out"``.

    Returns
    -------
    callable
        ``str -> pathlib.Path``, raising ``argparse.ArgumentTypeError`` for a folder that cannot be written.

    Examples
    --------
    >>> import contextlib, io, tempfile, pathlib
    >>> parser = OneLineErrorParser(prog="demo")
    >>> _ = parser.add_argument("--out", type=output_folder("--out"))
    >>> parser.parse_args(["--out", "runs/first"]).out
    PosixPath('runs/first')
    >>> err = io.StringIO()
    >>> with tempfile.NamedTemporaryFile() as file, contextlib.redirect_stderr(err):
    ...     try:
    ...         parser.parse_args(["--out", file.name + "/runs"])
    ...     except SystemExit as exit:
    ...         code = exit.code
    >>> code, "error: --out:" in err.getvalue(), "is a file" in err.getvalue()
    (2, True, True)
    """

    def parse(text: str) -> Path:
        path = Path(text)
        if not text:
            raise argparse.ArgumentTypeError("expected a folder, got an empty path")
        existing = next((p for p in (path, *path.parents) if p.exists()), Path("."))
        if not existing.is_dir():
            where = "" if existing == path else f" ({existing} is a file)"
            raise argparse.ArgumentTypeError(
                f"{text} is a file, not a folder{where}" if existing == path else f"cannot create {text}{where}"
            )
        if not os.access(existing, os.W_OK | os.X_OK):
            raise argparse.ArgumentTypeError(f"cannot write to {existing}")
        _probe_writable(existing)
        return path

    parse.__name__ = "output folder"  # argparse's fallback message: "invalid output folder value"
    return parse


def write_atomic(path: str | Path, text: str, *, option: str = "path", mkdir: bool = False) -> str:
    """Write ``text`` to ``path`` whole or not at all, with the permissions a plain ``open`` would give.

    Parameters
    ----------
    path : str or pathlib.Path
        The file to write.
    text : str
        Its content.
    option : str, optional
        The option that named ``path`` (the first word of an error message).
    mkdir : bool, optional
        Create missing folders first.

    Returns
    -------
    str
        ``path``.

    Raises
    ------
    ValueError
        If ``path`` cannot be written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     written = write_atomic(pathlib.Path(folder) / "a" / "b.json", "{}", option="--json", mkdir=True)
    ...     pathlib.Path(written).read_text()
    '{}'
    """
    write_text_atomic(path, text, option, make_parents=mkdir)
    return str(path)


def save_png_pdf(fig, path: str | Path, dpi: int = 150, *, option: str = "path") -> list[str]:
    """Write ``fig`` as PNG and PDF beside each other, each atomically, and close it.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    path : str or pathlib.Path
        The files are ``path`` without its suffix plus ``.png`` and ``.pdf`` (folders created).
    dpi : int, optional
        Resolution of the PNG.
    option : str, optional
        The option that named ``path`` (the first word of an error message).

    Returns
    -------
    list of str
        The two paths written.

    Raises
    ------
    ValueError
        If the place cannot be written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import matplotlib.figure
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     paths = save_png_pdf(matplotlib.figure.Figure(), pathlib.Path(folder) / "plot.png")
    ...     [pathlib.Path(p).suffix for p in paths]
    ['.png', '.pdf']
    """
    import matplotlib.pyplot as plt

    stem = Path(path).with_suffix("")
    written = [f"{stem}.png", f"{stem}.pdf"]
    try:
        for target in written:
            with atomic_write(target, option, mode="wb", make_parents=True) as fh:
                fig.savefig(fh, dpi=dpi, format=Path(target).suffix[1:])
    finally:
        plt.close(fig)
    return written


#: a number in a result file (an int is a number; a bool is not)
NUMBER = (int, float)


def _kind(value) -> str:
    """The JSON name of ``value``'s type, for messages."""
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def check_shape(value, shape, where: str = "the document") -> None:
    """Check that a parsed JSON ``value`` has ``shape``, naming the first entry that does not.

    ``shape`` is a type or a tuple of types (``isinstance``; a bool is never a number, ``None`` in the tuple
    allows ``null``), a frozenset of the strings allowed, a dict of key -> shape (a key ending in ``?`` may be
    missing; others are ignored), or a list of one shape, which every item of a list must have (``[shape, ...]``
    with ``...``: at least one item).

    Parameters
    ----------
    value : object
        The parsed JSON.
    shape : type, tuple, dict or list
        What the reader of ``value`` needs.
    where : str, default "the document"
        The name of ``value`` in the message.

    Raises
    ------
    ValueError
        ``"points[3] lacks 'w'"``, ``"points[0]['w'] is a string, expected int"`` and the like.

    Examples
    --------
    >>> check_shape({"points": [{"n": 8, "w": None}]}, {"points": [{"n": int, "w": (int, None)}]})
    >>> check_shape({"points": [{"n": 8}]}, {"points": [{"n": int, "w": int}]})
    Traceback (most recent call last):
    ...
    ValueError: points[0] lacks 'w'
    >>> check_shape({"points": {}}, {"points": [{"n": int}, ...]})
    Traceback (most recent call last):
    ...
    ValueError: points is an object, expected a list
    """
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            raise ValueError(f"{where} is {_kind(value)}, expected an object")
        for key, inner in shape.items():
            name = key.removesuffix("?")
            if name not in value:
                if key.endswith("?"):
                    continue
                raise ValueError(f"{where} lacks {name!r}")
            check_shape(value[name], inner, name if where == "the document" else f"{where}[{name!r}]")
    elif isinstance(shape, list):
        if not isinstance(value, list):
            raise ValueError(f"{where} is {_kind(value)}, expected a list")
        if len(shape) > 1 and shape[1] is ... and not value:
            raise ValueError(f"{where} is empty, expected at least one entry")
        for k, item in enumerate(value):
            check_shape(item, shape[0], f"{where}[{k}]")
    elif isinstance(shape, frozenset):
        if not isinstance(value, str) or value not in shape:
            raise ValueError(f"{where} is {value!r}, expected one of {', '.join(sorted(shape))}")
    else:
        types = shape if isinstance(shape, tuple) else (shape,)
        allowed = tuple(t for t in types if t is not None)
        if value is None and None in types:
            return
        if (isinstance(value, bool) and bool not in allowed) or not isinstance(value, allowed):
            expected = " or ".join(t.__name__ for t in allowed) + (" or null" if None in types else "")
            raise ValueError(f"{where} is {_kind(value)}, expected {expected}")
