"""Batched matches between two agents, with colours swapped on every opening.

Each opening is played twice: game copy 0 has the first agent as black, copy 1 as white. The
two copies of an opening always have the same side to move (they start from the same position
and every ply, passes included, changes it), so at every ply the first agent moves in exactly
one copy of each opening and the second agent in the other: each agent is called once per ply
on a batch of M positions, one per opening, with no wasted work. When both agents are
jittable the whole match is one compiled ``while_loop``; otherwise a host loop calls the agents
once per ply. A match that reports its progress runs that loop a few plies at a time (the same
program, the same games: the loop's state goes back in as it came out).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.agents import Agent
from othello_jax.errors import InputError
from othello_jax.evaluation import openings as openings_lib
from othello_jax.game import BLACK, Othello, State, format_transcript
from othello_jax.notices import Say, compiling, say_while, shapes


class ArenaError(RuntimeError):
    """A match could not be played as asked (one-line message): an agent chose an illegal move
    (a bug, or a broken external engine), or the settings are impossible (:class:`MatchSettingsError`)."""


class MatchSettingsError(ArenaError, InputError):
    """Impossible match settings (an odd number of games, a gating threshold outside [0, 1]): bad input."""


# ---------------------------------------------------------------------------------------------
# one ply for both copies of every opening
# ---------------------------------------------------------------------------------------------
def _first_moves_in_copy0(s0: State, s1: State) -> jax.Array:
    """Where the first agent (black in copy 0, white in copy 1) is to move in copy 0."""
    color = jnp.where(s0.terminal, s1.color, s0.color)  # both copies agree while both are on
    return color == BLACK


def _select(flag: jax.Array, a: State, b: State) -> State:
    return jax.tree.map(lambda x, y: jnp.where(flag, x, y), a, b)


def _split(s0: State, s1: State) -> tuple[State, State, jax.Array]:
    """(positions for the first agent, positions for the second, first-moves-in-copy-0 flags)."""
    first_in_0 = _first_moves_in_copy0(s0, s1)
    return _select(first_in_0, s0, s1), _select(first_in_0, s1, s0), first_in_0


def _is_legal(game: Othello, states: State, actions: jax.Array) -> jax.Array:
    legal = game.legal_moves(states)
    hit = jnp.any(legal & (jnp.arange(game.num_actions) == actions[:, None]), axis=-1)
    return hit | states.terminal


def _advance(game: Othello, s0: State, s1: State, first_in_0: jax.Array, first_actions: jax.Array,
             second_actions: jax.Array) -> tuple[State, State, jax.Array, jax.Array, jax.Array, jax.Array]:
    """Play both agents' moves: (new copy 0, new copy 1, moves 0, moves 1, illegal first, illegal second).

    Moves of finished games are recorded as -1; illegal flags are per opening.
    """
    a0 = jnp.where(first_in_0, first_actions, second_actions).astype(jnp.int32)
    a1 = jnp.where(first_in_0, second_actions, first_actions).astype(jnp.int32)
    ok0, ok1 = _is_legal(game, s0, a0), _is_legal(game, s1, a1)
    illegal_first = jnp.where(first_in_0, ~ok0, ~ok1)
    illegal_second = jnp.where(first_in_0, ~ok1, ~ok0)
    moves0 = jnp.where(s0.terminal, -1, a0)
    moves1 = jnp.where(s1.terminal, -1, a1)
    return game.step(s0, a0), game.step(s1, a1), moves0, moves1, illegal_first, illegal_second


def max_plies(game: Othello) -> int:
    """A bound on the plies left in any game (every pass is followed by a placement)."""
    return 2 * game.num_squares


class _Played(NamedTuple):
    moves: np.ndarray  # int32[2, M, T]
    final: tuple[State, State]
    illegal_first: np.ndarray  # bool[M]
    illegal_second: np.ndarray
    compile_seconds: float = 0.0


@functools.cache
def _ignoring_params(act: Callable) -> Callable:
    """``act(states, key)`` as ``fn(params, states, key)`` (one wrapper per act, for caching)."""
    return lambda params, states, key: act(states, key)


def _parametric(agent: Agent) -> tuple[Callable, object]:
    """(fn(params, states, key), params) for any jittable agent."""
    if agent.act_with_params is not None:
        return agent.act_with_params, agent.params
    return _ignoring_params(agent.act), None


class _Match(NamedTuple):
    """A compiled match's loop state: plies played, both copies of every opening, the moves so
    far (int32[2, M, T], -1 where none), the key, the illegal-move flags of each agent (bool[M])."""

    ply: jax.Array
    s0: State
    s1: State
    moves: jax.Array
    key: jax.Array
    bad_first: jax.Array
    bad_second: jax.Array


def _match_start(game: Othello, starts: State, key: jax.Array) -> _Match:
    """The loop state before the first ply (host arrays: nothing to compile)."""
    count = starts.ply.shape[0]
    no = np.zeros(count, bool)
    return _Match(np.int32(0), starts, starts, np.full((2, count, max_plies(game)), -1, np.int32), key, no, no)


@functools.lru_cache(maxsize=16)
def _compiled_match(game: Othello, first_fn: Callable, second_fn: Callable) -> Callable:
    """The match as one jitted function of (loop state, the ply to stop at, params of the first
    agent, params of the second) -> loop state: it plays until every game is over or that ply."""
    plies = max_plies(game)

    def run(match: _Match, stop: jax.Array, first_params, second_params) -> _Match:
        def cond(match: _Match) -> jax.Array:
            return (match.ply < jnp.minimum(stop, plies)) & ~jnp.all(match.s0.terminal & match.s1.terminal)

        def body(match: _Match) -> _Match:
            t, s0, s1, moves, key, bad_first, bad_second = match
            key, first_key, second_key = jax.random.split(key, 3)
            for_first, for_second, first_in_0 = _split(s0, s1)
            s0, s1, m0, m1, ill_f, ill_s = _advance(game, s0, s1, first_in_0,
                                                    first_fn(first_params, for_first, first_key),
                                                    second_fn(second_params, for_second, second_key))
            moves = jax.lax.dynamic_update_slice(moves, jnp.stack([m0, m1])[:, :, None], (0, 0, t))
            return _Match(t + 1, s0, s1, moves, key, bad_first | ill_f, bad_second | ill_s)

        return jax.lax.while_loop(cond, body, match)

    return jax.jit(run)


def progress_plies(game: Othello) -> int:
    """Plies a match plays between two reports of its progress: about a tenth of a game."""
    return max(2, game.num_squares // 10)


# (plies played, copy 0 and copy 1 of every opening now): what a match reports as it goes
Report = Callable[[int, State, State], None]


_EXECUTABLES: dict = {}  # signature -> compiled match, so compile time can be reported apart


def _saying(doing: str | None, say: Say | None, done: str) -> contextlib.AbstractContextManager:
    """``say_while(doing, say, done)``, or nothing where there is no ``say`` (or nothing to say)."""
    return say_while(doing, say, done) if say is not None and doing is not None else contextlib.nullcontext()


def _play_compiled(game: Othello, first: Agent, second: Agent, starts: State, key: jax.Array,
                   say: Say | None = None, report: Report | None = None) -> _Played:
    """The match as one compiled loop: to the end at once, or ``progress_plies`` at a time with
    ``report`` after each stretch (the same games either way)."""
    (first_fn, first_params), (second_fn, second_params) = _parametric(first), _parametric(second)
    plies = max_plies(game)
    match = _match_start(game, starts, key)
    args = (match, np.int32(plies), first_params, second_params)
    signature = (game, first_fn, second_fn, shapes(args))
    compile_seconds = 0.0
    if signature not in _EXECUTABLES:
        if len(_EXECUTABLES) >= 16:
            _EXECUTABLES.pop(next(iter(_EXECUTABLES)))
        begin = time.perf_counter()
        program = ("match", game.size, first.name, second.name, shapes(args))
        with _saying(compiling(f"the match {first.name} vs {second.name}", key=program), say, "compiled"):
            _EXECUTABLES[signature] = _compiled_match(game, first_fn, second_fn).lower(*args).compile()
        compile_seconds = time.perf_counter() - begin
    stretch = plies if report is None else progress_plies(game)
    while True:
        match = _EXECUTABLES[signature](match, np.int32(min(int(match.ply) + stretch, plies)), first_params,
                                         second_params)
        if report is not None:
            report(int(match.ply), match.s0, match.s1)
        if int(match.ply) >= plies or bool(np.all(np.asarray(match.s0.terminal) & np.asarray(match.s1.terminal))):
            break
    return _Played(np.asarray(match.moves), (match.s0, match.s1), np.asarray(match.bad_first),
                   np.asarray(match.bad_second), compile_seconds)


@functools.cache
def _host_steps(game: Othello) -> tuple[Callable, Callable]:
    """Jitted ``_split`` and ``_advance`` for the host loop (built once per board)."""
    return jax.jit(_split), jax.jit(functools.partial(_advance, game))


def _play_host(game: Othello, first: Agent, second: Agent, starts: State, key: jax.Array,
               say: Say | None = None, report: Report | None = None) -> _Played:
    """Ply by ply from Python (for agents that cannot be traced, such as external engines).
    ``say``: where to say that the first ply compiles the agents' programs (for agents with any);
    ``report`` is called every ``progress_plies`` plies and at the end."""
    split, advance = _host_steps(game)
    s0 = s1 = starts
    columns, bad_first, bad_second = [], False, False
    external = first.start_games is not None and second.start_games is not None  # nothing of ours to compile
    for ply in range(max_plies(game)):
        if bool(jnp.all(s0.terminal & s1.terminal)):
            break
        key, first_key, second_key = jax.random.split(key, 3)
        for_first, for_second, first_in_0 = split(s0, s1)
        announce = ply == 0 and not external and say is not None
        program = ("host match", game.size, first.name, second.name, starts.ply.shape)
        with _saying(compiling("the agents' moves", key=program) if announce else None, say, "compiled"):
            first_actions = jnp.asarray(first.act(for_first, first_key), jnp.int32)
            second_actions = jnp.asarray(second.act(for_second, second_key), jnp.int32)
        s0, s1, m0, m1, ill_f, ill_s = advance(s0, s1, first_in_0, first_actions, second_actions)
        columns.append(np.stack([np.asarray(m0), np.asarray(m1)]))
        bad_first, bad_second = bad_first | np.asarray(ill_f), bad_second | np.asarray(ill_s)
        if report is not None and (ply + 1) % progress_plies(game) == 0:
            report(ply + 1, s0, s1)
    if report is not None and len(columns) % progress_plies(game):
        report(len(columns), s0, s1)  # the end
    count = starts.ply.shape[0]
    moves = np.full((2, count, max_plies(game)), -1, np.int32)
    if columns:
        moves[:, :, : len(columns)] = np.stack(columns, axis=-1)
    no = np.zeros(count, bool)
    return _Played(moves, (s0, s1), no | bad_first, no | bad_second)


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
class GameRecord(NamedTuple):
    black: str
    white: str
    actions: list[int]  # the whole game from the initial position (opening included)
    black_disc_diff: int  # final black minus white discs, empties to the winner

    def transcript(self, size: int) -> str:
        return format_transcript(self.actions, size)


@dataclasses.dataclass(frozen=True)
class MatchSummary:
    """Results from the first agent's view (score = wins + draws / 2, per game)."""

    first: str
    second: str
    games: int
    wins: int
    draws: int
    losses: int
    score: float
    score_ci: float  # half-width of the 95% interval, from the spread over opening pairs
    mean_disc_diff: float
    disc_diff_ci: float
    score_as_black: float
    score_as_white: float
    wiped_out: int = 0  # losses with no disc of the first agent's left
    wiped_out_opponent: int = 0  # wins leaving the second agent no disc

    @property
    def elo(self) -> float:
        """Elo difference implied by the score (clipped half a game from 0% and 100%)."""
        return score_to_elo(self.score, self.games)

    @property
    def elo_interval(self) -> tuple[float, float]:
        return (score_to_elo(self.score - self.score_ci, self.games),
                score_to_elo(self.score + self.score_ci, self.games))


def score_to_elo(score: float, games: int) -> float:
    """Elo difference ``400 log10(s / (1 - s))``, with s kept half a game inside (0, 1)."""
    margin = 0.5 / max(games, 1)
    s = min(max(score, margin), 1.0 - margin)
    return 400.0 * math.log10(s / (1.0 - s))


def mean_and_ci(per_pair: np.ndarray) -> tuple[float, float]:
    """Mean and 95% half-width (normal approximation) of i.i.d. values."""
    mean = float(np.mean(per_pair))
    if per_pair.size < 2:
        return mean, float("inf")
    return mean, 1.96 * float(np.std(per_pair, ddof=1)) / math.sqrt(per_pair.size)


def first_disc_diff(black_disc_diff: np.ndarray) -> np.ndarray:
    """int32[2, M]: black's final disc differences ([2, M], copy 0 with the first agent as black)
    from the first agent's view."""
    return black_disc_diff * np.array([[1], [-1]], np.int32)


def first_scores(black_disc_diff: np.ndarray) -> np.ndarray:
    """float[2, M]: 1 win, 0.5 draw, 0 loss for the first agent (see first_disc_diff)."""
    return (np.sign(first_disc_diff(black_disc_diff)) + 1) / 2.0


@dataclasses.dataclass
class MatchResult:
    """Everything about a finished match; copy 0 of opening i had the first agent as black."""

    game: Othello
    first: str
    second: str
    openings: list[list[int]]
    moves: np.ndarray  # int32[2, M, T] moves after the opening (-1: game already over)
    black_disc_diff: np.ndarray  # int32[2, M]
    seconds: float  # playing time, compilation excluded
    compile_seconds: float = 0.0

    @property
    def first_disc_diff(self) -> np.ndarray:
        """int32[2, M] final disc difference from the first agent's view."""
        return first_disc_diff(self.black_disc_diff)

    @property
    def first_wiped_out(self) -> np.ndarray:
        """bool[2, M]: games the first agent lost with no disc of its own left. With the empties
        going to the winner, exactly those end at a difference of minus every square."""
        return self.first_disc_diff == -self.game.num_squares

    @property
    def first_scores(self) -> np.ndarray:
        """float[2, M]: 1 win, 0.5 draw, 0 loss for the first agent."""
        return first_scores(self.black_disc_diff)

    def summary(self) -> MatchSummary:
        scores, diffs = self.first_scores, self.first_disc_diff.astype(np.float64)
        score, score_ci = mean_and_ci(scores.mean(axis=0))  # opening pairs are the independent units
        diff, diff_ci = mean_and_ci(diffs.mean(axis=0))
        return MatchSummary(
            first=self.first, second=self.second, games=int(scores.size),
            wins=int(np.sum(scores == 1.0)), draws=int(np.sum(scores == 0.5)), losses=int(np.sum(scores == 0.0)),
            score=score, score_ci=score_ci, mean_disc_diff=diff, disc_diff_ci=diff_ci,
            score_as_black=float(scores[0].mean()), score_as_white=float(scores[1].mean()),
            wiped_out=int(self.first_wiped_out.sum()),
            wiped_out_opponent=int((self.first_disc_diff == self.game.num_squares).sum()),
        )

    def records(self) -> list[GameRecord]:
        """Both games of every opening, copy 0 (first agent black) then copy 1."""
        out = []
        for i, opening in enumerate(self.openings):
            for copy, (black, white) in enumerate(((self.first, self.second), (self.second, self.first))):
                played = [int(a) for a in self.moves[copy, i] if a >= 0]
                out.append(GameRecord(black, white, list(opening) + played, int(self.black_disc_diff[copy, i])))
        return out

    def save_games(self, path: str | Path) -> None:
        """Write one line per game: transcript, black, white, black's final disc difference.

        Tab-separated; the transcript comes first so the file reads back as an openings list.
        """
        lines = [f"# othello-jax games on {self.game.size}x{self.game.size}: transcript, black, white, "
                 "black minus white discs"]
        lines += [f"{r.transcript(self.game.size)}\t{r.black}\t{r.white}\t{r.black_disc_diff:+d}"
                  for r in self.records()]
        Path(path).expanduser().write_text("\n".join(lines) + "\n")


class SavedGame(NamedTuple):
    """One game of a file written by :meth:`MatchResult.save_games`."""

    transcript: str
    black: str  # the agents' specs as the match named them
    white: str
    black_disc_diff: int

    def side_of(self, player: str) -> int:
        """0 if black's spec starts with ``player``, 1 if white's; ValueError unless exactly one does."""
        black, white = self.black.startswith(player), self.white.startswith(player)
        if black == white:
            raise ValueError(f"exactly one side must be the player {player!r}: {self.black} vs {self.white}")
        return 0 if black else 1


def read_saved_games(path: str | Path) -> list[SavedGame]:
    """The games of a file written by :meth:`MatchResult.save_games` (comment lines skipped);
    ValueError naming the file and the line for anything else, OSError for a missing file."""
    games = []
    for number, line in enumerate(Path(path).expanduser().read_text().splitlines(), start=1):
        if line.startswith("#") or not line.strip():
            continue
        fields = line.split("\t")
        try:
            transcript, black, white, diff = fields
            games.append(SavedGame(transcript, black, white, int(diff)))
        except ValueError:
            raise ValueError(f"{path}, line {number}: not a saved game (transcript, black, white, "
                             f"black minus white discs): {line[:60]!r}") from None
    return games


def _black_disc_diff(game: Othello, states: State) -> jax.Array:
    _, diff = game.outcome(states)
    return jnp.where(states.color == BLACK, diff, -diff)


# ---------------------------------------------------------------------------------------------
# the entry points
# ---------------------------------------------------------------------------------------------
class MatchProgress(NamedTuple):
    """A match so far: games over, of all, the plies its batch has played, the first agent's
    score over the games over (None before the first), the seconds since it began (compiling
    included)."""

    games: int
    total: int
    ply: int
    score: float | None
    seconds: float

    def line(self) -> str:
        """``48/200 games over (ply 42), score 0.562 so far, 1m12s``."""
        minutes, seconds = divmod(int(round(self.seconds)), 60)
        score = "" if self.score is None else f", score {self.score:.3f} so far"
        return f"{self.games}/{self.total} games over (ply {self.ply}){score}, {minutes}m{seconds:02d}s"


@functools.cache
def _disc_diffs(game: Othello) -> Callable[[State, State], jax.Array]:
    """Jitted (copy 0, copy 1) -> int32[2, M] black's final disc differences (one program, not
    one per operation)."""
    return jax.jit(lambda s0, s1: jnp.stack([_black_disc_diff(game, s0), _black_disc_diff(game, s1)]))


def play_match(game: Othello, first: Agent, second: Agent, lines: Sequence[Sequence[int]], key: jax.Array,
               batch_size: int | None = None, progress: Callable[[MatchProgress], None] | None = None,
               say: Say | None = None) -> MatchResult:
    """Play every opening line twice (colours swapped): ``2 * len(lines)`` games.

    ``batch_size`` openings are played at a time (default: all at once; every batch shares one
    compiled program). ``progress(MatchProgress)`` is called every ``progress_plies`` plies and
    at the end of each batch (the games are the same without it). ``say`` prints a line before
    compiling (and how long it took).
    """
    starts, lines = openings_lib.replay(lines, game)
    for agent in (first, second):
        if agent.start_games is not None:
            agent.start_games(lines)
    compiled = first.jittable and second.jittable
    count = len(lines)
    batch_size = count if not batch_size else min(batch_size, count)
    begin = time.perf_counter()
    moves, diffs, compile_seconds = [], [], 0.0

    def report_batch(used: int) -> Report | None:
        """Report the games over so far, those of the batch playing (its first ``used`` openings) included."""
        if progress is None:
            return None
        before = first_scores(np.concatenate(diffs, axis=1)).ravel() if diffs else np.zeros(0)

        def report(ply: int, s0: State, s1: State) -> None:
            over = np.stack([np.asarray(s0.terminal), np.asarray(s1.terminal)])[:, :used]
            now = first_scores(np.asarray(_disc_diffs(game)(s0, s1))[:, :used])[over]
            scores = np.concatenate([before, now])
            progress(MatchProgress(int(scores.size), 2 * count, ply, float(scores.mean()) if scores.size else None,
                                   time.perf_counter() - begin))

        return report

    for start in range(0, count, batch_size):
        key, batch_key = jax.random.split(key)
        rows = np.arange(start, start + batch_size)
        # a compiled match pads the last batch (repeating an opening) so that all batches share one compile
        rows = np.where(rows < count, rows, start) if compiled else rows[rows < count]
        chunk = jax.tree.map(lambda x: x[rows], starts)
        used = min(batch_size, count - start)
        played = (_play_compiled if compiled else _play_host)(game, first, second, chunk, batch_key, say,
                                                              report_batch(used))
        played = played._replace(moves=played.moves[:, :used], illegal_first=played.illegal_first[:used],
                                 illegal_second=played.illegal_second[:used],
                                 final=jax.tree.map(lambda x: x[:used], played.final))
        for agent, illegal in ((first, played.illegal_first), (second, played.illegal_second)):
            if illegal.any():
                where = start + int(np.flatnonzero(illegal)[0])
                raise ArenaError(f"agent {agent.name} chose an illegal move in the games of opening {where + 1} "
                                 f"({format_transcript(lines[where], game.size)})")
        compile_seconds += played.compile_seconds
        moves.append(played.moves)
        diffs.append(np.asarray(_disc_diffs(game)(*played.final)))
    return MatchResult(game, first.name, second.name, [list(line) for line in lines], np.concatenate(moves, axis=1),
                       np.concatenate(diffs, axis=1), time.perf_counter() - begin - compile_seconds, compile_seconds)


def default_opening_plies(game: Othello) -> int:
    """Plies of generated openings: enough for variety, few enough to stay balanced."""
    return {4: 2, 6: 4, 8: 6}[game.size]


def match_openings(game: Othello, games: int, key: jax.Array, openings_file: str | Path | None = None,
                   plies: int | None = None) -> list[list[int]]:
    """``games / 2`` openings: sampled from a file, or generated near-even lines of ``plies`` plies."""
    if games < 2 or games % 2:
        raise MatchSettingsError(f"the number of games must be even and at least 2 (each opening is played "
                                 f"twice with colours swapped), got {games}")
    if openings_file is not None:
        return openings_lib.sample_openings(openings_lib.load_openings(openings_file, game), games // 2, key)
    plies = default_opening_plies(game) if plies is None else plies
    return openings_lib.balanced_openings(game, games // 2, plies, key)


def gate(challenger: Agent, champion: Agent, games: int, threshold: float, key: jax.Array, *,
         game: Othello = Othello(8), lines: Sequence[Sequence[int]] | None = None,
         say: Say | None = None) -> tuple[bool, float]:
    """AlphaGo Zero style gating: does ``challenger`` score at least ``threshold`` against ``champion``?

    Plays ``games`` games (generated near-even openings unless ``lines`` are given; each played
    with both colours) and returns (accepted, challenger's score). ``say``: as for play_match.
    """
    if not 0.0 <= threshold <= 1.0:
        raise MatchSettingsError(f"gating threshold must be within [0, 1], got {threshold}")
    open_key, play_key = jax.random.split(key)
    lines = match_openings(game, games, open_key) if lines is None else lines
    score = play_match(game, challenger, champion, lines, play_key, say=say).summary().score
    return score >= threshold, score


def format_summary(summary: MatchSummary, seconds: float | None = None, compile_seconds: float = 0.0) -> str:
    """A small results table for the console."""
    low, high = summary.elo_interval
    rows = [
        f"{summary.first}  vs  {summary.second}",
        f"  games      {summary.games}  (each opening twice, colours swapped)",
        f"  W/D/L      {summary.wins} / {summary.draws} / {summary.losses}"
        + (f"  (wipeouts: {summary.wiped_out_opponent} won, {summary.wiped_out} lost)"
           if summary.wiped_out or summary.wiped_out_opponent else ""),
        f"  score      {summary.score:.3f} +- {summary.score_ci:.3f}  (as black {summary.score_as_black:.3f}, "
        f"as white {summary.score_as_white:.3f})",
        f"  disc diff  {summary.mean_disc_diff:+.2f} +- {summary.disc_diff_ci:.2f}",
        f"  Elo diff   {summary.elo:+.0f}  [{low:+.0f}, {high:+.0f}]",
    ]
    if seconds is not None:
        compiled = f" + {compile_seconds:.1f} s compiling" if compile_seconds else ""
        rows.append(f"  time       {seconds:.1f} s ({summary.games / max(seconds, 1e-9):.1f} games/s){compiled}")
    return "\n".join(rows)
