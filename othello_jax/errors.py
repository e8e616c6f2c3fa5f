"""The project's exception for bad input, importable from every layer (this module imports nothing).

Bad input gets :class:`InputError` (or a subclass): the CLI prints its message on one line and
exits 2. Any other exception reaching the CLI is a bug: exit 1, with the traceback in a file
(``othello_jax/commands/command.py``'s ``run_command``). A validator that raises a bare
``ValueError`` therefore says "this cannot happen", not "the user asked for something impossible".
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad input from the user: a config value, a flag, a file, a position, an agent spec, or the
    environment it names (an engine binary, a C compiler); the CLI prints its one-line message and
    exits 2. A ``ValueError``, so ``except ValueError`` callers and tests keep working."""


def need(ok: bool, message: str) -> None:
    """Raise ``InputError(message)`` unless ``ok``: the one-line check the settings validators use."""
    if not ok:
        raise InputError(message)


def first_line(message: object, limit: int | None = None) -> str:
    """The first line of ``message`` (an exception with no text: its type's name), cut to ``limit``
    characters when given: what a one-line error quotes of an error from a library."""
    text = str(message).strip()
    if text:
        line = text.splitlines()[0]
    else:
        line = type(message).__name__ if isinstance(message, BaseException) else "failed"
    return line if limit is None or len(line) <= limit else line[:limit - 3] + "..."
