"""Dihedral symmetries: group laws, state/policy consistency, commuting with step."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from othello_jax.game import (
    NUM_SYMMETRIES,
    Othello,
    compose,
    inverse,
    transform_action,
    transform_policy,
    transform_state,
)
from othello_jax.game import bitboard as bb
from tests.game_helpers import random_games

pytestmark = pytest.mark.core


def states_from_games(game: Othello, rec, count: int):
    """Mid-game positions rebuilt from recorded games."""
    g = np.arange(count) % rec["action"].shape[0]
    t = np.minimum(np.arange(count) % (game.num_squares // 2) + 1, rec["terminal"].argmax(axis=1)[g])
    black = bb.from_grid(jnp.asarray(rec["black"][g, t]))
    white = bb.from_grid(jnp.asarray(rec["white"][g, t]))
    color = jnp.asarray(rec["color"][g, t])
    white_moves = color == 1
    mover = bb.where(white_moves, white, black)
    opponent = bb.where(white_moves, black, white)
    return game.from_discs(mover, opponent, color), jnp.asarray(rec["action"][g, t])


def leaves_equal(a, b) -> bool:
    return all(np.array_equal(np.asarray(x), np.asarray(y))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=False))


def test_group_laws():
    assert all(compose(0, k) == k == compose(k, 0) for k in range(NUM_SYMMETRIES))
    assert all(compose(k, inverse(k)) == 0 for k in range(NUM_SYMMETRIES))
    for a, b, c in itertools.product(range(NUM_SYMMETRIES), repeat=3):
        assert compose(compose(a, b), c) == compose(a, compose(b, c))
    # the 8 transforms of an asymmetric grid are all different
    grid = jnp.arange(36).reshape(6, 6)
    images = {tuple(np.asarray(transform_policy(jnp.concatenate([grid.reshape(-1), jnp.zeros(1, int)]), k, 6)))
              for k in range(8)}
    assert len(images) == 8


@pytest.mark.parametrize("size", [4, 6, 8])
def test_step_commutes_with_symmetries(size):
    game = Othello(size)
    states, actions = states_from_games(game, random_games(game, 64, seed=3), 64)
    for k in range(NUM_SYMMETRIES):
        lhs = game.step(transform_state(states, k, size), transform_action(actions, k, size))
        rhs = transform_state(game.step(states, actions), k, size)
        assert leaves_equal(lhs, rhs), f"symmetry {k} does not commute with step"
        # legal-move masks transform like policies
        assert np.array_equal(
            np.asarray(game.legal_moves(transform_state(states, k, size))),
            np.asarray(transform_policy(game.legal_moves(states), k, size)),
        )
        # the transformed state is itself consistent (cached legal moves recomputed from discs)
        t = transform_state(states, k, size)
        rebuilt = game.from_discs(t.mover, t.opponent, t.color, t.passed, t.ply)
        assert leaves_equal(t, rebuilt)


def test_traced_symmetry_index_matches_static():
    game = Othello(8)
    states, actions = states_from_games(game, random_games(game, 16, seed=5), 16)
    ks = jnp.arange(16) % 8
    traced = jax.jit(jax.vmap(lambda s, k: transform_state(s, k, 8)))(states, ks)
    traced_actions = jax.jit(jax.vmap(lambda a, k: transform_action(a, k, 8)))(actions, ks)
    for i in range(16):
        one = jax.tree.map(lambda x: x[i], states)
        assert leaves_equal(jax.tree.map(lambda x: x[i], traced), transform_state(one, int(ks[i]), 8))
        assert int(traced_actions[i]) == int(transform_action(actions[i], int(ks[i]), 8))


def test_policy_round_trip_and_pass_fixed():
    policy = jax.random.uniform(jax.random.key(0), (3, 65))
    for k in range(NUM_SYMMETRIES):
        out = transform_policy(policy, k, 8)
        assert np.allclose(np.asarray(out[:, 64]), np.asarray(policy[:, 64]))
        assert np.allclose(np.asarray(transform_policy(out, inverse(k), 8)), np.asarray(policy))
