"""Train the AlphaZero network on WThor expert moves (supervised baseline).

    python -m experiments.train_supervised --config=supervised:cpu --workdir=runs/sl_cpu

--config names a shipped config (supervised, supervised:cpu; the default is supervised) or a
config file, as `othello-jax train --config` does (othello_jax/commands/configs.py).

On a CPU it asks JAX for one host device per usable core (as ``othello-jax train`` does) and
splits each batch over them; ``JAX_NUM_CPU_DEVICES`` overrides that (``=1``: one device).

Progress goes to the console and ``WORKDIR/metrics.jsonl``; networks to ``WORKDIR/checkpoints``
(latest) and ``WORKDIR/best`` (best held-out top-1), loadable by ``othello-jax accuracy`` and by
agents like any training checkpoint. Ctrl-C or SIGTERM saves a checkpoint and exits with status
75; the same command resumes the run (as ``othello-jax train`` does).
"""

from __future__ import annotations

import os
import sys

from absl import app, flags, logging
from ml_collections import config_flags

from othello_jax.checkpoint import CheckpointError
from othello_jax.commands.configs import check_config_files, resolve_config, resolve_config_args
from othello_jax.commands.train import devices_set_by_environment, use_host_devices
from othello_jax.data.wthor import WthorError
from othello_jax.errors import InputError
from othello_jax.training.runner.loop import StopSignals, TrainingInterrupted
from othello_jax.training.supervised import trainer as supervised

_CONFIG = config_flags.DEFINE_config_file("config", resolve_config("supervised"),
                                          "supervised config: a shipped config's name (supervised:cpu) or a file")
_WORKDIR = flags.DEFINE_string("workdir", None, "directory for metrics and checkpoints", required=True)


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        print(f"train_supervised: unexpected arguments {argv[1:]}", file=sys.stderr)
        return 2
    logging.set_verbosity(logging.WARNING)  # keep the console to progress lines
    if not devices_set_by_environment():
        use_host_devices(len(os.sched_getaffinity(0)))  # one CPU device per core (no effect elsewhere)
    try:
        supervised.run(_CONFIG.value, _WORKDIR.value, log=lambda line: print(line, flush=True),
                       signals=StopSignals(prefix="train_supervised: ", abort_process=True))
    except TrainingInterrupted as stop:
        print(f"train_supervised: {stop}", file=sys.stderr)
        return 75  # EX_TEMPFAIL, as othello-jax train: stopped and checkpointed; run again to resume
    except (ValueError, WthorError, CheckpointError) as error:
        print(f"train_supervised: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.argv[1:] = resolve_config_args(sys.argv[1:])  # config names to files, before absl reads them
        check_config_files(sys.argv[1:])  # a file that defines no config: one line, before absl reads it
    except InputError as error:
        print(f"train_supervised: {error}", file=sys.stderr)
        sys.exit(2)
    app.run(lambda argv: sys.exit(main(argv)))
