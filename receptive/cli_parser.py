"""The argument parser every ``python -m receptive...`` command uses, and the options they share.

Everything here lives in :mod:`graphs.cli_common` and :mod:`graphs.cli_options` (below ``receptive``) and is
re-exported under this name.
"""

from __future__ import annotations

from graphs.cli_common import (
    FIGURE_SUFFIXES,
    OneLineErrorParser,
    given_options,
    output_file,
    output_folder,
    refuse_together,
)
from graphs.cli_options import (
    add_budget_option,
    add_csv_option,
    add_json_option,
    add_n_option,
    add_out_option,
    add_progress_option,
    add_seed_option,
    add_seeds_option,
    add_w_option,
    comma_ints,
    comma_names,
    stdout_output,
    write_output,
)

__all__ = [
    "FIGURE_SUFFIXES",
    "OneLineErrorParser",
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
    "given_options",
    "output_file",
    "output_folder",
    "refuse_together",
    "stdout_output",
    "write_output",
]
