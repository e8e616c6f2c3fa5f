"""Subtree reuse: the part of a finished search tree below the moves played, as a new tree.

    tree, count = reroot(old_tree, action)                 # the played child's subtree
    tree, count = reroot(old_tree, action, reply)          # two plies down, after the reply too
    tree, count = reroot_at(old_tree, find_descendant(old_tree, states))   # wherever ``states`` is

What reuse means (``search.reuse``, off by default; ``run_search(..., start=...)``):

- Kept: the subtree below the position reached, node by node (visits, values, priors, rewards,
  embeddings), renumbered from 0. Everything else of the old tree is dropped.
- Capacity: a reusing search's trees have the fixed ``reuse_capacity = reuse_nodes +
  num_simulations`` nodes (``reuse_nodes`` 0 means ``num_simulations + 1``). At most
  ``reuse_nodes`` nodes are inherited, the oldest first (a node's parent is older, so the kept
  part stays a tree); ``num_simulations`` stays the number of NEW network evaluations per move.
- Root: re-evaluated by the network every move (fresh priors, fresh symmetry draw) with fresh
  noise: PUCT's Dirichlet noise is mixed into the new priors, Gumbel draws new Gumbel variables.
- Gumbel: reuse below the root only. The root's visit count and child statistics restart, so
  sequential halving spends all ``num_simulations`` as without reuse and the improved-policy
  target keeps its guarantee; the children's subtrees are inherited, so a child's value (the
  completed Q) already includes its inherited visits when the search reaches it.
- PUCT: the root keeps its inherited visits and child statistics; new simulations add to them.
- Training targets (self-play): the policy target is what the search returns: for PUCT the
  root visit distribution INCLUDING inherited visits (as in Leela Zero and KataGo: the whole
  tree's visits), for Gumbel the improved policy over new root visits and (inherited +
  new) child values. Harvested positions (``selfplay.harvest``) come from the whole tree,
  inherited nodes included with their total visits (a search without reuse would revisit the
  same positions next move too). Value targets use the root's search value as usual.
- Where: self-play plays both sides, so its scan carries the played child's subtree (one ply
  down; games that ended or resigned start empty). A ``net:...,reuse=1`` player keeps its last
  tree and finds the position now on the board among the root's children and grandchildren
  (:func:`find_descendant`, by comparing positions): two plies down after its move and the
  reply, one if it plays both sides; any other position starts from an empty tree, and
  interactive sessions drop the tree on undo, clear_board and a new or set-up position.
- Measured: the share of evaluations inherited is ``SelfPlayStats.reused_share``;
  ``experiments/bench_reuse.py`` measures it and the strength at equal simulations and time.

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
from typing import Any

import jax
import jax.numpy as jnp
import mctx


def reroot(tree: mctx.Tree, action: jax.Array, reply: jax.Array | None = None,
           keep: int | None = None) -> tuple[mctx.Tree, jax.Array]:
    """The subtree below ``action`` (and ``reply``) of every tree, renumbered from 0; and its node counts.

    action, reply: int32 [B]. keep: at most this many nodes per tree (default: the capacity).
    Returns (tree of the same shapes, int32 [B] nodes kept).
    """
    rows = jnp.arange(tree.node_visits.shape[0])
    root = tree.children_index[rows, mctx.Tree.ROOT_INDEX, action]
    if reply is not None:
        root = jnp.where(root >= 0, tree.children_index[rows, jnp.maximum(root, 0), reply], mctx.Tree.UNVISITED)
    return reroot_at(tree, root.astype(jnp.int32), keep)


def find_descendant(tree: mctx.Tree, states: Any) -> jax.Array:
    """Per tree, the expanded child or grandchild of the root whose position equals ``states[b]``.

    Positions are compared leaf by leaf on the stored embeddings (a :class:`State` batch with
    leading axis B). Returns int32 [B] node indices, -1 where the position is not one or two
    plies below the root (or the tree is empty): a search there starts afresh.
    """
    batch, nodes = tree.node_visits.shape
    parents = tree.parents
    grand = jnp.take_along_axis(parents, jnp.maximum(parents, 0), axis=1)
    near = (parents == mctx.Tree.ROOT_INDEX) | ((parents > mctx.Tree.ROOT_INDEX) & (grand == mctx.Tree.ROOT_INDEX))
    same = near & (tree.node_visits > 0) & (jnp.arange(nodes) > mctx.Tree.ROOT_INDEX)[None, :]
    for stored, wanted in zip(jax.tree.leaves(tree.embeddings), jax.tree.leaves(states), strict=True):
        equal = stored == jnp.asarray(wanted)[:, None]
        same = same & jnp.all(equal.reshape(batch, nodes, -1), axis=-1)
    first = jnp.argmax(same, axis=1).astype(jnp.int32)
    return jnp.where(jnp.any(same, axis=1), first, mctx.Tree.UNVISITED).astype(jnp.int32)


def reroot_at(tree: mctx.Tree, root: jax.Array, keep: int | None = None) -> tuple[mctx.Tree, jax.Array]:
    """The subtree below node ``root[b]`` of every tree (-1: an empty tree), renumbered from 0.

    The general form of :func:`reroot`; returns (tree of the same shapes, int32 [B] nodes kept).
    """
    batch, nodes = tree.node_visits.shape
    index = jnp.arange(nodes, dtype=jnp.int32)
    root = jnp.asarray(root, jnp.int32)

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
