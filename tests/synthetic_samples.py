"""Synthetic training rows for replay/train tests: real positions from random play, with targets.

The policy target puts all mass on the first legal action and the value target is the sign of
the disc difference, so a network can learn both (loss must fall) without any search.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from ml_collections import ConfigDict

from othello_jax.game import Othello
from othello_jax.training.compiled.samples import Samples


def to_lanes(samples: Samples, lanes: int) -> Samples:
    """Self-play output with leaves ``[T, B, ...]`` (time, games) -> ``[lanes, B/lanes*T, ...]``.

    Each lane gets a contiguous block of games, so a games axis sharded over devices stays local.
    """
    batch = samples.mask.shape[1]
    if batch % lanes:
        raise ValueError(f"{batch} games cannot be split evenly into {lanes} replay lanes")

    def regroup(x):
        x = jnp.moveaxis(x, 1, 0)  # [B, T, ...]
        return x.reshape((lanes, -1) + x.shape[2:])

    return jax.tree.map(regroup, samples)


def random_positions(game: Othello, key: jax.Array, batch: int, plies: int):
    """States after ``plies`` random legal moves in ``batch`` games, stacked as ``[plies, batch]``."""
    def step(state, k):
        legal = game.legal_moves(state)
        logits = jnp.where(legal, 0.0, -jnp.inf)
        action = jax.random.categorical(k, jnp.where(legal.any(-1, keepdims=True), logits, 0.0))
        return game.step(state, action), state

    start = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), game.init())
    _, states = jax.lax.scan(step, start, jax.random.split(key, plies))
    return states


def learnable_samples(game: Othello, key: jax.Array, batch: int, plies: int) -> Samples:
    """``[plies, batch]`` rows with deterministic, learnable targets; terminal rows are padding."""
    states = random_positions(game, key, batch, plies)
    legal = game.legal_moves(states)
    first = jnp.argmax(legal, axis=-1)
    policy = jax.nn.one_hot(first, game.num_actions, dtype=jnp.float32)
    value = jnp.sign(game.disc_difference(states)).astype(jnp.float32)
    return Samples(state=states, policy=policy, value=value, mask=~states.terminal)


def synthetic_config(**train_overrides) -> ConfigDict:
    """A 6x6 run config with a tiny network and small replay, sized for fast CPU tests."""
    from othello_jax.training.settings.defaults import default_config

    config = default_config()
    config.board_size = 6
    config.network.update(preset="tiny")
    config.replay.update(lanes=0, capacity=2000, window_start=2, window_max=3, window_grow_every=2,
                         augment=False)
    config.train.update(dict(dict(batch_size=64, steps_per_iteration=10), **train_overrides))
    config.loss.update(value_weight=1.0, l2=1e-4, entropy_bonus=0.0)
    config.optimizer.update(name="adamw", learning_rate=3e-3, schedule="constant", weight_decay=0.0)
    config.gating.enabled = False
    return config


def synthetic_program(config: ConfigDict, mesh=None, games: int = 16, plies: int = 12):
    """``make_train``'s program with the synthetic self-play below in every stage (its resign state
    counts the calls)."""
    from othello_jax.training.runner.program import make_train

    program = make_train(config, mesh)
    play = synthetic_selfplay(program.game, games, plies)
    return dataclasses.replace(program, selfplay_fns=(play,) * len(program.stages), resign_init=jnp.int32(0))


def synthetic_selfplay(game: Othello, games: int, plies: int):
    """A self-play stand-in for L lanes (``keys[L]``): random-play positions with learnable targets;
    counts calls in its state."""
    def play(variables, keys, resign):
        del variables
        samples = jax.vmap(lambda key: learnable_samples(game, key, games, plies))(keys)
        return samples, {"games": jnp.full(resign.shape, games, jnp.float32)}, resign + 1

    return play
