"""Move lines (openings, transcripts, recorded games): padded action tables, and one batched
replayer that every consumer (opening files, self-play openings, game databases) shares."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.game.fusion import step_materialized
from othello_jax.game.rules import Othello, State

NO_MOVE = -1  # a padding entry: the line has no move here
# why a line stopped (0 = it did not): the first problem of each line, in order of precedence
LINE_OK, AFTER_GAP, AFTER_END, ILLEGAL = range(4)


def pad_lines(lines: Sequence[Sequence[int]]) -> np.ndarray:
    """Action lists -> int32[M, L] padded with ``NO_MOVE``."""
    width = max([len(line) for line in lines] + [1])
    table = np.full((len(lines), width), NO_MOVE, np.int32)
    for row, line in enumerate(lines):
        table[row, : len(line)] = line
    return table


class ReplayedLines(NamedTuple):
    """G lines of up to T moves replayed from the start (leading axes [G] or [G, T]).

    positions: the position before each move, after any forced pass inserted before it.
    passed: bool [G, T], a forced pass the line left out was inserted before this move.
    valid: bool [G, T], the move was there and legal, with no earlier problem.
    final: the position after the last valid move.
    error, error_move: int32 [G], the first problem (``LINE_OK``, ``AFTER_GAP``: a move after a
        ``NO_MOVE`` entry, ``AFTER_END``: a move in a finished game, ``ILLEGAL``) and its move
        index (-1 if none). A line is frozen at its first problem.
    passes: int32 [G], forced passes inserted.
    """

    positions: State
    passed: jax.Array
    valid: jax.Array
    final: State
    error: jax.Array
    error_move: jax.Array
    passes: jax.Array


def _select(flag: jax.Array, a: State, b: State) -> State:
    return jax.tree.map(lambda x, y: jnp.where(flag, x, y), a, b)


def replay_lines(table: jax.Array, game: Othello) -> ReplayedLines:
    """Replay int32 [G, T] action lines (``NO_MOVE`` padded) from the start, all lines at once.

    One ``lax.scan`` over the T move slots: a forced pass the line leaves out is inserted
    (an explicit pass where one is forced is played as written), and legality is checked with
    a select over the legal mask, not a gather. Jittable (``game`` is static).
    """
    table = jnp.asarray(table, jnp.int32)
    count = table.shape[0]
    start = jax.tree.map(lambda x: jnp.broadcast_to(x, (count,) + x.shape), game.init())
    pass_action = jnp.full((count,), game.pass_action, jnp.int32)
    actions = jnp.arange(game.num_actions)

    def move(carry, inputs):
        state, gap, error, error_move, passes = carry
        action, index = inputs
        present = action != NO_MOVE
        running = error == LINE_OK
        legal = game.legal_moves(state)
        must_pass = present & running & legal[:, game.pass_action] & (action != game.pass_action)
        state = _select(must_pass, step_materialized(game, state, pass_action), state)
        legal = game.legal_moves(state)
        is_legal = jnp.any(legal & (actions == action[:, None]), axis=-1)
        problem = jnp.select([present & gap, present & state.terminal, present & ~is_legal],
                             [AFTER_GAP, AFTER_END, ILLEGAL], LINE_OK).astype(jnp.int32)
        first = running & (problem != LINE_OK)
        error = jnp.where(first, problem, error)
        error_move = jnp.where(first, index, error_move)
        valid = present & (error == LINE_OK)
        after = _select(valid, step_materialized(game, state, jnp.where(valid, action, 0)), state)
        carry = (after, gap | ~present, error, error_move, passes + must_pass.astype(jnp.int32))
        return carry, (state, must_pass, valid)

    init = (start, jnp.zeros(count, bool), jnp.zeros(count, jnp.int32), jnp.full(count, -1, jnp.int32),
            jnp.zeros(count, jnp.int32))
    steps = (jnp.swapaxes(table, 0, 1), jnp.arange(table.shape[1], dtype=jnp.int32))
    (final, _, error, error_move, passes), (positions, passed, valid) = jax.lax.scan(move, init, steps)
    time_last = lambda x: jnp.swapaxes(x, 0, 1)
    return ReplayedLines(jax.tree.map(time_last, positions), time_last(passed), time_last(valid), final,
                         error, error_move, passes)


replay_lines_jit = jax.jit(replay_lines, static_argnums=1)
