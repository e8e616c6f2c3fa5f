"""Tree search valued by random playouts: the classic Monte-Carlo baseline, no network.

The search itself is :func:`othello_jax.search.run_search` (the same mctx wiring as the
network agents); only the "network" differs: a uniform prior, and as value the mean result of
``rollouts`` uniformly random playouts to the end of the game. The playout of a position is
seeded by a hash of the position and a per-move salt, so the evaluator needs no PRNG key
(``apply_fn(variables, observation)`` has none) and still draws fresh playouts every move.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import ml_collections

from othello_jax.game import Othello, State
from othello_jax.game import bitboard as bb
from othello_jax.game.fusion import materialize

_GOLDEN = 0x9E3779B9


def mix32(x: jax.Array) -> jax.Array:
    """A 32-bit avalanche hash (murmur3's finaliser): nearby inputs give unrelated outputs."""
    x = x.astype(jnp.uint32)
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def position_hash(mover: bb.Bitboard, opponent: bb.Bitboard, salt: jax.Array) -> jax.Array:
    """uint32 hash of a position (side to move's view) mixed with ``salt``."""
    h = mix32(jnp.asarray(salt, jnp.uint32) ^ mover.lo)
    for word in (mover.hi, opponent.lo, opponent.hi):
        h = mix32(h ^ word)
    return h


class _Playout(NamedTuple):
    mover: bb.Bitboard
    opponent: bb.Bitboard
    passed: jax.Array  # the previous ply was a pass
    flipped_view: jax.Array  # True when the side to move is not the playout's first mover
    done: jax.Array
    ply: jax.Array  # scalar


def playout_results(mover: bb.Bitboard, opponent: bb.Bitboard, seeds: jax.Array, size: int) -> jax.Array:
    """Result (+1/0/-1, float32) of one random playout per position, for its side to move.

    Each ply picks a uniformly random legal placement (the k-th set bit of the move board,
    k from a hash of the lane's seed and the ply), or passes when it has none; two passes in a
    row end the game.
    """
    seeds = jnp.asarray(seeds, jnp.uint32)
    init = _Playout(mover, opponent, jnp.zeros(seeds.shape, bool), jnp.zeros(seeds.shape, bool),
                    jnp.zeros(seeds.shape, bool), jnp.zeros((), jnp.uint32))

    def body(p: _Playout) -> _Playout:
        moves = materialize(bb.legal_placements(p.mover, p.opponent, size))
        count = bb.popcount(moves)
        over = (count == 0) & p.passed
        active = ~p.done & ~over
        random = mix32(seeds ^ mix32(p.ply * jnp.uint32(_GOLDEN) + jnp.uint32(1)))
        k = (random % jnp.maximum(count, 1).astype(jnp.uint32)).astype(jnp.int32)
        move = bb.square_bit(jnp.where(count > 0, bb.select_square(moves, k), 64))
        flipped = materialize(bb.flips(p.mover, p.opponent, move, size))
        new_mover = p.opponent & ~flipped  # empty move (a pass): just swap sides
        new_opponent = p.mover | move | flipped
        return _Playout(
            mover=bb.where(active, new_mover, p.mover),
            opponent=bb.where(active, new_opponent, p.opponent),
            passed=jnp.where(active, count == 0, p.passed),
            flipped_view=p.flipped_view ^ active,
            done=p.done | over,
            ply=p.ply + 1,
        )

    end = jax.lax.while_loop(lambda p: ~jnp.all(p.done), body, init)
    result = jnp.sign(bb.popcount(end.mover) - bb.popcount(end.opponent))
    return jnp.where(end.flipped_view, -result, result).astype(jnp.float32)


def rollout_evaluator(game: Othello, rollouts: int) -> Callable:
    """``apply_fn(variables, observation) -> (uniform logits, mean playout result)``.

    ``variables`` is ``{"salt": uint32 scalar}``; change the salt to draw new playouts.
    """

    def apply_fn(variables: dict, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        mover = bb.from_grid(obs[..., 0] > 0.5)
        opponent = bb.from_grid(obs[..., 1] > 0.5)
        base = position_hash(mover, opponent, variables["salt"])
        seeds = mix32(base[None] ^ (jnp.arange(rollouts, dtype=jnp.uint32)[:, None] * jnp.uint32(_GOLDEN)))
        widen = lambda b: jax.tree.map(lambda x: jnp.broadcast_to(x[None], seeds.shape), b)
        value = jnp.mean(playout_results(widen(mover), widen(opponent), seeds, game.size), axis=0)
        logits = jnp.zeros(obs.shape[:-3] + (game.num_actions,), jnp.float32)
        return logits, value

    return apply_fn


def make_act(game: Othello, config: ml_collections.ConfigDict, rollouts: int = 1):
    """``act(states, key) -> actions``: the search's move with rollout values."""
    from othello_jax import search

    apply_fn = rollout_evaluator(game, rollouts)

    def act(states: State, key: jax.Array) -> jax.Array:
        salt_key, search_key = jax.random.split(key)
        variables = {"salt": jax.random.bits(salt_key, (), jnp.uint32)}
        return search.run_search(config, apply_fn, variables, states, search_key, game).action

    return act
