"""What every `othello-jax COMMAND` shares: its argument parser and its one-line error exit."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

EXIT_BAD_INPUT = 2


def make_parser(name: str, doc: str | None) -> argparse.ArgumentParser:
    """The parser of `othello-jax NAME`, described by the first paragraph of the module's ``doc``."""
    return argparse.ArgumentParser(prog=f"othello-jax {name}", description=(doc or "").split("\n\n")[0])


def failure(name: str) -> Callable[..., int]:
    """``fail(message, code=2)``: print ``othello-jax NAME: error: MESSAGE`` (its first line) on stderr.

    Returns ``code``, so a command's ``main`` can ``return fail(...)`` on bad input.
    """

    def fail(message: object, code: int = EXIT_BAD_INPUT) -> int:
        text = str(message).strip()
        print(f"othello-jax {name}: error: {text.splitlines()[0] if text else 'failed'}", file=sys.stderr)
        return code

    return fail
