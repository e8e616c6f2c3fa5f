"""Wipeout traps: root moves after which the opponent forces a wipeout within its next two moves.

With game-ending moves valued exactly (``exact_endings``), the search sees a move that lets the
opponent take every disc at once. It does not see one ply deeper: a move after which the
opponent has a quiet reply that leaves every answer of ours open to a wipeout. All of the
wipeouts ``othello8_cpu``'s two-hour network still lost to greedy were of this kind (RESULTS.md,
2026-11-28): the prior puts little weight on the quiet reply, so 128 simulations never visit the
three plies below it. The rules prove such a trap in four plies, whatever the network thinks.

The check is bounded so that its cost is fixed: the search's top ``CANDIDATES`` root moves, the
opponent's first ``REPLIES`` legal replies (a trap found among them is a trap) and our answers
when we have at most ``ANSWERS`` of them (with more, the position is not called a trap). So a
move called trapped is always lost to a wipeout by force; a trap outside those bounds is missed.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.game import Othello, State
from othello_jax.game import bitboard as bb

CANDIDATES = 4  # root moves checked, in the search's order of preference
REPLIES = 16  # opponent replies tried per candidate
ANSWERS = 8  # our answers examined; with more legal answers a position is not a trap


def wipeout_available(game: Othello, states: State) -> jax.Array:
    """bool[...]: whether the mover has a legal move that flips every disc the opponent has."""
    _, remaining = game.every_placement(states)
    takes_all = ~bb.any_set(remaining)
    legal = game.legal_moves(states)[..., : game.num_squares]
    return jnp.any(legal & takes_all, axis=-1) & bb.any_set(states.opponent)


def kth_legal(legal: jax.Array, k: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The ``k``-th (0-based, in action order) legal action of each row of ``legal`` (bool[..., A];
    ``k`` broadcasts against [...]) and whether the row has that many (int32[...], bool[...])."""
    rank = jnp.cumsum(legal, axis=-1, dtype=jnp.int32)
    k = jnp.broadcast_to(k, rank.shape[:-1])
    hit = legal & (rank == k[..., None] + 1)
    return jnp.argmax(hit, axis=-1).astype(jnp.int32), jnp.any(hit, axis=-1)


def _widen(states: State, count: int) -> State:
    """Every leaf of a [B, ...] batch with ``count`` copies of each root: [B, count, ...]."""
    return jax.tree.map(lambda x: jnp.broadcast_to(x[:, None], (x.shape[0], count) + x.shape[1:]), states)


def trapped(game: Othello, states: State, moves: jax.Array) -> jax.Array:
    """bool[B, C]: whether each of ``moves`` (int32[B, C], legal at ``states``, leading axis B)
    loses to a wipeout by force: the opponent takes every disc at once, or has a reply after
    which each of our legal answers (a pass included) allows that.

    Every line (candidate, reply, answer) is a slot of one array, played three plies in a loop:
    one compiled ply for all three (the rules composed three times in one expression take XLA
    minutes to compile)."""
    batch, count = moves.shape
    wiped_now = wipeout_available(game, game.step(_widen(states, count), moves))
    slot = np.arange(count * REPLIES * ANSWERS)
    candidate = moves[:, slot // (REPLIES * ANSWERS)]
    reply_rank = jnp.asarray(slot // ANSWERS % REPLIES, jnp.int32)
    answer_rank = jnp.asarray(slot % ANSWERS, jnp.int32)

    def ply(level: jax.Array, carry: tuple[State, jax.Array, jax.Array]) -> tuple[State, jax.Array, jax.Array]:
        at, real, few_answers = carry
        legal = game.legal_moves(at)
        ranked, exists = kth_legal(legal, jnp.where(level == 1, reply_rank, answer_rank))
        action = jnp.where(level == 0, candidate, ranked)
        real = jnp.where(level == 0, real, real & exists)
        few_answers = jnp.where(level == 2, jnp.sum(legal, axis=-1) <= ANSWERS, few_answers)
        return game.step(at, action), real, few_answers

    start = jnp.ones((batch, slot.size), bool)
    after_answer, real, few_answers = jax.lax.fori_loop(0, 3, ply, (_widen(states, slot.size), start, start))
    shape = (batch, count, REPLIES, ANSWERS)
    wiped = wipeout_available(game, after_answer).reshape(shape)
    real = real.reshape(shape)  # the reply exists and so does the answer
    every_answer_wiped = jnp.all(wiped | ~real, axis=-1) & jnp.any(real, axis=-1)
    return wiped_now | jnp.any(every_answer_wiped & few_answers.reshape(shape)[..., 0], axis=-1)


def avoid_traps(game: Othello, states: State, action: jax.Array, policy: jax.Array, legal: jax.Array,
                lost: jax.Array) -> jax.Array:
    """The search's ``action`` (int32[B]), unless it is trapped or proven ``lost`` (bool[B, A]): then
    the first of the search's next preferred moves (by ``policy``, [B, A]) that is neither; the
    ``action`` stays where none of the ``CANDIDATES`` checked is safe."""
    preference = jnp.where(jax.nn.one_hot(action, policy.shape[-1], dtype=bool), 2.0, policy)
    preference = jnp.where(legal, preference, -1.0)
    _, candidates = jax.lax.top_k(preference, CANDIDATES)
    candidates = candidates.astype(jnp.int32)
    real = jnp.take_along_axis(legal, candidates, axis=-1) & (candidates < game.num_squares)
    safe = real & ~trapped(game, states, candidates) & ~jnp.take_along_axis(lost, candidates, axis=-1)
    first_safe = jnp.take_along_axis(candidates, jnp.argmax(safe, axis=-1)[:, None], axis=-1)[:, 0]
    return jnp.where(jnp.any(safe, axis=-1), first_safe, action).astype(action.dtype)
