"""The engine side of the Go Text Protocol (GTP version 2), played as Othello.

GTP is how Othello GUIs and engines (Edax, Egaroucid, GoGui-style controllers, arena
programs) talk to each other: one text command per line, one response per command,
``=`` for success and ``?`` for failure, the command's numeric id echoed, and every response
ended by an empty line. Vertices are Othello squares (``d3``, ``a1`` top left) or ``pass``;
colours are ``b``/``w``/``black``/``white``.

:class:`GtpEngine` answers commands for any agent (``act(batched_state, key) -> actions``);
:func:`serve` runs it over a pair of text streams (stdin/stdout for the `engine` command).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

import jax

from othello_jax import __version__
from othello_jax.agents.gtp_protocol import (
    PROTOCOL_VERSION,
    GtpError,
    format_response,
    format_vertex,
    parse_color,
    parse_command,
    parse_vertex,
)
from othello_jax.agents.time_control import GameClock, MoveBudget, gtp_clock
from othello_jax.errors import InputError
from othello_jax.game import SIZES, Othello, render
from othello_jax.interface.agent_cache import AgentFactory, AgentsBySize
from othello_jax.interface.session import GameSession, IllegalMove, color_name


class GtpEngine:
    """Answers GTP commands for one game at a time, choosing moves with an agent.

    ``make_agent(game)`` builds the agent for a board size (called lazily, once per size);
    ``sizes`` are the board sizes it can play (a checkpoint knows only its own). ``budget``: the
    move budget a timed agent reads (:class:`~othello_jax.agents.time_control.MoveBudget`), which
    ``time_settings`` and ``time_left`` set; without one they are accepted and change nothing.
    """

    def __init__(self, make_agent: AgentFactory, size: int = 8, sizes: tuple[int, ...] = SIZES,
                 seed: int = 0, name: str = "othello-jax", budget: MoveBudget | None = None):
        if size not in sizes:
            raise InputError(f"board size {size} is not one of the playable sizes {sizes}")
        self.make_agent = make_agent
        self.sizes = tuple(sizes)
        self.name = name
        self.session = GameSession(Othello(size))
        self.finished = False  # set by `quit`
        self.budget = budget
        self._auto_passes: set[int] = set()  # plies where this engine inserted a forced pass
        self._agents = AgentsBySize(make_agent)
        self._key = jax.random.PRNGKey(seed)
        self._handlers: dict[str, Callable[[tuple[str, ...]], str]] = {
            "protocol_version": lambda args: PROTOCOL_VERSION,
            "name": lambda args: self.name,
            "version": lambda args: __version__,
            "known_command": self._known_command,
            "list_commands": lambda args: "\n".join(self._handlers),
            "quit": self._quit,
            "boardsize": self._boardsize,
            "clear_board": self._clear_board,
            "komi": lambda args: "",
            "time_settings": self._time_settings,
            "time_left": self._time_left,
            "play": self._play,
            "genmove": self._genmove,
            "undo": self._undo,
            "showboard": lambda args: "\n" + render(self.session.state, self.session.game),
            "final_score": self._final_score,
        }

    # ---- protocol -----------------------------------------------------------------------
    def handle(self, line: str) -> str | None:
        """One input line -> the full response text (None for lines GTP says to ignore)."""
        command = parse_command(line)
        if command is None:
            return None
        handler = self._handlers.get(command.name)
        if handler is None:
            message = "unknown command" + (f": {command.name}" if command.name else "")
            return format_response(command.id, message, ok=False)
        try:
            return format_response(command.id, handler(command.args))
        except GtpError as error:
            return format_response(command.id, str(error), ok=False)
        except Exception as error:  # keep serving: the controller gets a one-line failure
            first = (str(error).strip().splitlines() or [""])[0]
            return format_response(command.id, f"internal error: {type(error).__name__}: {first}", ok=False)

    @property
    def commands(self) -> list[str]:
        return list(self._handlers)

    # ---- handlers -----------------------------------------------------------------------
    def _known_command(self, args: tuple[str, ...]) -> str:
        _expect(args, 1, "known_command NAME")
        return "true" if args[0].lower() in self._handlers else "false"

    def _quit(self, args: tuple[str, ...]) -> str:
        self.finished = True
        return ""

    def _boardsize(self, args: tuple[str, ...]) -> str:
        _expect(args, 1, "boardsize SIZE")
        if not (args[0].isascii() and args[0].isdigit()):
            raise GtpError(f"syntax error: board size {args[0]!r} is not a number")
        size = int(args[0]) if len(args[0]) <= 4 else -1  # no int() of a 5000-digit string
        if size not in self.sizes:
            shown = args[0] if len(args[0]) <= 4 else args[0][:4] + "..."
            raise GtpError(f"unacceptable size: {shown} (this engine plays {', '.join(map(str, self.sizes))})")
        try:
            self._agent(Othello(size))
        except ValueError as error:  # the agent cannot play this size
            raise GtpError(f"unacceptable size: {error}") from None
        self.session = GameSession(Othello(size))
        self._auto_passes.clear()
        return ""

    def _clear_board(self, args: tuple[str, ...]) -> str:
        self.session.reset()
        self._auto_passes.clear()
        return ""

    def _time_settings(self, args: tuple[str, ...]) -> str:
        """``time_settings MAIN BYOYOMI STONES`` (seconds, seconds, moves): both colours' clocks."""
        _expect(args, 3, "time_settings MAIN_TIME BYO_YOMI_TIME BYO_YOMI_STONES")
        main, byoyomi, stones = (_number(arg) for arg in args)
        if self.budget is not None:
            self.budget.set_clocks(gtp_clock(main, byoyomi, int(stones)))
        return ""

    def _time_left(self, args: tuple[str, ...]) -> str:
        """``time_left COLOR TIME STONES``: what is left on a colour's clock (stones > 0: of the
        byoyomi period, for that many moves)."""
        _expect(args, 3, "time_left COLOR TIME STONES")
        color = parse_color(args[0])
        seconds, stones = _number(args[1]), int(_number(args[2]))
        if self.budget is not None:
            if self.budget.clocks is None:  # no time_settings: the controller's word alone
                self.budget.set_clocks(GameClock(main=seconds))
            self.budget.clocks[color].set_left(seconds, stones)
        return ""

    def _play(self, args: tuple[str, ...]) -> str:
        _expect(args, 2, "play COLOR VERTEX")
        color = parse_color(args[0])
        action = parse_vertex(args[1], self.session.game.size)
        plies = len(self.session.actions)
        try:
            self._pass_if_forced(color)
            self.session.play(action)
        except IllegalMove as error:
            self._take_back_to(plies)
            raise GtpError(f"illegal move: {error}") from None
        return ""

    def _genmove(self, args: tuple[str, ...]) -> str:
        _expect(args, 1, "genmove COLOR")
        color = parse_color(args[0])
        size = self.session.game.size
        if self.session.is_over:
            return "pass"
        plies = len(self.session.actions)
        try:
            self._pass_if_forced(color)
        except IllegalMove as error:
            raise GtpError(f"illegal move: {error}") from None
        self._key, key = jax.random.split(self._key)
        try:
            action = self.session.agent_move(self._agent(self.session.game), key)
            self.session.play(action)
        except IllegalMove as error:
            self._take_back_to(plies)
            raise GtpError(f"engine failure: the agent chose an illegal move ({error})") from None
        except BaseException:
            self._take_back_to(plies)  # leave the board as it was before the command
            raise
        return format_vertex(action, size)

    def _undo(self, args: tuple[str, ...]) -> str:
        """Take back the last move, and the forced pass this engine inserted before it, if any."""
        if not self.session.actions:
            raise GtpError("cannot undo: no moves played")
        plies = len(self.session.actions) - 1
        self._take_back_to(plies - 1 if plies - 1 in self._auto_passes else plies)
        return ""

    def _final_score(self, args: tuple[str, ...]) -> str:
        black, white = self.session.score()
        if black == white:
            return "0"
        return f"B+{black - white}" if black > white else f"W+{white - black}"

    # ---- helpers ------------------------------------------------------------------------
    def _pass_if_forced(self, color: int) -> None:
        """A move for the side not to move is allowed only when the side to move must pass
        (controllers often leave forced passes out); the pass is then played first."""
        if self.session.is_over or color == self.session.to_move:
            return
        if not self.session.must_pass():
            raise IllegalMove(f"it is {color_name(self.session.to_move)}'s turn")
        self._auto_passes.add(len(self.session.actions))
        self.session.play(self.session.game.pass_action)

    def _take_back_to(self, plies: int) -> None:
        """Undo down to ``plies`` plies, forgetting inserted passes beyond that point."""
        self.session.undo(len(self.session.actions) - plies)
        self._auto_passes = {ply for ply in self._auto_passes if ply < plies}

    def _agent(self, game: Othello) -> Any:
        return self._agents(game)

    def close(self) -> None:
        """Release the agents' resources (e.g. external engine processes)."""
        self._agents.close()


def _expect(args: tuple[str, ...], count: int, usage: str) -> None:
    if len(args) != count:
        raise GtpError(f"syntax error: expected `{usage}`")


def _number(text: str) -> float:
    """A GTP time or count: a non-negative number (GTP sends integers; decimals are taken)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (0 <= value < 1e9):
        raise GtpError(f"syntax error: {text[:20]!r} is not a non-negative number")
    return value


def serve(engine: GtpEngine, stdin: TextIO, stdout: TextIO) -> int:
    """Answer commands from ``stdin`` until ``quit`` or end of input; returns an exit code."""
    try:
        for line in stdin:
            response = engine.handle(line)
            if response is None:
                continue
            stdout.write(response)
            stdout.flush()
            if engine.finished:
                break
    finally:
        engine.close()
    return 0
