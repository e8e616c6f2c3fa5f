"""perft: count the leaves of the game tree to a fixed depth (a rules test, not a hot path).

Standard convention: a forced pass is a ply (the pass action), and a finished game counts as
one leaf at every deeper depth. The tree is expanded level by level on device, in chunks.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.game import bitboard as bb
from othello_jax.game.rules import Othello, State


@functools.partial(jax.jit, static_argnums=0)
def _children(game: Othello, states: State) -> tuple[State, jax.Array]:
    """All (state, action) successors and a mask of the real ones (a finished game keeps itself)."""
    actions = jnp.arange(game.num_actions, dtype=jnp.int32)
    tiled = jax.tree.map(lambda x: jnp.repeat(x[:, None], game.num_actions, axis=1), states)
    children = game.step(tiled, jnp.broadcast_to(actions, tiled.ply.shape))
    keep = game.legal_moves(states) | (states.terminal[:, None] & (actions == game.pass_action))
    return children, keep


@functools.partial(jax.jit, static_argnums=0)
def _leaf_counts(game: Othello, states: State) -> jax.Array:
    """Number of children of each state: placements, else one (pass or finished game)."""
    return jnp.maximum(bb.popcount(states.legal), 1)


def _blocks(frontier: State, chunk: int):
    """Yield (device block padded to a power-of-two size, number of real rows)."""
    n = frontier.ply.shape[0]
    for start in range(0, n, chunk):
        rows = min(chunk, n - start)
        size = 1 << max(rows - 1, 0).bit_length()
        pad = lambda x: np.concatenate([x[start:start + rows], np.repeat(x[start:start + 1], size - rows, 0)])
        yield jax.tree.map(lambda x: jnp.asarray(pad(x)), frontier), rows


def perft(state: State, depth: int, game: Othello = Othello(8), chunk: int = 1 << 15) -> int:
    """Number of leaf positions ``depth`` plies below ``state``."""
    return perft_levels(state, depth, game, chunk)[-1] if depth > 0 else 1


def perft_levels(state: State, depth: int, game: Othello = Othello(8), chunk: int = 1 << 15) -> list[int]:
    """Leaf counts 1, 2, ..., ``depth`` plies below ``state``, from one walk down the tree."""
    frontier = jax.tree.map(lambda x: np.asarray(x)[None], state)
    counts = []
    for level in range(depth):
        total, parts, deepest = 0, [], level == depth - 1
        for block, rows in _blocks(frontier, chunk):
            total += int(np.asarray(_leaf_counts(game, block), np.int64)[:rows].sum())
            if not deepest:  # the next level's frontier, from the same blocks
                children, keep = _children(game, block)
                keep = np.array(keep)
                keep[rows:] = False
                keep = keep.reshape(-1)
                parts.append(jax.tree.map(lambda x: np.asarray(x).reshape((-1,) + x.shape[2:])[keep], children))
        counts.append(total)
        if not deepest:
            frontier = jax.tree.map(lambda *xs: np.concatenate(xs), *parts)
    return counts
