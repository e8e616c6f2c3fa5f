"""Synthetic training rows for replay/train tests: real positions from random play, with targets.

The policy target puts all mass on the first legal action and the value target is the sign of
the disc difference, so a network can learn both (loss must fall) without any search.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from othello_jax.game import Othello
from othello_jax.training.samples import Samples


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
    """The sections of a run config that ``othello_jax.training.iteration`` reads, sized for fast CPU tests."""
    from ml_collections import ConfigDict

    return ConfigDict(dict(
        network=dict(preset="tiny", blocks=0, channels=0, value_hidden=0, dtype=""),
        replay=dict(lanes=0, capacity=2000, window_start=2, window_max=3, window_grow_every=2,
                    augment=False, average_duplicates=False),
        train=dict(dict(batch_size=64, steps_per_iteration=10), **train_overrides),
        loss=dict(value_weight=1.0, l2=1e-4, entropy_bonus=0.0),
        optimizer=dict(name="adamw", learning_rate=3e-3, schedule="constant", weight_decay=0.0),
        gating=dict(enabled=False),
    ))


def synthetic_selfplay(game: Othello, games: int, plies: int):
    """A self-play stand-in: random-play positions with learnable targets; counts calls in its state."""
    def play(variables, key, resign):
        del variables
        return learnable_samples(game, key, games, plies), {"games": jnp.float32(games)}, resign + 1

    return play
