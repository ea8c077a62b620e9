"""The argument parser every ``python -m receptive...`` command uses."""

from __future__ import annotations

import argparse


class OneLineErrorParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line that names the argument (exit status 2)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")
