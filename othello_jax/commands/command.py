"""What every `othello-jax COMMAND` shares: its argument parser, its one-line error exit, its
result printing, and :func:`run_command`, which turns what escapes a command into one line and
an exit status.

A command module ``othello_jax/commands/NAME.py`` builds its parser with :func:`make_parser`,
answers bad input it checks itself with ``return fail(message)`` (``fail = failure(NAME)``: one
line on stderr, exit 2; so its ``main`` can be called directly, as the tests do), lets other
:class:`~othello_jax.errors.InputError` escape to :func:`run_command`, and prints a ``--json``
result with :func:`print_json`. ``train`` alone parses with absl (its ``--config.x.y=VALUE``
overrides come from ml_collections' config flags).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path

from othello_jax import stops
from othello_jax.errors import InputError, first_line
from othello_jax.pretrained import checkpoint_forms

EXIT_BUG = 1
EXIT_BAD_INPUT = 2
EXIT_ABORTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C
DEBUG_FLAG = "--debug"
DEBUG_ENV = "OTHELLO_JAX_DEBUG"
ERRORS_LOG = "errors.log"


def make_parser(name: str, doc: str | None) -> argparse.ArgumentParser:
    """The parser of `othello-jax NAME`; ``--help`` shows the module's ``doc`` as written (its examples)."""
    return argparse.ArgumentParser(prog=f"othello-jax {name}", description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def add_checkpoint_argument(parser: argparse.ArgumentParser, required: bool = False) -> None:
    """``--checkpoint``: a trained network in any form the loader reads, named in its help."""
    parser.add_argument("--checkpoint", required=required,
                        help=f"trained network: {checkpoint_forms()}, or one step directory "
                             "(WORKDIR/checkpoints/40); a workdir means its latest checkpoint, builtin:NAME a "
                             "network shipped with the package")


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """``--json``: print the result as one JSON line (for scripts) instead of a table."""
    parser.add_argument("--json", action="store_true", help="print the result as one JSON line")


def print_json(record: dict) -> None:
    """A command's ``--json`` result: one line on stdout."""
    print(json.dumps(record), flush=True)


def failure(name: str) -> Callable[..., int]:
    """``fail(message, code=2)``: print ``othello-jax NAME: error: MESSAGE`` (its first line) on stderr.

    Returns ``code``, so a command's ``main`` can ``return fail(...)`` on bad input.
    """

    def fail(message: object, code: int = EXIT_BAD_INPUT) -> int:
        print(f"othello-jax {name}: error: {first_line(message)}", file=sys.stderr)
        return code

    return fail


def debug_by_environment(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether ``OTHELLO_JAX_DEBUG`` asks for tracebacks (any value but empty or ``0``), as ``--debug`` does."""
    return environ.get(DEBUG_ENV, "") not in ("", "0")


def run_command(name: str, main: Callable[[list[str]], int | None], argv: list[str],
                log_dir: Callable[[list[str]], str | Path | None] | None = None, debug: bool = False) -> int:
    """Run ``main(argv)`` (without ``--debug``) and turn what escapes it into an exit status.

    Bad input (:class:`~othello_jax.errors.InputError`, or an ``OSError`` such as a missing file
    the command could not check beforehand): ``othello-jax NAME: error: LINE`` on stderr, exit 2.
    SIGINT (Ctrl-C) or SIGTERM: one line at once (``othello-jax NAME: interrupted (SIGINT)``), even
    while the command is inside a long compile, then exit 130 or 143 once ``finally`` blocks have
    closed the command's files (:class:`othello_jax.stops.Interrupt`; a command such as ``train``
    may answer them its own way inside). Anything else is a bug: one line saying so and naming
    the file holding the full traceback (``log_dir(argv)/errors.log`` when ``log_dir`` names a directory, e.g. the run
    directory of ``train``; else a new temporary file), exit 1. With ``--debug`` anywhere in
    ``argv``, ``debug=True`` or ``OTHELLO_JAX_DEBUG=1`` the traceback goes to stderr as well.
    """
    debug = debug or DEBUG_FLAG in argv or debug_by_environment()
    argv = [arg for arg in argv if arg != DEBUG_FLAG]
    interrupt = stops.Interrupt(name)
    try:
        with stops.watching(interrupt):
            return int(main(argv) or 0)
    except (InputError, OSError) as error:
        if debug:
            traceback.print_exc()
        return failure(name)(error)
    except KeyboardInterrupt:
        if interrupt.first is not None:  # a signal: its line is said once (at once, on the watcher thread)
            interrupt.announce()
            return stops.exit_code(interrupt.first)
        print(f"othello-jax {name}: interrupted", file=sys.stderr)
        return EXIT_ABORTED
    except Exception as error:
        if debug:
            traceback.print_exc()
        where = write_traceback(name, argv, error, log_dir(argv) if log_dir is not None else None)
        print(f"othello-jax {name}: internal error (a bug, please report it): {type(error).__name__}: "
              f"{first_line(error)}; full traceback in {where}", file=sys.stderr)
        return EXIT_BUG


def exit_process(code: int) -> None:
    """End a command's process with ``code``: through :func:`othello_jax.stops.end_process` once a
    signal has come (XLA's compiler threads may still run; the interpreter's finalizers would
    crash under them), else by ``sys.exit``."""
    if stops.signalled():
        stops.end_process(code)
    sys.exit(code)


def write_traceback(name: str, argv: list[str], error: BaseException, directory: str | Path | None) -> Path:
    """Append ``error``'s traceback, with the time and the command line, to ``DIRECTORY/errors.log``
    (a new temporary file when there is no directory or it cannot be written); returns the file."""
    text = (f"=== {datetime.datetime.now().isoformat(timespec='seconds')} othello-jax {name} {' '.join(argv)}\n"
            + "".join(traceback.format_exception(error)))
    if directory is not None:
        path = Path(directory).expanduser() / ERRORS_LOG
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a") as log:
                log.write(text + "\n")
            return path
        except OSError:
            pass  # an unwritable directory: the temporary file below still keeps the traceback
    with tempfile.NamedTemporaryFile("w", prefix=f"othello-jax-{name}-", suffix=".log", delete=False) as log:
        log.write(text)
    return Path(log.name)
