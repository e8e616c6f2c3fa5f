"""Subtree reuse: the part of a finished search tree below the moves played, as a new tree.

    tree, count = reroot(old_tree, action)                 # the played child's subtree
    tree, count = reroot(old_tree, action, reply)          # two plies down, after the reply too

The new root is the node reached from the old root by ``action`` (then ``reply``). Its subtree is
kept node by node: nodes are renumbered compactly in their old index order (a parent always
precedes its children in an mctx tree, so the order stays valid and the new root is node 0),
``parents`` and ``children_index`` are remapped, visits, values, priors, rewards, discounts and
embeddings are kept. Every other node is dropped and its slot reset to the empty-tree fill.
``keep`` caps the nodes kept (the first ``keep`` in index order, i.e. the oldest: a kept node's
parent is always kept); an edge whose child is dropped becomes unvisited again (its visit count
and value are reset; the parent's own value and visit count still include the dropped visits).
Where the new root was never expanded, ``count`` is 0 and the tree is empty.

Everything is static-shaped (same capacity as the old tree), with no host round-trips and no
loop over trees: membership is found by pointer doubling over the parent links
(``ceil(log2 N)`` gathers), renumbering by a stable sort. ``root_invalid_actions`` and
``extra_data`` are left as they were: a search starting from the tree sets its own.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import mctx


def reroot(tree: mctx.Tree, action: jax.Array, reply: jax.Array | None = None,
           keep: int | None = None) -> tuple[mctx.Tree, jax.Array]:
    """The subtree below ``action`` (and ``reply``) of every tree, renumbered from 0; and its node counts.

    action, reply: int32 [B]. keep: at most this many nodes per tree (default: the capacity).
    Returns (tree of the same shapes, int32 [B] nodes kept).
    """
    batch, nodes = tree.node_visits.shape
    rows = jnp.arange(batch)
    index = jnp.arange(nodes, dtype=jnp.int32)
    root = tree.children_index[rows, mctx.Tree.ROOT_INDEX, action]
    if reply is not None:
        root = jnp.where(root >= 0, tree.children_index[rows, jnp.maximum(root, 0), reply], mctx.Tree.UNVISITED)
    root = root.astype(jnp.int32)

    # inside[b, n]: n is root[b] or one of its descendants (pointer doubling; slot `nodes` is a sink)
    sink = jnp.full((batch, 1), nodes, jnp.int32)
    pointer = jnp.concatenate([jnp.where(tree.parents >= 0, tree.parents, nodes), sink], axis=1)
    inside = jnp.concatenate([index[None, :] == root[:, None], jnp.zeros((batch, 1), bool)], axis=1)
    for _ in range(max(1, math.ceil(math.log2(nodes))) + 1):
        inside = inside | jnp.take_along_axis(inside, pointer, axis=1)
        pointer = jnp.take_along_axis(pointer, pointer, axis=1)
    inside = inside[:, :nodes] & (root >= 0)[:, None]

    limit = nodes if keep is None else min(int(keep), nodes)
    rank = jnp.cumsum(inside, axis=1, dtype=jnp.int32) - 1
    kept = inside & (rank < limit)
    count = jnp.sum(kept, axis=1, dtype=jnp.int32)
    order = jnp.argsort(jnp.where(kept, index, nodes + index), axis=1, stable=True)  # kept nodes first
    used = index[None, :] < count[:, None]  # [B, N] new slots holding a node
    new_of_old = jnp.where(kept, rank, mctx.Tree.UNVISITED)

    def gather(x, fill):  # node-indexed array [B, N, ...] -> new numbering
        x = jnp.take_along_axis(x, order.reshape(order.shape + (1,) * (x.ndim - 2)), axis=1)
        mask = used.reshape(used.shape + (1,) * (x.ndim - 2))
        return jnp.where(mask, x, jnp.asarray(fill, x.dtype))

    def renumber(x):  # old node indices (or -1) -> new ones (-1 where dropped)
        flat = jnp.take_along_axis(new_of_old, jnp.maximum(x, 0).reshape(batch, -1), axis=1).reshape(x.shape)
        return jnp.where(x >= 0, flat, x).astype(x.dtype)

    children = renumber(gather(tree.children_index, mctx.Tree.UNVISITED))
    old_children = gather(tree.children_index, mctx.Tree.UNVISITED)
    dropped_edge = (old_children >= 0) & (children < 0)
    edge = lambda x: jnp.where(dropped_edge, jnp.zeros_like(x), gather(x, 0))
    parents = renumber(gather(tree.parents, mctx.Tree.NO_PARENT))
    from_parent = gather(tree.action_from_parent, mctx.Tree.NO_PARENT)
    is_root = index[None, :] == mctx.Tree.ROOT_INDEX
    return tree.replace(
        node_visits=gather(tree.node_visits, 0),
        raw_values=gather(tree.raw_values, 0),
        node_values=gather(tree.node_values, 0),
        parents=jnp.where(is_root, mctx.Tree.NO_PARENT, parents),
        action_from_parent=jnp.where(is_root, mctx.Tree.NO_PARENT, from_parent),
        children_index=children,
        children_prior_logits=gather(tree.children_prior_logits, 0),
        children_values=edge(tree.children_values),
        children_visits=edge(tree.children_visits),
        children_rewards=edge(tree.children_rewards),
        children_discounts=edge(tree.children_discounts),
        embeddings=jax.tree.map(lambda x: gather(x, 0), tree.embeddings),
    ), count
