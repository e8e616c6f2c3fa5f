"""`othello-jax train --config=FILE --workdir=DIR [--config.section.key=value ...]`: train or resume a run.

The config file is an ml_collections file with ``get_config()`` (see ``experiments/configs/``);
any setting can be overridden on the command line, e.g. ``--config.search.variant=puct``.
Running the same command again resumes from the workdir's last checkpoint.

Exit status: 0 when the run is complete (or ``max_minutes`` ran out), 2 on bad input or a
storage fault (one line on stderr), 75 (``EX_TEMPFAIL``) when a SIGTERM or SIGINT stopped it
after a checkpoint (run the same command again to resume), 130 when a second signal aborted it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from absl import flags
from ml_collections import config_flags

EXIT_INTERRUPTED = 75  # EX_TEMPFAIL: stopped early and checkpointed; try again later to resume
USAGE = "usage: othello-jax train --config=experiments/configs/othello6_cpu.py --workdir=DIR [--config.x.y=VALUE ...]"


def parse(argv: list[str]):
    """(config, workdir) from command-line arguments; raises ``ValueError`` with a one-line message."""
    for i, arg in enumerate(argv):
        path = arg[len("--config="):] if arg.startswith("--config=") else (
            argv[i + 1] if arg == "--config" and i + 1 < len(argv) else None)
        if path is not None and not Path(path.split(":")[0]).is_file():
            raise ValueError(f"config file {path} not found")
    values = flags.FlagValues()
    config_flag = config_flags.DEFINE_config_file("config", None, "training config file (get_config())",
                                                  flag_values=values, sys_argv=["train"] + list(argv))
    workdir_flag = flags.DEFINE_string("workdir", None, "run directory (checkpoints, metrics)", flag_values=values)
    try:
        values(["train"] + list(argv))
    except flags.Error as error:
        raise ValueError(str(error).splitlines()[0]) from None
    except (AttributeError, KeyError) as error:  # ml_collections: an override naming no setting
        raise ValueError(f"--config override names no setting: {error}") from None
    except (TypeError, ValueError) as error:
        raise ValueError(f"bad --config override: {str(error).splitlines()[0]}") from None
    if config_flag.value is None:
        raise ValueError("--config=FILE is required")
    if not workdir_flag.value:
        raise ValueError("--workdir=DIR is required")
    return config_flag.value, workdir_flag.value


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help", "help") for a in argv):
        print(USAGE)
        print(__doc__)
        return 0
    from othello_jax.checkpoint import CheckpointError
    from othello_jax.training.loop import TrainingInterrupted, run

    try:
        config, workdir = parse(argv)
        run(config, workdir)
    except TrainingInterrupted as stop:
        print(f"othello-jax train: {stop}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (ValueError, CheckpointError, FileNotFoundError, OSError) as error:
        print(f"othello-jax train: error: {str(error).splitlines()[0] if str(error) else type(error).__name__}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("othello-jax train: aborted; run the same command to resume from the last checkpoint",
              file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
