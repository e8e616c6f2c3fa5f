"""The batched search loop: all B trees walk, expand and back up in lockstep, O(B) work per level.

mctx runs each tree's walk and backup as a per-tree ``while_loop`` under ``vmap``: its depth
is then per tree, so the switch between root and interior selection becomes a select that
computes both at every level, and the backup's writes become selects over whole tree arrays.
Here every tree starts at its root together, so the depth is one scalar for the batch: the
root level runs only the root selection, deeper levels only the interior one, and finished
trees are masked. Keys are split as in ``mctx.search``, so with the same keys and selection
functions the trees are identical to those of mctx's public policies (tested).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import mctx

from othello_jax.search import compaction, keys
from othello_jax.search.tree import backup, expand, init_tree


def node_view(tree: mctx.Tree, tree_index: jax.Array, node: jax.Array) -> mctx.Tree:
    """One-node trees: node ``node[i]`` of tree ``tree_index[i]`` (statistics, edges, root data).

    What a selection function reads of a node, for a subset of the batch; select at node 0.
    Embeddings are left out (selection does not read them).
    """
    take = lambda x: x.at[tree_index, node].get(mode="clip")[:, None]
    per_tree = lambda x: x.at[tree_index].get(mode="clip")
    fields = ("node_visits", "raw_values", "node_values", "parents", "action_from_parent", "children_index",
              "children_prior_logits", "children_values", "children_visits", "children_rewards", "children_discounts")
    return tree.replace(embeddings=None, root_invalid_actions=per_tree(tree.root_invalid_actions),
                        extra_data=jax.tree.map(per_tree, tree.extra_data),
                        **{name: take(getattr(tree, name)) for name in fields})


def simulate(keys: jax.Array, tree: mctx.Tree, root_select: mctx.RootActionSelectionFn,
             interior_select: mctx.InteriorActionSelectionFn, max_depth: int,
             compact: bool = True) -> tuple[jax.Array, jax.Array]:
    """Walk every tree from its root to an unexpanded edge (or the depth cut-off).

    ``keys`` are one per tree; each level splits a tree's key in two and passes the second half
    to the selection function. Returns ``(parent, action)``: the node reached and the edge to
    evaluate from it (already expanded when the cut-off stopped the walk). With ``compact``, deep
    levels select only at the trees still descending (:mod:`othello_jax.search.compaction`).
    """
    rows = jnp.arange(keys.shape[0])
    split = jax.vmap(jax.random.split)
    select_interior = jax.vmap(interior_select, in_axes=(0, 0, 0, None))

    def halve(keys):  # (key kept for the next level, key for this level's selection), per tree
        halves = split(keys)
        return halves[:, 0], halves[:, 1]

    # the root level: every tree selects at its root
    root = jnp.full(rows.shape, mctx.Tree.ROOT_INDEX, jnp.int32)
    keys, selection_keys = halve(keys)
    action = jax.vmap(root_select)(selection_keys, tree, root)
    depth = jnp.ones((), tree.children_prior_logits.dtype)  # mctx counts depth in the logits' dtype
    reached = tree.children_index[rows, root, action]
    going_on = (reached != mctx.Tree.UNVISITED) & (depth < max_depth)

    def level(carry):
        keys, node, action, next_node, depth, active = carry
        new_keys, selection_keys = halve(keys)
        new_action = select_interior(selection_keys, tree, next_node, depth)
        new_reached = tree.children_index[rows, next_node, new_action]
        depth = depth + 1
        still = active & (new_reached != mctx.Tree.UNVISITED) & (depth < max_depth)

        def keep(new, old):
            return jnp.where(active.reshape(active.shape + (1,) * (new.ndim - 1)), new, old)

        return (keep(new_keys, keys), keep(next_node, node), keep(new_action, action),
                keep(new_reached, next_node), depth, still)

    def compact_level(lanes: int):
        """A level for at most ``lanes`` still-descending trees: only their nodes are selected."""

        def run(carry):
            keys, node, action, next_node, depth, active = carry
            lane = compaction.working_lanes(active, lanes)
            at = functools.partial(compaction.gather, lane=lane)
            new_keys, selection_keys = halve(at(keys))
            current = at(next_node)
            view = node_view(tree, lane, current)
            new_action = select_interior(selection_keys, view, jnp.zeros((lanes,), jnp.int32), depth)
            new_reached = view.children_index[jnp.arange(lanes), 0, new_action]
            depth = depth + 1
            going = (new_reached != mctx.Tree.UNVISITED) & (depth < max_depth)
            put = functools.partial(compaction.scatter, lane=lane)
            return (put(keys, new=new_keys), put(node, new=current), put(action, new=new_action),
                    put(next_node, new=new_reached), depth, put(jnp.zeros_like(active), new=going))

        return run

    start = (keys, root, action, reached, depth, going_on)
    _, node, action, _, _, _ = compaction.in_phases(level, compact_level, lambda carry: carry[5], rows.shape[0],
                                                    start, compact)
    return node, action


def search(params: Any, key: jax.Array, root: mctx.RootFnOutput, recurrent_fn: mctx.RecurrentFn,
           root_select: mctx.RootActionSelectionFn, interior_select: mctx.InteriorActionSelectionFn,
           num_simulations: int, max_depth: int | None = None, invalid_actions: jax.Array | None = None,
           extra_data: Any = None, updates: str = "scatter", compact: bool = True) -> mctx.Tree:
    """Run ``num_simulations`` simulations on every root (the counterpart of ``mctx.search``).

    Each simulation walks the trees (:func:`simulate`), evaluates one new node per tree with
    ``recurrent_fn`` (node ``i + 1`` on simulation ``i``; at the depth cut-off the reached node
    is evaluated again instead) and backs its value up. ``updates`` chooses how tree writes are
    lowered (:mod:`othello_jax.search.tree`).

    ``compact`` runs the deep walk and backup levels on the trees still working only
    (:mod:`othello_jax.search.compaction`; with ``"scatter"`` updates; same trees).
    """
    if invalid_actions is None:
        invalid_actions = jnp.zeros_like(root.prior_logits)
    tree = init_tree(root, num_simulations, invalid_actions, extra_data, updates)
    _, tree = continue_search(params, key, tree, recurrent_fn, root_select, interior_select, 0, num_simulations,
                              max_depth, updates, compact)
    return tree


def continue_search(params: Any, key: jax.Array, tree: mctx.Tree, recurrent_fn: mctx.RecurrentFn,
                    root_select: mctx.RootActionSelectionFn, interior_select: mctx.InteriorActionSelectionFn,
                    first: jax.Array | int, count: jax.Array | int, max_depth: int | None = None,
                    updates: str = "scatter", compact: bool = True) -> tuple[jax.Array, mctx.Tree]:
    """Simulations ``first .. first + count - 1`` on ``tree`` (made by ``init_tree`` with room for
    at least ``first + count`` simulations): ``(the key to continue with, the tree)``.

    :func:`search` is one call from ``first = 0``; calls in a row with the returned key build the
    same tree as one call of their total (so a search can run in chunks of ``count`` simulations,
    one compiled program for all of them: ``first`` and ``count`` may be traced). ``max_depth`` defaults to the
    tree's room.
    """
    compact = compact and updates == "scatter"
    batch = tree.node_visits.shape[0]
    rows = jnp.arange(batch)
    max_depth = tree.node_visits.shape[1] - 1 if max_depth is None else max_depth
    first = jnp.asarray(first, jnp.int32)

    def one_simulation(step, carry):
        key, tree = carry
        sim = first + step
        key, walk_key, expand_key = keys.split(key, 3)
        parent, action = simulate(keys.per_row(walk_key, batch), tree, root_select, interior_select, max_depth,
                                  compact=compact)
        child = tree.children_index[rows, parent, action]
        child = jnp.where(child == mctx.Tree.UNVISITED, sim + 1, child)
        embedding = jax.tree.map(lambda x: x[rows, parent], tree.embeddings)
        step_out, embedding = recurrent_fn(params, expand_key, action, embedding)
        tree = expand(tree, parent, action, child, step_out, embedding, updates)
        return key, backup(tree, child, updates, compact)

    return jax.lax.fori_loop(0, count, one_simulation, (key, tree))
