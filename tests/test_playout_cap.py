"""Playout cap randomisation: full searches recorded, fast ones only played, lanes independent."""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments.configs import tiny_test
from othello_jax import search
from othello_jax.training import iteration as train
from othello_jax.training import playout_cap, selfplay
from othello_jax.training.program import make_train
from tests.conftest import tiny_net
from tests.test_selfplay import GAME, search_config

GAMES, EVERY, FULL_SIMS, FAST_SIMS = 16, 4, 8, 2
NEVER = selfplay.ResignState(jnp.float32(-2.0), jnp.float32(0.0))


def capped_config(every=EVERY, value_target="z", td_lambda=0.98):
    c = selfplay.default_selfplay_config()
    c.num_games = GAMES
    c.temperature_plies = 4
    c.value_target = value_target
    c.td_lambda = td_lambda
    c.playout_cap.update(every=every, fast_simulations=FAST_SIMS)
    return c


def deterministic_puct():
    """PUCT without root noise: its policy target depends on the position only, not on the key."""
    c = search_config("puct", sims=FULL_SIMS)
    c.dirichlet_fraction = 0.0
    return c


@functools.cache
def played(every=EVERY, value_target="z", td_lambda=0.98, seed=0):
    apply_fn, variables = tiny_net(GAME.size)
    fn = jax.jit(lambda k: selfplay.play_games(capped_config(every, value_target, td_lambda), GAME, apply_fn,
                                               variables, k, NEVER, search_config=deterministic_puct()))
    return jax.tree.map(np.asarray, fn(jax.random.key(seed)))


def test_groups_take_one_game_in_every_per_lane_and_rotate():
    lanes, per_lane, every = 3, 8, 4
    counts = np.zeros(lanes * per_lane)
    for seed in range(200):
        keys = jax.random.split(jax.random.key(seed), lanes)
        full, fast, is_full = map(np.asarray, playout_cap.groups(keys, lanes, per_lane, every))
        assert full.shape == (lanes * per_lane // every,) and fast.shape == (lanes * per_lane * 3 // every,)
        assert sorted([*full, *fast]) == list(range(lanes * per_lane))  # a partition of the batch
        assert is_full[full].all() and not is_full[fast].any()
        for lane in range(lanes):  # each lane gives exactly its share, from its own games
            mine = full[(full >= lane * per_lane) & (full < (lane + 1) * per_lane)]
            assert len(mine) == per_lane // every
        counts += is_full
    # every game is fully searched at about 1/every of the plies (a random rotation, not a fixed one)
    share = counts / 200
    assert share.min() > 0.12 and share.max() < 0.38, share


def test_recorded_positions_are_the_full_searches():
    out, stats, _ = played()
    apply_fn, variables = tiny_net(GAME.size)
    mask, plies = out.samples.mask, out.samples.mask.shape[0]
    per_ply = mask.sum(axis=1)
    assert per_ply[0] == GAMES // EVERY and (per_ply <= GAMES // EVERY).all()
    assert float(stats.positions) == mask.sum() and float(stats.moves) > 2.5 * mask.sum()
    t, b = np.nonzero(mask)
    states = jax.tree.map(lambda x: x[t, b], out.samples.state)
    full = search.run_search(deterministic_puct(), apply_fn, variables, states, jax.random.key(9), GAME)
    np.testing.assert_allclose(out.samples.policy[t, b], np.asarray(full.policy_target), atol=1e-6)
    # the check can tell the groups apart: a fast search gives other targets for most positions
    fast = search.run_search(playout_cap.fast_search_config(deterministic_puct(), FAST_SIMS), apply_fn, variables,
                             states, jax.random.key(9), GAME)
    differs = np.abs(np.asarray(fast.policy_target) - np.asarray(full.policy_target)).max(axis=-1) > 1e-3
    assert differs.mean() > 0.5
    # every colour and stage of the game gets recorded positions
    assert {0, 1} <= set(np.asarray(states.color).tolist()) and t.max() > plies // 2


def test_value_targets_run_through_the_unrecorded_plies():
    """lambda = 1 is the outcome z: the holes left by fast searches must not cut the returns short."""
    out, _, _ = played(value_target="lambda", td_lambda=1.0)
    mask = out.samples.mask
    np.testing.assert_allclose(out.samples.value[mask], out.outcome[mask], atol=1e-6)
    assert np.abs(out.outcome[mask]).sum() > 0


def test_lanes_play_as_alone():
    apply_fn, variables = tiny_net(GAME.size)
    config, search_c = capped_config(), search_config("gumbel", sims=FULL_SIMS)
    lanes = 2
    keys = jax.random.split(jax.random.key(4), lanes)
    resign = jax.tree.map(lambda x: jnp.stack([x] * lanes), NEVER)
    run = lambda k, r: selfplay.play_games(config, GAME, apply_fn, variables, k, r, search_config=search_c)
    out, _, _ = jax.device_get(jax.jit(jax.vmap(run))(keys, resign))
    for lane in range(lanes):
        alone, _, _ = jax.device_get(jax.jit(run)(keys[lane], NEVER))
        np.testing.assert_array_equal(out.action[lane], alone.action)
        np.testing.assert_array_equal(out.samples.mask[lane], alone.samples.mask)
        np.testing.assert_allclose(out.samples.policy[lane], alone.samples.policy, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("change, message", [
    (dict(every=1), "must be 0 (off) or >= 2"),
    (dict(every=3), "must be a multiple of selfplay.playout_cap.every"),
    (dict(fast_simulations=0), "fast_simulations must be >= 1"),
    (dict(harvest=1), "harvest.per_tree = 0"),
    (dict(reuse=True), "search.reuse off"),
])
def test_impossible_settings_are_one_line_errors(change, message):
    config, search_c = capped_config(), search_config()
    if "harvest" in change:
        config.harvest.per_tree = change.pop("harvest")
    if "reuse" in change:
        search_c.reuse = change.pop("reuse")
    config.playout_cap.update(change)
    apply_fn, variables = tiny_net(GAME.size)
    with pytest.raises(ValueError, match=re.escape(message)) as error:
        selfplay.play_games(config, GAME, apply_fn, variables, jax.random.key(0), NEVER, search_config=search_c)
    assert "\n" not in str(error.value)


def test_a_training_iteration_learns_from_the_full_searches_only():
    config = tiny_test.get_config()
    config.selfplay.num_games = 8
    config.selfplay.playout_cap.update(every=2, fast_simulations=2)
    config.train.update(batch_size=16, steps_per_iteration=1)
    program = make_train(config, train.make_mesh(1))
    state = program.init_state(jax.random.PRNGKey(0))
    state, metrics = program.iteration_fn(0, state)(state, jax.random.PRNGKey(1))
    moves, positions = float(metrics["selfplay/moves"]), float(metrics["positions"])
    assert positions == float(metrics["selfplay/positions"]) and 0.3 * moves < positions < 0.7 * moves
    assert np.isfinite(float(metrics["loss"]))
