"""The 8 dihedral symmetries of the square board, for states, grids and policy vectors.

Symmetry ``k`` (0..7) rotates the board ``k % 4`` quarter turns counter-clockwise (as
``jnp.rot90`` on the (row, column) grid) and, for ``k >= 4``, first transposes it. ``k = 0`` is
the identity. The same ``k`` applied to a state and to a policy vector gives consistent
results: ``step(transform_state(s, k), transform_action(a, k)) == transform_state(step(s, a), k)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.game import bitboard as bb
from othello_jax.game.rules import State

NUM_SYMMETRIES = 8


def transform_grid(grid: jax.Array, k: int, axes: tuple[int, int] = (-2, -1)) -> jax.Array:
    """Apply symmetry ``k`` (a Python int) to the two grid axes of an array."""
    if k >= 4:
        grid = jnp.swapaxes(grid, *axes)
    return jnp.rot90(grid, k % 4, axes=axes)


def inverse(k: int) -> int:
    """The symmetry that undoes ``k``."""
    rotation, transposed = k % 4, k >= 4
    if transposed:  # transpose then rotate is an involution (a reflection)
        return k
    return (4 - rotation) % 4


def compose(a: int, b: int) -> int:
    """The symmetry equal to applying ``b`` after ``a`` (found by acting on a probe grid)."""
    probe = np.arange(9).reshape(3, 3)
    target = np.asarray(transform_grid(transform_grid(jnp.asarray(probe), a), b))
    for k in range(NUM_SYMMETRIES):
        if np.array_equal(np.asarray(transform_grid(jnp.asarray(probe), k)), target):
            return k
    raise AssertionError("dihedral group is closed")


def _switch(k: jax.Array, fn, *operands):
    """Apply ``fn(k_static, *operands)`` for a traced symmetry index."""
    branches = [lambda *ops, k=i: fn(k, *ops) for i in range(NUM_SYMMETRIES)]
    return jax.lax.switch(jnp.asarray(k, jnp.int32), branches, *operands)


def transform_bitboard(b: bb.Bitboard, k: int | jax.Array, size: int) -> bb.Bitboard:
    """Apply symmetry ``k`` to a bitboard of a size x size board."""
    if isinstance(k, int):
        return bb.from_grid(transform_grid(bb.to_grid(b, size), k))
    return _switch(k, lambda kk, x: transform_bitboard(x, kk, size), b)


def transform_bitboards(boards: tuple[bb.Bitboard, ...], k: int | jax.Array, size: int) -> tuple[bb.Bitboard, ...]:
    """Apply symmetry ``k`` to several bitboards at once (one switch for a traced ``k``).

    Used for targets that live on the board, e.g. the final board of an ownership target,
    which must turn with the position it belongs to.
    """
    if isinstance(k, int):
        return tuple(transform_bitboard(b, k, size) for b in boards)
    return _switch(k, lambda kk, xs: transform_bitboards(xs, kk, size), tuple(boards))


def transform_state(state: State, k: int | jax.Array, size: int) -> State:
    """Apply symmetry ``k`` to every bitboard of a state (other fields are invariant)."""
    return state._replace(
        mover=transform_bitboard(state.mover, k, size),
        opponent=transform_bitboard(state.opponent, k, size),
        legal=transform_bitboard(state.legal, k, size),
    )


def transform_policy(policy: jax.Array, k: int | jax.Array, size: int) -> jax.Array:
    """Apply symmetry ``k`` to a (..., N*N+1) vector over actions; the pass entry stays put."""
    if not isinstance(k, int):
        return _switch(k, lambda kk, x: transform_policy(x, kk, size), policy)
    squares = policy[..., : size * size].reshape(policy.shape[:-1] + (size, size))
    squares = transform_grid(squares, k).reshape(policy.shape[:-1] + (size * size,))
    return jnp.concatenate([squares, policy[..., size * size :]], axis=-1)


def transform_action(action: jax.Array, k: int | jax.Array, size: int) -> jax.Array:
    """Map an action index through symmetry ``k`` (pass maps to pass)."""
    one_hot = jax.nn.one_hot(action, size * size + 1, dtype=jnp.int32)
    return jnp.argmax(transform_policy(one_hot, k, size), axis=-1).astype(jnp.int32)
