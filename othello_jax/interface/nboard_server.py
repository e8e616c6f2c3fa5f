"""The engine side of the NBoard protocol (version 2), how the NBoard Othello GUI runs engines
such as Edax and NTest: one command per line in, protocol lines out, nothing else on stdout.

What the GUI sends and what this engine answers:

    nboard 2            set myname NAME
    set game GGF        (nothing) the position becomes the end of that GGF game (its clock, TI, and
                        the moves' times set the time of the engine's moves)
    set depth N         (nothing) noted; the strength stays the command line's (see below)
    set contempt N      (nothing) noted; this engine has no book, so draws are worth 0
    move F5/EVAL/TIME   (nothing) the move is played (eval and time optional; PA passes)
    hint N              status ..., then "search MOVE EVAL 0 DEPTH NOTE" for up to N moves, then status
    go                  status ..., then "=== MOVE/EVAL/TIME" (the move is not played: a "move" follows)
    ping N              pong N, once the work before it is done
    learn               learned (nothing is learned)
    quit                the engine exits with status 0, as at the end of input

Anything else (analyze, other settings) is ignored, with one line on stderr, as the protocol
asks; so is a malformed game or an illegal move, which leaves the position as it was.

Evaluations are from the side to move. Where the player solves the endgame exactly they are the
final disc difference under perfect play, with depth 100% (NBoard's mark of an exact solve).
Before that they are the network search's: for a network trained on disc margins the margin it
predicts; for a result-only network its expected score in percent minus 50 (-50 sure loss, 0
even, +50 sure win), as other AlphaZero-style engines report; their depth is the number of
simulations (a tree search has no fixed depth). An agent without a network (greedy, alphabeta)
gives its move with no evaluation (0). `set depth` does not change the strength: the network
search has no depth, and another simulation count would mean compiling a new search; the
command line's --sims, --seconds or --clock (or agent spec) decides it, and the game's clock
once the GUI gives one (GGF TI: each move gets a share of the time its side has left).
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, NamedTuple, TextIO

import jax

from othello_jax.agents.time_control import GameClock, MoveBudget
from othello_jax.errors import InputError, first_line
from othello_jax.game import SIZES, Othello, batch_of_one
from othello_jax.game.ggf import move_seconds, move_text, parse_game, parse_move_item
from othello_jax.interface.agent_cache import AgentFactory, AgentsBySize
from othello_jax.interface.session import GameSession, IllegalMove
from othello_jax.solver import count_empties, solve
from othello_jax.solver.solved_moves import move_values

if TYPE_CHECKING:
    from othello_jax.evaluation.analysis import Analyzer

PROTOCOL_VERSION = 2
EXACT_DEPTH = "100%"  # NBoard's depth for an exact solve
PREPARING = "preparing (compiling the search, cached for next time)"


class MoveEval(NamedTuple):
    """One move of a hint: its evaluation (side to move's view; None: the agent gives none), the
    depth NBoard shows, and a free-form note."""

    action: int
    value: float | None
    depth: str
    note: str = ""


def search_eval(value: float, game: Othello, value_margin: float = 0.0) -> float:
    """A search value (side to move's view, on the network's value scale) as an NBoard
    evaluation: the disc margin a margin network predicts; 50 x the value of a result-only one."""
    if value_margin:
        return float(game.read_value(value, value_margin)[1])
    return 50.0 * float(value)


def format_search_line(move: MoveEval, size: int = 8) -> str:
    """``search F5 12.00 0 100% note``: one move of a hint."""
    value = 0.0 if move.value is None else move.value
    return f"search {move_text(move.action, size)} {value:.2f} 0 {move.depth} {move.note}".rstrip()


def format_engine_move(action: int, value: float | None = None, seconds: float | None = None, size: int = 8) -> str:
    """The answer to go: ``=== F5/12.00/1.3``, ``=== F5//1.3`` without an evaluation, ``=== PA``
    (the parts after the move as in a GGF move: left out from the end when missing)."""
    text = f"=== {move_text(action, size)}"
    if value is not None or seconds is not None:
        text += "/" + ("" if value is None else f"{value:.2f}")
    if seconds is not None:
        text += f"/{seconds:.1f}"
    return text


class NboardEngine:
    """Answers NBoard commands for one game at a time, choosing moves with an agent.

    make_agent(game): the agent for a board size (built on first use); sizes: the sizes it can
    play. analyzer: the network search behind the agent, if any (for the evaluations of hint and
    go). exact_empties: per board size, the empty squares at or below which the player solves
    the endgame, so hint and go give exact values there (the C solver). budget: the move budget a
    timed agent reads (:class:`~othello_jax.agents.time_control.MoveBudget`); a game whose GGF
    has a clock (``TI``) sets it for the side to move at each go, from the times of its moves.
    """

    def __init__(self, make_agent: AgentFactory, size: int = 8, sizes: tuple[int, ...] = SIZES, seed: int = 0,
                 name: str = "othello-jax", analyzer: Analyzer | None = None,
                 exact_empties: Mapping[int, int] | None = None, budget: MoveBudget | None = None):
        if size not in sizes:
            raise InputError(f"board size {size} is not one of the playable sizes {sizes}")
        self.sizes = tuple(sizes)
        self.name = re.sub(r"\s+", "-", name.strip()) or "othello-jax"  # NBoard reads one word
        self.analyzer = analyzer
        self.exact_empties = dict(exact_empties or {})
        self.session = GameSession(Othello(size))
        self.depth: int | None = None  # as the GUI set it (noted only; see the module docstring)
        self.contempt = 0
        self.finished = False  # set by `quit`
        self.budget = budget
        self._own_clock = None if budget is None or budget.clocks is None else budget.clocks[0]  # --clock's
        self.game_clock: tuple[float, float] | None = None  # (main, increment) of the GUI's game, if it has one
        self._used: dict[int, list[float]] = {0: [], 1: []}  # each colour's move times so far
        self._agents = AgentsBySize(make_agent)
        self._prepared: set[int] = set()  # board sizes whose search has run (compiled) already
        self._key = jax.random.PRNGKey(seed)
        self._handlers: dict[str, Callable[[str], Iterable[str]]] = {
            "nboard": self._nboard, "set": self._set, "move": self._move, "hint": self._hint, "go": self._go,
            "ping": self._ping, "learn": lambda text: ["learned"], "quit": self._quit,
        }
        self._settings: dict[str, Callable[[str], Iterable[str]]] = {
            "game": self._set_game, "depth": self._set_depth, "contempt": self._set_contempt,
        }

    # ---- protocol -----------------------------------------------------------------------
    def handle(self, line: str) -> Iterator[str]:
        """The protocol lines answering one input line, each as soon as it is known (a status
        line comes before the thinking it announces). Bad input raises :class:`InputError`,
        after the lines already given."""
        name, text = _split(line)
        if not name:
            return
        handler = self._handlers.get(name.lower())
        if handler is None:
            raise InputError(f"ignoring unknown command {name[:20]!r}")
        label = name.lower() if name.lower() != "set" else f"set {_split(text)[0].lower()[:20]}"
        try:
            yield from handler(text)
        except InputError as error:
            raise InputError(f"{label}: {first_line(error)}") from None

    # ---- handlers -----------------------------------------------------------------------
    def _nboard(self, text: str) -> Iterator[str]:
        version = _integer(text, "nboard VERSION")
        yield f"set myname {self.name}"
        if version != PROTOCOL_VERSION:
            raise InputError(f"the GUI speaks version {version}; this engine speaks version {PROTOCOL_VERSION}")

    def _set(self, text: str) -> Iterable[str]:
        variable, value = _split(text)
        setter = self._settings.get(variable.lower())
        if setter is None:
            raise InputError("not a setting this engine knows; ignored")
        return setter(value)

    def _set_game(self, text: str) -> list[str]:
        record = parse_game(text)
        game = record.game
        if game.size not in self.sizes:
            raise InputError(f"the game is {game.size}x{game.size}; this engine plays "
                             f"{', '.join(f'{s}x{s}' for s in self.sizes)}")
        self._agents(game)  # an agent that cannot play this size says so now (InputError)
        session = GameSession(game, None if record.from_standard_start else record.start)
        for action in record.actions:
            session.play(action)
        self.session = session
        self.game_clock = record.clock
        if self.budget is not None and record.clock is None:  # the command line's budget again
            self.budget.set_clocks(self._own_clock)
        self._used = {color: [move.seconds or 0.0 for move in record.moves if move.color == color]
                      for color in (0, 1)}
        return []

    def _set_depth(self, text: str) -> list[str]:
        depth = _integer(text, "set depth N")
        if depth < 1:
            raise InputError(f"the depth must be at least 1, got {depth}")
        self.depth = depth
        return []

    def _set_contempt(self, text: str) -> list[str]:
        self.contempt = _integer(text, "set contempt N")
        return []

    def _move(self, text: str) -> list[str]:
        """Play a move; where the side to move must pass and the move is the other side's, the
        pass is played first (GUIs may leave forced passes out)."""
        session = self.session
        action = parse_move_item(text, session.game.size)
        plies = len(session.actions)
        try:
            if action != session.game.pass_action and session.must_pass():
                session.play(session.game.pass_action)
            session.play(action)
        except IllegalMove:
            session.undo(len(session.actions) - plies)
            raise
        self._used[int(session.states[-2].color)].append(move_seconds(text) or 0.0)
        return []

    def _hint(self, text: str) -> Iterator[str]:
        count = _integer(text, "hint N")
        if count < 1:
            raise InputError(f"the number of moves must be at least 1, got {count}")
        if self.session.is_over:
            raise InputError("the game is over: there is no move to evaluate")
        exact = self._solves_exactly()
        yield f"status {self._status(uses_agent=not exact)}"
        for move in self._ranked_moves(count, exact):
            yield format_search_line(move, self.session.game.size)
        yield "status"

    def _go(self, text: str) -> Iterator[str]:
        session = self.session
        if session.is_over:
            yield format_engine_move(session.game.pass_action, size=session.game.size)
            raise InputError("the game is over: answered PA")
        if session.must_pass():
            yield format_engine_move(session.game.pass_action, size=session.game.size)
            return
        exact = self._solves_exactly()
        yield f"status {self._status(uses_agent=True)}"
        if self.analyzer is not None:
            self.analyzer.last_move = None  # set again by its search, unless the solver chose
        self._set_clock(session.to_move)
        begin = time.perf_counter()
        action = session.agent_move(self._agents(session.game), self._next_key())
        seconds = time.perf_counter() - begin
        self._prepared.add(session.game.size)
        value = self._exact_value(action) if exact else self._search_value(action)
        yield format_engine_move(action, value, seconds, session.game.size)

    def _set_clock(self, color: int) -> None:
        """Set the budget's clock of ``color`` from the game's: its main time, less what its moves
        took, plus an increment for each (nothing without a clock in the game or a budget)."""
        if self.budget is None or self.game_clock is None:
            return
        main, increment = self.game_clock
        if self.budget.clocks is None or self.budget.clocks[color].increment != increment:
            self.budget.set_clocks(GameClock(main=main, increment=increment))
        used = self._used[color]
        self.budget.clocks[color].set_left(main - sum(used) + increment * len(used))

    def _ping(self, text: str) -> list[str]:
        return [f"pong {_integer(text, 'ping N')}"]

    def _quit(self, text: str) -> list[str]:
        self.finished = True
        return []

    # ---- evaluations --------------------------------------------------------------------
    def _solves_exactly(self) -> bool:
        """Whether the position is within the endgame the player solves exactly."""
        session = self.session
        limit = self.exact_empties.get(session.game.size, 0)
        return limit > 0 and int(count_empties(session.state, session.game)) <= limit

    def _ranked_moves(self, count: int, exact: bool) -> list[MoveEval]:
        """Up to ``count`` moves, best first: exact values, else the network search's, else the
        agent's move alone."""
        session, game = self.session, self.session.game
        if exact:
            values = move_values(batch_of_one(session.state), game, "c")[0]
            ranked = sorted(session.legal_actions(), key=lambda action: (-int(values[action]), action))
            return [MoveEval(action, float(values[action]), EXACT_DEPTH) for action in ranked[:count]]
        if self.analyzer is not None and self.analyzer.game == game:
            analysis = self.analyzer.analyze(session.state, self._next_key())
            self._prepared.add(game.size)
            visited = [move for move in analysis.moves if move.visits] or list(analysis.moves[:1])
            return [MoveEval(move.action, search_eval(move.q, game, self.analyzer.value_margin),
                             str(analysis.simulations), f"visits {move.visits} prior {move.prior:.3f}")
                    for move in visited[:count]]
        action = session.agent_move(self._agents(game), self._next_key())
        self._prepared.add(game.size)
        return [MoveEval(action, None, "0", "no evaluation: this agent only picks moves")]

    def _exact_value(self, action: int) -> float:
        """The exact value of playing ``action`` now (the solver's table makes it cheap after the
        player's own solve)."""
        session = self.session
        session.play(action)
        try:
            after = session.state
        finally:
            session.undo(1)
        return float(-solve(after, session.game, "c").score)

    def _search_value(self, action: int) -> float | None:
        """The network search's value of the move it just chose (None without a search)."""
        analysis = None if self.analyzer is None else self.analyzer.last_move
        if analysis is None:
            return None
        chosen = [move.q for move in analysis.moves if move.action == action and move.visits]
        value = chosen[0] if chosen else analysis.search_value
        return search_eval(value, self.session.game, self.analyzer.value_margin)

    def _status(self, uses_agent: bool) -> str:
        if uses_agent and self.session.game.size not in self._prepared:
            return PREPARING
        return "thinking" if uses_agent else "solving the endgame exactly"

    def _next_key(self) -> jax.Array:
        self._key, key = jax.random.split(self._key)
        return key

    def close(self) -> None:
        """Release the agents' resources (e.g. external engine processes)."""
        self._agents.close()


def _split(text: str) -> tuple[str, str]:
    """``'set game (;GM...'`` -> ``('set', 'game (;GM...')``."""
    parts = text.strip().split(None, 1)
    return (parts[0], parts[1] if len(parts) > 1 else "") if parts else ("", "")


def _integer(text: str, usage: str) -> int:
    token = text.strip()
    if not re.fullmatch(r"[+-]?\d{1,9}", token):
        raise InputError(f"expected `{usage}` with a whole number, got {token[:20]!r}")
    return int(token)


def serve(engine: NboardEngine, stdin: TextIO, stdout: TextIO, stderr: TextIO | None = None) -> int:
    """Answer commands from ``stdin`` until ``quit`` or the end of input; returns the exit code (0).

    Protocol lines go to ``stdout``, flushed one by one; bad input gets one line on ``stderr``
    and the engine keeps serving, as does a failure inside the engine (one line saying it is a bug).
    """
    stderr = sys.stderr if stderr is None else stderr
    try:
        for line in stdin:
            try:
                for reply in engine.handle(line):
                    stdout.write(reply + "\n")
                    stdout.flush()
            except InputError as error:
                print(f"othello-jax engine: {first_line(error)}", file=stderr, flush=True)
            except Exception as error:  # keep serving: the GUI still holds a game
                print(f"othello-jax engine: internal error (a bug, please report it): {type(error).__name__}: "
                      f"{first_line(error)}", file=stderr, flush=True)
            if engine.finished:
                break
    finally:
        engine.close()
    return 0
