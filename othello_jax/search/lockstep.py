"""Faster tree walk and backup for mctx: all trees in lockstep, O(B) work per level (same trees)."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator

import jax
import jax.numpy as jnp
import mctx
import ml_collections


def batched_backward(tree: mctx.Tree, leaf_index: jax.Array) -> mctx.Tree:
    """mctx's backup (leaf to root) for a whole batch, touching one node per tree per level.

    mctx vmaps a per-tree ``while_loop``; batching it turns every level into a select over the
    whole tree arrays ([B, nodes, actions]) so that finished trees keep their values, which
    makes the backup cost grow with the tree size (it dominated the search at B = 2048). Here
    the loop runs while any tree is unfinished and finished trees rewrite their root's values
    unchanged, so each level costs O(B). The arithmetic is mctx's, and the trees are
    bit-identical (tested).
    """
    rows = jnp.arange(leaf_index.shape[0])
    root = mctx.Tree.ROOT_INDEX

    def level(carry):
        tree, leaf_value, index = carry
        active = index != root
        parent = jnp.where(active, tree.parents[rows, index], root)
        action = jnp.where(active, tree.action_from_parent[rows, index], 0)
        count = tree.node_visits[rows, parent]
        leaf_value = jnp.where(active, tree.children_rewards[rows, parent, action]
                               + tree.children_discounts[rows, parent, action] * leaf_value, leaf_value)
        old_value = tree.node_values[rows, parent]
        parent_value = (old_value * count + leaf_value) / (count + 1.0)
        child_visits = tree.children_visits[rows, parent, action]
        child_value = tree.children_values[rows, parent, action]
        tree = tree.replace(
            node_values=tree.node_values.at[rows, parent].set(jnp.where(active, parent_value, old_value)),
            node_visits=tree.node_visits.at[rows, parent].set(jnp.where(active, count + 1, count)),
            children_values=tree.children_values.at[rows, parent, action].set(
                jnp.where(active, tree.node_values[rows, index], child_value)),
            children_visits=tree.children_visits.at[rows, parent, action].set(
                jnp.where(active, child_visits + 1, child_visits)),
        )
        return tree, leaf_value, jnp.where(active, parent, index)

    leaf_index = jnp.asarray(leaf_index, jnp.int32)
    start = (tree, tree.node_values[rows, leaf_index], leaf_index)
    tree, _, _ = jax.lax.while_loop(lambda carry: jnp.any(carry[2] != root), level, start)
    return tree


def batched_simulate(rng_key: jax.Array, tree: mctx.Tree, action_selection_fn, max_depth: int):
    """mctx's tree walk (root to an unexpanded action) for a whole batch, one level per iteration.

    mctx vmaps a per-tree ``while_loop`` whose depth counter is per tree, so under ``vmap`` its
    ``lax.cond(depth == 0, root selection, interior selection)`` becomes a select that computes
    both selections at every level. Here every tree walks in lockstep (all start at the root,
    finished trees keep their result), so the depth is one scalar for the batch, the cond stays
    a cond, and each level runs only the selection it needs. Keys are split exactly as mctx
    splits them, so the trees are bit-identical (tested). Returns ``(parent_index, action)``.
    """
    select = jax.vmap(action_selection_fn, in_axes=(0, 0, 0, None))
    rows = jnp.arange(rng_key.shape[0])
    no_parent = jnp.full(rows.shape, mctx.Tree.NO_PARENT, jnp.int32)

    def level(carry):
        keys, node, action, next_node, depth, active = carry
        split = jax.vmap(jax.random.split)(keys)
        new_keys, selection_keys = split[:, 0], split[:, 1]
        new_action = select(selection_keys, tree, next_node, depth)
        reached = tree.children_index[rows, next_node, new_action]
        depth = depth + 1
        going_on = (reached != mctx.Tree.UNVISITED) & (depth < max_depth)

        def keep(new, old):
            where = active.reshape(active.shape + (1,) * (new.ndim - 1))
            return jnp.where(where, new, old)

        return (keep(new_keys, keys), keep(next_node, node), keep(new_action, action), keep(reached, next_node),
                depth, active & going_on)

    start = (rng_key, no_parent, no_parent, jnp.full(rows.shape, mctx.Tree.ROOT_INDEX, jnp.int32),
             jnp.zeros((), tree.children_prior_logits.dtype), jnp.ones(rows.shape, bool))
    _, node, action, _, _, _ = jax.lax.while_loop(lambda carry: jnp.any(carry[5]), level, start)
    return node, action


@contextlib.contextmanager
def _swapped(name: str, replacement: Callable, enabled: bool) -> Iterator[bool]:
    """While tracing inside this context, mctx's search loop calls ``replacement`` for its ``name``.

    mctx calls its module-level ``backward``/``simulate`` (batched over B) from its search
    loop; the function is swapped only for the duration of the trace and restored afterwards.
    Yields whether the swap happened (False if disabled or if mctx's function no longer takes
    the replacement's parameters).
    """
    from mctx._src import search as mctx_search  # private: checked before use

    original = getattr(mctx_search, name, None)
    swap = (enabled and callable(original)
            and list(inspect.signature(original).parameters) == list(inspect.signature(replacement).parameters))
    if swap:
        setattr(mctx_search, name, replacement)
    try:
        yield swap
    finally:
        if swap:
            setattr(mctx_search, name, original)


def mctx_backward(enabled: bool):
    """Context: mctx backs up with :func:`batched_backward` (see :func:`_swapped`)."""
    return _swapped("backward", batched_backward, enabled)


def mctx_simulate(enabled: bool):
    """Context: mctx walks its trees with :func:`batched_simulate` (see :func:`_swapped`)."""
    return _swapped("simulate", batched_simulate, enabled)


@contextlib.contextmanager
def faster_mctx(config: ml_collections.ConfigDict) -> Iterator[None]:
    """Both swaps as ``config.batched_backward`` and ``config.batched_simulate`` ask."""
    with mctx_backward(bool(config.batched_backward)), mctx_simulate(bool(config.get("batched_simulate", True))):
        yield
