"""External engines (Edax, Egaroucid, ...) as agents, over the Go Text Protocol.

The controller side of GTP: :class:`GtpClient` runs an engine as a subprocess and exchanges
commands and responses with a time limit, turning a crash, a time-out or a malformed answer
into an :class:`EngineError` with a one-line message. The protocol text helpers (vertices,
colours, command lines, responses) are shared with the engine side in
:mod:`othello_jax.interface.gtp_server`.

GTP has no command to set up a position, so :func:`gtp_agent` replays moves: it remembers how
every position it has seen was reached (the opening lines the arena announces through
``Agent.start_games``, its own moves and every possible reply to them) and, before each
``genmove``, brings the engine's board to the position with ``play`` commands (continuing the
engine's game when possible, else from ``clear_board``).
"""

from __future__ import annotations

import atexit
import collections
import functools
import queue
import shlex
import subprocess
import threading
import time
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.agents.base import Agent, AgentSpecError
from othello_jax.agents.gtp_protocol import GtpError, clean_line, format_vertex, parse_vertex
from othello_jax.errors import InputError
from othello_jax.game import BLACK, Othello, State, board_string, format_transcript
from othello_jax.game.lines import pad_lines

COLOR_NAMES = ("b", "w")  # GTP colour words, indexed by othello_jax colour (0 black, 1 white)


class EngineError(InputError, RuntimeError):
    """The external engine failed: it crashed, timed out, refused a command or played an illegal move."""


def parse_response(lines: Sequence[str]) -> tuple[bool, str, str]:
    """A response's lines (without the ending blank line) -> (success, id, text).

    ``['=7 d3']`` -> (True, '7', 'd3'); ``['? illegal move']`` -> (False, '', 'illegal move');
    multi-line answers keep their later lines.
    """
    if not lines or lines[0][:1] not in ("=", "?"):
        raise EngineError(f"malformed GTP response {lines[:1]!r}: it must start with '=' or '?'")
    head = lines[0]
    ok = head[0] == "="
    rest = head[1:]
    number = ""
    while rest[:1].isdigit():
        number, rest = number + rest[0], rest[1:]
    text = "\n".join([rest.strip()] + [line.rstrip() for line in lines[1:]]).strip()
    return ok, number, text


class GtpClient:
    """An engine subprocess spoken to over GTP, one command at a time.

    ``command`` is the engine's command line (a string split like a shell would, or a list).
    Every answer must arrive within ``timeout`` seconds; after any failure the engine is
    stopped and further commands raise :class:`EngineError`.
    """

    def __init__(self, command: str | Sequence[str], timeout: float = 60.0, name: str | None = None):
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise EngineError("empty engine command line")
        self.name = name or argv[0]
        self.timeout = float(timeout)
        self._lines: queue.Queue = queue.Queue()
        self._stderr: collections.deque = collections.deque(maxlen=5)
        self._broken: str | None = None
        try:
            self._process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE, text=True, bufsize=1)
        except OSError as error:
            raise EngineError(f"cannot start engine {argv[0]!r}: {error.strerror or error}") from None
        threading.Thread(target=self._pump, args=(self._process.stdout, self._lines.put), daemon=True).start()
        self._stderr_pump = threading.Thread(target=self._pump, args=(self._process.stderr, self._stderr.append),
                                             daemon=True)
        self._stderr_pump.start()
        atexit.register(self.close)

    @staticmethod
    def _pump(stream, sink) -> None:
        for line in stream:
            sink(line.rstrip("\r\n"))
        sink(None)  # end of stream

    def _fail(self, message: str) -> EngineError:
        self._broken = message
        self._stop()
        return EngineError(message)

    def _exit_message(self, doing: str) -> str:
        try:
            code = self._process.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            code = None
        self._stderr_pump.join(timeout=2.0)  # the engine's last words may still be in the pipe
        tail = [line for line in self._stderr if line]
        said = f"; its last words: {tail[-1]!r}" if tail else ""
        return f"engine {self.name} exited (code {code}) while {doing}{said}"

    def send(self, command: str, timeout: float | None = None) -> str:
        """Send one command; return the answer text, or raise :class:`EngineError` if refused."""
        if self._broken:
            raise EngineError(f"engine {self.name} is stopped after an earlier error ({self._broken})")
        command = clean_line(command)  # no ids: one command at a time, so answers cannot be confused
        try:
            self._process.stdin.write(f"{command}\n")
            self._process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise self._fail(self._exit_message(f"receiving '{command}'")) from None
        ok, _, text = parse_response(self._read_response(command, timeout))
        if not ok:
            raise EngineError(f"engine {self.name} refused '{command}': {text}")
        return text

    def _read_response(self, command: str, timeout: float | None) -> list[str]:
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        lines: list[str] = []
        while True:
            try:
                line = self._lines.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                raise self._fail(f"engine {self.name} did not answer '{command}' within {limit:g} s") from None
            if line is None:
                raise self._fail(self._exit_message(f"answering '{command}'"))
            if not lines and line.strip()[:1] not in ("=", "?"):
                continue  # chatter before the response (banners) is not part of the protocol
            if not line.strip():
                return lines
            lines.append(line)

    def _stop(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            try:
                self._process.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                pass

    def close(self) -> None:
        """Say ``quit`` (briefly) and make sure the process is gone."""
        if self._process.poll() is None and not self._broken:
            try:
                self.send("quit", timeout=2.0)
            except EngineError:
                pass
        self._broken = self._broken or "closed"
        self._stop()
        for stream in (self._process.stdin, self._process.stdout, self._process.stderr):
            try:
                stream.close()
            except OSError:
                pass


# ---------------------------------------------------------------------------------------------
# positions and how they were reached
# ---------------------------------------------------------------------------------------------
def _keys(states: State, game: Othello) -> np.ndarray:
    """uint32[..., 5] identity of positions: black and white boards and the side to move."""
    black, white = game.black_white(states)
    return jnp.stack([black.lo, black.hi, white.lo, white.hi, states.color.astype(jnp.uint32)], axis=-1)


@functools.cache
def _expansion(game: Othello):
    """Jitted positions [B] -> (their keys, their legal moves [B, A], keys of every child [B, A])."""

    def run(states: State):
        replies = jnp.arange(game.num_actions, dtype=jnp.int32)
        widen = lambda x: jnp.broadcast_to(x[:, None], x.shape[:1] + replies.shape + x.shape[1:])
        children = game.step(jax.tree.map(widen, states), jnp.broadcast_to(replies, states.ply.shape + replies.shape))
        return _keys(states, game), game.legal_moves(states), _keys(children, game)

    return jax.jit(run)


@functools.cache
def _stepper(game: Othello):
    """Jitted (states [B], actions [B]) -> (new states, their keys)."""

    def run(states: State, actions: jax.Array):
        after = game.step(states, actions)
        return after, _keys(after, game)

    return jax.jit(run)


class GtpPlayer:
    """The state behind a GTP agent: the engine, its board, and how positions were reached."""

    def __init__(self, command: str, game: Othello, timeout: float = 60.0):
        self.game = game
        self.client = GtpClient(command, timeout)
        self.timeout = timeout
        try:
            self.client.send(f"boardsize {game.size}")
            self.client.send("clear_board")
        except EngineError as error:
            self.client.close()
            raise EngineError(f"engine {self.client.name} cannot play {game.size}x{game.size} Othello: "
                              f"{error}") from None
        self.engine_line: list[int] = []  # the moves on the engine's board
        root = np.asarray(_keys(game.init(), game)).tobytes()
        self.reached: dict[bytes, tuple[bytes | None, int]] = {root: (None, -1)}  # position -> (parent, move)
        self.replies: collections.deque = collections.deque(maxlen=3)  # recent {position: (parent, move)}

    # ---- positions ------------------------------------------------------------------------
    def start_games(self, lines: Sequence[Sequence[int]]) -> None:
        """Remember every position along the given lines (forced passes written out)."""
        if not lines:
            return
        table = pad_lines(lines)
        width = table.shape[1]
        states = jax.tree.map(lambda x: jnp.broadcast_to(x, (len(lines),) + x.shape), self.game.init())
        parents = np.repeat(np.asarray(_keys(self.game.init(), self.game))[None], len(lines), axis=0)
        for t in range(width):
            moving = table[:, t] >= 0  # shorter lines stay at their last position
            stepped, keys = _stepper(self.game)(states, jnp.asarray(np.maximum(table[:, t], 0)))
            states = jax.tree.map(lambda new, old: jnp.where(jnp.asarray(moving), new, old), stepped, states)
            keys = np.asarray(keys)
            for row in np.flatnonzero(moving):
                self.reached.setdefault(keys[row].tobytes(), (parents[row].tobytes(), int(table[row, t])))
            parents = np.where(moving[:, None], keys, parents)
        self._add_replies(states, np.arange(len(lines)), self.reached)  # the opponent may move first

    def history(self, key: bytes) -> list[int]:
        """Moves from the initial position to a known position."""
        if key not in self.reached:
            for generation in reversed(self.replies):
                if key in generation:
                    self.reached[key] = generation[key]
                    break
            else:
                raise EngineError("the GTP agent cannot tell how this position was reached (it replays games "
                                  "from the start or from the openings announced by the arena)")
        moves = []
        while True:
            parent, move = self.reached[key]
            if parent is None:
                return moves[::-1]
            moves.append(move)
            key = parent

    # ---- the engine -------------------------------------------------------------------------
    def _sync(self, line: list[int]) -> None:
        """Bring the engine's board to the end of ``line``."""
        known = self.engine_line
        if line[: len(known)] != known:
            self.client.send("clear_board")
            known = []
        for ply in range(len(known), len(line)):
            self.client.send(f"play {COLOR_NAMES[ply % 2]} {format_vertex(line[ply], self.game.size)}")
        self.engine_line = list(line)

    def _genmove(self, line: list[int], color: int, legal: np.ndarray, state: State) -> int:
        self._sync(line)
        command = f"genmove {COLOR_NAMES[color]}"
        reply = self.client.send(command)
        try:
            action = parse_vertex(reply.split()[0] if reply.split() else "", self.game.size)
        except GtpError:
            raise EngineError(f"engine {self.client.name} answered '{command}' with {reply!r}, not a move") from None
        if not legal[action]:
            raise EngineError(f"engine {self.client.name} played illegal move {reply} as "
                              f"{'black' if color == BLACK else 'white'} in {board_string(state, self.game)} "
                              f"(after {format_transcript(line, self.game.size) or 'no moves'})")
        self.engine_line = line + [action]
        return action

    def act(self, states: State, key: jax.Array) -> np.ndarray:
        """Ask the engine for a move in every unfinished position of the batch."""
        del key  # the engine has its own randomness, if any
        count = states.ply.shape[0]
        keys = np.asarray(_keys(states, self.game))
        legal = np.asarray(self.game.legal_moves(states))
        terminal = np.asarray(states.terminal)
        colors = np.asarray(states.color)
        actions = np.full(count, self.game.pass_action, np.int32)
        for i in np.flatnonzero(~terminal):
            line = self.history(keys[i].tobytes())
            state = jax.tree.map(lambda x: x[i], states)
            actions[i] = self._genmove(line, int(colors[i]), legal[i], state)
        self._remember(states, actions, keys, terminal)
        return actions

    def _remember(self, states: State, actions: np.ndarray, keys: np.ndarray, terminal: np.ndarray) -> None:
        """Record the positions after the engine's moves and every reply to them."""
        after, after_keys = _stepper(self.game)(states, jnp.asarray(actions))
        after_keys = np.asarray(after_keys)
        rows = np.flatnonzero(~terminal)
        for i in rows:
            self.reached[after_keys[i].tobytes()] = (keys[i].tobytes(), int(actions[i]))
        generation: dict = {}
        self._add_replies(after, rows, generation)
        self.replies.append(generation)

    def _add_replies(self, positions: State, rows: np.ndarray, into: dict) -> None:
        """Note every child of ``positions[rows]`` (how the game may continue) in ``into``."""
        keys, legal, child_keys = (np.asarray(x) for x in _expansion(self.game)(positions))
        for i in rows:
            here = keys[i].tobytes()
            for move in np.flatnonzero(legal[i]):
                into.setdefault(child_keys[i, move].tobytes(), (here, int(move)))

    def close(self) -> None:
        self.client.close()


def gtp_agent(command: str, game: Othello, timeout: float = 60.0, name: str | None = None) -> Agent:
    """An external engine as a (host-side) agent. Raises :class:`AgentSpecError` if it cannot start."""
    if timeout <= 0:
        raise AgentSpecError(f"gtp timeout must be positive, got {timeout}")
    try:
        player = GtpPlayer(command, game, timeout)
    except EngineError as error:
        raise AgentSpecError(str(error)) from None
    return Agent(name or f"gtp:{command}", player.act, jittable=False, start_games=player.start_games,
                 close=player.close)
