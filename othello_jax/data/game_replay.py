"""Replay recorded games with the project's rules, all games at once.

Game databases record placements only; a forced pass is implied whenever the side to move has
no legal placement. :func:`replay_actions` is one ``lax.scan`` over the 60 move slots with every
game advancing one move per step (vectorised over games), inserting forced passes and flagging
the first problem of each game: an unreadable move code, a move after the move list ended,
a move after the game was over, or an illegal move. A flagged game is frozen at its last good
position; the caller decides what to do with it (:func:`replay_games` reports and drops it).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.data.wthor import BAD_CODE, NO_MOVE
from othello_jax.game import Othello, State
from othello_jax.game import bitboard as bb

# Reasons a record is rejected (0 = fine). Order = precedence when several apply to one move.
OK, BAD_MOVE_CODE, MOVE_AFTER_GAP, MOVE_AFTER_END, ILLEGAL_MOVE, BAD_SCORE, SCORE_MISMATCH = range(7)
REASONS = {
    BAD_MOVE_CODE: "move byte is not a square (11..88)",
    MOVE_AFTER_GAP: "a move follows the end of the move list (a 0 byte)",
    MOVE_AFTER_END: "a move is recorded after the game was over",
    ILLEGAL_MOVE: "illegal move",
    BAD_SCORE: "recorded score is not a disc count 0..64",
    SCORE_MISMATCH: "recorded score disagrees with the replayed final position",
}


class Replayed(NamedTuple):
    """Result of replaying G games of up to T recorded moves (leading axes as in the input)."""

    positions: State  # [G, T] position before each recorded move (after any forced pass)
    valid: jax.Array  # bool [G, T] the move was recorded and legal (and no earlier problem)
    final: State  # [G] position after the last good move
    error: jax.Array  # int32 [G] first problem (OK, BAD_MOVE_CODE, ...)
    error_move: jax.Array  # int32 [G] index of the offending move (-1 if none)
    passes: jax.Array  # int32 [G] forced passes inserted


def _select(flag: jax.Array, a: State, b: State) -> State:
    return jax.tree.map(lambda x, y: jnp.where(flag, x, y), a, b)


@functools.partial(jax.jit, static_argnums=1)
def replay_actions(actions: jax.Array, game: Othello = Othello(8)) -> Replayed:
    """Replay ``actions`` (int32 [G, T]: square index row * 8 + col, ``NO_MOVE``, ``BAD_CODE``).

    Square indices are the 8x8 bitboard numbering, equal to action indices on the 8x8 board.
    """
    num_games = actions.shape[0]
    start = jax.tree.map(lambda x: jnp.broadcast_to(x, (num_games,)), game.init())
    pass_action = jnp.full((num_games,), game.pass_action, jnp.int32)

    def move(carry, inputs):
        state, ended, error, error_move, passes = carry
        action, index = inputs
        present = action != NO_MOVE
        must_pass = present & ~bb.any_set(state.legal) & ~state.terminal & (error == OK)
        state = _select(must_pass, game.step(state, pass_action), state)
        legal = bb.any_set(bb.square_bit(jnp.where(action >= 0, action, -1)) & state.legal)
        problem = jnp.select(
            [action == BAD_CODE, present & ended, present & state.terminal, present & ~legal],
            [BAD_MOVE_CODE, MOVE_AFTER_GAP, MOVE_AFTER_END, ILLEGAL_MOVE], OK).astype(jnp.int32)
        first = (error == OK) & (problem != OK)
        error = jnp.where(first, problem, error)
        error_move = jnp.where(first, index, error_move)
        valid = present & (error == OK)
        after = _select(valid, game.step(state, jnp.where(valid, action, 0)), state)
        carry = (after, ended | ~present, error, error_move, passes + must_pass.astype(jnp.int32))
        return carry, (state, valid)

    init = (start, jnp.zeros(num_games, bool), jnp.zeros(num_games, jnp.int32),
            jnp.full(num_games, -1, jnp.int32), jnp.zeros(num_games, jnp.int32))
    steps = (jnp.swapaxes(actions, 0, 1), jnp.arange(actions.shape[1], dtype=jnp.int32))
    (final, _, error, error_move, passes), (positions, valid) = jax.lax.scan(move, init, steps)
    time_last = lambda x: jnp.swapaxes(x, 0, 1)
    return Replayed(jax.tree.map(time_last, positions), time_last(valid), final, error, error_move, passes)


def final_black_discs(final: State, game: Othello = Othello(8)) -> np.ndarray:
    """Black's disc count at the end, empty squares going to the winner (the WThor convention)."""
    diff = np.asarray(game.disc_difference(final))  # mover's view, empties awarded when over
    black_diff = np.where(np.asarray(final.color) == 0, diff, -diff)
    return (game.num_squares + black_diff) // 2


def check_scores(replayed_error: np.ndarray, final: State, black_score: np.ndarray,
                 game: Othello = Othello(8)) -> np.ndarray:
    """Add score problems to the replay's error codes: a score above 64, or a finished game
    whose recorded score is not its final disc count (unfinished games keep their score)."""
    black_score = np.asarray(black_score, np.int32)
    error = np.asarray(replayed_error).copy()
    fine = error == OK
    error[fine & (black_score > game.num_squares)] = BAD_SCORE
    mismatch = np.asarray(final.terminal) & (final_black_discs(final, game) != black_score)
    error[(error == OK) & mismatch] = SCORE_MISMATCH
    return error


@dataclasses.dataclass(frozen=True)
class RejectReport:
    """Which records were rejected and why (kept alongside the data, never silent)."""

    total: int
    rejected: dict[str, int]  # reason -> count
    examples: tuple[str, ...]  # a few "game #i (year): move k: reason" lines

    @property
    def num_rejected(self) -> int:
        return sum(self.rejected.values())

    def summary(self) -> str:
        if not self.rejected:
            return f"replayed all {self.total} records; none rejected"
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(self.rejected.items(), key=lambda kv: -kv[1]))
        return f"rejected {self.num_rejected} of {self.total} records as corrupt: {reasons}"


def describe_problems(error: np.ndarray, error_move: np.ndarray, labels: list[str] | None = None,
                      max_examples: int = 5) -> RejectReport:
    """Count rejection reasons; ``labels[i]`` names game i in the examples."""
    error = np.asarray(error)
    counts = {REASONS[code]: int(n)
              for code, n in zip(*np.unique(error[error != OK], return_counts=True), strict=False)}
    bad = np.flatnonzero(error != OK)[:max_examples]
    examples = tuple(
        f"{labels[i] if labels else f'game #{i}'}: "
        + (f"move {int(error_move[i]) + 1}: " if error_move[i] >= 0 else "")
        + REASONS[int(error[i])] for i in bad)
    return RejectReport(total=int(error.size), rejected=counts, examples=examples)


def replay_in_chunks(actions: np.ndarray, consume: Callable[[int, Replayed], None],
                     chunk: int = 16384, game: Othello = Othello(8),
                     progress: Callable[[int, int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Replay a large array of games in fixed-size chunks (one compilation), calling
    ``consume(offset, replayed_numpy)`` on each; returns (error, error_move) for all games.

    The last chunk is padded with empty games so every call has the same shape.
    """
    actions = np.asarray(actions, np.int32)
    total = actions.shape[0]
    errors, moves = [], []
    for offset in range(0, total, chunk):
        part = actions[offset:offset + chunk]
        n = part.shape[0]
        if n < chunk:
            part = np.concatenate([part, np.full((chunk - n,) + part.shape[1:], NO_MOVE, np.int32)])
        out = jax.tree.map(lambda x: np.asarray(x)[:n], replay_actions(jnp.asarray(part), game))
        consume(offset, out)
        errors.append(out.error)
        moves.append(out.error_move)
        if progress is not None:
            progress(offset + n, total)
    return np.concatenate(errors), np.concatenate(moves)
