"""Text forms people use: squares (``d3``), move transcripts (``f5d6c3``), board strings and
a readable board rendering. These are host-side helpers (not for use inside ``jit``).

Board strings follow the .obf convention: one character per square from A1 to the last
square row by row (``X`` black, ``O`` white, ``-`` empty), then whitespace and the side to move
(``X``/``O``, also ``B``/``W``). Passes in transcripts are written ``--`` (``pa``, ``ps`` and
``pass`` are accepted too).
"""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.errors import InputError
from othello_jax.game import bitboard as bb
from othello_jax.game.rules import BLACK, WHITE, Othello, State

PASS_TOKEN = "--"
_PASS_WORDS = ("pass", "pa", "ps", "--")


class NotationError(InputError):
    """Malformed or illegal text input (message names the problem)."""


def square_name(action: int, size: int = 8) -> str:
    """``0 -> 'a1'``; the pass action gives ``'--'``."""
    if action == size * size:
        return PASS_TOKEN
    if not 0 <= action < size * size:
        raise NotationError(f"action {action} is outside 0..{size * size} for a {size}x{size} board")
    row, col = divmod(action, size)
    return f"{chr(ord('a') + col)}{row + 1}"


def parse_square(text: str, size: int = 8) -> int:
    """``'d3'``/``'D3'`` -> action index; ``'pass'``/``'--'`` -> the pass action."""
    token = text.strip().lower()
    if token in _PASS_WORDS:
        return size * size
    match = re.fullmatch(r"([a-z])([0-9]+)", token)
    if not match:
        raise NotationError(f"{text!r} is not a square (expected a letter and a number, like d3) or 'pass'")
    col = ord(match.group(1)) - ord("a")
    digits = match.group(2).lstrip("0")
    row = int(digits) - 1 if 0 < len(digits) <= 3 else -1  # past int()'s digit limit is off the board too
    if not (0 <= col < size and 0 <= row < size):
        last = chr(ord("a") + size - 1)
        raise NotationError(f"square {text!r} is off the {size}x{size} board (a1..{last}{size})")
    return row * size + col


def _tokens(transcript: str) -> list[str]:
    text = re.sub(r"\s+", "", transcript).lower()
    tokens, pos = [], 0
    while pos < len(text):
        for word in _PASS_WORDS:
            if text.startswith(word, pos):
                tokens.append(word)
                pos += len(word)
                break
        else:
            match = re.match(r"[a-z][0-9]", text[pos:])
            if not match:
                raise NotationError(f"transcript has an unreadable move at character {pos + 1}: {text[pos:pos + 4]!r}")
            tokens.append(match.group(0))
            pos += 2
    return tokens


def parse_transcript(transcript: str, size: int = 8) -> list[int]:
    """``'f5d6c3'`` -> action indices (syntax only; see ``play_transcript`` for legality)."""
    return [parse_square(token, size) for token in _tokens(transcript)]


def format_transcript(actions, size: int = 8) -> str:
    """Action indices -> ``'f5d6c3'``."""
    return "".join(square_name(int(a), size) for a in actions)


@functools.cache
def _compiled(game: Othello):
    """Jitted (step, legal_moves) for host-side replay: eager dispatch of the bit ops is slow."""
    return jax.jit(game.step), jax.jit(game.legal_moves)


def play_transcript(transcript: str, game: Othello = Othello(8), start: State | None = None,
                    auto_pass: bool = True) -> tuple[State, list[int]]:
    """Replay a transcript from ``start`` (default: the initial position), checking legality.

    With ``auto_pass`` a forced pass missing from the transcript is inserted (common in game
    databases). Returns the final state and the full action list (passes included).
    """
    step, legal_moves = _compiled(game)
    state = game.init() if start is None else start
    played: list[int] = []
    for number, action in enumerate(parse_transcript(transcript, game.size), start=1):
        legal = np.asarray(legal_moves(state))
        if auto_pass and legal[game.pass_action] and action != game.pass_action:
            state = step(state, game.pass_action)
            played.append(game.pass_action)
            legal = np.asarray(legal_moves(state))
        if not legal[action]:
            if bool(state.terminal):
                raise NotationError(f"move {number} ({square_name(action, game.size)}) comes after the game ended")
            raise NotationError(f"move {number} ({square_name(action, game.size)}) is illegal in this position")
        state = step(state, action)
        played.append(action)
    return state, played


def board_string(state: State, game: Othello = Othello(8)) -> str:
    """The .obf-style string: squares row by row, a space, the side to move."""
    black, white = (np.asarray(bb.to_grid(x, game.size)).reshape(-1) for x in game.black_white(state))
    chars = np.where(black, "X", np.where(white, "O", "-"))
    side = "X" if int(state.color) == BLACK else "O"
    return "".join(chars) + " " + side


def parse_board(text: str, game: Othello | None = None) -> tuple[State, Othello]:
    """Parse a board string; the board size comes from its length (16, 36 or 64 squares)."""
    parts = text.split()
    if len(parts) < 2:
        raise NotationError("board string needs the squares, whitespace, then the side to move (X or O)")
    squares, side = parts[0], parts[1].upper().rstrip(";")
    size = int(round(len(squares) ** 0.5))
    if size * size != len(squares) or size not in (4, 6, 8):
        raise NotationError(f"board string has {len(squares)} squares; expected 16, 36 or 64")
    if game is not None and game.size != size:
        raise NotationError(f"board string is {size}x{size} but a {game.size}x{game.size} board was asked for")
    bad = sorted(set(squares.upper()) - set("XO-"))
    if bad:
        raise NotationError(f"board string has characters {''.join(bad)!r}; only X, O and - are allowed")
    if side not in ("X", "O", "B", "W"):
        raise NotationError(f"side to move {parts[1]!r} must be X (black) or O (white)")
    game = Othello(size)
    grid = np.array(list(squares.upper())).reshape(size, size)
    black = bb.from_grid(jnp.asarray(grid == "X"))
    white = bb.from_grid(jnp.asarray(grid == "O"))
    color = BLACK if side in ("X", "B") else WHITE
    mover, opponent = (black, white) if color == BLACK else (white, black)
    return game.from_discs(mover, opponent, color), game


def render(state: State, game: Othello = Othello(8), show_legal: bool = True) -> str:
    """A readable board: ``X`` black, ``O`` white, ``.`` empty, ``*`` legal for the side to move."""
    size = game.size
    black, white = (np.asarray(bb.to_grid(x, size)) for x in game.black_white(state))
    legal = np.asarray(bb.to_grid(state.legal, size)) if show_legal else np.zeros((size, size), bool)
    header = "  " + " ".join(chr(ord("a") + c) for c in range(size))
    lines = [header]
    for r in range(size):
        cells = ["X" if black[r, c] else "O" if white[r, c] else "*" if legal[r, c] else "." for c in range(size)]
        lines.append(f"{r + 1} " + " ".join(cells))
    nb, nw = int(black.sum()), int(white.sum())
    if bool(state.terminal):
        status = "game over"
    else:
        black_to_move = int(state.color) == BLACK
        status = ("black" if black_to_move else "white") + " (" + ("X" if black_to_move else "O") + ") to move"
    lines.append(f"X {nb} - O {nw}, {status}")
    return "\n".join(lines)
