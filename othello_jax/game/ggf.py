"""GGF, the Generic Game Format of the Othello servers (GGS) and of the NBoard GUI: one game as
``(;GM[Othello]PB[..]PW[..]TY[8]BO[8 <squares> <side>]B[F5]W[D6//1.2];)``.

A game is a list of properties ``NAME[value]`` between ``(;`` and ``;)``. The ones read here:
BO, the starting position (board size, one character per square from A1 row by row: ``*``
black, ``O`` white, ``-`` empty, then the side to move, ``*`` or ``O``); B and W, the moves in
order (a square or PA for a pass, optionally followed by ``/eval/time``); TY, the game type (an
anti-Othello type, with an ``a``, is refused); GM, which must be Othello when given; TI, the game
clock, with the moves' times (:attr:`GgfGame.clock`, read by the NBoard engine). Every other
property (players, date, result) is kept as text and otherwise ignored. Moves are checked
against the rules; a pass the record leaves out where it was forced is inserted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from othello_jax.game import bitboard as bb
from othello_jax.game.notation import (
    NotationError,
    board_string,
    parse_board,
    parse_square,
    play_transcript,
    square_name,
)
from othello_jax.game.rules import BLACK, SIZES, WHITE, Othello, State

PASS_MOVE = "PA"
_PROPERTY = re.compile(r"\s*([A-Za-z]+)\s*\[")
_BLACK_SQUARES, _WHITE_SQUARES, _EMPTY_SQUARES = "*Xx", "Oo0", "-._"


class GgfError(NotationError):
    """A GGF record that cannot be read or replayed (one-line message naming the problem)."""


class GgfMove(NamedTuple):
    """One move of a record: who played it (BLACK or WHITE), the action (pass included) and the
    seconds it took where the record says (``F5//2.5``)."""

    color: int
    action: int
    seconds: float | None = None


class GgfGame(NamedTuple):
    """A parsed game: its rules, its starting position, its moves as written, and the replay.

    actions: every action from the start, forced passes the record left out included (so that
    they alternate colours from start.color); final: the position after them.
    """

    game: Othello
    start: State
    moves: tuple[GgfMove, ...]
    actions: tuple[int, ...]
    final: State
    properties: dict[str, str]

    @property
    def clock(self) -> tuple[float, float] | None:
        """``(main seconds, increment)`` of the game's clock (``TI[5:00]``, ``TI[5:00/2]``:
        main time, then GGS's increment; its extension is not read); None without one."""
        return parse_clock(self.properties.get("TI", ""))

    def seconds_used(self, color: int) -> float:
        """What ``color``'s moves in the record took (moves without a time count nothing)."""
        return sum(move.seconds or 0.0 for move in self.moves if move.color == color)

    @property
    def from_standard_start(self) -> bool:
        """Whether the record starts from the usual four centre discs, black to move."""
        return board_string(self.start, self.game) == board_string(self.game.init(), self.game)


def parse_game(text: str) -> GgfGame:
    """One GGF game -> :class:`GgfGame`; :class:`GgfError` with one line on malformed text, an
    unsupported board or an illegal move."""
    properties = _properties(text)
    named = {name: value for name, value in properties if name not in ("B", "W")}
    if named.get("GM", "Othello").strip().lower() != "othello":
        raise GgfError(f"GM[{named['GM'].strip()}] is not an Othello game")
    game_type = named.get("TY", "").strip()
    if "a" in re.sub(r"^s?\d+", "", game_type.lower()):
        raise GgfError(f"TY[{game_type}] is anti-Othello, which this engine does not play")
    if "BO" in named:
        start, game = _start_position(named["BO"])
    else:  # no BO: the usual start of the size TY gives (8x8 without one)
        game = Othello(_board_size(re.match(r"s?(\d*)", game_type.lower()).group(1) or "8", "TY"))
        start = game.init()
    moves = tuple(_move(name, value, game.size, number)
                  for number, (name, value) in enumerate(((n, v) for n, v in properties if n in ("B", "W")), 1))
    final, actions = replay(game, start, moves)
    return GgfGame(game, start, moves, tuple(actions), final, named)


def parse_move_item(text: str, size: int = 8) -> int:
    """A GGF move item ``F5``, ``f5/1.23/4.5``, ``F5//2`` or ``PA`` -> action; the evaluation and
    time after the move are not read."""
    square = text.strip().split("/", 1)[0].strip()
    if not square:
        raise GgfError(f"{text.strip()!r} names no move (expected a square like F5, or PA)")
    return parse_square(square, size)


def move_seconds(text: str) -> float | None:
    """The time of a move item, ``F5/1.23/4.5`` -> 4.5 (``F5//1:02`` -> 62.0); None without one."""
    parts = text.strip().split("/")
    return parse_time(parts[2]) if len(parts) > 2 else None


def parse_time(text: str) -> float | None:
    """A GGS time ``[[hh:]mm:]ss`` (seconds may have decimals) -> seconds; None when empty or
    unreadable (a clock the engine cannot read is left alone, not refused)."""
    text = re.sub(r"[^0-9:.]", "", text)
    if not text or not re.fullmatch(r"(\d+:){0,2}\d+(\.\d*)?", text):
        return None
    seconds = 0.0
    for part in text.split(":"):
        seconds = seconds * 60 + float(part)
    return seconds


def parse_clock(text: str) -> tuple[float, float] | None:
    """A GGF ``TI`` value ``main[/increment[/extension]]`` -> ``(main, increment)`` seconds; None
    when it names no main time."""
    parts = text.strip().split("/")
    main = parse_time(parts[0])
    if main is None or main <= 0:
        return None
    return main, (parse_time(parts[1]) or 0.0) if len(parts) > 1 else 0.0


def move_text(action: int, size: int = 8) -> str:
    """An action as GGF writes it: ``F5``, or ``PA`` for a pass."""
    return PASS_MOVE if action == size * size else square_name(action, size).upper()


def replay(game: Othello, start: State, moves: Sequence[GgfMove]) -> tuple[State, list[int]]:
    """Play ``moves`` from ``start``, checking each for legality and turn; a pass the record
    leaves out is inserted where it was forced. Returns the final position and every action."""
    state, actions = start, []
    for number, (color, action, _) in enumerate(moves, 1):
        label = f"move {number} ({'BW'[color]}[{move_text(action, game.size)}])"
        if bool(state.terminal):
            raise GgfError(f"{label} comes after the end of the game")
        must_pass = not bool(bb.any_set(state.legal))
        mover = int(state.color) if action == game.pass_action or not must_pass else 1 - int(state.color)
        if mover != color:
            raise GgfError(f"{label} is out of turn: {'black' if mover == BLACK else 'white'} is to move")
        try:
            state, played = play_transcript(square_name(action, game.size), game, start=state)
        except NotationError:
            raise GgfError(f"{label} is illegal in this position") from None
        actions.extend(played)
    return state, actions


def format_game(game: Othello, start: State, actions: Sequence[int], black: str = "", white: str = "",
                place: str = "othello-jax", result: str = "?") -> str:
    """A GGF record of ``actions`` (passes included, so that they alternate colours) played from
    ``start``; the inverse of :func:`parse_game` for its position and moves."""
    squares, side = board_string(start, game).split()
    board = f"{game.size} {squares.replace('X', '*')} {'*' if side == 'X' else 'O'}"
    first = int(start.color)
    moves = "".join(f"{'BW'[(first + ply) % 2]}[{move_text(int(action), game.size)}]"
                    for ply, action in enumerate(actions))
    tags = [("GM", "Othello"), ("PC", place), ("PB", black), ("PW", white), ("RE", result), ("TY", str(game.size)),
            ("BO", board)]
    return "(;" + "".join(f"{name}[{_escape(value)}]" for name, value in tags) + moves + ";)"


def _properties(text: str) -> list[tuple[str, str]]:
    """The ``(NAME, value)`` pairs of one game, in order (names upper-cased, escapes undone)."""
    body = text.strip()
    if not body.startswith("(;"):
        raise GgfError(f"a GGF game starts with '(;', not {body[:12]!r}")
    pos, found = 2, []
    while True:
        while pos < len(body) and body[pos].isspace():
            pos += 1
        if body.startswith(";)", pos):
            break
        match = _PROPERTY.match(body, pos)
        if match is None:
            if pos >= len(body):
                raise GgfError("the GGF game does not end with ';)'")
            raise GgfError(f"unreadable GGF at character {pos + 1}: {body[pos:pos + 12]!r}")
        value, pos = _value(body, match.end(), match.group(1).upper())
        found.append((match.group(1).upper(), value))
    if body[pos + 2:].strip():
        raise GgfError(f"text after the end of the game (';)'): {body[pos + 2:pos + 14].strip()!r}")
    return found


def _value(body: str, pos: int, name: str) -> tuple[str, int]:
    """The value of a property whose '[' ends before ``pos`` (``\\`` escapes the next character),
    and the position after its ']'."""
    chars = []
    while pos < len(body):
        char = body[pos]
        if char == "]":
            return "".join(chars), pos + 1
        if char == "\\" and pos + 1 < len(body):
            pos += 1
            char = body[pos]
        chars.append(char)
        pos += 1
    raise GgfError(f"the value of {name}[ is not closed by ']'")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("]", "\\]")


def _board_size(text: str, where: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 3:
        raise GgfError(f"{where} board size {text[:8]!r} is not a number")
    size = int(text)
    if size not in SIZES:
        raise GgfError(f"{where} board size {size} is not one this engine plays ({', '.join(map(str, SIZES))})")
    return size


def _start_position(value: str) -> tuple[State, Othello]:
    """BO[size squares side] -> (starting position, rules)."""
    tokens = value.split()
    if len(tokens) < 3:
        raise GgfError("BO[...] needs the board size, the squares and the side to move")
    size = _board_size(tokens[0], "BO")
    squares, side = "".join(tokens[1:-1]), tokens[-1]
    if len(squares) != size * size:
        raise GgfError(f"BO[...] has {len(squares)} squares; a {size}x{size} board has {size * size}")
    kinds = {**dict.fromkeys(_BLACK_SQUARES, "X"), **dict.fromkeys(_WHITE_SQUARES, "O"),
             **dict.fromkeys(_EMPTY_SQUARES, "-")}
    unknown = sorted(set(squares) - set(kinds))
    if unknown:
        raise GgfError(f"BO[...] has squares {''.join(unknown)!r}; only * (black), O (white) and - (empty) are allowed")
    if side not in _BLACK_SQUARES + _WHITE_SQUARES:
        raise GgfError(f"BO[...] side to move {side!r} must be * (black) or O (white)")
    color = "X" if side in _BLACK_SQUARES else "O"
    return parse_board("".join(kinds[c] for c in squares) + " " + color, Othello(size))


def _move(name: str, value: str, size: int, number: int) -> GgfMove:
    try:
        action = parse_move_item(value, size)
    except NotationError as error:
        raise GgfError(f"move {number} ({name}[{value.strip()[:12]}]): {error}") from None
    return GgfMove(BLACK if name == "B" else WHITE, action, move_seconds(value))
