"""The search entry point: search a batch of roots with the configured variant, pick moves."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import mctx
import ml_collections

from othello_jax.game import Othello, State
from othello_jax.search import keys
from othello_jax.search.config import check_search_config
from othello_jax.search.network import ApplyFn, evaluate, make_recurrent_fn
from othello_jax.search.reuse import find_descendant, reroot, reroot_at
from othello_jax.search.tree import empty_tree
from othello_jax.search.variants import VARIANTS


class SearchResult(NamedTuple):
    """Search outcome for a batch of root states (leading axis B).

    action: int32[B] move to play at zero temperature (legal unless the game is over).
    policy_target: float32[B, A] training target (sums to 1 over legal actions).
    root_value: float32[B] search value of the root, mover's view.
    q: float32[B, A] root action values (mover's view; the root value where unvisited).
    visit_counts: int32[B, A] root visit counts.
    prior_logits: float32[B, A] the network's masked root logits.
    network_value: float32[B] the network's root value.
    legal: bool[B, A] legal actions at the root.
    tree: the mctx tree (for harvesting extra training positions).
    """

    action: jax.Array
    policy_target: jax.Array
    root_value: jax.Array
    q: jax.Array
    visit_counts: jax.Array
    prior_logits: jax.Array
    network_value: jax.Array
    legal: jax.Array
    tree: mctx.Tree


def run_search(config: ml_collections.ConfigDict, apply_fn: ApplyFn, variables: dict,
               states: State, key: jax.Array, game: Othello,
               start: tuple[mctx.Tree, jax.Array] | None = None) -> SearchResult:
    """Search every root in the batch ``states`` (leading axis B) with the configured variant.

    With ``config.reuse`` the trees have the fixed capacity :func:`reuse_capacity` and the search
    starts from ``start = (tree, count)`` (from :func:`reuse_tree`; ``None``: empty trees).
    ``num_simulations`` stays the number of NEW network evaluations per root. Root noise (PUCT's
    Dirichlet, Gumbel's draw) is fresh at every search; Gumbel reuses below the root only: the
    root's visits and child statistics restart, so sequential halving spends all its
    simulations as without reuse, while the inherited subtrees give better child values.
    Without ``config.reuse``, ``start`` must be ``None`` and nothing changes.
    """
    check_search_config(config)
    eval_key, search_key = keys.split(key)
    symmetry = bool(config.symmetry)
    logits, value = evaluate(apply_fn, variables, states, game, eval_key if symmetry else None)
    legal = game.legal_moves(states)
    root = mctx.RootFnOutput(prior_logits=logits, value=jnp.where(states.terminal, 0.0, value),
                             embedding=states)
    recurrent_fn = make_recurrent_fn(apply_fn, game, symmetry)
    if bool(config.get("reuse", False)):
        if start is None:
            start = (empty_tree(root, reuse_capacity(config)), jnp.zeros(legal.shape[:1], jnp.int32))
        out = VARIANTS[config.variant](config, variables, search_key, root, recurrent_fn, ~legal, start=start)
    elif start is not None:
        raise ValueError("run_search got a start tree but search.reuse is off")
    else:
        out = VARIANTS[config.variant](config, variables, search_key, root, recurrent_fn, ~legal)
    tree = out.tree
    summary = tree.summary()
    visits = tree.children_visits[:, 0]
    q = jnp.where(visits > 0, summary.qvalues, summary.value[:, None])
    target = jnp.where(legal, out.policy_target, 0.0)
    target = target / jnp.maximum(jnp.sum(target, axis=-1, keepdims=True), 1e-30)
    return SearchResult(
        action=out.action,
        policy_target=target,
        root_value=summary.value,
        q=q,
        visit_counts=visits,
        prior_logits=logits,
        network_value=value,
        legal=legal,
        tree=tree,
    )


def select_action(result: SearchResult, temperature: jax.Array | float, key: jax.Array) -> jax.Array:
    """Sample from ``policy_target ** (1/T)`` where ``temperature > 0``, else the search's move."""
    temperature = jnp.broadcast_to(jnp.asarray(temperature, jnp.float32), result.action.shape)
    logp = jnp.log(jnp.maximum(result.policy_target, 1e-30)) / jnp.maximum(temperature, 1e-6)[:, None]
    sampled = keys.draw(lambda k, _, lg: jax.random.categorical(k, lg, axis=-1), key, result.action.shape,
                        jnp.where(result.legal, logp, -jnp.inf))
    return jnp.where(temperature > 0, sampled.astype(jnp.int32), result.action)


def reuse_capacity(config: ml_collections.ConfigDict) -> int:
    """Nodes per tree when ``search.reuse`` is on: ``reuse_nodes`` inherited at most + the new ones."""
    sims = int(config.num_simulations)
    return (int(config.get("reuse_nodes", 0)) or sims + 1) + sims


def reuse_tree(config: ml_collections.ConfigDict, tree: mctx.Tree, action: jax.Array,
               reply: jax.Array | None = None) -> tuple[mctx.Tree, jax.Array]:
    """The start for the next search after ``action`` (and ``reply``): the subtree kept, capped at
    ``reuse_nodes`` (oldest kept), in a tree of :func:`reuse_capacity` nodes."""
    tree, count = reroot(_fit(config, tree), action, reply, keep=reuse_capacity(config) - int(config.num_simulations))
    return tree.replace(extra_data=None), count  # the next search sets its own (one carry structure)


def reuse_node(config: ml_collections.ConfigDict, tree: mctx.Tree, node: jax.Array) -> tuple[mctx.Tree, jax.Array]:
    """Like :func:`reuse_tree` for the subtree below node ``node[b]`` (int32 [B]; -1: start empty)."""
    tree, count = reroot_at(_fit(config, tree), node, keep=reuse_capacity(config) - int(config.num_simulations))
    return tree.replace(extra_data=None), count


def reuse_for(config: ml_collections.ConfigDict, tree: mctx.Tree, states: State) -> tuple[mctx.Tree, jax.Array]:
    """The start for searching ``states`` with the last search's ``tree``: the subtree of the child
    or grandchild of its root that is this position (found by comparing positions), else empty.

    What a player keeps between its moves: its own move and the opponent's reply need not be
    known, and a position the tree does not hold (an undo, a new game) starts afresh.
    """
    return reuse_node(config, tree, find_descendant(_fit(config, tree), states))


def empty_start(config: ml_collections.ConfigDict, states: State, num_actions: int) -> tuple[mctx.Tree, jax.Array]:
    """An empty start (no node inherited) of :func:`reuse_capacity` nodes for the roots ``states``."""
    batch = jax.tree.leaves(states)[0].shape[0]
    root = mctx.RootFnOutput(prior_logits=jnp.zeros((batch, num_actions), jnp.float32),
                             value=jnp.zeros((batch,), jnp.float32), embedding=states)
    return empty_tree(root, reuse_capacity(config)), jnp.zeros((batch,), jnp.int32)


def _fit(config: ml_collections.ConfigDict, tree: mctx.Tree) -> mctx.Tree:
    """``tree`` in :func:`reuse_capacity` nodes (a tree built without reuse is padded with empty nodes)."""
    capacity = reuse_capacity(config)
    nodes = tree.node_visits.shape[1]
    if nodes < capacity:
        pad = lambda x, fill: jnp.concatenate(
            [x, jnp.full((x.shape[0], capacity - nodes) + x.shape[2:], fill, x.dtype)], axis=1)
        tree = tree.replace(**{name: pad(getattr(tree, name), fill) for name, fill in _NODE_FILLS.items()},
                            embeddings=jax.tree.map(lambda x: pad(x, 0), tree.embeddings))
    elif nodes > capacity:
        raise ValueError(f"a tree of {nodes} nodes does not fit the reuse capacity {capacity}")
    return tree


_NODE_FILLS = dict(node_visits=0, raw_values=0, node_values=0, parents=mctx.Tree.NO_PARENT,
                   action_from_parent=mctx.Tree.NO_PARENT, children_index=mctx.Tree.UNVISITED,
                   children_prior_logits=0, children_values=0, children_visits=0, children_rewards=0,
                   children_discounts=0)
