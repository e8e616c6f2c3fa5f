"""Optional heads and targets: WDL value, final score and ownership, global pooling (all off by default)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax.traverse_util import flatten_dict
from ml_collections import ConfigDict

from othello_jax import checkpoint, search
from othello_jax.game import Othello, symmetry
from othello_jax.model import GlobalPoolBias, NetworkConfig, init_variables, make_network
from othello_jax.search.network import evaluate
from othello_jax.training.compiled import replay, selfplay
from othello_jax.training.compiled import sgd as sgd_module
from othello_jax.training.compiled.samples import FinalBoard, flatten, ownership_target, score_target
from othello_jax.training.compiled.sgd import make_sgd_step
from tests.game_helpers import ReferenceOthello
from tests.synthetic_samples import learnable_samples, synthetic_config, synthetic_program

GAME4 = Othello(4)
ALL_ON = dict(value_head="wdl", score_head=True, ownership_head=True, global_pool=True)
TINY = dict(blocks=1, channels=8, value_hidden=8)


@pytest.fixture(scope="module")
def games():
    """4x4 self-play games (tiny all-options network, 2 simulations) with final boards recorded."""
    net = make_network(4, NetworkConfig(**TINY, **ALL_ON))
    variables = init_variables(net, jax.random.PRNGKey(0), 4)
    config = selfplay.default_selfplay_config()
    config.num_games = 6
    search_config = search.default_search_config()
    search_config.update(num_simulations=2, max_num_considered_actions=2)
    settings = selfplay.SelfPlaySettings.from_config(config, final_board=True)
    play = functools.partial(selfplay.play_games, settings, search.SearchSettings.from_config(search_config), GAME4,
                             functools.partial(net.apply, train=False))
    keys = jax.random.PRNGKey(1)[None]
    out, _, _ = jax.jit(play)(variables, keys, selfplay.lane_resign_states(settings, 1))
    return jax.device_get(jax.tree.map(lambda x: x[0], out))


def test_final_board_targets_equal_a_plain_python_replay(games):
    n = 4
    actions, mask, state = games.action, games.samples.mask, games.samples.state
    own, score = ownership_target(games.samples.final, n), score_target(games.samples.final, n)
    for g in range(mask.shape[1]):
        ref = ReferenceOthello(n)
        for t in np.flatnonzero(mask[:, g]):
            ref.play(int(actions[t, g]))
        assert ref.game_over()
        for t in np.flatnonzero(mask[:, g]):
            player = 1 if int(state.color[t, g]) == 0 else -1  # black moves as 1 in the reference
            expected = np.array(ref.board, np.float32) * player
            np.testing.assert_array_equal(own[t, g], expected)
            assert score[t, g] == ref.final_diff_for(player) / (n * n)
            assert bool(games.samples.final.valid[t, g])


def test_augmentation_turns_the_final_board_with_the_position(games):
    batch = flatten(games.samples)
    # a row whose final board is its own position: after any symmetry the ownership target
    # must still equal the (augmented) position's own discs
    own_board = batch._replace(final=FinalBoard(batch.state.mover, batch.state.opponent, batch.mask))
    key = jax.random.PRNGKey(7)
    out = replay.augment(own_board, key, 4)
    obs = GAME4.observation(out.state)
    np.testing.assert_array_equal(ownership_target(out.final, 4), obs[..., 0] - obs[..., 1])
    # the real final boards turn by the same symmetry as each row (k drawn as augment draws it)
    out = replay.augment(batch, key, 4)
    k = np.asarray(jax.random.randint(key, batch.mask.shape, 0, symmetry.NUM_SYMMETRIES))
    before, after = np.asarray(ownership_target(batch.final, 4)), np.asarray(ownership_target(out.final, 4))
    assert len(set(k.tolist())) > 4
    for i in range(len(k)):
        np.testing.assert_array_equal(after[i], np.asarray(symmetry.transform_grid(jnp.asarray(before[i]), int(k[i]))))
    np.testing.assert_array_equal(score_target(out.final, 4), score_target(batch.final, 4))
    np.testing.assert_array_equal(out.final.valid, batch.final.valid)


@pytest.mark.optimized  # global pooling's gradient is NaN in XLA's -O0 CPU code (conftest)
def test_each_head_learns_on_a_fixed_batch(games):
    batch = flatten(games.samples)
    net = make_network(4, NetworkConfig(**TINY, **ALL_ON))
    variables = init_variables(net, jax.random.PRNGKey(3), 4)
    loss_config = ConfigDict(dict(value_weight=1.0, l2=0.0, entropy_bonus=0.0, score_weight=1.0, ownership_weight=1.0))
    optimizer = optax.adam(1e-2)
    step = jax.jit(make_sgd_step(net, GAME4, optimizer, loss_config))
    params, stats, opt = variables["params"], variables["batch_stats"], optimizer.init(variables["params"])
    history = []
    for _ in range(40):
        params, stats, opt, metrics = step(params, stats, opt, batch)
        history.append(jax.device_get(metrics))
    for name in ("value_loss", "score_loss", "ownership_loss", "policy_loss"):
        first, last = float(history[0][name]), float(history[-1][name])
        assert last < 0.7 * first, (name, first, last)
    assert float(history[0]["aux_rows"]) == 1.0  # every game ended by the rules


def test_wdl_value_is_p_win_minus_p_loss_also_inside_the_search():
    net = make_network(4, NetworkConfig(**TINY, value_head="wdl"))
    variables = init_variables(net, jax.random.PRNGKey(0), 4)
    states = jax.tree.map(lambda x: x[0], jax.device_get(selfplay_states()))
    obs = GAME4.observation(states)
    logits, value, extras = net.apply(variables, obs, aux=True)
    p = jax.nn.softmax(extras["wdl_logits"], axis=-1)
    np.testing.assert_allclose(value, p[:, 0] - p[:, 2], atol=1e-6)
    assert np.all(np.abs(value) <= 1.0) and np.ptp(np.asarray(value)) > 0
    _, plain = net.apply(variables, obs)
    np.testing.assert_array_equal(plain, value)
    _, searched = evaluate(functools.partial(net.apply, train=False), variables, states, GAME4)
    np.testing.assert_allclose(searched, value, atol=1e-6)


def selfplay_states():
    """Eight different positions (random play from the start, stacked [1, 8])."""
    from tests.synthetic_samples import random_positions

    states = random_positions(GAME4, jax.random.PRNGKey(2), 8, 5)
    return jax.tree.map(lambda x: x[-1:], states)


def test_global_pooling_keeps_shapes_and_its_biases_are_symmetry_invariant():
    x = jax.random.normal(jax.random.PRNGKey(0), (3, 6, 6, 8))
    pool = GlobalPoolBias(8, jnp.float32)
    params = pool.init(jax.random.PRNGKey(1), x)
    bias = pool.apply(params, x)
    assert bias.shape == (3, 1, 1, 8)
    for k in range(symmetry.NUM_SYMMETRIES):
        turned = symmetry.transform_grid(x, k, axes=(-3, -2))
        np.testing.assert_allclose(pool.apply(params, turned), bias, atol=1e-5)
        # x + bias commutes with the board symmetries
        np.testing.assert_allclose(turned + pool.apply(params, turned),
                                   symmetry.transform_grid(x + bias, k, axes=(-3, -2)), atol=1e-5)
    plain, pooled = (make_network(6, NetworkConfig(**TINY, global_pool=on)) for on in (False, True))
    obs = jnp.zeros((2, 6, 6, 2))
    out_plain = plain.apply(init_variables(plain, jax.random.PRNGKey(0), 6), obs)
    out_pooled = pooled.apply(init_variables(pooled, jax.random.PRNGKey(0), 6), obs)
    assert jax.tree.map(jnp.shape, out_plain) == jax.tree.map(jnp.shape, out_pooled) == ((2, 37), (2,))
    assert "global_pool" in init_variables(pooled, jax.random.PRNGKey(0), 6)["params"]["ResidualBlock_0"]


@pytest.mark.optimized  # global pooling's gradient is NaN in XLA's -O0 CPU code (conftest)
def test_a_tiny_run_with_every_option_logs_the_new_terms_and_checkpoints(tmp_path):
    from experiments.configs import tiny_test
    from othello_jax.training.runner import loop

    config = tiny_test.get_config()
    config.iterations = 2
    config.network.update(**ALL_ON)
    config.search.num_simulations = 2
    config.search.max_num_considered_actions = 2
    config.train.steps_per_iteration = 2
    loop.run(config, tmp_path, print_fn=lambda _: None)
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [1, 2]
    for name in ("score_loss", "ownership_loss", "value_mse", "score_abs_error", "aux_rows"):
        assert all(np.isfinite(r[name]) for r in records), name
    assert records[-1]["aux_rows"] > 0.5
    network, variables, size = checkpoint.load_agent_variables(tmp_path)
    assert network == NetworkConfig(blocks=1, channels=16, value_hidden=16, **ALL_ON) and size == 4
    ckpts = checkpoint.Checkpoints(tmp_path, async_save=False)
    assert ckpts.read_meta(ckpts.latest_step())["format_version"] == checkpoint.AUX_FORMAT_VERSION
    ckpts.close()


PLAIN_LOSS_METRICS = {"loss", "value_loss", "policy_loss", "policy_kl", "policy_entropy", "target_entropy",
                      "value_abs_error", "l2"}
OPTIONAL_METRICS = {"value_mse", "aux_rows", "score_loss", "score_abs_error", "ownership_loss"}


def reference_plain_loss(logits, value, params, batch, legal, loss_config) -> dict[str, float]:
    """An independent reference, in float64 numpy, of the loss with every optional head off.

    Written from the definition (value MSE + policy cross-entropy over legal moves + l2 * sum of
    squared kernels - entropy_bonus * policy entropy, masked means), not from ``sgd.loss_fn``.
    """
    logits, value = np.asarray(logits, np.float64), np.asarray(value, np.float64)
    target, z = np.asarray(batch.policy, np.float64), np.asarray(batch.value, np.float64)
    mask, legal = np.asarray(batch.mask, np.float64), np.asarray(legal, bool)

    def mean(x):
        return float(np.sum(x * mask) / max(np.sum(mask), 1.0))

    with np.errstate(invalid="ignore"):  # terminal padding rows have no legal move (masked out below)
        shifted = np.where(legal, logits, -np.inf)
        shifted = shifted - shifted.max(axis=-1, keepdims=True)
        log_p = np.where(legal, shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True)), 0.0)
    cross_entropy = mean(-np.sum(target * log_p, axis=-1))
    entropy = mean(-np.sum(np.exp(log_p) * log_p * legal, axis=-1))
    target_entropy = mean(-np.sum(target * np.log(np.maximum(target, 1e-12)), axis=-1))
    kernels = [np.asarray(x, np.float64) for path, x in flatten_dict(params).items() if path[-1] == "kernel"]
    l2 = float(sum(np.sum(np.square(k)) for k in kernels))
    value_loss = mean(np.square(value - z))
    loss = (loss_config.value_weight * value_loss + cross_entropy + loss_config.l2 * l2
            - loss_config.entropy_bonus * entropy)
    return {"loss": loss, "value_loss": value_loss, "policy_loss": cross_entropy,
            "policy_kl": cross_entropy - target_entropy, "policy_entropy": entropy,
            "target_entropy": target_entropy, "value_abs_error": mean(np.abs(value - z)), "l2": l2}


def test_with_every_option_off_the_loss_is_the_plain_formula():
    """The loss of a plain network is value MSE + cross-entropy + l2 - entropy bonus, nothing more,
    checked against the independent reference above (each weight non-trivial, padding rows included)."""
    game = Othello(6)
    config = synthetic_config()
    config.loss.update(value_weight=0.75, l2=1e-3, entropy_bonus=0.05)
    net = make_network(game.size, NetworkConfig.preset("tiny"))
    variables = init_variables(net, jax.random.key(0), game.size)
    batch = flatten(learnable_samples(game, jax.random.key(1), batch=8, plies=40))
    assert 0 < int(batch.mask.sum()) < batch.mask.size  # some rows are padding
    loss, (_, metrics) = sgd_module.loss_fn(variables["params"], variables["batch_stats"], net, game, batch,
                                            config.loss)
    (logits, value), _ = net.apply(variables, game.observation(batch.state), train=True, mutable=["batch_stats"])
    expected = reference_plain_loss(logits, value, variables["params"], batch, game.legal_moves(batch.state),
                                    config.loss)
    assert set(metrics) == PLAIN_LOSS_METRICS
    for name, want in expected.items():
        np.testing.assert_allclose(float(metrics[name]), want, rtol=1e-5, atol=1e-6, err_msg=name)
    assert float(loss) == float(metrics["loss"])


def test_with_every_option_off_training_adds_nothing():
    """Options off: no final boards in the replay rows, no optional metrics, no head parameters,
    and the checkpoint format stays 1."""
    config = synthetic_config(steps_per_iteration=3)
    config.replay.augment = True
    program = synthetic_program(config, games=8, plies=8)
    state = program.init_state(jax.random.PRNGKey(0))
    step = program.iteration_fn(0, state)
    for i in range(2):
        state, metrics = step(state, jax.random.PRNGKey(10 + i))
        assert not set(metrics) & OPTIONAL_METRICS
        assert all(np.isfinite(np.asarray(v)).all() for v in jax.device_get(metrics).values())
    assert state.buffer.data.final is None  # no new leaves in the replay rows
    names = set(state.params) | set(state.params["ResidualBlock_0"])
    assert not names & {"wdl", "score", "ownership", "global_pool"}
    assert checkpoint.format_version(NetworkConfig()) == checkpoint.FORMAT_VERSION == 1
    # global pooling adds variables to every block: older code could not read it
    assert checkpoint.format_version(NetworkConfig(global_pool=True)) == checkpoint.AUX_FORMAT_VERSION


def test_bad_settings_are_one_line_errors():
    from othello_jax.training.settings.defaults import default_config
    from othello_jax.training.settings.run_settings import check_config

    config = default_config()
    config.network.value_head = "pdf"
    with pytest.raises(ValueError, match="unknown network.value_head 'pdf'"):
        check_config(config)
    config = default_config()
    config.loss.score_weight = -1.0
    with pytest.raises(ValueError, match="loss.score_weight must be >= 0"):
        check_config(config)
    old = {"format_version": 1, "network": {"blocks": 1, "channels": 16, "value_hidden": 16, "dtype": "float32"}}
    wanted = {"format_version": 1, "network": checkpoint.network_meta(NetworkConfig(1, 16, 16, score_head=True))}
    with pytest.raises(checkpoint.CheckpointError, match="format changed"):
        checkpoint.check_compatible(old, wanted, Path("run"))
    # a run written before the new fields existed still matches the plain network
    checkpoint.check_compatible(old, {"format_version": 1,
                                      "network": checkpoint.network_meta(NetworkConfig(1, 16, 16))}, Path("run"))
