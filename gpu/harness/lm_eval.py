"""Run any lm-evaluation-harness task with a registered sparse attention: ``python -m gpu.harness.lm_eval``.

A thin entry point for users who have ``lm-eval`` (and, for its hub tasks, a network): it registers the attention
of :mod:`gpu.hf.generation` in this process, adds ``attn_implementation=<name>`` to lm-eval's ``--model_args``, and
hands every other argument to lm-eval's own command line::

    python -m gpu.harness.lm_eval --attention sa --budget 64 -- \\
        --model hf --model_args pretrained=HuggingFaceTB/SmolLM2-135M-Instruct --tasks arc_easy --num_fewshot 5

What the protocols mean under lm-eval: its ``loglikelihood`` requests run context and continuation in one forward
without a cache, so every position runs the pattern (``decode="sparse"``); ``decode="exact"`` changes only
generation tasks (``generate_until``), whose prompt is the prefill and whose new tokens then read every key. For the
sparse-prefill, exact-continuation protocol on log-likelihood tasks use :mod:`gpu.harness.scoring`.

References
----------
Gao et al. (2024). The language model evaluation harness (lm-evaluation-harness), v0.4. Zenodo.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial

from gpu.attention.generation_patterns import GENERATION_METHODS
from gpu.harness.scoring import PREFILL_METHODS, prefill_method
from gpu.hf.generation import DECODES
from gpu.hf.implementations import register
from graphs.cli_common import run_command
from graphs.validation import check_choice
from receptive.cli_parser import OneLineErrorParser, add_budget_option, add_seed_option, comma_ints

__all__ = ["build_parser", "main", "with_attention"]


def with_attention(argv: list[str], name: str) -> list[str]:
    """lm-eval's arguments with ``attn_implementation=name`` added to ``--model_args`` (or a new one).

    Parameters
    ----------
    argv : list of str
        lm-eval's arguments.
    name : str
        The registered attention.

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        If ``--model_args`` already sets ``attn_implementation``.

    Examples
    --------
    >>> with_attention(["--model", "hf", "--model_args", "pretrained=m"], "receptive-sa-64")
    ['--model', 'hf', '--model_args', 'pretrained=m,attn_implementation=receptive-sa-64']
    >>> with_attention(["--tasks", "t"], "x")
    ['--tasks', 't', '--model_args', 'attn_implementation=x']
    """
    argv = list(argv)
    for flag in ("--model_args", "-a"):
        if flag in argv and argv.index(flag) + 1 < len(argv):
            at = argv.index(flag) + 1
            if "attn_implementation=" in argv[at]:
                raise ValueError("--model_args: sets attn_implementation already; --attention chooses it")
            argv[at] = f"{argv[at]},attn_implementation={name}" if argv[at] else f"attn_implementation={name}"
            return argv
    return [*argv, "--model_args", f"attn_implementation={name}"]


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m gpu.harness.lm_eval``'s own options (those before ``--``).

    Returns
    -------
    argparse.ArgumentParser
        The parser (:class:`receptive.cli_parser.OneLineErrorParser`).

    Examples
    --------
    >>> args = build_parser().parse_args(["--attention", "sa", "--budget", "32"])
    >>> args.attention, args.budget, args.seed, args.decode
    ('sa', 32, 0, 'sparse')
    """
    parser = OneLineErrorParser(
        prog="python -m gpu.harness.lm_eval",
        description=__doc__.split("\n\n")[0],
        epilog="Everything after -- goes to lm-eval (lm-eval run --help).",
        options={
            "budget": "--budget",
            "seed": "--seed",
            "method": "--attention",
            "exact_layers": "--exact-layers",
            "decode": "--decode",
        },
    )
    parser.add_argument(
        "--attention",
        required=True,
        help=f"a generation form ({', '.join(GENERATION_METHODS)}), or a prefill-only method of the "
        f"approximation lab ({', '.join(PREFILL_METHODS)}; lm-eval's log-likelihoods need no cache, "
        "generation tasks do)",
    )
    add_budget_option(parser, 64, many=False)
    add_seed_option(parser)
    parser.add_argument("--decode", default="sparse", help=f"one of {', '.join(DECODES)} (default %(default)s)")
    parser.add_argument("--exact-layers", default="", help="comma-separated layers that read every key (default: none)")
    return parser


def main(argv=None) -> int:
    """Register the attention, then run lm-eval's command line with it.

    Parameters
    ----------
    argv : list of str, optional
        ``[options] -- <lm-eval arguments>`` (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        lm-eval's exit status.

    Examples
    --------
    >>> main(["--attention", "sa", "--budget", "64", "--", "run", "--model", "hf", "--model_args",
    ...       "pretrained=MODEL_FOLDER", "--tasks", "arc_easy"])  # doctest: +SKIP
    0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    ours, lm_eval_args = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = build_parser()
    args = parser.parse_args(ours)
    try:
        layers = comma_ints("--exact-layers", args.exact_layers, 0) if args.exact_layers else []
        check_choice("method", args.attention, (*GENERATION_METHODS, *PREFILL_METHODS))
        method = args.attention if args.attention in GENERATION_METHODS else prefill_method(args.attention)
        name = register(method, args.budget, args.seed, decode=args.decode, exact_layers=layers)
        lm_eval_args = with_attention(lm_eval_args, name)
    except (TypeError, ValueError) as exc:
        parser.error(str(exc))
    try:
        from lm_eval.__main__ import cli_evaluate
    except ImportError:
        parser.error("lm-eval is not installed: pip install 'lm-eval>=0.4,<0.5'")
    saved = sys.argv
    sys.argv = ["lm-eval", *lm_eval_args]
    try:
        cli_evaluate()
    except SystemExit as exit:
        return int(exit.code or 0) if not isinstance(exit.code, str) else 1
    finally:
        sys.argv = saved
    return 0


#: The command's entry point (``python -m gpu.harness.lm_eval``): :func:`main`, ended by
#: :func:`graphs.cli_common.run_command` (one line on an interrupt or a closed pipe).
run_cli = partial(run_command, main)


if __name__ == "__main__":
    run_cli()
