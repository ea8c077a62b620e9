from graphs.cli_common import run_command

from .cli import main

if __name__ == "__main__":
    run_command(main)
