"""Control over XLA's operator fusion where it hurts: duplicated move generators.

XLA fuses cheap elementwise producers into every consumer, duplicating them. Bitboard move
generation is hundreds of shifts and masks, so when its result feeds many outputs (every field
of a search stack, every leaf of a State), the duplicated copies multiply compile time and work
per step (about tenfold in the alpha-beta loop). :func:`materialize` stores a value once.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from othello_jax.game.rules import Othello, State


def _through_reduction(x: jax.Array) -> jax.Array:
    pair = jnp.stack([x, jnp.zeros_like(x)])
    if jnp.issubdtype(x.dtype, jnp.signedinteger) or jnp.issubdtype(x.dtype, jnp.floating):
        return jnp.sum(pair, axis=0, dtype=x.dtype)
    return jnp.max(pair, axis=0)  # unsigned and bool: max with zero is the identity


def materialize(tree):
    """Identity on a pytree of arrays that makes XLA compute each leaf once into a buffer.

    A reduction is never fused into its consumers, so routing a value through a trivial one
    (combining it with zeros, which XLA does not simplify away) breaks the duplication.
    """
    return jax.tree.map(_through_reduction, tree)


def step_materialized(game: Othello, state: State, action: jax.Array) -> State:
    """``game.step`` whose result XLA must store before using it.

    Otherwise XLA fuses the whole move generator into each consumer that broadcasts the new
    state over squares (legal mask, observation, prior masking) and recomputes it once per
    square: about 10x slower on CPU. (``optimization_barrier`` does not stop that fusion there.)
    """
    return materialize(game.step(state, action))
