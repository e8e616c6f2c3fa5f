"""The AlphaZero network: presets, output shapes and ranges, batch norm modes, bfloat16 switch."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from othello_jax.game import Othello
from othello_jax.model import PRESETS, NetworkConfig, init_variables, make_network


def apply(net, variables, obs, **kwargs):
    """``net.apply`` compiled (eager flax dispatches op by op, which is slow on CPU)."""
    return jax.jit(lambda v, o: net.apply(v, o, **kwargs))(variables, obs)


def observations(size: int, count: int) -> jax.Array:
    """Observations of random positions (a few random plies from the start)."""
    game = Othello(size)

    @jax.jit
    def play(key):
        def ply(state, k):
            logits = jnp.where(game.legal_moves(state), 0.0, -1e9)
            return game.step(state, jax.random.categorical(k, logits).astype(jnp.int32)), None

        state = jax.tree.map(lambda x: jnp.broadcast_to(x, (count,) + x.shape), game.init())
        state, _ = jax.lax.scan(ply, state, jax.random.split(key, 6))
        return game.observation(state)

    return play(jax.random.key(size))


@pytest.mark.parametrize("size", [4, 6, 8])
def test_shapes_and_ranges_for_every_board_size(size):
    net = make_network(size, NetworkConfig.preset("tiny"))
    variables = init_variables(net, jax.random.key(0), size)
    assert set(variables) == {"params", "batch_stats"}
    logits, value = apply(net, variables, observations(size, 5), train=False)
    assert logits.shape == (5, size * size + 1) and value.shape == (5,)
    assert logits.dtype == jnp.float32 and value.dtype == jnp.float32
    assert (np.abs(np.asarray(value)) < 1).all()
    # extra leading axes broadcast
    logits2, value2 = apply(net, variables, observations(size, 6).reshape(2, 3, size, size, 2), train=False)
    assert logits2.shape == (2, 3, size * size + 1) and value2.shape == (2, 3)


def test_presets_have_the_documented_depth_and_width():
    for name, (blocks, channels) in PRESETS.items():
        config = NetworkConfig.preset(name)
        assert (config.blocks, config.channels) == (blocks, channels)
    assert PRESETS["small"] == (6, 64) and PRESETS["standard"] == (6, 128) and PRESETS["large"] == (10, 128)
    net = make_network(8, NetworkConfig.preset("small"))
    params = jax.eval_shape(lambda: init_variables(net, jax.random.key(0), 8))["params"]
    blocks = [k for k in params if k.startswith("ResidualBlock")]
    assert len(blocks) == 6
    assert params["Conv_0"]["kernel"].shape == (3, 3, 2, 64)
    with pytest.raises(ValueError, match="unknown network preset 'huge'"):
        NetworkConfig.preset("huge")


def test_batch_norm_statistics_update_only_in_training():
    net = make_network(6, NetworkConfig.preset("tiny"))
    variables = init_variables(net, jax.random.key(0), 6)
    obs = observations(6, 16)
    (_, _), updates = apply(net, variables, obs, train=True, mutable=["batch_stats"])
    before = jax.tree.leaves(variables["batch_stats"])
    after = jax.tree.leaves(updates["batch_stats"])
    assert any(not np.allclose(np.asarray(a), np.asarray(b)) for a, b in zip(before, after, strict=False))
    # inference is deterministic and independent of the rest of the batch
    full, _ = apply(net, variables, obs, train=False)
    part, _ = apply(net, variables, obs[:3], train=False)
    np.testing.assert_allclose(np.asarray(full)[:3], np.asarray(part), rtol=1e-5, atol=1e-5)


def test_bfloat16_switch_keeps_float32_outputs_close():
    f32 = make_network(8, NetworkConfig.preset("tiny"))
    bf16 = make_network(8, NetworkConfig.preset("tiny", dtype="bfloat16"))
    variables = init_variables(f32, jax.random.key(1), 8)
    obs = observations(8, 8)
    logits32, value32 = apply(f32, variables, obs, train=False)
    logits16, value16 = apply(bf16, variables, obs, train=False)  # same parameters, bf16 compute
    assert logits16.dtype == jnp.float32 and value16.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(logits16), np.asarray(logits32), atol=0.1)
    np.testing.assert_allclose(np.asarray(value16), np.asarray(value32), atol=0.05)
    assert not np.array_equal(np.asarray(logits16), np.asarray(logits32))  # really computed in bf16


def test_parameters_are_a_plain_pytree_usable_under_jit_and_grad():
    net = make_network(4, NetworkConfig.preset("tiny"))
    variables = init_variables(net, jax.random.key(0), 4)
    obs = observations(4, 4)

    @jax.jit
    def loss(params):
        logits, value = net.apply({"params": params, "batch_stats": variables["batch_stats"]}, obs, train=False)
        return jnp.mean(value ** 2) + jnp.mean(logits ** 2)

    grads = jax.grad(loss)(variables["params"])
    assert jax.tree.structure(grads) == jax.tree.structure(variables["params"])
    assert all(np.isfinite(np.asarray(g)).all() for g in jax.tree.leaves(grads))


def test_the_heads_have_alphazeros_2_and_1_channels_so_saved_networks_keep_their_parameters():
    """The heads' 1x1 convolutions: 2 policy and 1 value channels (the retired
    ``policy_channels``/``value_channels`` at their defaults), the dense layers after them sized
    from those; a meta naming the retired fields at their off values builds the same network."""
    from othello_jax import checkpoint

    config = NetworkConfig.preset("tiny")
    p = init_variables(make_network(6, config), jax.random.key(0), 6)["params"]
    # flax numbers the head convolutions after the stem's and the tower's: policy, then value
    policy_conv, value_conv = sorted(k for k in p if k.startswith("Conv_"))[-2:]
    assert p[policy_conv]["kernel"].shape == (1, 1, 16, 2) and p[value_conv]["kernel"].shape == (1, 1, 16, 1)
    assert p["Dense_0"]["kernel"].shape == (36 * 2, 37) and p["Dense_1"]["kernel"].shape == (36, config.value_hidden)
    assert p["Conv_0"]["kernel"].shape == (3, 3, 2, 16)  # the disc planes only: no move planes
    old = dict(checkpoint.network_meta(config), move_planes=False, policy_channels=2, value_channels=1)
    assert NetworkConfig.from_meta(old) == config
    assert checkpoint.format_version(old) == checkpoint.FORMAT_VERSION


def test_the_conv_tower_is_liskowskis_convn_with_batch_norm_and_a_dense_policy_head():
    """``tower="conv"``: Conv8+BN's layer widths 64-64-128-128-256-256-256-256 (scaled by
    ``channels``/64), each a 3x3 convolution and batch norm, then fc128 -> the policy; the first
    layers of Conv4/Conv6; outputs shaped as the ResNet's; impossible depths and options refused."""
    from othello_jax import checkpoint

    def kernels(config, size=8):
        p = jax.eval_shape(lambda: init_variables(make_network(size, config), jax.random.key(0), size))["params"]
        return p, [p[f"Conv_{i}"]["kernel"].shape for i in range(config.blocks)]

    p, shapes = kernels(NetworkConfig(tower="conv", blocks=8, channels=64))
    widths = [s[-1] for s in shapes]
    assert widths == [64, 64, 128, 128, 256, 256, 256, 256]
    assert all(s[:2] == (3, 3) for s in shapes) and shapes[0][2] == 2
    assert not any(k.startswith("ResidualBlock") for k in p)
    assert sum(k.startswith("BatchNorm") for k in p) == 8 + 1  # every layer, and the value head's
    assert p["Dense_0"]["kernel"].shape == (64 * 256, 128) and p["Dense_1"]["kernel"].shape == (128, 65)
    assert [s[-1] for s in kernels(NetworkConfig(tower="conv", blocks=4, channels=32))[1]] == [32, 32, 64, 64]

    config = NetworkConfig(tower="conv", blocks=6, channels=8)
    net = make_network(6, config)
    variables = init_variables(net, jax.random.key(1), 6)
    logits, value = apply(net, variables, observations(6, 5), train=False)
    assert logits.shape == (5, 37) and value.shape == (5,) and (np.abs(np.asarray(value)) < 1).all()
    assert NetworkConfig.from_meta(checkpoint.network_meta(config)) == config
    assert checkpoint.format_version(config) == checkpoint.AUX_FORMAT_VERSION  # older code cannot build it
    for bad, match in ((dict(blocks=9), "1 to 8 layers"), (dict(blocks=6, global_pool=True), "needs residual"),
                       (dict(tower="dense"), "unknown network.tower")):
        with pytest.raises(ValueError, match=match):
            NetworkConfig(**{"tower": "conv", **bad})
