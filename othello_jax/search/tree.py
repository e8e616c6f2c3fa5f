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

from typing import Any

import jax
import jax.numpy as jnp
import mctx

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


def start_tree(tree: mctx.Tree, count: jax.Array, root: mctx.RootFnOutput, invalid_actions: jax.Array,
               extra_data: Any, reset_root: bool, updates: str) -> mctx.Tree:
    """A reused tree (``count[b]`` nodes, 0 = empty) with the fresh ``root`` evaluation at node 0.

    The root's priors, raw value and embedding are replaced; its visits and value are kept (an
    empty tree's root is written as in :func:`init_tree`). ``reset_root`` also restarts the
    root's statistics: one visit at the fresh value, no child visits or values (children nodes
    and their subtrees stay, reachable through ``children_index``).
    """
    batch = tree.node_visits.shape[0]
    node = jnp.full((batch,), mctx.Tree.ROOT_INDEX, jnp.int32)
    empty = count == 0
    fresh = empty | reset_root
    visits = jnp.where(fresh, 1, tree.node_visits[:, 0])
    value = jnp.where(fresh, root.value, tree.node_values[:, 0])
    tree = tree.replace(
        children_prior_logits=write(tree.children_prior_logits, root.prior_logits, node, updates=updates),
        raw_values=write(tree.raw_values, root.value, node, updates=updates),
        node_values=write(tree.node_values, value, node, updates=updates),
        node_visits=write(tree.node_visits, visits, node, updates=updates),
        embeddings=jax.tree.map(lambda x, e: write(x, e, node, updates=updates), tree.embeddings, root.embedding),
        root_invalid_actions=invalid_actions,
        extra_data=extra_data,
    )
    if reset_root:
        zero = lambda x: x.at[:, mctx.Tree.ROOT_INDEX].set(0)
        tree = tree.replace(children_visits=zero(tree.children_visits), children_values=zero(tree.children_values))
    return tree


def empty_tree(root: mctx.RootFnOutput, capacity: int, extra_data: Any = None) -> mctx.Tree:
    """A tree of ``capacity`` empty nodes per root (start a reused search from it with count 0)."""
    tree = init_tree(root, capacity - 1, jnp.zeros(root.prior_logits.shape, bool), extra_data, "scatter")
    zeros = jnp.zeros_like
    return tree.replace(node_visits=zeros(tree.node_visits), raw_values=zeros(tree.raw_values),
                        node_values=zeros(tree.node_values), children_prior_logits=zeros(tree.children_prior_logits),
                        embeddings=jax.tree.map(zeros, tree.embeddings))


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


def backup(tree: mctx.Tree, leaf: jax.Array, updates: str) -> mctx.Tree:
    """Propagate each tree's leaf value to its root, one level of every tree per iteration.

    Each level updates the parent's running mean value and visit count and the edge's child
    value and visit count, with mctx's arithmetic. The loop runs while any tree has not reached
    its root; trees already there rewrite their root's entries unchanged, so a level costs
    O(B) (the per-tree loop of mctx, vmapped, becomes selects over whole tree arrays).
    """
    rows = jnp.arange(leaf.shape[0])
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
            node_values=write(tree.node_values, jnp.where(active, parent_value, old_value), parent, updates=updates),
            node_visits=write(tree.node_visits, jnp.where(active, count + 1, count), parent, updates=updates),
            children_values=write(tree.children_values, jnp.where(active, tree.node_values[rows, index], child_value),
                                  parent, action, updates),
            children_visits=write(tree.children_visits, jnp.where(active, child_visits + 1, child_visits),
                                  parent, action, updates),
        )
        return tree, leaf_value, jnp.where(active, parent, index)

    leaf = jnp.asarray(leaf, jnp.int32)
    start = (tree, tree.node_values[rows, leaf], leaf)
    tree, _, _ = jax.lax.while_loop(lambda carry: jnp.any(carry[2] != root), level, start)
    return tree
