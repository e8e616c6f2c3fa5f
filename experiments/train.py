"""Train (or resume) a self-play run from a config file.

    python -m experiments.train --config=experiments/configs/othello6_cpu.py --workdir=runs/o6 \
        --config.search.variant=puct

Same as ``othello-jax train``; see ``othello_jax/commands/train.py``.
"""

import sys

from othello_jax.commands.train import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
