from gpu.bench.cli import main
from graphs.cli_common import run_command

if __name__ == "__main__":
    run_command(main)
