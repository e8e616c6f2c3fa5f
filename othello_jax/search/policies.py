"""Gumbel MuZero and MuZero (PUCT) policies on the lockstep search, equal to mctx's public policies.

Each mirrors its mctx counterpart (``mctx.gumbel_muzero_policy``, ``mctx.muzero_policy``): the
same key splits, root logits, selection functions (mctx's public ones) and outputs, so with
equal arguments they build identical trees and return the same action weights (tested). The
small helpers mctx keeps private (masking, sequential halving's score) are written here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import mctx
import numpy as np

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


def considered_visits(max_num_considered_actions: int, num_simulations: int, width: int | None = None) -> np.ndarray:
    """Sequential halving's schedule at the root: int32[max_num_considered_actions + 1, width],
    row ``m`` the visit count that simulation ``i`` goes to when ``m`` actions are considered;
    the first ``num_simulations`` columns are the numbers ``mctx.gumbel_muzero_root_action_selection``
    uses for that budget.

    The budget is split into ``ceil(log2 m)`` phases; each visits the considered actions in turn
    ``budget / (phases * considered)`` times (at least once), then halves them (to no fewer than
    two). Past the budget (``width`` > ``num_simulations``, default equal) the phase under way is
    completed and the last two actions keep being visited in turn, so a search that is given
    more time than planned goes on sensibly. Computed on the host, so a chunked search can take
    it as an argument (:func:`table_root_selection`).
    """
    width = num_simulations if width is None else width
    table = np.zeros((max_num_considered_actions + 1, width), np.int32)
    for considered in range(max_num_considered_actions + 1):
        if considered <= 1:
            table[considered] = np.arange(width)
            continue
        phases = math.ceil(math.log2(considered))
        sequence: list[int] = []
        visits, now = 0, considered
        while len(sequence) < width:
            rounds = max(1, int(num_simulations / (phases * now))) if len(sequence) < num_simulations else 1
            for _ in range(rounds):  # every considered action has ``visits`` visits, then one more
                sequence.extend([visits] * now)
                visits += 1
            now = max(2, now // 2)
        table[considered] = sequence[:width]
    return table


def table_root_selection(table: jax.Array, qtransform=mctx.qtransform_completed_by_mix_value) -> Callable:
    """``mctx.gumbel_muzero_root_action_selection`` with its schedule given as data: ``table``
    (:func:`considered_visits`, padded to any width), so one compiled chunk of a search serves
    every planned budget. Where no considered action has the scheduled visit count (a schedule
    changed mid-search), the least visited of the best-scored actions is taken instead."""

    def select(rng_key: jax.Array, tree: mctx.Tree, node_index: jax.Array) -> jax.Array:
        del rng_key
        visit_counts = tree.children_visits[node_index]
        prior_logits = tree.children_prior_logits[node_index]
        completed_q = qtransform(tree, node_index)
        num_valid = jnp.sum(1 - tree.root_invalid_actions, axis=-1).astype(jnp.int32)
        num_considered = jnp.minimum(table.shape[0] - 1, num_valid)
        index = jnp.minimum(jnp.sum(visit_counts, -1), table.shape[1] - 1)
        gumbel = tree.extra_data.root_gumbel
        score = score_considered(table[num_considered, index], gumbel, prior_logits, completed_q, visit_counts)
        valid = tree.root_invalid_actions == 0
        fewest = jnp.min(jnp.where(valid, visit_counts, jnp.iinfo(jnp.int32).max))
        fallback = score_considered(fewest, gumbel, prior_logits, completed_q, visit_counts)
        score = jnp.where(jnp.any(valid & jnp.isfinite(score)), score, fallback)
        return masked_argmax(score, tree.root_invalid_actions)

    return select


def gumbel_root(root: mctx.RootFnOutput, rng_key: jax.Array, invalid_actions: jax.Array | None,
                gumbel_scale: float) -> tuple[mctx.RootFnOutput, jax.Array, jax.Array]:
    """Gumbel MuZero's root before its search: ``(root with masked logits, the search's key, the
    root's Gumbel noise)``, with mctx's key split."""
    root = root.replace(prior_logits=mask_invalid(root.prior_logits, invalid_actions))
    rng_key, gumbel_key = keys.split(rng_key)
    logits = root.prior_logits
    draw_gumbel = lambda k, shape: jax.random.gumbel(k, shape=shape, dtype=logits.dtype)
    return root, rng_key, gumbel_scale * keys.draw(draw_gumbel, gumbel_key, logits.shape)


def gumbel_outcome(tree: mctx.Tree, logits: jax.Array, gumbel: jax.Array, invalid_actions: jax.Array | None,
                   qtransform=mctx.qtransform_completed_by_mix_value) -> mctx.PolicyOutput:
    """Gumbel MuZero's answer from its tree (``logits``: the root's masked logits): the best of
    the most visited actions, and the improved policy ``softmax(logits + completed q)``. Valid
    after any number of simulations (the search can stop early)."""
    visits = tree.summary().visit_counts
    completed_q = jax.vmap(qtransform, in_axes=(0, None))(tree, mctx.Tree.ROOT_INDEX)
    score = score_considered(jnp.max(visits, axis=-1, keepdims=True), gumbel, logits, completed_q, visits)
    weights = jax.nn.softmax(mask_invalid(logits + completed_q, invalid_actions))
    return mctx.PolicyOutput(action=masked_argmax(score, invalid_actions), action_weights=weights, search_tree=tree)


def gumbel_muzero_policy(params: Any, rng_key: jax.Array, root: mctx.RootFnOutput,
                         recurrent_fn: mctx.RecurrentFn, num_simulations: int,
                         invalid_actions: jax.Array | None = None, max_depth: int | None = None, *,
                         qtransform=mctx.qtransform_completed_by_mix_value, max_num_considered_actions: int = 16,
                         gumbel_scale: float = 1.0, updates: str = "scatter",
                         compact: bool = True) -> mctx.PolicyOutput:
    """Gumbel MuZero: sequential halving with Gumbel noise at the root, the deterministic
    interior selection below; action = the best considered action, weights = the improved
    policy ``softmax(logits + completed q)``."""
    root, rng_key, gumbel = gumbel_root(root, rng_key, invalid_actions, gumbel_scale)
    tree = search(
        params, rng_key, root, recurrent_fn,
        root_select=functools.partial(mctx.gumbel_muzero_root_action_selection, num_simulations=num_simulations,
                                      max_num_considered_actions=max_num_considered_actions, qtransform=qtransform),
        interior_select=functools.partial(mctx.gumbel_muzero_interior_action_selection, qtransform=qtransform),
        num_simulations=num_simulations, max_depth=max_depth, invalid_actions=invalid_actions,
        extra_data=mctx.GumbelMuZeroExtraData(root_gumbel=gumbel), updates=updates, compact=compact,
    )
    return gumbel_outcome(tree, root.prior_logits, gumbel, invalid_actions, qtransform)


def muzero_root(root: mctx.RootFnOutput, rng_key: jax.Array,
                invalid_actions: jax.Array | None) -> tuple[mctx.RootFnOutput, jax.Array]:
    """MuZero's root before its search: ``(root with log-softmax, masked logits, the search's
    key)``, with mctx's key split."""
    _, _, search_key = keys.split(rng_key, 3)  # mctx's split: (action, noise, search)
    probs = jax.nn.softmax(root.prior_logits)
    logits = jnp.log(jnp.maximum(probs, jnp.finfo(probs.dtype).tiny))
    return root.replace(prior_logits=mask_invalid(logits, invalid_actions)), search_key


def muzero_outcome(tree: mctx.Tree, invalid_actions: jax.Array | None) -> mctx.PolicyOutput:
    """MuZero's answer from its tree: weights = the root visit distribution, action = the most
    visited valid action (lowest index on ties)."""
    weights = tree.summary().visit_probs
    return mctx.PolicyOutput(action=masked_argmax(weights, invalid_actions), action_weights=weights, search_tree=tree)


def muzero_policy(params: Any, rng_key: jax.Array, root: mctx.RootFnOutput, recurrent_fn: mctx.RecurrentFn,
                  num_simulations: int, invalid_actions: jax.Array | None = None, max_depth: int | None = None, *,
                  qtransform=mctx.qtransform_by_parent_and_siblings, pb_c_init: float = 1.25,
                  pb_c_base: float = 19652.0, updates: str = "scatter", compact: bool = True) -> mctx.PolicyOutput:
    """MuZero/AlphaZero PUCT without root noise (callers add their own to ``root.prior_logits``);
    weights = the root visit distribution, action = the most visited action (lowest index on ties).

    Equals ``mctx.muzero_policy(..., dirichlet_fraction=0.0)`` in tree and weights; mctx samples
    its action instead (at temperature 1), which callers here do not use.
    """
    root, search_key = muzero_root(root, rng_key, invalid_actions)
    select = functools.partial(mctx.muzero_action_selection, pb_c_init=pb_c_init, pb_c_base=pb_c_base,
                               qtransform=qtransform)
    tree = search(
        params, search_key, root, recurrent_fn,
        root_select=functools.partial(select, depth=0), interior_select=select,
        num_simulations=num_simulations, max_depth=max_depth, invalid_actions=invalid_actions, updates=updates,
        compact=compact,
    )
    return muzero_outcome(tree, invalid_actions)
