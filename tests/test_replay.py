"""Replay buffer: ring writes, generation window, sampling, augmentation, duplicate averaging."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from othello_jax.game import Othello, symmetry
from othello_jax.training.compiled import replay
from othello_jax.training.compiled.samples import Samples
from tests.synthetic_samples import learnable_samples, to_lanes

GAME = Othello(6)


def tagged_rows(lanes: int, n: int, tag: float, valid: np.ndarray | None = None) -> Samples:
    """Rows whose value target is ``tag`` (to see which generation a sampled row came from)."""
    state = jax.tree.map(lambda x: jnp.broadcast_to(x, (lanes, n) + x.shape), GAME.init())
    mask = jnp.ones((lanes, n), bool) if valid is None else jnp.asarray(valid)
    return Samples(state, jnp.zeros((lanes, n, GAME.num_actions)), jnp.full((lanes, n), tag), mask)


def test_add_packs_valid_rows_and_wraps_the_ring():
    buf = replay.init(GAME, lanes=2, capacity=5, max_window=3)
    valid = np.array([[True, False, True, True], [False, False, True, False]])
    buf = replay.add(buf, tagged_rows(2, 4, 1.0, valid))
    np.testing.assert_array_equal(buf.size, [3, 1])
    np.testing.assert_array_equal(buf.data.mask[0], [1, 1, 1, 0, 0])
    np.testing.assert_array_equal(buf.data.mask[1], [1, 0, 0, 0, 0])
    buf = replay.add(buf, tagged_rows(2, 4, 2.0))
    # lane 0: 3 old + 4 new in 5 slots -> the two oldest are overwritten, cursor wrapped to 2
    np.testing.assert_array_equal(buf.size, [5, 5])
    np.testing.assert_array_equal(buf.cursor, [2, 0])
    np.testing.assert_array_equal(buf.total, [7, 5])
    np.testing.assert_array_equal(buf.data.value[0], [2, 2, 1, 2, 2])
    np.testing.assert_array_equal(buf.data.value[1], [1, 2, 2, 2, 2])


def test_generation_window_limits_what_is_sampled():
    buf = replay.init(GAME, lanes=1, capacity=100, max_window=2)
    add = jax.jit(replay.add)
    for generation in range(1, 5):
        buf = add(buf, tagged_rows(1, 10, float(generation)))
    key = jax.random.PRNGKey(0)
    sample = jax.jit(replay.sample, static_argnums=2)
    last = sample(buf, key, 400, 1)
    assert set(np.unique(last.value).tolist()) == {4.0}
    two = sample(buf, key, 400, 2)
    assert set(np.unique(two.value).tolist()) == {3.0, 4.0}
    # the window is capped at max_window even if a larger one is asked for
    capped = sample(buf, key, 400, 5)
    assert set(np.unique(capped.value).tolist()) == {3.0, 4.0}
    np.testing.assert_array_equal(replay.window_rows(buf, 2), [20])
    assert bool(last.mask.all())


def test_window_is_capped_by_what_the_ring_still_holds():
    buf = replay.init(GAME, lanes=1, capacity=15, max_window=3)
    for generation in range(1, 4):
        buf = replay.add(buf, tagged_rows(1, 10, float(generation)))
    np.testing.assert_array_equal(replay.window_rows(buf, 3), [15])
    rows = replay.sample(buf, jax.random.PRNGKey(1), 300, 3)
    values, counts = np.unique(np.asarray(rows.value), return_counts=True)
    assert values.tolist() == [2.0, 3.0]  # generation 1 was overwritten entirely
    assert counts[1] > counts[0]  # 10 rows of generation 3 vs 5 of generation 2


def test_empty_buffer_samples_are_masked():
    buf = replay.init(GAME, lanes=2, capacity=8, max_window=2)
    rows = replay.sample(buf, jax.random.PRNGKey(0), 4, 2)
    assert rows.mask.shape == (2, 4) and not bool(rows.mask.any())


def test_add_rejects_generations_larger_than_the_ring():
    buf = replay.init(GAME, lanes=1, capacity=4, max_window=2)
    with pytest.raises(ValueError, match="raise the replay capacity"):
        replay.add(buf, tagged_rows(1, 6, 0.0))
    with pytest.raises(ValueError, match="lanes"):
        replay.add(buf, tagged_rows(2, 2, 0.0))
    with pytest.raises(ValueError, match="capacity must be at least 1"):
        replay.init(GAME, lanes=1, capacity=0, max_window=2)


def test_to_lanes_keeps_each_game_in_one_lane():
    rows = learnable_samples(GAME, jax.random.PRNGKey(0), batch=8, plies=5)  # [T=5, B=8]
    lanes = to_lanes(rows, 4)
    assert lanes.mask.shape == (4, 10)
    # lane 1 holds games 2 and 3, each with its 5 plies in order
    np.testing.assert_array_equal(lanes.state.ply[1], np.concatenate([rows.state.ply[:, 2], rows.state.ply[:, 3]]))
    np.testing.assert_array_equal(lanes.state.mover.lo[1, 5:], rows.state.mover.lo[:, 3])
    with pytest.raises(ValueError, match="split evenly"):
        to_lanes(rows, 3)


def test_augment_transforms_state_and_policy_consistently():
    rows = learnable_samples(GAME, jax.random.PRNGKey(3), batch=64, plies=6)
    rows = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), rows)
    out = jax.jit(replay.augment, static_argnums=2)(rows, jax.random.PRNGKey(4), GAME.size)
    legal = GAME.legal_moves(out.state)
    target = np.asarray(jnp.argmax(out.policy, -1))
    live = np.asarray(rows.mask)
    # the one-hot target still points at a legal move of the transformed position
    assert np.asarray(legal)[np.arange(len(target)), target][live].all()
    # legality is recomputed consistently, disc counts are invariant, values untouched
    rebuilt = GAME.from_discs(out.state.mover, out.state.opponent, out.state.color)
    np.testing.assert_array_equal(rebuilt.legal.lo, out.state.legal.lo)
    np.testing.assert_array_equal(GAME.disc_difference(out.state), GAME.disc_difference(rows.state))
    np.testing.assert_array_equal(out.value, rows.value)
    # several different symmetries were used
    changed = np.asarray((out.state.mover.lo != rows.state.mover.lo) | (out.state.mover.hi != rows.state.mover.hi))
    assert 0.5 < changed[live].mean() < 1.0
    # each augmented row equals one of the 8 symmetric images of its source
    images = [symmetry.transform_state(rows.state, k, GAME.size).mover.lo for k in range(8)]
    assert np.any([np.asarray(im) == np.asarray(out.state.mover.lo) for im in images], axis=0).all()
