"""`othello-jax train --config=NAME|FILE --workdir=DIR [--config.section.key=value ...]`: train or resume a run.

--config names a shipped config (listed below; they live in experiments/configs/, installed
beside the package) or a config file of your own: an ml_collections file with get_config(). Any
setting can be overridden on the command line, e.g. --config.search.variant=puct. Running the
same command again resumes from the workdir's last checkpoint. --config.init_network=CHECKPOINT
starts a fresh run from a trained network (any form --checkpoint takes in `othello-jax play`).

Stopping: the first SIGINT (Ctrl-C) or SIGTERM is answered at once in one line saying what
happens next; the run then ends within what is in flight, which a compiled program cannot cut
short: the iteration (self-play and SGD, then saved), the compile of the iteration (then the
last checkpoint is kept), or one match of an in-run evaluation or gating (the rest is abandoned
and the finished iteration saved), plus writing that checkpoint. A second signal aborts at once
(the newest whole checkpoint on disk stays readable, and the line names it).

Exit status: 0 when the run is complete (or max_minutes ran out), 2 on bad input or a storage
fault (one line on stderr), 75 (EX_TEMPFAIL) when a SIGTERM or SIGINT stopped it after a
checkpoint (run the same command again to resume), 130 (SIGINT) or 143 (SIGTERM) when a signal
stopped a fresh run before its first iteration finished (nothing saved) or a second signal
aborted it, 1 on a bug (one line on stderr; the traceback is appended to WORKDIR/errors.log,
and the run resumes from its last checkpoint like any other).

Every core busy on CPU: unless told otherwise, the command asks JAX for one CPU host device per
usable core (host_devices), so the self-play games and the training batch are split over the
cores in lanes, one lane per device (XLA:CPU runs most of an iteration's small ops on one
thread; see experiments/bench_cores.py). Results depend on the lane count, never on the device
count, so a fixed seed learns exactly what a one-device run with --config.replay.lanes=N
learns. A run resumes with the lanes of its checkpoint, whatever the cores: a run started before
this default (one lane) resumes on one lane. JAX_NUM_CPU_DEVICES (or
--xla_force_host_platform_device_count in XLA_FLAGS) overrides the choice; JAX_NUM_CPU_DEVICES=1
turns the split off.
"""
from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path

from absl import flags
from ml_collections import config_flags

from othello_jax.commands.command import exit_process, failure, run_command
from othello_jax.commands.configs import (
    check_config_files,
    config_list,
    config_summary,
    resolve_config_args,
    shipped_configs,
)
from othello_jax.errors import InputError
from othello_jax.training.settings.retired import check_overrides, retired_error, retired_in_message

EXIT_INTERRUPTED = 75  # EX_TEMPFAIL: stopped early and checkpointed; try again later to resume


def parse(argv: list[str]):
    """(config, workdir) from command-line arguments; raises ``InputError`` with a one-line message
    (a config file that defines no config among them, before anything is made)."""
    argv = resolve_config_args(argv)
    check_overrides(argv)
    check_config_files(argv)
    values = flags.FlagValues()
    config_flag = config_flags.DEFINE_config_file("config", None, "training config file (get_config())",
                                                  flag_values=values, sys_argv=["train"] + list(argv))
    workdir_flag = _define_workdir(values)
    try:
        values(["train"] + list(argv))
    except flags.Error as error:
        raise InputError(str(error).splitlines()[0]) from None
    except (AttributeError, KeyError) as error:  # ml_collections: an override naming no setting
        retired = retired_in_message(str(error))  # or a config file setting a field of a removed section
        if retired:
            raise retired_error(retired) from None
        raise InputError(f"--config override names no setting: {_one_line_key_error(error)}") from None
    except (TypeError, ValueError) as error:
        raise InputError(f"bad --config override: {str(error).splitlines()[0]}") from None
    if config_flag.value is None:
        raise InputError(f"--config=NAME|FILE is required; shipped configs: {', '.join(shipped_configs())}")
    if not workdir_flag.value:
        raise InputError("--workdir=DIR is required")
    return config_flag.value, workdir_flag.value


def _define_workdir(values: flags.FlagValues) -> flags.FlagHolder:
    return flags.DEFINE_string("workdir", None, "run directory (checkpoints, metrics)", flag_values=values)


def traceback_dir(argv: list[str]) -> str | None:
    """The run directory ``--workdir`` names (None if none): where a bug's traceback is logged
    (``errors.log``), next to the run it stopped. Read alone, so a bad override cannot hide it."""
    values = flags.FlagValues()
    workdir_flag = _define_workdir(values)
    try:
        values(["train"] + list(argv), known_only=True)
    except flags.Error:
        return None
    return workdir_flag.value or None


def _one_line_key_error(error: BaseException) -> str:
    """ml_collections' "no such field" message on one line: the name, then its "Did you mean" hint."""
    text = str(error.args[0]) if error.args else str(error)
    text = text.replace("\\n", "\n").replace("\\'", "'")  # the message arrives repr-escaped
    lines = [line.strip().strip("'\"") for line in text.splitlines() if line.strip()]
    return "; ".join(lines) if lines else type(error).__name__


def checkpoint_lanes(workdir: str | Path) -> int | None:
    """The replay lanes of the workdir's latest checkpoint (read from its JSON meta), or None."""
    from othello_jax.checkpoint import latest_saved_meta

    meta = latest_saved_meta(workdir)
    return int(meta["lanes"]) if meta and meta.get("lanes") else None


def host_devices(config, workdir: str | Path, cores: int, environ: Mapping[str, str] = os.environ) -> int | None:
    """CPU host devices for a training run on ``cores`` cores; None leaves JAX's default alone.

    When ``workdir`` has a checkpoint and ``config.replay.lanes`` is 0 (one lane per device), the
    lanes are fixed (in place) to the checkpoint's, so a run resumes whatever the core count (or
    accelerator count). Devices: ``num_devices`` when the config names it; else the largest
    count <= ``cores`` that divides the lanes (a new run with lanes 0: that divides the games
    and the batch, so the split never makes a config invalid). None when the environment sets
    the count, or for multi-process runs. The count matters only where JAX runs on the CPU.
    """
    distributed = config.distributed  # read before the settings are resolved: JAX must not start yet
    if devices_set_by_environment(environ) or distributed.enabled or distributed.coordinator_address:
        return None
    saved = checkpoint_lanes(workdir)
    lanes = int(config.replay.lanes) or saved or 0
    if int(config.num_devices):
        devices = int(config.num_devices)
    else:
        divides = (lambda d: lanes % d == 0) if lanes else (
            lambda d: int(config.selfplay.num_games) % d == 0 and int(config.train.batch_size) % d == 0)
        devices = max(d for d in range(1, max(int(cores), 1) + 1) if divides(d))
    if saved and not int(config.replay.lanes):
        config.replay.lanes = saved
    return devices


def devices_set_by_environment(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment already decides the devices: a CPU host device count
    (``JAX_NUM_CPU_DEVICES``, the XLA flag) or a multi-process run (``JAX_COORDINATOR_ADDRESS``)."""
    return bool(environ.get("JAX_NUM_CPU_DEVICES") or environ.get("JAX_COORDINATOR_ADDRESS")
                or "xla_force_host_platform_device_count" in environ.get("XLA_FLAGS", ""))


def use_host_devices(count: int) -> bool:
    """Ask JAX for ``count`` CPU host devices. False, changing nothing, when JAX has already
    started its backends in this process (a caller such as a notebook or a test that ran JAX
    before): the run then uses the devices there are, with the lanes of its checkpoint."""
    import jax

    try:
        jax.config.update("jax_num_cpu_devices", count)
    except RuntimeError:  # "should be updated before backends are initialized"
        return False
    return True


def print_help(argv: list[str]) -> int:
    """The usage, this module's doc and the shipped configs; with --config=REFERENCE also the file
    it names and that config's own description (one line and exit 2 for an unknown name)."""
    named = [Path(arg[len("--config="):].partition(":")[0])
             for arg in resolve_config_args(argv) if arg.startswith("--config=")]
    print(__doc__.strip())
    print()
    print("shipped configs (--config=NAME):")
    print(config_list())
    for path in named:
        print(f"\n--config={path}: {config_summary(path, width=1000)}")
    return 0


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help", "help") for a in argv):
        return print_help(argv)
    from othello_jax.stops import exit_code
    from othello_jax.training.runner.loop import StoppedBeforeFirstIteration, StopSignals, TrainingInterrupted, run

    try:
        config, workdir = parse(argv)
        devices = host_devices(config, workdir, len(os.sched_getaffinity(0)))
        if devices is not None:
            use_host_devices(devices)
        run(config, workdir, signals=StopSignals(prefix="othello-jax train: ", abort_process=True))
    except TrainingInterrupted as stop:
        print(f"othello-jax train: {stop}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except StoppedBeforeFirstIteration as stop:
        print(f"othello-jax train: {stop}", file=sys.stderr)
        return exit_code(signal.Signals[stop.reason]) if stop.reason in signal.Signals.__members__ else 130
    except (InputError, OSError) as error:  # a bad config or checkpoint, a storage fault
        return failure("train")(error)
    return 0


if __name__ == "__main__":
    exit_process(run_command("train", main, sys.argv[1:], log_dir=traceback_dir))
