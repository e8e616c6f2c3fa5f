"""The search tree's storage: an ``mctx.Tree`` created and updated with O(B) writes per step.

Every write touches one node (or one edge) per tree. ``updates`` picks how a write is lowered:

- ``"scatter"`` (default): ``x.at[rows, node].set(value)``, B entries per write; the fastest on
  CPU and GPU;
- ``"select"``: a one-hot mask and ``jnp.where`` over the whole array; more arithmetic, but no
  scatter inside the search's loops, which XLA compiles to very slow code on TPU
  (openxla/xla#12982).

Both write the same values, so the trees are identical (tested). Reads stay gathers.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import mctx

from othello_jax.search import compaction

TREE_UPDATES = ("scatter", "select")


def write(x: jax.Array, value: jax.Array, node: jax.Array, action: jax.Array | None = None,
          updates: str = "scatter") -> jax.Array:
    """``x[b, node[b]] = value[b]`` (or ``x[b, node[b], action[b]]``) for every tree ``b``."""
    value = jnp.asarray(value, x.dtype)
    rows = jnp.arange(x.shape[0])
    if updates == "scatter":
        return x.at[rows, node].set(value) if action is None else x.at[rows, node, action].set(value)
    if updates != "select":
        raise ValueError(f"unknown tree updates {updates!r}; choose from {', '.join(TREE_UPDATES)}")
    hit = jnp.arange(x.shape[1])[None, :] == node[:, None]  # [B, N]
    if action is not None:
        hit = hit[:, :, None] & (jnp.arange(x.shape[2])[None, None, :] == action[:, None, None])
    hit = hit.reshape(hit.shape + (1,) * (x.ndim - hit.ndim))
    value = value.reshape(value.shape[:1] + (1,) * (x.ndim - value.ndim) + value.shape[1:])
    return jnp.where(hit, value, x)


def write_node(tree: mctx.Tree, node: jax.Array, prior_logits: jax.Array, value: jax.Array,
               embedding: Any, updates: str) -> mctx.Tree:
    """Store a freshly evaluated node (one per tree); a node evaluated again counts a visit more.

    A depth cut-off can evaluate the same node twice: its value is then replaced, as in mctx.
    """
    rows = jnp.arange(tree.node_visits.shape[0])
    visits = tree.node_visits[rows, node] + 1
    return tree.replace(
        children_prior_logits=write(tree.children_prior_logits, prior_logits, node, updates=updates),
        raw_values=write(tree.raw_values, value, node, updates=updates),
        node_values=write(tree.node_values, value, node, updates=updates),
        node_visits=write(tree.node_visits, visits, node, updates=updates),
        embeddings=jax.tree.map(lambda x, e: write(x, e, node, updates=updates), tree.embeddings, embedding),
    )


def init_tree(root: mctx.RootFnOutput, num_simulations: int, invalid_actions: jax.Array, extra_data: Any,
              updates: str) -> mctx.Tree:
    """An empty tree of ``num_simulations + 1`` nodes per root with the root evaluated.

    Fields, shapes, dtypes and fill values are those of the trees mctx's policies build, so
    either engine's tree can be read (and compared) the same way.
    """
    batch, num_actions = root.prior_logits.shape
    nodes = (batch, num_simulations + 1)
    edges = nodes + (num_actions,)
    dtype = root.value.dtype
    tree = mctx.Tree(
        node_visits=jnp.zeros(nodes, jnp.int32),
        raw_values=jnp.zeros(nodes, dtype),
        node_values=jnp.zeros(nodes, dtype),
        parents=jnp.full(nodes, mctx.Tree.NO_PARENT, jnp.int32),
        action_from_parent=jnp.full(nodes, mctx.Tree.NO_PARENT, jnp.int32),
        children_index=jnp.full(edges, mctx.Tree.UNVISITED, jnp.int32),
        children_prior_logits=jnp.zeros(edges, root.prior_logits.dtype),
        children_values=jnp.zeros(edges, dtype),
        children_visits=jnp.zeros(edges, jnp.int32),
        children_rewards=jnp.zeros(edges, dtype),
        children_discounts=jnp.zeros(edges, dtype),
        embeddings=jax.tree.map(lambda x: jnp.zeros(nodes + x.shape[1:], x.dtype), root.embedding),
        root_invalid_actions=invalid_actions,
        extra_data=extra_data,
    )
    root_node = jnp.full((batch,), mctx.Tree.ROOT_INDEX, jnp.int32)
    return write_node(tree, root_node, root.prior_logits, root.value, root.embedding, updates)


def expand(tree: mctx.Tree, parent: jax.Array, action: jax.Array, child: jax.Array,
           step: mctx.RecurrentFnOutput, embedding: Any, updates: str) -> mctx.Tree:
    """Attach the evaluated ``child`` below ``parent`` by ``action`` in every tree."""
    tree = write_node(tree, child, step.prior_logits, step.value, embedding, updates)
    return tree.replace(
        children_index=write(tree.children_index, child, parent, action, updates),
        children_rewards=write(tree.children_rewards, step.reward, parent, action, updates),
        children_discounts=write(tree.children_discounts, step.discount, parent, action, updates),
        parents=write(tree.parents, parent, child, updates=updates),
        action_from_parent=write(tree.action_from_parent, action, child, updates=updates),
    )


def backup_step(tree: mctx.Tree, lane: jax.Array, index: jax.Array,
                leaf_value: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, dict[str, jax.Array]]:
    """One backup level, with mctx's arithmetic, for trees ``lane`` at their nodes ``index``
    (not roots): ``(parent, action, the value backed up to the parent, new entries)``; the
    entries are the parent's value and visits and the edge's child value and visits."""
    parent = tree.parents[lane, index]
    action = tree.action_from_parent[lane, index]
    count = tree.node_visits[lane, parent]
    edge = (lane, parent, action)
    leaf_value = tree.children_rewards[edge] + tree.children_discounts[edge] * leaf_value
    parent_value = (tree.node_values[lane, parent] * count + leaf_value) / (count + 1.0)
    return parent, action, leaf_value, {
        "node_values": parent_value, "node_visits": count + 1,
        "children_values": tree.node_values[lane, index], "children_visits": tree.children_visits[edge] + 1,
    }


def backup(tree: mctx.Tree, leaf: jax.Array, updates: str, compact: bool = True) -> mctx.Tree:
    """Propagate each tree's leaf value to its root, one level of every tree per iteration.

    Each level updates the parent's running mean value and visit count and the edge's child
    value and visit count (:func:`backup_step`). The loop runs while any tree has not reached
    its root; trees already there rewrite their root's entries unchanged, so a level costs
    O(B) (the per-tree loop of mctx, vmapped, becomes selects over whole tree arrays). With
    ``compact`` and ``"scatter"`` updates, once few trees still climb, the levels touch only those
    (:func:`othello_jax.search.compaction.in_phases`).
    """
    batch = leaf.shape[0]
    rows = jnp.arange(batch)
    root = mctx.Tree.ROOT_INDEX

    def store(tree, new, set_node, set_edge):  # the level's new entries, written by node or by edge
        return tree.replace(
            node_values=set_node(tree.node_values, new["node_values"]),
            node_visits=set_node(tree.node_visits, new["node_visits"]),
            children_values=set_edge(tree.children_values, new["children_values"]),
            children_visits=set_edge(tree.children_visits, new["children_visits"]),
        )

    def level(carry):
        tree, leaf_value, index = carry
        active = index != root
        parent, action, new_leaf_value, new = backup_step(tree, rows, jnp.where(active, index, root), leaf_value)
        parent, action = jnp.where(active, parent, root), jnp.where(active, action, 0)
        # trees at their root rewrite the root's entries (edge 0) unchanged: static slices, not gathers
        unchanged = {"node_values": tree.node_values[:, root], "node_visits": tree.node_visits[:, root],
                     "children_values": tree.children_values[:, root, 0],
                     "children_visits": tree.children_visits[:, root, 0]}
        new = {name: jnp.where(active, value, unchanged[name]) for name, value in new.items()}
        tree = store(tree, new, lambda x, value: write(x, value, parent, updates=updates),
                     lambda x, value: write(x, value, parent, action, updates))
        return tree, jnp.where(active, new_leaf_value, leaf_value), jnp.where(active, parent, index)

    def compact_level(lanes: int):
        """A level for at most ``lanes`` climbing trees: gathers, arithmetic and writes for those only."""

        def run(carry):
            tree, leaf_value, index = carry
            lane = compaction.working_lanes(index != root, lanes)
            at = functools.partial(compaction.gather, lane=lane)
            parent, action, new_leaf_value, new = backup_step(tree, jnp.minimum(lane, batch - 1), at(index),
                                                              at(leaf_value))
            tree = store(tree, new, lambda x, value: x.at[lane, parent].set(value, mode="drop"),
                         lambda x, value: x.at[lane, parent, action].set(value, mode="drop"))
            return tree, compaction.scatter(leaf_value, lane, new_leaf_value), compaction.scatter(index, lane, parent)

        return run

    leaf = jnp.asarray(leaf, jnp.int32)
    start = (tree, tree.node_values[rows, leaf], leaf)
    tree, _, _ = compaction.in_phases(level, compact_level, lambda carry: carry[2] != root, batch, start,
                                      compact and updates == "scatter")
    return tree
