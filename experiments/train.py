"""Train (or resume) a self-play run from a config file.

    python -m experiments.train --config=othello6_cpu --workdir=runs/o6 --config.search.variant=puct

--config takes a shipped config's name or a config file's path.

Same as ``othello-jax train`` (the same exit statuses, ``--debug`` too); see
``othello_jax/commands/train.py``.
"""

import sys

from othello_jax.commands.command import run_command
from othello_jax.commands.train import main, traceback_dir

if __name__ == "__main__":
    sys.exit(run_command("train", main, sys.argv[1:], log_dir=traceback_dir))
