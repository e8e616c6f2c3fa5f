"""The network inside the search: masked priors, values, and the game as an mctx ``recurrent_fn``."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import mctx

from othello_jax.game import Othello, State
from othello_jax.game.fusion import step_materialized
from othello_jax.game.symmetry import NUM_SYMMETRIES, inverse, transform_grid, transform_policy
from othello_jax.search import keys

ApplyFn = Callable[[dict, jax.Array], tuple[jax.Array, jax.Array]]


def mask_logits(logits: jax.Array, legal: jax.Array) -> jax.Array:
    """Logits with illegal actions set to the most negative finite value (no NaN if none legal).

    Not shifted by the maximum: every consumer (softmax, mctx) is shift-invariant, and on CPU
    the extra reduction fused into the policy head's matmul made it several times slower.
    """
    return jnp.where(legal, logits, jnp.finfo(logits.dtype).min)


def masked(logits: jax.Array) -> jax.Array:
    """Where :func:`mask_logits` (or :func:`exact_endings`) masked the logits: actions not to search."""
    return logits == jnp.finfo(logits.dtype).min


def _pick(stacked: jax.Array, index: jax.Array) -> jax.Array:
    """``stacked[index[b], b]`` for a leading axis of alternatives, without a gather."""
    one_hot = index[None, :] == jnp.arange(stacked.shape[0])[:, None]
    one_hot = one_hot.reshape(one_hot.shape + (1,) * (stacked.ndim - 2))
    return jnp.sum(jnp.where(one_hot, stacked, 0), axis=0).astype(stacked.dtype)


def exact_endings(logits: jax.Array, value: jax.Array, states: State, game: Othello, legal: jax.Array,
                  value_margin: float = 0.0) -> tuple[jax.Array, jax.Array]:
    """Masked logits ``[B, A]`` and value ``[B]`` corrected by the moves that end the game now.

    The mover can choose a move that ends the game, so the value is at least the best such
    result, and exactly it when every legal move ends the game. A move that wins on the spot
    keeps the only unmasked logits (with any other winning one): no effort goes elsewhere (at
    the root the search treats the masked moves as invalid), and the search plays it. Without
    this, a wipeout reply with a tiny prior is never visited and the network's blind spot
    decides the game. Finished games and passes are unchanged; the cost is one ply of move
    generation over every square (no network call). Results are valued on the network's scale
    (``Othello.result_value`` with ``value_margin``).
    """
    ends, difference = game.ending_moves(states)
    result = game.result_value(difference, value_margin).astype(value.dtype)
    best = jnp.max(jnp.where(ends, result, -2), axis=-1)  # -2: no move ends the game
    only_endings = jnp.all(ends | ~legal, axis=-1) & jnp.any(ends, axis=-1)
    value = jnp.where(only_endings, best, jnp.maximum(value, best))
    wins = ends & (difference > 0)
    logits = jnp.where(jnp.any(wins, axis=-1, keepdims=True) & ~wins, jnp.finfo(logits.dtype).min, logits)
    return logits, value


def evaluate(apply_fn: ApplyFn, variables: dict, states: State, game: Othello,
             key: jax.Array | None = None, endings: bool = True,
             value_margin: float = 0.0) -> tuple[jax.Array, jax.Array]:
    """Masked prior logits ``[B, A]`` and value ``[B]`` of a batch of states (mover's view).

    With a ``key``, each position is shown to the network under a random dihedral symmetry and
    the policy is mapped back, which averages out orientation biases of the network. With
    ``endings``, moves that end the game are valued exactly (:func:`exact_endings`, on the scale
    of a value head trained with ``value_margin``).
    """
    obs = game.observation(states)
    # a WDL value head already reports value = p_win - p_loss; extra outputs (if any) are ignored
    if key is None:
        logits, value = apply_fn(variables, obs)[:2]
    else:
        k = keys.draw(lambda kk, s: jax.random.randint(kk, s, 0, NUM_SYMMETRIES), key, obs.shape[:1])
        views = jnp.stack([transform_grid(obs, j, axes=(-3, -2)) for j in range(NUM_SYMMETRIES)])
        logits, value = apply_fn(variables, _pick(views, k))[:2]
        back = jnp.stack([transform_policy(logits, inverse(j), game.size) for j in range(NUM_SYMMETRIES)])
        logits = _pick(back, k)
    legal = game.legal_moves(states)
    logits, value = mask_logits(logits.astype(jnp.float32), legal), value.astype(jnp.float32)
    return exact_endings(logits, value, states, game, legal, value_margin) if endings else (logits, value)


def make_recurrent_fn(apply_fn: ApplyFn, game: Othello, symmetry: bool, endings: bool = True,
                      value_margin: float = 0.0) -> mctx.RecurrentFn:
    """mctx ``recurrent_fn`` stepping the real game; ``params`` are the network variables.
    ``symmetry``, ``endings`` and ``value_margin`` as in :func:`evaluate`: a finished game's
    reward is its result on the value head's scale (``Othello.result_value``)."""

    def recurrent_fn(variables, key, action, state: State):
        nxt = step_materialized(game, state, action)
        ended_now = nxt.terminal & ~state.terminal
        _, difference = game.outcome(nxt)  # for the side to move in nxt; the mover of `action` gets minus it
        result = game.result_value(difference, value_margin)
        logits, value = evaluate(apply_fn, variables, nxt, game, key if symmetry else None, endings, value_margin)
        output = mctx.RecurrentFnOutput(
            reward=jnp.where(ended_now, -result, 0).astype(jnp.float32),
            discount=jnp.where(nxt.terminal, 0.0, -1.0).astype(jnp.float32),
            prior_logits=logits,
            value=jnp.where(nxt.terminal, 0.0, value),
        )
        return output, nxt

    return recurrent_fn
