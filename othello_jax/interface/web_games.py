"""The games behind `othello-jax serve`: one :class:`WebGame` per browser tab, the engines they
play against (:class:`Lineup`), and their searches on worker threads.

No web framework here: :mod:`othello_jax.interface.web_app` turns requests into calls of these
methods and their :meth:`WebGame.view` into JSON. A search (an engine's move, a hint) runs on a
thread of the table's pool, never on the server's event loop, so the page stays live and polls
the game while it runs; each change of the game bumps its generation, and a search finished
for an older generation (the player undid or started anew meanwhile) is dropped. A search that
raises leaves one line in the game's ``error`` and the next one works.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import secrets
import sys
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import jax
import numpy as np

from othello_jax.errors import InputError, first_line
from othello_jax.evaluation.analysis import Analyzer, PositionAnalysis, summarize
from othello_jax.game import NotationError, Othello, board_string, square_name
from othello_jax.game.ggf import format_game
from othello_jax.interface.session import GameSession, color_name
from othello_jax.notices import compiling, say_while, shapes
from othello_jax.solver import empties_on_host, solve
from othello_jax.solver.solved_moves import NO_VALUE, move_values

HUMAN = "you"  # a seat a person plays
MAX_GAMES = 200  # games kept; the least recently used goes first
WATCH_PAUSE_S = 0.6  # between two engines' moves when a person watches them


class WebRequestError(InputError):
    """A request the games cannot carry out (unknown game or engine, an illegal move, bad text):
    its message goes back to the page with a 4xx status."""

    status = 400


class UnknownGame(WebRequestError):
    """A game id the table does not hold (never made, or dropped as the least recently used)."""

    status = 404


class Engine(Protocol):
    """An engine the page can play: its name, the board sizes it plays, its agent per board (at
    a fixed number of simulations), its network's search at that number (None for others) and
    its network's search on the clock (``othello_jax.agents.timed.TimedSearch``; None for others)."""

    name: str
    sizes: tuple[int, ...]
    make_agent: Callable[[Othello], Any]
    analyzer: Analyzer | None
    timed: Any


@dataclasses.dataclass
class Lineup:
    """The engines a server offers, by name, in the order the page lists them.

    ``engines[name](sims)`` builds that engine searching ``sims`` simulations (networks; other
    engines ignore it); built once per (name, sims), so each simulation budget compiles once.
    ``sizes[name]``: the board sizes it plays. ``sims``: the networks' default simulations.
    ``exact_empties``: per board size, the empties at or below which positions are solved
    exactly (hints, the graph); empty without the C solver. ``seconds``: a move's default time.
    A game without simulations of its own searches by the clock (the engine's ``timed``).
    """

    engines: Mapping[str, Callable[[int], Engine]]
    sizes: Mapping[str, tuple[int, ...]]
    networks: frozenset[str] = frozenset()
    sims: int = 256
    seconds: float = 3.0
    exact_empties: Mapping[int, int] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        self._built: dict[tuple[str, int], Engine] = {}
        self._lock = threading.Lock()

    def engine(self, name: str, sims: int | None = None) -> Engine:
        """The engine ``name`` at ``sims`` simulations (built on first use)."""
        if name not in self.engines:
            raise WebRequestError(f"unknown engine {name!r}; this server offers {', '.join(self.engines)}")
        key = (name, int(sims or self.sims) if name in self.networks else 0)
        with self._lock:
            if key not in self._built:
                self._built[key] = self.engines[name](key[1] or self.sims)
            return self._built[key]

    def hint_engine(self, size: int, preferred: list[str], sims: int | None) -> tuple[str, Engine] | None:
        """(name, engine) of a network for hints on ``size``: the first of ``preferred`` (the
        game's engines) that is a network playing that size, else the first such in the lineup."""
        for name in [*preferred, *self.engines]:
            if name in self.networks and size in self.sizes[name]:
                return name, self.engine(name, sims)
        return None

    def describe(self) -> list[dict]:
        return [{"name": name, "sizes": list(self.sizes[name]), "network": name in self.networks}
                for name in self.engines]

    def prepare(self, table: GameTable) -> None:
        """Compile the networks' clocked searches now, one after another on a thread of their own
        (the games' workers stay free for engines that compile nothing), while the page is drawn."""
        for name in self.networks:
            timed = self.engine(name).timed
            if timed is not None:
                table.start_preparing(timed, name)


@dataclasses.dataclass
class Busy:
    """What a game's worker is doing, as the page shows it."""

    text: str
    since: float = dataclasses.field(default_factory=time.monotonic)


class WebGame:
    """One game of one tab: its session, who sits at each colour, hints and evaluations, and
    the search running for it (at most one at a time)."""

    def __init__(self, table: GameTable, game_id: str):
        self.table = table
        self.id = game_id
        self.lock = threading.RLock()
        self.generation = 0
        self.busy: Busy | None = None
        self.error = ""
        self.message = ""
        self.hints: dict | None = None  # for the position of ``hints['ply']``
        self.evals: dict[int, dict] = {}  # ply -> {value (black's view, -1..1), text, exact}
        self.redo: list[list[int]] = []
        self.seats: tuple[str, str] = (HUMAN, HUMAN)
        self.sims: int | None = None  # None: the engines search by the clock, ``seconds`` a move
        self.seconds = table.lineup.seconds
        self.session = GameSession(Othello(8))
        self._key = jax.random.PRNGKey(secrets.randbits(31))

    # ---- requests ------------------------------------------------------------------------
    def new(self, size: int = 8, black: str = HUMAN, white: str = HUMAN, sims: int | None = None,
            seconds: float | None = None) -> None:
        """Start anew on a ``size`` board with these seats (``"you"`` or an engine's name)."""
        if size not in (4, 6, 8):
            raise WebRequestError(f"board size must be 4, 6 or 8, got {size}")
        seats = (str(black), str(white))
        for seat in seats:
            if seat != HUMAN:
                self.table.lineup.engine(seat, sims)  # unknown names fail here
                if size not in self.table.lineup.sizes[seat]:
                    raise WebRequestError(f"{seat} does not play {size}x{size}")
        if sims is not None and not 1 <= sims <= 100_000:
            raise WebRequestError(f"simulations must be between 1 and 100000, got {sims}")
        if seconds is not None and not 0 < seconds <= 600:
            raise WebRequestError(f"seconds a move must be above 0 and at most 600, got {seconds}")
        with self.lock:
            self._changed()
            self.seats, self.sims = seats, int(sims) if sims else None
            self.seconds = float(seconds or self.seconds)
            self.session = GameSession(Othello(size))
            self.evals, self.redo, self.message, self.error = {}, [], "", ""
            self._continue()

    def load(self, text: str) -> None:
        """Set up the position of a transcript (``f5d6c3...``, on this board size, else any) or of
        a board string (``---...XO-- X``); the seats stay."""
        text = (text or "").strip()
        if not text:
            raise WebRequestError("paste a transcript (f5d6c3...) or a board string (squares, then X or O)")
        if len(text) > 4000:
            raise WebRequestError("that text is too long for a game of Othello")
        with self.lock:
            size = self.session.game.size
            try:
                if len(text.split()) == 2 and set(text.split()[0].upper()) <= set("XO-"):
                    session = _from_board(text)
                else:
                    session = _from_transcript(text, size)
            except NotationError as error:
                raise WebRequestError(f"cannot read that: {first_line(error)}") from None
            for seat in self.seats:
                if seat != HUMAN and session.game.size not in self.table.lineup.sizes[seat]:
                    raise WebRequestError(f"{seat} does not play {session.game.size}x{session.game.size}")
            self._changed()
            self.session, self.evals, self.redo, self.error = session, {}, [], ""
            self.message = f"set up {len(session.actions)} moves" if session.actions else "set up the board"
            self._continue()

    def move(self, square: str) -> None:
        """A person's move (``d3``; ``pass`` is played for them when forced)."""
        with self.lock:
            if self.session.is_over:
                raise WebRequestError("the game is over: start a new game or undo")
            seat = self.seats[self.session.to_move]
            if seat != HUMAN:
                raise WebRequestError(f"it is {color_name(self.session.to_move)}'s turn ({seat} plays it)")
            try:
                action = self.session.parse_move(square)
            except NotationError as error:
                raise WebRequestError(first_line(error)) from None
            self._changed()
            self.redo = []
            self.session.play(action)
            self.message = ""
            self._continue()

    def undo(self) -> None:
        """Take back to the last position where a person chose a move (one move when engines
        play each other); the moves go on the redo stack."""
        with self.lock:
            session = self.session
            if not session.actions:
                raise WebRequestError("nothing to undo")
            self._changed()
            taken = [session.actions[-1]]
            session.undo(1)
            if HUMAN in self.seats:
                while session.actions and not self._persons_choice():
                    taken.append(session.actions[-1])
                    session.undo(1)
            self.redo.append(taken[::-1])
            self.evals = {ply: point for ply, point in self.evals.items() if ply <= len(session.actions)}
            self.message = f"took back {len(taken)} move{'s' * (len(taken) > 1)}"
            if HUMAN not in self.seats or not self._persons_choice():
                self._continue()

    def redo_moves(self) -> None:
        """Play again what the last undo took back."""
        with self.lock:
            if not self.redo:
                raise WebRequestError("nothing to redo")
            self._changed()
            for action in self.redo.pop():
                self.session.play(action)
            self.message = "redone"
            self._continue()

    def hint(self) -> None:
        """Ask for hints on the current position (exact values in the solved endgame, else a
        network's search), computed off the event loop."""
        with self.lock:
            if self.session.is_over:
                raise WebRequestError("the game is over: nothing to hint")
            if self.busy is not None:
                raise WebRequestError("wait for the engine to finish")
            size = self.session.game.size
            if not self.table.solvable(self.session) and self.table.lineup.hint_engine(size, [], None) is None:
                empties = self.table.lineup.exact_empties.get(size, 0)
                reach = f"; exact values come at {empties} empties" if empties else ""
                raise WebRequestError(f"hints need a network for {size}x{size} (serve --agent=builtin:...){reach}")
            self._start(self._hint_job, "searching for hints")

    def record(self) -> str:
        """The game as GGF (the Generic Game Format Othello servers and programs read)."""
        with self.lock:
            session = self.session
            names = [HUMAN if seat == HUMAN else seat for seat in self.seats]
            result = "?"
            if session.is_over:
                black, white = session.score()
                result = f"{black - white:+d}.00"
            return format_game(session.game, session.states[0], session.actions, black=names[0], white=names[1],
                               result=result) + "\n"

    # ---- the view ------------------------------------------------------------------------
    def view(self) -> dict:
        """Everything the page draws, as JSON-ready values."""
        with self.lock:
            session, game = self.session, self.session.game
            size = game.size
            legal = [a for a in session.legal_actions() if a != game.pass_action]
            black, white = session.disc_counts()
            last = session.actions[-1] if session.actions else None
            moves = []
            for ply, (action, before) in enumerate(zip(session.actions, session.states, strict=False)):
                moves.append({"ply": ply + 1, "color": color_name(before.color), "square": square_name(action, size)})
            busy = None
            if self.busy is not None:
                busy = {"text": self.busy.text, "elapsed": round(time.monotonic() - self.busy.since, 1)}
            hints = self.hints if self.hints is not None and self.hints.get("ply") == len(session.actions) else None
            return {
                "id": self.id,
                "size": size,
                "board": board_string(session.state, game).split()[0],
                "to_move": color_name(session.to_move),
                "legal": [square_name(a, size) for a in legal],
                "last": None if last is None or last == game.pass_action else square_name(last, size),
                "counts": {"black": black, "white": white},
                "over": session.is_over,
                "status": self._status(),
                "seats": {"black": self.seats[0], "white": self.seats[1]},
                "your_turn": not session.is_over and self.seats[session.to_move] == HUMAN,
                "moves": moves,
                "transcript": session.transcript(),
                "position": board_string(session.state, game),
                "evals": [{"ply": ply, **point} for ply, point in sorted(self.evals.items())],
                "hints": hints,
                "busy": busy,
                "error": self.error,
                "message": self.message,
                "can_undo": bool(session.actions),
                "can_redo": bool(self.redo),
                "sims": self.sims,
                "seconds": self.seconds,
            }

    def _status(self) -> str:
        session = self.session
        if session.is_over:
            return f"Game over: {session.result_text()}."
        mover = color_name(session.to_move)
        seat = self.seats[session.to_move]
        who = "your move" if seat == HUMAN else f"{seat} to play"
        return f"{mover.capitalize()} to move ({who})."

    def _persons_choice(self) -> bool:
        """Whether a person is to move here with a real choice (not the end, not a forced pass)."""
        session = self.session
        return not session.is_over and self.seats[session.to_move] == HUMAN and not session.must_pass()

    # ---- searches ------------------------------------------------------------------------
    def _changed(self) -> None:
        """The game changes: what runs for the old one is dropped when it finishes."""
        self.generation += 1
        self.busy = None
        self.hints = None

    def _continue(self) -> None:
        """After a change: play a person's forced pass, and start the engine whose turn it is."""
        session = self.session
        while not session.is_over and self.seats[session.to_move] == HUMAN and session.must_pass():
            mover = color_name(session.to_move)
            session.play(session.game.pass_action)
            self._tell(f"{mover} has no legal move and passes")
        if session.is_over:
            self._final_point()
            return
        seat = self.seats[session.to_move]
        if seat != HUMAN:
            self._start(self._engine_job, f"{seat} is thinking")

    def _final_point(self) -> None:
        """At the end: the result as the graph's last point."""
        session = self.session
        black, white = session.score()
        value = float(np.sign(black - white))
        self.evals[len(session.actions)] = {"value": value, "text": session.result_text(), "exact": True}

    def _tell(self, text: str) -> None:
        """Say what just happened; a pass stays said until the move after it."""
        self.message = f"{self.message}; {text}" if self.message.endswith("passes") or \
            self.message.endswith("no legal move") else text

    def _start(self, job: Callable[[int], None], text: str) -> None:
        self.busy = Busy(text)
        self.error = ""
        generation = self.generation
        self.table.pool.submit(self._run, job, generation)

    def _run(self, job: Callable[[int], None], generation: int) -> None:
        try:
            job(generation)
        except Exception as error:  # a crashed search: one line in the page, the server serves on
            if isinstance(error, InputError):  # e.g. a network that does not load: its own message
                line = first_line(error)
            else:
                traceback.print_exc(file=sys.stderr)
                line = f"the search failed (a bug, its traceback is on the server's standard error): " \
                       f"{type(error).__name__}: {first_line(error)}"
            with self.lock:
                if generation == self.generation:
                    self.busy = None
                    self.error = line

    def _say(self, generation: int) -> Callable[[str], None]:
        """A notice sink for this game's worker: the page shows the latest line while it waits."""

        def say(line: str) -> None:
            with self.lock:
                if generation == self.generation and self.busy is not None and not line.startswith("first move"):
                    self.busy.text = line.rstrip(".")

        return say

    def _next_key(self) -> jax.Array:
        self._key, key = jax.random.split(self._key)
        return key

    def _engine_job(self, generation: int) -> None:
        with self.lock:
            if generation != self.generation:
                return
            snapshot = self.session.copy()
            name, sims, key = self.seats[snapshot.to_move], self.sims, self._next_key()
            self.busy.text = f"{name} is thinking" + (f" ({self.seconds:g} s a move)" if sims is None else "")
        started = time.monotonic()
        engine = self.table.lineup.engine(name, sims)
        if engine.timed is not None and sims is None:
            action, analysis = self._timed_move(engine, snapshot, key, generation)
        else:
            agent = engine.make_agent(snapshot.game)
            with self.table.engine_lock(engine):
                if engine.analyzer is not None:
                    engine.analyzer.last_move = None
                action = snapshot.agent_move(agent, key, say=self._say(generation))
                analysis = engine.analyzer.last_move if engine.analyzer is not None else None
            if engine.analyzer is not None:
                self.table.prepared(engine.analyzer, mark=True)  # compiled: a hint's search is the same program
        point = None
        if analysis is not None:
            point = _search_point(analysis, snapshot.to_move)
        if HUMAN not in self.seats:  # two engines: slow enough to follow
            time.sleep(max(0.0, self.table.watch_pause_s - (time.monotonic() - started)))
        after = snapshot.copy()
        after.play(action)
        exact = self.table.exact_value(after)
        with self.lock:
            if generation != self.generation:
                return
            ply = len(self.session.actions)
            if point is not None:
                self.evals[ply] = point
            if exact is not None:
                self.evals[ply + 1] = exact
            mover = color_name(self.session.to_move)
            self._changed()
            self.session.play(action)
            said = "passes: no legal move" if action == self.session.game.pass_action else \
                f"plays {square_name(action, self.session.game.size)}"
            self._tell(f"{mover} ({name}) {said}")
            self._continue()

    def _timed_move(self, engine: Engine, snapshot: GameSession, key: jax.Array,
                    generation: int) -> tuple[int, PositionAnalysis | None]:
        """An engine's move by the clock: (the action, the search behind it, if one ran)."""
        timed, game = engine.timed, snapshot.game
        if not self.table.prepared(timed):
            self._say(generation)(self.table.start_preparing(timed, engine.name))
        move = timed.move(snapshot.state, key, self.seconds)
        if move.result is None:
            return move.action, None
        return move.action, summarize(move.result, 0, game, timed.value_margin)

    def _hint_job(self, generation: int) -> None:
        with self.lock:
            if generation != self.generation:
                return
            snapshot = self.session.copy()
            preferred = [seat for seat in self.seats if seat != HUMAN]
            sims, key = self.sims, self._next_key()
        game, ply = snapshot.game, len(snapshot.actions)
        hints: dict = {"ply": ply, "squares": {}, "value": None, "exact": None, "source": ""}
        exact = self.table.exact_moves(snapshot)
        if exact is not None:
            best = max(exact.values())
            hints["exact"] = "exact: " + _exact_words(best, snapshot.to_move)
            hints["source"] = "exact endgame solver"
            for action, value in exact.items():
                hints["squares"][square_name(action, game.size)] = {
                    "label": f"{value:+d}", "best": value == best,
                    "text": f"exact: {_exact_words(value, snapshot.to_move)}"}
            point = {"value": float(np.sign(best if snapshot.to_move == 0 else -best)),
                     "text": hints["exact"], "exact": True}
        else:
            found = self.table.lineup.hint_engine(game.size, preferred, sims)
            if found is None:  # checked by hint(); an exact solve gave way to a pass
                raise WebRequestError(f"no network for hints on {game.size}x{game.size}")
            name, engine = found
            analyzer = engine.analyzer
            if engine.timed is not None and sims is None:
                analysis = self._timed_move(engine, snapshot, key, generation)[1]
            else:
                waiting = contextlib.nullcontext()
                if not self.table.prepared(analyzer):  # the first search compiles: say so, and how long it takes
                    notice = compiling(f"the search for {game.size}x{game.size}",
                                       key=("hint", shapes(analyzer.variables), str(analyzer.search_config)))
                    waiting = say_while(notice.reworded(f"preparing the search: {notice}"), self._say(generation),
                                        None)
                with self.table.engine_lock(engine), waiting:
                    analysis = analyzer.analyze(snapshot.state, key)
                self.table.prepared(analyzer, mark=True)
            if analysis is None:  # a single legal move: nothing to search
                only = snapshot.legal_actions()[0]
                hints["squares"][square_name(only, game.size)] = {"label": "only", "best": True,
                                                                 "text": "the only legal move"}
                hints["source"] = "the rules"
                with self.lock:
                    if generation == self.generation:
                        self.busy, self.hints = None, hints
                return
            total = max(1, analysis.simulations)
            best = analysis.moves[0].action if analysis.moves else -1
            for move in analysis.moves:
                if move.action >= game.num_squares:
                    continue
                win = _win_words(move.q, analysis) if move.visits else "not searched"
                hints["squares"][move.square] = {
                    "label": f"{move.visits / total:.0%}", "sub": _short_value(move.q, analysis) if move.visits else "",
                    "best": move.action == best,
                    "text": f"{move.visits} of {total} visits, {win}"}
            mover_value = analysis.network_value
            hints["value"] = round(float(mover_value if snapshot.to_move == 0 else -mover_value), 3)
            hints["value_text"] = f"network: {analysis.describe(mover_value)} for {color_name(snapshot.to_move)}"
            hints["source"] = f"{name}, {analysis.simulations} simulations"
            point = _search_point(analysis, snapshot.to_move)
        with self.lock:
            if generation != self.generation:
                return
            self.busy = None
            self.hints = hints
            self.evals.setdefault(ply, point)


def _from_board(text: str) -> GameSession:
    from othello_jax.game import parse_board

    _, game = parse_board(text)
    return GameSession.from_text(game, text)


def _from_transcript(text: str, size: int) -> GameSession:
    """A transcript on ``size`` first, then on the other sizes (a square beyond f means 8x8)."""
    first_error = None
    for candidate in [size, *(s for s in (8, 6, 4) if s != size)]:
        try:
            return GameSession.from_text(Othello(candidate), None, text)
        except NotationError as error:
            first_error = first_error or error
    raise first_error


def _exact_words(value: int, mover: int) -> str:
    """``+4`` for the side to move -> "black wins by 4" (or "a draw")."""
    if value == 0:
        return "a draw"
    winner = mover if value > 0 else 1 - mover
    return f"{color_name(winner)} wins by {abs(value)}"


def _win_words(q: float, analysis: PositionAnalysis) -> str:
    if analysis.value_margin:
        return analysis.describe(q)
    return f"wins {50 * (q + 1):.0f}% for the mover"


def _short_value(q: float, analysis: PositionAnalysis) -> str:
    """A square's second label: the mover's winning chance (a margin network: its disc margin)."""
    if analysis.value_margin:
        _, difference = (x.item() for x in analysis.game.read_value(q, analysis.value_margin))
        return f"{difference:+.0f}"
    return f"{50 * (q + 1):.0f}%"


def _search_point(analysis: PositionAnalysis, mover: int) -> dict:
    """A search's value as a point of the graph (black's view)."""
    value = float(analysis.search_value if mover == 0 else -analysis.search_value)
    return {"value": round(value, 3), "text": f"search: {analysis.describe(analysis.search_value)} for "
                                              f"{color_name(mover)}", "exact": False}


class GameTable:
    """Every tab's game by id, the engines, and the worker threads their searches run on."""

    def __init__(self, lineup: Lineup, workers: int = 2, watch_pause_s: float = WATCH_PAUSE_S):
        self.lineup = lineup
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="othello-search")
        self.preparer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="othello-prepare")
        self.watch_pause_s = watch_pause_s
        self.games: OrderedDict[str, WebGame] = OrderedDict()
        self._lock = threading.Lock()
        self._engine_locks: dict[int, threading.Lock] = {}
        self._prepared: set[int] = set()  # ids of the searches compiled (analyzers, clocked searches)
        self._notices: dict[int, str] = {}  # a clocked search's compile notice, once one compiles it
        self._ids = itertools.count(1)

    def create(self) -> WebGame:
        with self._lock:
            game = WebGame(self, f"{next(self._ids)}-{secrets.token_hex(4)}")
            self.games[game.id] = game
            while len(self.games) > MAX_GAMES:
                self.games.popitem(last=False)
            return game

    def get(self, game_id: str) -> WebGame:
        with self._lock:
            game = self.games.get(game_id)
            if game is None:
                raise UnknownGame(f"no game {game_id!r} on this server (it may have restarted): start a new game")
            self.games.move_to_end(game_id)
            return game

    def engine_lock(self, engine: Engine) -> threading.Lock:
        """One search at a time per engine: its analyzer keeps the last move's analysis."""
        with self._lock:
            return self._engine_locks.setdefault(id(engine), threading.Lock())

    def start_preparing(self, timed: Any, name: str) -> str:
        """Have the clocked search of the engine ``name`` compiled on the preparing thread (once),
        under its compile notice, which this returns for the page ("preparing the search:
        compiling the search for 8x8 (about 40 s ...)"). A move asked meanwhile waits for the
        compile (the search's own lock), or comes from the search's opening book if it has one."""
        with self._lock:
            notice = self._notices.get(id(timed))
            if notice is None:
                size = timed.game.size
                notice = compiling(f"the search for {size}x{size}", key=("timed", name))
                notice = self._notices[id(timed)] = notice.reworded(f"preparing the search: {notice}")
                self.preparer.submit(self._prepare, timed, notice)
            return str(notice)

    def _prepare(self, timed: Any, notice: str) -> None:
        try:
            with say_while(notice, lambda line: None, None):  # records the compile in the notices' index
                timed.prepare()
        except Exception:  # the first move's own compile raises it again, in its game
            traceback.print_exc(file=sys.stderr)
            return
        self.prepared(timed, mark=True)

    def prepared(self, analyzer: Analyzer, mark: bool = False) -> bool:
        with self._lock:
            if mark:
                self._prepared.add(id(analyzer))
            return id(analyzer) in self._prepared

    def solvable(self, session: GameSession) -> bool:
        """Whether the solver reaches this position (hints and graph points are exact there)."""
        limit = self.lineup.exact_empties.get(session.game.size, 0)
        return limit > 0 and not session.is_over and int(empties_on_host(session.state, session.game)) <= limit

    def exact_value(self, session: GameSession) -> dict | None:
        """The position's exact value as a graph point (black's view) once the solver reaches it."""
        if not self.solvable(session):
            return None
        score = solve(session.state, session.game, "c").score  # each thread has its own C solver
        black = score if session.to_move == 0 else -score
        return {"value": float(np.sign(black)), "text": "exact: " + _exact_words(black, 0), "exact": True}

    def exact_moves(self, session: GameSession) -> dict[int, int] | None:
        """Every legal move's exact value (side to move's view), or None before the solved endgame."""
        if not self.solvable(session) or session.must_pass():
            return None
        from othello_jax.game import batch_of_one

        values = move_values(batch_of_one(session.state), session.game, "c")[0]
        return {int(a): int(values[a]) for a in np.flatnonzero(values != NO_VALUE) if a < session.game.num_squares}

    def close(self) -> None:
        for pool in (self.pool, self.preparer):
            pool.shutdown(wait=False, cancel_futures=True)
