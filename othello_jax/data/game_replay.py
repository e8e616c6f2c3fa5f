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
from othello_jax.game.lines import LINE_OK, replay_lines
from othello_jax.game.lines import NO_MOVE as LINE_NO_MOVE

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


@functools.partial(jax.jit, static_argnums=1)
def replay_actions(actions: jax.Array, game: Othello = Othello(8)) -> Replayed:
    """Replay ``actions`` (int32 [G, T]: square index row * 8 + col, ``NO_MOVE``, ``BAD_CODE``).

    Square indices are the 8x8 bitboard numbering, equal to action indices on the 8x8 board.
    The moves before a game's first unreadable code are replayed by
    :func:`othello_jax.game.lines.replay_lines`; the code itself is that game's problem unless
    an earlier move already was one.
    """
    actions = jnp.asarray(actions, jnp.int32)
    slots = jnp.arange(actions.shape[1], dtype=jnp.int32)
    bad_at = jnp.min(jnp.where(actions == BAD_CODE, slots, actions.shape[1]), axis=1)  # T if none
    before_bad = slots[None, :] < bad_at[:, None]
    out = replay_lines(jnp.where(before_bad & (actions != NO_MOVE), actions, LINE_NO_MOVE), game)
    codes = jnp.asarray([OK, MOVE_AFTER_GAP, MOVE_AFTER_END, ILLEGAL_MOVE], jnp.int32)
    error = codes[out.error]
    bad = (out.error == LINE_OK) & (bad_at < actions.shape[1])
    error = jnp.where(bad, BAD_MOVE_CODE, error)
    error_move = jnp.where(bad, bad_at, out.error_move)
    return Replayed(out.positions, out.valid, out.final, error, error_move, out.passes)


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
