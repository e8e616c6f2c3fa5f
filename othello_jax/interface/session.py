"""One game played on the host, move by move: the record behind `play`, the GTP engine and the
play notebook.

A :class:`GameSession` keeps every position so far (for undo and the game record) and checks
each move for legality with a clear message. It works on single, unbatched states, with the
host's rules (:mod:`othello_jax.game.one_position`: no program to compile before a player's first reply); the
agents work on batches, so :func:`agent_action` wraps one position into a batch of one. An
agent's first move compiles its program (a network's search: most of a minute on a small CPU,
seconds once jax's compilation cache holds it), so :func:`announce_preparation` says so first.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from othello_jax.game import (
    BLACK,
    NotationError,
    Othello,
    State,
    batch_of_one,
    format_transcript,
    one_position,
    parse_board,
    parse_square,
    play_transcript,
    square_name,
)
from othello_jax.notices import Say, compiling, say_while, shapes


class IllegalMove(NotationError):
    """A move that the rules do not allow here (the message says why)."""


def color_name(color: int) -> str:
    return "black" if int(color) == BLACK else "white"


class GameSession:
    """The positions of one game, oldest first, plus the actions between them."""

    def __init__(self, game: Othello = Othello(8), start: State | None = None):
        self.game = game
        self.reset(start)

    @classmethod
    def from_text(cls, game: Othello, board: str | None = None, moves: str | None = None) -> GameSession:
        """Start from a board string (default: the initial position), then play a transcript;
        forced passes missing from it are inserted. :class:`NotationError` on bad input."""
        start = None
        if board:
            start, parsed = parse_board(board)
            if parsed != game:
                raise NotationError(f"the board string is {parsed.size}x{parsed.size} but this game is "
                                    f"{game.size}x{game.size}")
        session = cls(game, start)
        if moves:
            _, actions = play_transcript(moves, game, start=session.state)
            for action in actions:
                session.play(action)
        return session

    # ---- queries ------------------------------------------------------------------------
    @property
    def state(self) -> State:
        return self.states[-1]

    @property
    def is_over(self) -> bool:
        return bool(self.state.terminal)

    @property
    def to_move(self) -> int:
        """Colour to move (0 black, 1 white)."""
        return int(self.state.color)

    def legal_actions(self) -> list[int]:
        """Legal actions in the current position (``[pass]`` when forced, ``[]`` at the end)."""
        return one_position.legal_actions(self.state, self.game)

    def must_pass(self) -> bool:
        return self.legal_actions() == [self.game.pass_action]

    def disc_counts(self) -> tuple[int, int]:
        """(black discs, white discs) on the board."""
        return one_position.disc_counts(self.state)

    def transcript(self) -> str:
        """The moves so far as ``f5d6c3...`` (passes as ``--``)."""
        return format_transcript(self.actions, self.game.size)

    def score(self) -> tuple[int, int]:
        """(black, white) score: the discs, plus the empty squares for the winner once the
        game is over (the world federation's rule)."""
        black, white = self.disc_counts()
        if self.is_over and black != white:
            empties = self.game.num_squares - black - white
            black, white = (black + empties, white) if black > white else (black, white + empties)
        return black, white

    def result_text(self) -> str:
        """``'black wins 36-28'`` style summary (see ``score``)."""
        black, white = self.score()
        if black == white:
            return f"draw {black}-{white}"
        winner = "black" if black > white else "white"
        return f"{winner} wins {max(black, white)}-{min(black, white)}"

    # ---- changes ------------------------------------------------------------------------
    def parse_move(self, text: str) -> int:
        """A square like ``d3`` or ``pass`` -> legal action; :class:`IllegalMove` otherwise."""
        action = parse_square(text, self.game.size)
        self.check_legal(action)
        return action

    def check_legal(self, action: int) -> None:
        legal = self.legal_actions()
        if action in legal:
            return
        name = square_name(action, self.game.size)
        if not legal:
            raise IllegalMove("the game is over")
        if action == self.game.pass_action:
            raise IllegalMove(f"cannot pass: {color_name(self.to_move)} has legal moves "
                              f"({', '.join(square_name(a, self.game.size) for a in legal)})")
        if legal == [self.game.pass_action]:
            raise IllegalMove(f"{name} is illegal: {color_name(self.to_move)} has no legal move and must pass")
        raise IllegalMove(f"{name} is illegal here; legal moves: "
                          f"{', '.join(square_name(a, self.game.size) for a in legal)}")

    def play(self, action: int) -> None:
        """Play a legal action for the side to move."""
        action = int(action)
        self.check_legal(action)
        self.states.append(one_position.step(self.game, self.state, action))
        self.actions.append(action)

    def undo(self, plies: int = 1) -> int:
        """Take back up to ``plies`` plies; returns how many were taken back."""
        count = min(plies, len(self.actions))
        for _ in range(count):
            self.states.pop()
            self.actions.pop()
        return count

    def undo_turn(self, color: int) -> bool:
        """Take back plies up to and including ``color``'s last move (so it is that side's
        turn again, as before that move); False if that side has not moved."""
        made_by = [int(s.color) == int(color) for s in self.states[:-1]]
        if True not in made_by:
            return False
        self.undo(made_by[::-1].index(True) + 1)
        return True

    def reset(self, start: State | None = None) -> None:
        """Back to ``start`` (default: the initial position) with no moves played."""
        self.states: list[State] = [one_position.init(self.game) if start is None else start]
        self.actions: list[int] = []
        self.from_initial = start is None  # whether the actions are a whole game so far

    def copy(self) -> GameSession:
        """The same game, on lists of its own (a worker thread searches it while the original changes)."""
        twin = GameSession.__new__(GameSession)
        twin.game, twin.states, twin.actions, twin.from_initial = (self.game, list(self.states), list(self.actions),
                                                                   self.from_initial)
        return twin

    def agent_move(self, agent: Any, key: jax.Array, say: Say | None = None) -> int:
        """The action ``agent`` picks now (not played). Host agents that replay games (an
        external GTP engine) are first told the moves so far through ``start_games``. The
        agent's first move is announced by ``say`` (default: standard error; :func:`announce_preparation`)."""
        if getattr(agent, "start_games", None) is not None and self.from_initial:
            agent.start_games([list(self.actions)])
        with announce_preparation(agent, self.game, say, self.state):
            return agent_action(agent, self.state, key)


_PREPARED: dict[int, tuple[Callable[[], Any], bool]] = {}  # id(agent) -> (a weak reference to it, whether
# its preparation was announced), for each agent that has moved in this process


def _seen(agent: Any) -> tuple[bool, bool]:
    """(whether ``agent``, this object, has moved in this process; whether its preparation was announced)."""
    entry = _PREPARED.get(id(agent))
    if entry is None or entry[0]() is not agent:
        return False, False
    return True, entry[1]


def _mark(agent: Any, announced: bool) -> None:
    try:
        ref: Callable[[], Any] = weakref.ref(agent)
    except TypeError:  # an object without weak references (a test's namespace): kept alive instead
        ref = lambda: agent
    _PREPARED[id(agent)] = (ref, announced)


def _what_compiles(agent: Any) -> str | None:
    """What an agent's first move compiles, from its name: an agent spec's kind (a network,
    alpha-beta or MCTS search; random and greedy agents), or a network player's own name
    ("network, 256 sims"); None for agents that compile nothing (external engines, perfect play)."""
    from othello_jax.agents import parse_spec  # the interface layer may; kept out of import time

    try:
        kind = parse_spec(str(getattr(agent, "name", "")))[0]
    except ValueError:  # not a spec: a network player (or a renamed agent)
        return "the search"
    return {"gtp": None, "perfect": None, "random": "the agent", "greedy": "the agent"}.get(kind, "the search")


def announce_preparation(agent: Any, game: Othello, say: Say | None = None,
                         state: State | None = None) -> contextlib.AbstractContextManager:
    """Wrap an agent's move (or a search with its program, such as a network's analysis): the first
    time this agent moves in the process, say "preparing the first move: compiling the search for
    8x8 (about 40 s on a 2-core CPU the first time; cached for next time)..." (or "loading the
    search for 8x8 from the compilation cache...") and, once it took long, "first move ready in
    47 s" (``say``: standard error by default, where an engine's protocol on standard output
    stays clean).
    An agent whose move in ``state`` waits for no compile (its ``ready_for(state)`` is true: a
    clocked network's opening-book reply while its search compiles in the background, or a search
    already compiled) says nothing; the first of its moves that waits says "preparing the search:
    compiling the search for 8x8 ..." (the first move's words if it is the first).
    Later moves and agents that compile nothing: nothing is said. The one place the players
    (`play`, the GTP and NBoard engines) announce their first move."""
    moved, announced = _seen(agent)
    if announced:
        return contextlib.nullcontext()
    ready_for = getattr(agent, "ready_for", None)
    if state is not None and ready_for is not None and ready_for(state):
        _mark(agent, False)  # answered without waiting: the compile, if any, is still to be announced
        return contextlib.nullcontext()
    _mark(agent, True)
    what = _what_compiles(agent)
    if what is None:
        return contextlib.nullcontext()
    notice = compiling(f"{what} for {game.size}x{game.size}", key=program_key(agent))
    lead, done = ("preparing the search", "search ready") if moved else ("preparing the first move", "first move ready")
    return say_while(notice.reworded(f"{lead}: {notice}"), say, done=done)


def program_key(agent: Any) -> tuple:
    """What fixes the program an agent's first move compiles, for the compile notices' index: its
    kind, name (a spec, or "network, 64 sims"), its parameters' shapes (a network's architecture;
    the weights are arguments) and the command line (which names the checkpoint)."""
    params = getattr(agent, "params", None)
    return type(agent).__name__, str(getattr(agent, "name", "")), shapes(params), sys.argv[1:]


def agent_action(agent: Any, state: State, key: jax.Array) -> int:
    """The action an agent (``act(batched_state, key) -> int32[B]``) picks for one position."""
    return int(np.asarray(agent.act(batch_of_one(state), key)).reshape(-1)[0])
