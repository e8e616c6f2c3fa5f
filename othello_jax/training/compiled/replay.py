"""Device-resident replay buffer of training positions: a ring per *lane*, a growing window, augmentation.

The buffer keeps ``lanes`` independent rings of ``capacity`` rows each; every leaf has the shape
``[lanes, capacity, ...]``. Lanes are the unit of data parallelism: shard the lane axis over a
device mesh and every operation here (writing new games, sampling, augmenting) stays local to a
device. Results depend on the number of lanes, never on the number of devices, so a run on one
device and on eight gives the same numbers for the same lane count.

Positions are stored compactly (the ~29-byte ``State`` plus targets); observations are built
when a batch is sampled. The *window* is counted in generations (calls to :func:`add`): sampling
draws uniformly from the rows added by the last ``window`` generations, so a window that grows
over training (e.g. 2 -> 5 generations) is just a traced number.

All functions are pure, jittable and keep static shapes.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from othello_jax.errors import InputError
from othello_jax.game import Othello, symmetry
from othello_jax.training.compiled.samples import FinalBoard, Samples, flatten, no_final_boards


class ReplayBuffer(NamedTuple):
    """Ring buffers, one per lane (every leaf has the lane axis first).

    data: stored rows, leaves ``[lanes, capacity, ...]`` (``data.mask`` marks filled rows).
    cursor: int32[lanes], the next row to write.
    size: int32[lanes], number of filled rows (at most ``capacity``).
    total: int32[lanes], rows ever written (counts past ``capacity``).
    ends: int32[lanes, max_window + 1], ``total`` at the end of each recent generation (ring by generation).
    generations: int32[lanes], number of generations added so far (equal across lanes).
    """

    data: Samples
    cursor: jax.Array
    size: jax.Array
    total: jax.Array
    ends: jax.Array
    generations: jax.Array

    @property
    def lanes(self) -> int:
        return self.cursor.shape[0]

    @property
    def capacity(self) -> int:
        return self.data.mask.shape[1]

    @property
    def max_window(self) -> int:
        return self.ends.shape[1] - 1


def init(game: Othello, lanes: int, capacity: int, max_window: int, final_board: bool = False) -> ReplayBuffer:
    """An empty buffer of ``lanes`` rings with ``capacity`` rows each, remembering ``max_window`` generations.

    ``final_board``: also store each row's final board (``Samples.final``, for score/ownership
    targets); without it the buffer has exactly the plain layout.
    """
    for name, value in (("lanes", lanes), ("capacity", capacity), ("max_window", max_window)):
        if int(value) < 1:
            raise InputError(f"replay buffer {name} must be at least 1, got {value}")
    empty = Samples(
        state=game.init(),
        policy=jnp.zeros((game.num_actions,), jnp.float32),
        value=jnp.zeros((), jnp.float32),
        mask=jnp.zeros((), bool),
        final=no_final_boards(()) if final_board else None,
    )
    data = jax.tree.map(lambda x: jnp.broadcast_to(x, (lanes, capacity) + x.shape), empty)
    zeros = jnp.zeros((lanes,), jnp.int32)
    return ReplayBuffer(data, zeros, zeros, zeros, jnp.zeros((lanes, max_window + 1), jnp.int32), zeros)


def _destinations(cursor: jax.Array, valid: jax.Array, capacity: int) -> jax.Array:
    """int32[n]: the row of one lane's ring each new row goes to (the valid ones packed, in order,
    after ``cursor``); ``capacity`` (out of range: dropped) for padding rows."""
    offset = jnp.cumsum(valid.astype(jnp.int32)) - 1
    return jnp.where(valid, (cursor + offset) % capacity, capacity)


def _add_lane(data: Samples, cursor: jax.Array, new: Samples) -> tuple[Samples, jax.Array]:
    """Write the valid rows of ``new`` (leaves ``[n, ...]``) after ``cursor``; padding rows are dropped."""
    dest = _destinations(cursor, new.mask, data.mask.shape[0])
    data = jax.tree.map(lambda old, rows: old.at[dest].set(rows.astype(old.dtype), mode="drop"), data, new)
    return data, jnp.sum(new.mask.astype(jnp.int32))


def add(buffer: ReplayBuffer, new: Samples) -> ReplayBuffer:
    """Append one generation of rows; ``new`` has leaves ``[lanes, n, ...]`` with ``n <= capacity``.

    Only rows with ``new.mask`` set are stored (packed, in order); the oldest rows are overwritten.
    """
    n = new.mask.shape[1]
    if new.mask.shape[0] != buffer.lanes:
        raise ValueError(f"new rows have {new.mask.shape[0]} lanes, the buffer has {buffer.lanes}")
    if (new.final is None) != (buffer.data.final is None):
        raise ValueError("new rows and the replay buffer disagree on final boards (score/ownership targets): "
                         "build the buffer with final_board=" + str(new.final is not None))
    if n > buffer.capacity:
        raise InputError(f"one generation adds up to {n} rows per lane but the buffer holds only "
                         f"{buffer.capacity}; raise the replay capacity")
    new = new._replace(mask=new.mask.astype(bool))
    data, added = jax.vmap(_add_lane)(buffer.data, buffer.cursor, new)
    total = buffer.total + added
    slot = buffer.generations % buffer.ends.shape[1]
    ends = jax.vmap(lambda e, s, t: e.at[s].set(t))(buffer.ends, slot, total)
    return ReplayBuffer(
        data=data,
        cursor=(buffer.cursor + added) % buffer.capacity,
        size=jnp.minimum(buffer.size + added, buffer.capacity),
        total=total,
        ends=ends,
        generations=buffer.generations + 1,
    )


def window_rows(buffer: ReplayBuffer, window: jax.Array | int) -> jax.Array:
    """int32[lanes]: rows added by the last ``window`` generations that are still stored."""
    window = jnp.clip(jnp.asarray(window, jnp.int32), 1, buffer.max_window)
    before = buffer.generations - window - 1  # the generation whose end starts the window
    slot = before % buffer.ends.shape[1]
    start = jnp.take_along_axis(buffer.ends, slot[:, None], axis=1)[:, 0]
    start = jnp.where(before >= 0, start, 0)
    return jnp.minimum(buffer.total - start, buffer.size)


def sample(buffer: ReplayBuffer, key: jax.Array, batch_per_lane: int, window: jax.Array | int) -> Samples:
    """Draw ``batch_per_lane`` rows per lane uniformly (with replacement) from the window.

    Returns leaves ``[lanes, batch_per_lane, ...]``; ``mask`` is False only for lanes that are empty.
    """
    available = window_rows(buffer, window)
    keys = jax.random.split(key, buffer.lanes)

    def lane(data: Samples, cursor, avail, k):
        age = jax.random.randint(k, (batch_per_lane,), 0, jnp.maximum(avail, 1))
        index = (cursor - 1 - age) % buffer.capacity
        rows = jax.tree.map(lambda x: x[index], data)
        return rows._replace(mask=rows.mask & (avail > 0))

    return jax.vmap(lane)(buffer.data, buffer.cursor, available, keys)


def augment(batch: Samples, key: jax.Array, size: int) -> Samples:
    """Apply an independent random dihedral symmetry to every row (state, policy and final board together)."""
    shape = batch.mask.shape
    k = jax.random.randint(key, shape, 0, symmetry.NUM_SYMMETRIES)
    flat = flatten(batch)
    flat_k = k.reshape(-1)
    state = jax.vmap(lambda s, kk: symmetry.transform_state(s, kk, size))(flat.state, flat_k)
    policy = jax.vmap(lambda p, kk: symmetry.transform_policy(p, kk, size))(flat.policy, flat_k)
    out = flat._replace(state=state, policy=policy)
    if flat.final is not None:
        turn = lambda f, kk: symmetry.transform_bitboards((f.mine, f.theirs), kk, size)
        mine, theirs = jax.vmap(turn)(flat.final, flat_k)
        out = out._replace(final=FinalBoard(mine, theirs, flat.final.valid))
    return jax.tree.map(lambda x: x.reshape(shape + x.shape[1:]), out)


def fill_fraction(buffer: ReplayBuffer) -> jax.Array:
    """Fraction of all rows that hold data."""
    return jnp.sum(buffer.size) / (buffer.lanes * buffer.capacity)
