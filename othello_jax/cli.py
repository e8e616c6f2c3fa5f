"""`othello-jax COMMAND ...`: one entry point; each command lives in its own module.

A command module exposes ``main(argv: list[str]) -> int``. Register it in ``COMMANDS`` with a
one-line summary; it is imported only when run, so the CLI starts fast. Every command runs under
:func:`~othello_jax.commands.command.run_command`: bad input is one line and exit 2, a bug one
line naming its traceback file and exit 1 (a module's ``traceback_dir(argv)``, if it has one,
says where that file goes). Compiled programs are kept between runs (:func:`use_compilation_cache`).
XLA's own C++ log lines below FATAL stay off the terminal (:func:`quiet_xla_logs`).
``--debug`` anywhere on the command line (or ``OTHELLO_JAX_DEBUG=1``)
prints the traceback as well, and lets XLA's log lines through. The benchmarks are not commands:
they run from a source checkout as ``python -m experiments.bench_env`` (and ``bench_selfplay``,
``bench_solver``, ...).
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
from collections.abc import Mapping, MutableMapping
from importlib import metadata
from pathlib import Path

from othello_jax.commands.command import DEBUG_FLAG, debug_by_environment, exit_process, run_command

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module, summary)
    "play": ("othello_jax.commands.play", "play a game against a checkpoint or agent in the terminal"),
    "serve": ("othello_jax.commands.serve", "play the engines in a web browser (a local web app with hints)"),
    "engine": ("othello_jax.commands.engine", "serve a checkpoint or agent to GUIs (GTP or NBoard) on stdin/stdout"),
    "analyze": ("othello_jax.commands.analyze", "a network's policy, value and search visits for a position"),
    "train": ("othello_jax.commands.train", "train or resume a self-play run from a config (--config, --workdir)"),
    "plot": ("othello_jax.commands.plot", "draw a run's training curves (metrics.jsonl) to a PNG"),
    "eval": ("othello_jax.commands.eval", "a match between two agents (specs), colours swapped per opening"),
    "accuracy": ("othello_jax.commands.accuracy",
                 "top-1/top-3 expert-move prediction of a checkpoint on held-out WThor games"),
    "endgame-accuracy": ("othello_jax.commands.endgame_accuracy",
                         "how often an agent's late moves keep the exact game value (solver-judged)"),
    "make-labels": ("othello_jax.commands.make_labels", "exact move values of self-play or off-distribution positions"),
    "make-testset": ("othello_jax.commands.make_testset",
                     "make the 6x6 perfect-play test set (every move of ~500 positions solved once)"),
    "testset": ("othello_jax.commands.testset",
                "score an agent on the 6x6 perfect-play test set: optimal moves, disc loss"),
    "export-network": ("othello_jax.commands.export_network",
                       "a trained network as one portable .msgpack file (plays with --checkpoint=FILE)"),
    "solve-6x6": ("othello_jax.commands.solve_6x6",
                  "weakly solve 6x6 by the method of 'Othello is solved' (pivots, predictions, proof file)"),
    "verify-proof": ("othello_jax.commands.verify_proof",
                     "check a proof file: the tree walked again, every leaf re-solved"),
    "wthor": ("othello_jax.commands.wthor_database",
              "wthor download: fetch the WThor expert games (~9 MB) to where accuracy and supervised training look"),
}


CACHE_ENV = "OTHELLO_JAX_XLA_CACHE"  # a directory for compiled programs, or "off"


def compilation_cache_dir(environ: Mapping[str, str]) -> Path | None:
    """Where the commands keep compiled programs between runs (jax's persistent compilation
    cache): a command's second start skips most compiling (`engine` to its first 8x8 move: 16.5 s
    -> 7.0 s on cpu-2c). ``$OTHELLO_JAX_XLA_CACHE`` (a directory, or ``off``), else
    ``$XDG_CACHE_HOME/othello-jax/xla`` or ``~/.cache/othello-jax/xla``. None where it is off,
    where ``JAX_COMPILATION_CACHE_DIR`` already says (jax reads it itself), or where the directory
    cannot be made (nothing is cached then)."""
    choice = environ.get(CACHE_ENV, "")
    if choice.lower() == "off" or environ.get("JAX_COMPILATION_CACHE_DIR"):
        return None
    home = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".cache")
    path = Path(choice) if choice else Path(home) / "othello-jax" / "xla"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path


def use_compilation_cache(environ: Mapping[str, str] = os.environ) -> Path | None:
    """Turn on jax's persistent compilation cache where compilation_cache_dir says (call it before
    the first compile), so a second run, a command's or a notebook's, skips most compiling.
    Returns the directory in use (JAX_COMPILATION_CACHE_DIR's when that is set), None where off."""
    if environ.get("JAX_COMPILATION_CACHE_DIR"):
        return Path(environ["JAX_COMPILATION_CACHE_DIR"])  # jax reads it itself
    cache = compilation_cache_dir(environ)
    if cache is not None:
        import jax  # only here: `--help` and unknown commands start without it

        jax.config.update("jax_compilation_cache_dir", str(cache))
    return cache


XLA_LOG_ENV = "TF_CPP_MIN_LOG_LEVEL"  # XLA's C++ logging: 0 all, 1 warnings up (jax's default), 2 errors, 3 fatal


def quiet_xla_logs(environ: MutableMapping[str, str], debug: bool) -> None:
    """Keep XLA's C++ log lines below FATAL off the terminal: set ``TF_CPP_MIN_LOG_LEVEL=3`` (call
    it before jax is imported; XLA reads it when it loads) unless the user set it or asked for
    ``--debug``.

    XLA logs at ERROR what is no error of the user's: the 8-line ``Very slow compile?`` banner of
    asterisks (and ``The operation took ...``) when a compile passes 2 minutes on a slow machine,
    ``Constant folding an instruction is taking > 1s`` (both from slow_operation_alarm.cc, whose
    2-minute threshold no flag changes). Real errors stay visible: XLA raises them as Python
    exceptions, which the command reports in one line (a bug's traceback in its file), and a FATAL
    check still prints why the process died. ``TF_CPP_MIN_LOG_LEVEL=1`` (or ``--debug``) shows them all.
    """
    if not debug:
        environ.setdefault(XLA_LOG_ENV, "3")


def version_line() -> str:
    """``othello-jax 0.1.0 (jax ..., flax ..., mctx ..., orbax-checkpoint ..., Python ...)``: the
    installed versions, read from the packages' metadata (nothing imported, so it is instant)."""
    def version(distribution: str) -> str:
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            return "not installed"

    libraries = ", ".join(f"{name} {version(name)}" for name in ("jax", "jaxlib", "flax", "mctx", "orbax-checkpoint"))
    return f"othello-jax {version('othello-jax')} ({libraries}, Python {platform.python_version()})"


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: othello-jax COMMAND [options]", "       othello-jax --version", "", "commands:"]
    lines += [f"  {name:<{width}}  {summary}" for name, (_, summary) in sorted(COMMANDS.items())]
    lines.append("\nRun `othello-jax COMMAND --help` for a command's options.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = DEBUG_FLAG in argv
    argv = [arg for arg in argv if arg != DEBUG_FLAG]
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if argv[0] == "--version":
        print(version_line())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"othello-jax: unknown command {name!r}; choose from {', '.join(sorted(COMMANDS))}", file=sys.stderr)
        return 2
    quiet_xla_logs(os.environ, debug or debug_by_environment())  # before jax is imported
    use_compilation_cache(os.environ)  # only for a command that runs: `--help` starts without jax
    module = importlib.import_module(COMMANDS[name][0])
    return run_command(name, module.main, rest, log_dir=getattr(module, "traceback_dir", None), debug=debug)


def entry() -> None:
    """The ``othello-jax`` program: :func:`main`, then the process ends with its status."""
    exit_process(main())


if __name__ == "__main__":
    entry()
