"""Subtree reuse: a re-rooted tree is the old tree's subtree, node by node."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from othello_jax import search
from othello_jax.search.reuse import reroot
from tests.test_selfplay import GAME, search_config, tiny_net

BATCH = 6


@functools.cache
def searched(variant="gumbel", sims=24):
    apply_fn, variables = tiny_net()
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (BATCH,) + x.shape), GAME.init())
    result = jax.jit(lambda k: search.run_search(search_config(variant, sims), apply_fn, variables, states, k,
                                                 GAME))(jax.random.key(1))
    return jax.device_get(result)


def subtree(tree, b, root):
    """Old indices of ``root`` and its descendants in index order (plain Python reference)."""
    out, todo = [], [root]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(int(c) for c in tree.children_index[b, node] if c >= 0)
    return sorted(out)


def check_subtree(old, new, count, roots, keep=None):
    nodes = old.node_visits.shape[1]
    for b, root in enumerate(roots):
        expected = subtree(old, b, root) if root >= 0 else []
        if keep is not None:
            expected = expected[:keep]
        assert int(count[b]) == len(expected)
        renumber = {o: n for n, o in enumerate(expected)}
        for n, o in enumerate(expected):
            assert new.node_visits[b, n] == old.node_visits[b, o]
            assert new.node_values[b, n] == old.node_values[b, o] and new.raw_values[b, n] == old.raw_values[b, o]
            parent = int(old.parents[b, o])
            assert int(new.parents[b, n]) == (renumber.get(parent, -1) if n else -1)
            for a in range(old.children_index.shape[2]):
                child = int(old.children_index[b, o, a])
                kept = child in renumber
                assert int(new.children_index[b, n, a]) == (renumber[child] if kept else -1)
                if child < 0 or kept:
                    assert new.children_visits[b, n, a] == old.children_visits[b, o, a]
                    assert new.children_values[b, n, a] == old.children_values[b, o, a]
                else:
                    assert new.children_visits[b, n, a] == 0
            np.testing.assert_array_equal(new.children_prior_logits[b, n], old.children_prior_logits[b, o])
            for x, y in zip(jax.tree.leaves(new.embeddings), jax.tree.leaves(old.embeddings), strict=True):
                np.testing.assert_array_equal(x[b, n], y[b, o])
        # empty slots after the kept nodes
        assert (new.node_visits[b, len(expected):] == 0).all()
        assert (new.parents[b, len(expected):] == mctx.Tree.NO_PARENT).all()
        assert (new.children_index[b, len(expected):] == mctx.Tree.UNVISITED).all()
        assert nodes == new.node_visits.shape[1]


@pytest.mark.parametrize("variant", ["gumbel", "puct"])
def test_reroot_one_and_two_plies(variant):
    result = searched(variant)
    tree = result.tree
    rows = np.arange(BATCH)
    action = np.asarray(result.action)
    new, count = jax.device_get(jax.jit(reroot)(tree, jnp.asarray(action)))
    check_subtree(tree, new, count, tree.children_index[rows, 0, action])
    child = tree.children_index[rows, 0, action]
    reply = np.argmax(np.where(child[:, None] >= 0, tree.children_visits[rows, np.maximum(child, 0)], -1), axis=-1)
    reply = reply.astype(np.int32)
    new2, count2 = jax.device_get(jax.jit(reroot)(tree, jnp.asarray(action), jnp.asarray(reply)))
    grandchild = np.where(child >= 0, tree.children_index[rows, np.maximum(child, 0), reply], -1)
    check_subtree(tree, new2, count2, grandchild)
    assert (count2 > 0).any() and (count2 < count).all()
    # capped: the oldest nodes are kept and edges to dropped children are unvisited again
    new3, count3 = jax.device_get(jax.jit(functools.partial(reroot, keep=3))(tree, jnp.asarray(action)))
    check_subtree(tree, new3, count3, tree.children_index[rows, 0, action], keep=3)


def test_reroot_of_an_unexpanded_child_is_empty():
    tree = searched().tree
    visited = tree.children_index[:, 0] >= 0
    legal_unvisited = np.argmin(visited, axis=-1).astype(np.int32)  # first never expanded action
    assert not visited[np.arange(BATCH), legal_unvisited].any()
    new, count = jax.device_get(reroot(tree, jnp.asarray(legal_unvisited)))
    assert (count == 0).all() and (new.node_visits == 0).all() and (new.children_index == -1).all()


def run(variant, reuse, states, key, start=None, sims=16):
    apply_fn, variables = tiny_net()
    config = search_config(variant, sims)
    config.reuse = reuse
    fn = jax.jit(lambda s, k, st: search.run_search(config, apply_fn, variables, s, k, GAME, start=st))
    return jax.device_get(fn(states, key, start)), config


@pytest.mark.parametrize("variant", ["gumbel", "puct"])
def test_reuse_from_an_empty_start_is_todays_search(variant):
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (BATCH,) + x.shape), GAME.init())
    plain, config = run(variant, False, states, jax.random.key(2))
    fresh, _ = run(variant, True, states, jax.random.key(2))
    nodes = plain.tree.node_visits.shape[1]
    assert fresh.tree.node_visits.shape[1] == search.reuse_capacity(config) > nodes
    np.testing.assert_array_equal(fresh.action, plain.action)
    np.testing.assert_allclose(fresh.policy_target, plain.policy_target, rtol=1e-6)
    for name in ("node_visits", "node_values", "parents", "children_index", "children_visits"):
        np.testing.assert_array_equal(getattr(fresh.tree, name)[:, :nodes], getattr(plain.tree, name))
        assert (getattr(fresh.tree, name)[:, nodes:] == (-1 if name in ("parents", "children_index") else 0)).all()


@pytest.mark.parametrize("variant", ["gumbel", "puct"])
def test_search_from_a_reused_tree(variant):
    sims = 16
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (BATCH,) + x.shape), GAME.init())
    first, config = run(variant, True, states, jax.random.key(2), sims=sims)
    action = jnp.asarray(first.action)
    start = jax.device_get(search.reuse_tree(config, first.tree, action))
    kept = start[1]
    assert (kept > 0).all() and (kept <= search.reuse_capacity(config) - sims).all()
    nxt = jax.tree.map(lambda x: x[:, 0], jax.vmap(lambda s, a: GAME.step(s, a))(
        jax.tree.map(lambda x: x[:, None], states), action[:, None]))
    second, _ = run(variant, True, nxt, jax.random.key(3), start=start, sims=sims)
    tree = second.tree
    used = (tree.node_visits > 0).sum(axis=1)
    np.testing.assert_array_equal(used, kept + sims)  # every simulation added one new node
    # the root is the position reached, its inherited subtrees are still there
    np.testing.assert_array_equal(tree.embeddings.mover.lo[:, 0], np.asarray(nxt.mover.lo))
    root_visits = tree.node_visits[:, 0]
    if variant == "gumbel":  # reuse below the root only: halving starts over
        np.testing.assert_array_equal(root_visits, 1 + sims)
        np.testing.assert_array_equal(tree.children_visits[:, 0].sum(-1), sims)
    else:  # PUCT keeps the root's visits
        np.testing.assert_array_equal(root_visits, start[0].node_visits[:, 0] + sims)
    assert (np.asarray(second.action) >= 0).all()
    legal = np.asarray(GAME.legal_moves(nxt))
    assert legal[np.arange(BATCH), second.action].all()
