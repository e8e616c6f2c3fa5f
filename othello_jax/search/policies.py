"""Gumbel MuZero and MuZero (PUCT) policies on the lockstep search, equal to mctx's public policies.

Each mirrors its mctx counterpart (``mctx.gumbel_muzero_policy``, ``mctx.muzero_policy``): the
same key splits, root logits, selection functions (mctx's public ones) and outputs, so with
equal arguments they build identical trees and return the same action weights (tested). The
small helpers mctx keeps private (masking, sequential halving's score) are written here.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import mctx

from othello_jax.search import keys
from othello_jax.search.lockstep import search


def mask_invalid(logits: jax.Array, invalid_actions: jax.Array | None) -> jax.Array:
    """Logits shifted to a maximum of 0, invalid actions at the most negative finite value."""
    if invalid_actions is None:
        return logits
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    return jnp.where(invalid_actions, jnp.finfo(logits.dtype).min, logits)


def masked_argmax(score: jax.Array, invalid_actions: jax.Array | None) -> jax.Array:
    """The valid action with the highest ``score`` (int32)."""
    if invalid_actions is not None:
        score = jnp.where(invalid_actions, -jnp.inf, score)
    return jnp.argmax(score, axis=-1).astype(jnp.int32)


def score_considered(considered_visit: jax.Array, gumbel: jax.Array, logits: jax.Array,
                     completed_q: jax.Array, visit_counts: jax.Array) -> jax.Array:
    """Sequential halving's score: ``gumbel + logits + q`` for actions with the considered visit
    count, ``-inf`` for the others; clipped below at -1e9 so a lone candidate stays selectable."""
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    penalty = jnp.where(visit_counts == considered_visit, 0.0, -jnp.inf)
    return jnp.maximum(-1e9, gumbel + logits + completed_q) + penalty


def gumbel_muzero_policy(params: Any, rng_key: jax.Array, root: mctx.RootFnOutput,
                         recurrent_fn: mctx.RecurrentFn, num_simulations: int,
                         invalid_actions: jax.Array | None = None, max_depth: int | None = None, *,
                         qtransform=mctx.qtransform_completed_by_mix_value, max_num_considered_actions: int = 16,
                         gumbel_scale: float = 1.0, updates: str = "scatter",
                         compact: bool = True) -> mctx.PolicyOutput:
    """Gumbel MuZero: sequential halving with Gumbel noise at the root, the deterministic
    interior selection below; action = the best considered action, weights = the improved
    policy ``softmax(logits + completed q)``."""
    root = root.replace(prior_logits=mask_invalid(root.prior_logits, invalid_actions))
    rng_key, gumbel_key = keys.split(rng_key)
    logits = root.prior_logits
    draw_gumbel = lambda k, shape: jax.random.gumbel(k, shape=shape, dtype=logits.dtype)
    gumbel = gumbel_scale * keys.draw(draw_gumbel, gumbel_key, logits.shape)
    tree = search(
        params, rng_key, root, recurrent_fn,
        root_select=functools.partial(mctx.gumbel_muzero_root_action_selection, num_simulations=num_simulations,
                                      max_num_considered_actions=max_num_considered_actions, qtransform=qtransform),
        interior_select=functools.partial(mctx.gumbel_muzero_interior_action_selection, qtransform=qtransform),
        num_simulations=num_simulations, max_depth=max_depth, invalid_actions=invalid_actions,
        extra_data=mctx.GumbelMuZeroExtraData(root_gumbel=gumbel), updates=updates, compact=compact,
    )
    visits = tree.summary().visit_counts
    completed_q = jax.vmap(qtransform, in_axes=(0, None))(tree, mctx.Tree.ROOT_INDEX)
    score = score_considered(jnp.max(visits, axis=-1, keepdims=True), gumbel, logits, completed_q, visits)
    weights = jax.nn.softmax(mask_invalid(logits + completed_q, invalid_actions))
    return mctx.PolicyOutput(action=masked_argmax(score, invalid_actions), action_weights=weights, search_tree=tree)


def muzero_policy(params: Any, rng_key: jax.Array, root: mctx.RootFnOutput, recurrent_fn: mctx.RecurrentFn,
                  num_simulations: int, invalid_actions: jax.Array | None = None, max_depth: int | None = None, *,
                  qtransform=mctx.qtransform_by_parent_and_siblings, pb_c_init: float = 1.25,
                  pb_c_base: float = 19652.0, updates: str = "scatter", compact: bool = True) -> mctx.PolicyOutput:
    """MuZero/AlphaZero PUCT without root noise (callers add their own to ``root.prior_logits``);
    weights = the root visit distribution, action = the most visited action (lowest index on ties).

    Equals ``mctx.muzero_policy(..., dirichlet_fraction=0.0)`` in tree and weights; mctx samples
    its action instead (at temperature 1), which callers here do not use.
    """
    _, _, search_key = keys.split(rng_key, 3)  # mctx's split: (action, noise, search)
    probs = jax.nn.softmax(root.prior_logits)
    logits = jnp.log(jnp.maximum(probs, jnp.finfo(probs.dtype).tiny))
    root = root.replace(prior_logits=mask_invalid(logits, invalid_actions))
    select = functools.partial(mctx.muzero_action_selection, pb_c_init=pb_c_init, pb_c_base=pb_c_base,
                               qtransform=qtransform)
    tree = search(
        params, search_key, root, recurrent_fn,
        root_select=functools.partial(select, depth=0), interior_select=select,
        num_simulations=num_simulations, max_depth=max_depth, invalid_actions=invalid_actions, updates=updates,
        compact=compact,
    )
    weights = tree.summary().visit_probs
    return mctx.PolicyOutput(action=masked_argmax(weights, invalid_actions), action_weights=weights, search_tree=tree)
