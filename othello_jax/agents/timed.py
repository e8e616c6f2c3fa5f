"""A network's search on the clock: the best move it finds in a given number of seconds.

:class:`TimedSearch` is the one place moves are chosen against time, for `play`, the GTP and
NBoard engines (``--seconds``, game clocks) and the web page::

    timed = TimedSearch(game, apply_fn, variables, playing_search_config("gumbel", 256), solve_empties=18,
                        book=shipped_book())  # optional: othello_jax.agents.opening_book
    timed.prepare_in_background()             # optional: compile now (the first search does it anyway)
    move = timed.move(state, key, seconds=3)  # a legal action in about 3 s (or simulations=256)
    move.action, move.seconds, move.simulations, move.source  # "only move" | "solver" | "book" | "search"
    summarize(move.result, 0, game)           # othello_jax.evaluation.analysis; None unless searched

A move with a single legal choice (a pass included) is answered at once; so is a position of the
opening book while the search is still being compiled (a first reply needs no compile).
Positions within the endgame solver's reach are solved (the solver's time is the move's time;
with little time the solver is given fewer empties, :func:`solve_depth`). Otherwise the search
runs in chunks of simulations (:class:`~othello_jax.search.chunked.ChunkedSearch`, compiled once)
until the time is spent: a chunk starts only while the time left covers it, so a move overruns by
at most one chunk. Gumbel's sequential halving is planned for the simulations that fit, from the
speed of the move's first chunk (and of the moves before); time left over goes on visiting the
best two moves. With ``simulations`` instead, the tree is that of ``run_search``.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from othello_jax.agents.base import Agent
from othello_jax.agents.opening_book import BookMove, OpeningBook
from othello_jax.agents.time_control import MoveBudget
from othello_jax.game import Othello, State, batch_of_one, one_position
from othello_jax.search import SearchResult
from othello_jax.search.chunked import FIRST_PLAN, ChunkedSearch
from othello_jax.solver import empties_on_host, solve

SOLVE_SECONDS = 1.0  # the players' default solve depths take at most about this long (agent_options)
CHUNK = 32  # simulations a chunk: 15-60 ms of the shipped 8x8 networks on one CPU core
CAPACITY = 8192  # simulations a move at most (the tree's room): 10 s of builtin:8x8-expert on a 2-core CPU


class TimedMove(NamedTuple):
    """A move chosen on the clock.

    action: the legal action (pass included); seconds: wall seconds the choice took (the
    solver's included); simulations: the search's (0 when none ran); source: ``"only move"``,
    ``"solver"``, ``"book"`` or ``"search"``; result: the search behind the move (a batch of one;
    None without a search), e.g. for ``othello_jax.evaluation.analysis.summarize(result, 0, game)``;
    games: a book move's expert games; waited: of ``seconds``, those spent waiting for the
    search's programs to compile (the first search's).
    """

    action: int
    seconds: float
    simulations: int
    source: str
    result: SearchResult | None = None
    games: int = 0
    waited: float = 0.0


def solve_depth(seconds: float, depth: int) -> int:
    """The empties to solve with ``seconds`` for the move: ``depth`` (about :data:`SOLVE_SECONDS` at
    most) when that much time is there, one fewer for each halving of the time below it (a
    solve costs 2-3x more per empty square)."""
    if depth <= 0 or seconds >= SOLVE_SECONDS:
        return max(depth, 0)
    return max(0, depth - math.ceil(math.log2(SOLVE_SECONDS / max(seconds, 1e-3))))


class TimedSearch:
    """A network (``apply_fn``, ``variables``) searching with ``config``'s settings (gumbel or
    puct; its simulation count is ignored) for as long as each move is given.

    ``solve_empties``: positions with at most this many empty squares are solved exactly
    (``solver``: ``"c"`` or ``"auto"``; 0: never); ``chunk``, ``capacity``: simulations per
    compiled chunk and at most per move; ``clock``: seconds (a fake one in tests); ``book``: an
    opening book answering while the search is not compiled yet (:meth:`prepare_in_background`),
    so a first reply takes no compile.
    """

    def __init__(self, game: Othello, apply_fn: Callable, variables: Any, config: ml_collections.ConfigDict,
                 value_margin: float = 0.0, solve_empties: int = 0, solver: str = "c", chunk: int = CHUNK,
                 capacity: int = CAPACITY, clock: Callable[[], float] = time.perf_counter,
                 book: OpeningBook | None = None):
        self.game, self.variables, self.value_margin = game, variables, value_margin
        self.apply_fn, self.config = apply_fn, config  # the network and settings (a hint's analyzer shares them)
        self.solve_empties, self.solver, self.clock = int(solve_empties), solver, clock
        self.search = ChunkedSearch(config, apply_fn, game, value_margin, chunk, capacity)
        self.chunk_seconds: float | None = None  # a chunk's seconds, averaged over the moves so far
        self.finish_seconds = 0.0  # reading the answer from the tree (the last move's)
        self.last_move: TimedMove | None = None
        self.book = book
        self.ready = False  # whether the search's programs are compiled
        self._lock = threading.RLock()  # one move at a time (a web server's threads share one search)
        self._compiling = threading.Lock()

    def prepare(self) -> None:
        """Compile the search's programs (a one-chunk search of the start position), once; a
        second caller waits for the first. The first search does it if nobody did; its time then
        starts after."""
        with self._compiling:
            if self.ready:
                return
            search = self.search
            start = batch_of_one(one_position.init(self.game))  # the host's start: no small programs beside the compile
            carry = search.start(self.variables, start, jax.random.PRNGKey(0))
            carry = search.advance(self.variables, carry, jnp.asarray(search.schedule(0)))
            jax.block_until_ready(search.finish(carry))
            self.ready = True

    def prepare_in_background(self) -> threading.Thread:
        """:meth:`prepare` in a thread, started now (a player's start: the first moves come from
        the book meanwhile, and a person's thinking time is not lost). Not a daemon: a process
        that ends while it compiles waits for it (the program is then cached for the next start);
        a compiler thread killed at exit aborts the process."""
        thread = threading.Thread(target=self._prepare_quietly, name="compile the search", daemon=False)
        thread.start()
        return thread

    def _prepare_quietly(self) -> None:
        try:
            self.prepare()
        except Exception:  # the first move's own prepare() raises it again, where it is reported
            pass

    def move(self, state: State, key: jax.Array | Callable[[], jax.Array], seconds: float | None = None,
             simulations: int | None = None) -> TimedMove:
        """The move for one (unbatched) position in about ``seconds`` (at most one chunk more), or
        after ``simulations`` (the tree of ``run_search`` with that many), whichever comes first;
        one of the two must be given. ``key``: the search's, or a function giving it, called only
        when the move is searched (a reply from the book splits no key: a split compiles small programs)."""
        if seconds is None and simulations is None:
            raise ValueError("a timed move needs seconds or simulations")
        with self._lock:
            begin = self.clock()
            legal = one_position.legal_actions(state, self.game)
            depth = solve_depth(math.inf if seconds is None else seconds, self.solve_empties)
            if len(legal) <= 1:
                move = TimedMove(legal[0] if legal else self.game.pass_action, self.clock() - begin, 0, "only move")
            elif depth and int(empties_on_host(state, self.game)) <= depth:
                action = solve(state, self.game, self.solver).action
                move = TimedMove(int(action), self.clock() - begin, 0, "solver")
            elif not self.ready and (book := self._book_move(state)) is not None:
                move = TimedMove(book.action, self.clock() - begin, 0, "book", games=book.games)
            else:
                self.prepare()
                start = self.clock()  # the time starts once the search is compiled
                deadline = math.inf if seconds is None else start + seconds
                result, done = self._searched(batch_of_one(state), key() if callable(key) else key, deadline,
                                              simulations)
                move = TimedMove(int(np.asarray(result.action)[0]), self.clock() - begin, done, "search", result,
                                 waited=start - begin)
            self.last_move = move
            return move

    def waits(self, state: State, seconds: float | None = None) -> bool:
        """Whether the move for one (unbatched) position with ``seconds`` would wait for the
        search's programs to compile now: not once they are ready, nor for an only move, an
        endgame the solver plays, or a reply from the book."""
        if self.ready or len(one_position.legal_actions(state, self.game)) <= 1:
            return False
        depth = solve_depth(math.inf if seconds is None else seconds, self.solve_empties)
        if depth and int(empties_on_host(state, self.game)) <= depth:
            return False
        return self._book_move(state) is None

    def run(self, states: State, key: jax.Array, simulations: int) -> SearchResult:
        """A whole search of a batch of positions with ``simulations``: the tree of
        ``run_search``, on this player's compiled programs (e.g. a hint's analysis)."""
        with self._lock:
            self.prepare()
            return self.search.run(self.variables, states, key, simulations)

    def _book_move(self, state: State) -> BookMove | None:
        """The book's move where it has one (and it is legal)."""
        found = None if self.book is None else self.book.move(state, self.game)
        return found if found is not None and found.action in one_position.legal_actions(state, self.game) else None

    def _searched(self, states: State, key: jax.Array, deadline: float,
                  simulations: int | None) -> tuple[SearchResult, int]:
        """Chunks until ``deadline`` or ``simulations`` (one chunk at least): the result and the
        simulations run."""
        search, variables = self.search, self.variables
        limit = search.capacity if simulations is None else min(search.capacity, max(1, int(simulations)))
        carry = search.start(variables, states, key)
        first_plan = limit if simulations is not None else FIRST_PLAN * search.chunk
        schedule = jnp.asarray(search.schedule(first_plan))
        done, elapsed = 0, []
        while True:
            began = self.clock()
            count = min(search.chunk, limit - done)
            carry = search.advance(variables, carry, schedule, count)
            jax.block_until_ready(carry.done)
            elapsed.append(self.clock() - began)
            done += count
            if len(elapsed) == 1 and simulations is None:  # plan from this move's first chunk (and earlier moves')
                per_chunk = self._chunk_estimate(elapsed[0])
                fits = done + int(max(0.0, deadline - self.clock() - self.finish_seconds) / per_chunk) * search.chunk
                if fits > first_plan:  # else the first plan's: its first chunk is the same
                    schedule = jnp.asarray(search.schedule(fits))
            per_chunk = self._chunk_estimate(float(np.median(elapsed)), remember=False)
            if done >= limit or self.clock() + per_chunk + self.finish_seconds > deadline:
                break
        self._chunk_estimate(float(np.median(elapsed)))
        began = self.clock()
        result = jax.block_until_ready(search.finish(carry))
        self.finish_seconds = self.clock() - began
        return result, done

    def _chunk_estimate(self, seconds: float, remember: bool = True) -> float:
        """A chunk's seconds: ``seconds`` measured now, blended with the moves before (the larger
        of the two, so a loaded machine is believed at once); ``remember`` keeps the blend."""
        known = self.chunk_seconds
        blended = seconds if known is None else max(seconds, 0.5 * (known + seconds))
        if remember:
            self.chunk_seconds = blended if known is None else 0.7 * known + 0.3 * seconds
        return max(blended, 1e-6)

    def agent(self, budget: MoveBudget | float, name: str = "network, timed") -> Agent:
        """This search as a host :class:`~othello_jax.agents.Agent` (positions of a batch one by
        one): ``budget`` seconds a move, or a :class:`MoveBudget` read before each move and
        charged after it (game clocks; without one its simulations)."""
        budget = budget if isinstance(budget, MoveBudget) else MoveBudget(per_move=float(budget))

        def act(states: State, key: jax.Array) -> np.ndarray:
            count = int(np.asarray(states.terminal).shape[0])
            actions = np.zeros(count, np.int32)
            keys: list[jax.Array] = []  # the rows' keys, split once a move searches (a book reply needs none)

            def row_key(row: int) -> jax.Array:
                if not keys:
                    keys.extend(jax.random.split(key, count))
                return keys[row]

            for row in range(count):
                state = jax.tree.map(lambda x: np.asarray(x)[row], states)
                if not bool(state.terminal):
                    seconds, simulations = budget.for_move(state, self.game)
                    move = self.move(state, functools.partial(row_key, row), seconds, simulations)
                    budget.spend(int(state.color), move.seconds)
                    actions[row] = move.action
            return actions

        def ready_for(state: State) -> bool:  # the players' first-move notice: whether the move waits
            return not self.waits(state, budget.for_move(state, self.game)[0])

        return Agent(name=name, act=act, jittable=False, ready_for=ready_for)
