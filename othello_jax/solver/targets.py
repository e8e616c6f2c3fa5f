"""Exact value targets for training: the game-theoretic result of late positions."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from othello_jax.game import Othello, State
from othello_jax.solver.jax_solver import solve_batch_jit

KINDS = ("sign", "disc")


def exact_values(states: State, game: Othello, max_empties: int, kind: str = "sign") -> tuple[jax.Array, jax.Array]:
    """(value, solved) for every position; jittable with ``game``, ``max_empties``, ``kind`` static.

    value is float32 from the mover's view: with ``kind="sign"`` the result +1/0/-1 (win, draw,
    loss; found with a window around 0, much cheaper than the exact margin), with
    ``kind="disc"`` the final disc difference under perfect play (-64..64 on 8x8). solved is
    False (and value 0) for positions with more than ``max_empties`` empty squares, whose
    targets should stay as they were. Finished games count as solved.
    """
    if kind not in KINDS:
        raise ValueError(f"exact value kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if kind == "sign":
        result = solve_batch_jit(states, game, max_empties, -1, 1)
        value = jnp.sign(result.score)
    else:
        result = solve_batch_jit(states, game, max_empties, -64, 64)  # one compiled search for both kinds
        value = result.score
    return jnp.where(result.solved, value, 0).astype(jnp.float32), result.solved
