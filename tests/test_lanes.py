"""Several replay lanes on one device: played as one search batch, each lane playing its own games."""

from __future__ import annotations

import functools

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest

from experiments.configs import tiny_test
from othello_jax.model import NetworkConfig, init_variables, make_network
from othello_jax.search import SearchSettings
from othello_jax.training.compiled import iteration as train
from othello_jax.training.compiled import selfplay
from othello_jax.training.runner.program import make_selfplay_fn, make_train
from tests.test_selfplay import GAME, main_config, play_one_lane, search_config

LANES, PER_LANE = 4, 8


@functools.cache
def setup(variant="gumbel"):
    net = make_network(GAME.size, NetworkConfig.preset("tiny"))
    apply_fn = functools.partial(net.apply, train=False)
    config = main_config()
    config.num_games = PER_LANE
    config.harvest.per_tree = 1
    return apply_fn, init_variables(net, jax.random.key(0), GAME.size), config, search_config(variant)


def lane_inputs():
    keys = jax.random.split(jax.random.key(3), LANES)
    resign = selfplay.ResignState(jnp.asarray([-2.0, 2.0, -0.9, -0.7], jnp.float32), jnp.zeros(LANES, jnp.float32))
    return keys, resign


def while_predicates(jaxpr, found=None) -> list[tuple[int, ...]]:
    """Shapes of every while loop's predicate: () for a plain loop, (L,) for a loop vmapped over L lanes
    (JAX then runs it until every lane is done, selecting each lane's carry at every iteration)."""
    found = [] if found is None else found
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "while":
            found.append(tuple(eqn.params["cond_jaxpr"].jaxpr.outvars[0].aval.shape))
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            while_predicates(sub, found)
    return found


# the folding does not depend on the search variant: PUCT only with -m "" (slow), to keep CI short
@pytest.mark.parametrize("variant", ["gumbel", pytest.param("puct", marks=pytest.mark.slow)])
def test_folded_lanes_play_each_lane_as_alone(variant):
    apply_fn, variables, config, search_c = setup(variant)
    keys, resign = lane_inputs()
    one = jax.jit(lambda k, r: play_one_lane(config, search_c, apply_fn, variables, k, r))
    folded = jax.jit(lambda k, r: lanes_fn(config, search_c, apply_fn)(variables, k, r))
    out, stats, new_resign = jax.device_get(folded(keys, resign))
    assert out.samples.mask.shape[:3] == (LANES, selfplay.num_plies(config, GAME), PER_LANE)
    for lane in range(LANES):
        alone = jax.device_get(one(keys[lane], jax.tree.map(lambda x, i=lane: x[i], resign)))
        mine = jax.tree.map(lambda x, i=lane: x[i], (out, stats, new_resign))
        # the same games move for move; floats up to the network's batch size
        np.testing.assert_array_equal(mine[0].action, alone[0].action)
        np.testing.assert_array_equal(mine[0].samples.mask, alone[0].samples.mask)
        np.testing.assert_array_equal(mine[0].outcome, alone[0].outcome)
        np.testing.assert_allclose(mine[0].samples.policy, alone[0].samples.policy, rtol=1e-4, atol=1e-6)
        for a, b in zip(jax.tree.leaves(mine[1:]), jax.tree.leaves(alone[1:]), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    # per-lane resign thresholds: lane 0 never resigns, lane 1 resigns at once (unless played out)
    assert float(stats.resign_rate[0]) == 0.0 and float(stats.resign_rate[1]) > 0.0


def lanes_fn(config, search_c, apply_fn):
    """``play_games(variables, keys[L], resign[L])`` with the test's settings."""
    settings = selfplay.SelfPlaySettings.from_config(config)
    return functools.partial(selfplay.play_games, settings, SearchSettings.from_config(search_c), GAME, apply_fn)


def test_no_search_is_vmapped():
    """Lanes are one search batch: the search's loops are traced unbatched; a vmap would batch their predicates."""
    apply_fn, variables, config, search_c = setup()
    keys, resign = lane_inputs()
    play = lanes_fn(config, search_c, apply_fn)
    folded = while_predicates(jax.make_jaxpr(lambda k, r: play(variables, k, r))(keys, resign).jaxpr)
    assert folded and all(shape == () for shape in folded), folded
    # the check can tell: a vmapped search (here one lane each over stacked network variables) has batched predicates
    stacked = jax.tree.map(lambda x: jnp.stack([x] * LANES), variables)
    by_net = lambda v, k, r: play(v, k[None], jax.tree.map(lambda x: x[None], r))
    plain = while_predicates(jax.make_jaxpr(jax.vmap(by_net))(stacked, keys, resign).jaxpr)
    assert plain and all(shape == (LANES,) for shape in plain), plain


def test_more_lanes_than_devices_through_the_iteration():
    config = tiny_test.get_config()
    config.selfplay.num_games = 16
    config.replay.lanes = LANES
    config.train.update(batch_size=32, steps_per_iteration=1)
    mesh = train.make_mesh(1)
    program = make_train(config, mesh)
    state = program.init_state(jax.random.PRNGKey(0))
    play = train.lane_selfplay(make_selfplay_fn(program.stage_configs[0], program.game, program.net, LANES), mesh)
    keys = jax.random.split(jax.random.PRNGKey(5), LANES)
    samples, stats, resign = jax.device_get(jax.jit(play)(state.actor, keys, state.resign))
    assert samples.mask.shape[0] == LANES and stats["games"].tolist() == [4.0] * LANES
    assert resign.threshold.shape == (LANES,)
    # each lane equals that lane's self-play run alone (what one lane per device computes)
    alone_fn = jax.jit(make_selfplay_fn(program.stage_configs[0], program.game, program.net, LANES))
    for lane in range(LANES):
        one = slice(lane, lane + 1)
        alone, alone_stats, _ = jax.device_get(alone_fn(state.actor, keys[one], jax.tree.map(lambda x: x[one],
                                                                                               state.resign)))
        alone = jax.tree.map(lambda x: x[0], alone)
        np.testing.assert_array_equal(samples.mask[lane], alone.mask)
        np.testing.assert_array_equal(samples.state.mover.lo[lane], alone.state.mover.lo)
        np.testing.assert_allclose(samples.policy[lane], alone.policy, rtol=1e-4, atol=1e-6)
    step = program.iteration_fn(0, state)
    state, metrics = step(state, jax.random.PRNGKey(1))
    assert float(metrics["selfplay/games"]) == 16.0 and float(metrics["positions"]) > 0
    assert np.isfinite(float(metrics["loss"]))
