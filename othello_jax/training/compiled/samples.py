"""The training example format passed from self-play (and expert data) to replay and training."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from othello_jax.game import State
from othello_jax.game import bitboard as bb


class FinalBoard(NamedTuple):
    """The board at the end of a position's game, seen by that position's mover (auxiliary targets).

    mine, theirs: the discs of the position's mover and of the other side when the game ended.
    valid: bool, the game ended by the rules (not resigned, not cut at ``max_plies``), so the
        board is a real final board; score and ownership losses count only these rows.
    """

    mine: bb.Bitboard
    theirs: bb.Bitboard
    valid: jax.Array


class Samples(NamedTuple):
    """A batch of training positions; every leaf shares the leading batch axes.

    state: compact positions (from the mover's view, as everywhere).
    policy: float32[..., N*N+1] target distribution over actions (sums to 1 over legal actions).
    value: float32[...] value target in [-1, 1] for the mover (already chosen: z, q, mix, lambda).
    mask: bool[...] whether the row is a real position (False for padding).
    final: the game's final board for the score/ownership targets, or ``None`` (no leaves:
        runs whose network has no such head store nothing more than before).
    """

    state: State
    policy: jax.Array
    value: jax.Array
    mask: jax.Array
    final: FinalBoard | None = None


def flatten(samples: Samples, leading: int | None = None) -> Samples:
    """Merge the first ``leading`` axes (default: all batch axes, e.g. [T, B]) into one axis."""
    n = samples.mask.ndim if leading is None else leading
    return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[n:]), samples)


def final_boards(end: State, color: jax.Array, valid: jax.Array) -> FinalBoard:
    """Each position's final board from its mover's view.

    end: the games' last states (leaves ``[B]``); color: int32 ``[..., B]`` colour to move at each
    recorded position; valid: bool ``[..., B]`` rows whose game ended by the rules.
    """
    same = color == end.color
    return FinalBoard(mine=bb.where(same, end.mover, end.opponent),
                      theirs=bb.where(same, end.opponent, end.mover), valid=valid)


def no_final_boards(shape: tuple[int, ...]) -> FinalBoard:
    """Empty, invalid final boards (rows with no game of their own, e.g. harvested tree nodes)."""
    zero = jnp.zeros(shape, jnp.uint32)
    return FinalBoard(bb.Bitboard(zero, zero), bb.Bitboard(zero, zero), jnp.zeros(shape, bool))


def ownership_target(final: FinalBoard, size: int) -> jax.Array:
    """float32 ``[..., N, N]``: +1 the mover's disc at the end, -1 the opponent's, 0 empty."""
    return (bb.to_grid(final.mine, size).astype(jnp.float32)
            - bb.to_grid(final.theirs, size).astype(jnp.float32))


def score_target(final: FinalBoard, size: int) -> jax.Array:
    """float32 ``[...]``: final disc difference for the mover over the squares, in [-1, 1].

    Empty squares go to the winner (the game's scoring rule, as in ``Othello.disc_difference``).
    """
    mine, theirs = bb.popcount(final.mine), bb.popcount(final.theirs)
    diff = mine - theirs
    diff = diff + jnp.sign(diff) * (size * size - mine - theirs)
    return diff.astype(jnp.float32) / float(size * size)
