"""The text layer of the Go Text Protocol (GTP version 2) for Othello: command lines, responses,
colours and vertices. Shared by the client (:mod:`othello_jax.agents.gtp`, external engines as
agents) and the server (:mod:`othello_jax.interface.gtp_server`)."""

from __future__ import annotations

import re
from typing import NamedTuple

from othello_jax.errors import InputError
from othello_jax.game import NotationError, parse_square, square_name

PROTOCOL_VERSION = "2"


class GtpError(InputError):
    """A command failed; the message becomes the ``?`` response text. An ``InputError``, like the
    project's other errors for bad input (``NotationError``, ``AgentSpecError``)."""


class GtpCommand(NamedTuple):
    id: str  # "" when the controller sent no id
    name: str
    args: tuple[str, ...]


def clean_line(line: str) -> str:
    """GTP preprocessing: drop control characters but tab/newline, tabs to spaces, cut comments."""
    line = re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", "", line).replace("\t", " ")
    return line.split("#", 1)[0].strip()


def parse_command(line: str) -> GtpCommand | None:
    """``'12 play b d3'`` -> GtpCommand('12', 'play', ('b', 'd3')); None for empty/comment lines."""
    words = clean_line(line).split()
    if not words:
        return None
    command_id = ""
    if words[0].isascii() and words[0].isdigit():  # ids are ASCII digits ('²'.isdigit() is true)
        command_id, words = words[0], words[1:]
    if not words:
        return GtpCommand(command_id, "", ())
    return GtpCommand(command_id, words[0].lower(), tuple(words[1:]))


def format_response(command_id: str, text: str, ok: bool = True) -> str:
    """``'=12 d3\\n\\n'`` or ``'?12 illegal move\\n\\n'``. Blank lines inside text are dropped
    (an empty line ends a response); text starting with a newline (a board) starts on line two."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    head = ("=" if ok else "?") + command_id
    if not lines:
        return head + "\n\n"
    separator = "\n" if text.startswith("\n") else " "
    return head + separator + "\n".join(lines) + "\n\n"


def parse_color(text: str) -> int:
    """``b``/``black`` -> 0, ``w``/``white`` -> 1 (case-insensitive)."""
    word = text.lower()
    if word in ("b", "black"):
        return 0
    if word in ("w", "white"):
        return 1
    raise GtpError(f"syntax error: {text!r} is not a colour (b, w, black or white)")


def format_vertex(action: int, size: int) -> str:
    """Action -> GTP vertex (``d3`` or ``pass``)."""
    return "pass" if action == size * size else square_name(action, size)


def parse_vertex(text: str, size: int) -> int:
    """GTP vertex (``d3``, ``D3``, ``pass``) -> action."""
    if text.lower() == "pass":
        return size * size
    try:
        return parse_square(text, size)
    except NotationError as error:
        raise GtpError(f"syntax error: {error}") from None
