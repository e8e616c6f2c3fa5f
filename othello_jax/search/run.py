"""The search entry point: search a batch of roots with the configured variant, pick moves."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import mctx
import ml_collections

from othello_jax.game import Othello, State
from othello_jax.search import keys
from othello_jax.search.network import ApplyFn, evaluate, make_recurrent_fn, masked
from othello_jax.search.search_settings import SearchSettings
from othello_jax.search.traps import avoid_traps
from othello_jax.search.variants import VARIANTS, VariantOutput


class SearchResult(NamedTuple):
    """Search outcome for a batch of root states (leading axis B).

    action: int32[B] move to play at zero temperature (legal unless the game is over).
    policy_target: float32[B, A] training target (sums to 1 over legal actions).
    root_value: float32[B] search value of the root, mover's view.
    q: float32[B, A] root action values (mover's view; the root value where unvisited).
    visit_counts: int32[B, A] root visit counts.
    prior_logits: float32[B, A] the network's masked root logits (only winning moves when one ends the game).
    network_value: float32[B] the network's root value (exact where moves end the game, see ``evaluate``).
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


class SearchRoot(NamedTuple):
    """The roots of a search, evaluated: what a variant starts from and :func:`search_result` reads.

    output: mctx's root (masked logits, value, the states as embeddings); invalid: bool[B, A]
    the actions the root never searches (illegal, or beaten by a move that wins on the spot).
    """

    output: mctx.RootFnOutput
    logits: jax.Array
    value: jax.Array
    legal: jax.Array
    invalid: jax.Array


def settings_of(config: SearchSettings | ml_collections.ConfigDict) -> SearchSettings:
    """The search settings of ``config`` (a search config is validated into them)."""
    return config if isinstance(config, SearchSettings) else SearchSettings.from_config(config)


def search_root(settings: SearchSettings, apply_fn: ApplyFn, variables: dict, states: State, key: jax.Array,
                game: Othello, value_margin: float = 0.0) -> tuple[SearchRoot, mctx.RecurrentFn, jax.Array]:
    """Evaluate the roots: ``(root, the recurrent function, the variant's key)`` (see :func:`run_search`)."""
    eval_key, search_key = keys.split(key)
    symmetry = settings.symmetry
    logits, value = evaluate(apply_fn, variables, states, game, eval_key if symmetry else None,
                             settings.exact_endings, value_margin)
    legal = game.legal_moves(states)
    output = mctx.RootFnOutput(prior_logits=logits, value=jnp.where(states.terminal, 0.0, value), embedding=states)
    recurrent_fn = make_recurrent_fn(apply_fn, game, symmetry, settings.exact_endings, value_margin)
    # a move that wins on the spot masks the others (exact_endings): the root searches only it
    root = SearchRoot(output, logits, value, legal, ~legal | masked(logits))
    return root, recurrent_fn, search_key


def search_result(settings: SearchSettings, game: Othello, states: State, root: SearchRoot,
                  out: VariantOutput) -> SearchResult:
    """A variant's output as a :class:`SearchResult`: root values, the policy target over legal
    moves and the move, steered away from proven losses and traps where the settings ask."""
    tree = out.tree
    legal = root.legal
    summary = tree.summary()
    visits = tree.children_visits[:, 0]
    q = jnp.where(visits > 0, summary.qvalues, summary.value[:, None])
    target = jnp.where(legal, out.policy_target, 0.0)
    target = target / jnp.maximum(jnp.sum(target, axis=-1, keepdims=True), 1e-30)
    action = out.action
    if settings.exact_endings:
        action = avoid_proven_losses(action, q, visits, target, legal)
    if settings.avoid_traps:
        action = avoid_traps(game, states, action, target, legal, proven_lost(q, visits))
    return SearchResult(
        action=action,
        policy_target=target,
        root_value=summary.value,
        q=q,
        visit_counts=visits,
        prior_logits=root.logits,
        network_value=root.value,
        legal=legal,
        tree=tree,
    )


def run_search(config: SearchSettings | ml_collections.ConfigDict, apply_fn: ApplyFn, variables: dict,
               states: State, key: jax.Array, game: Othello, value_margin: float = 0.0) -> SearchResult:
    """Search every root in the batch ``states`` (leading axis B) with the configured variant.

    ``config``: the search settings (a search config is validated into them first).
    ``value_margin``: the network's (``NetworkConfig.value_margin``): what its value head was
    trained to predict, so finished games are valued on the same scale (``Othello.result_value``).
    """
    settings = settings_of(config)
    root, recurrent_fn, search_key = search_root(settings, apply_fn, variables, states, key, game, value_margin)
    out = VARIANTS[settings.variant](settings, variables, search_key, root.output, recurrent_fn, root.invalid)
    return search_result(settings, game, states, root, out)


PROVEN_LOSS = -1.0 + 1e-6  # a root move valued at or below this has lost: nothing is worth less


def proven_lost(q: jax.Array, visits: jax.Array) -> jax.Array:
    """bool[B, A]: searched root moves valued as lost by an exact game end below them."""
    return (visits > 0) & (q <= PROVEN_LOSS)


def avoid_proven_losses(action: jax.Array, q: jax.Array, visits: jax.Array, policy: jax.Array,
                        legal: jax.Array) -> jax.Array:
    """The search's move, unless it is proven lost while another legal move is not: then the move
    the search's policy likes most among those.

    With game-ending moves valued exactly, a searched root move whose value is -1 gives the
    opponent a reply that ends the game in its favour (a wipeout, a full board). Gumbel's final
    choice adds the prior to the value, so a move with a high prior can win that choice over a
    safe move with a prior near zero (RESULTS.md, 2026-11-27: all of ``builtin:8x8``'s losses to
    greedy were wipeouts chosen this way). ``q``, ``visits``, ``policy``: [B, A] root values,
    visit counts and the search's policy target; ``legal``: [B, A].
    """
    lost = proven_lost(q, visits)
    open_moves = legal & ~lost
    chosen_lost = jnp.take_along_axis(lost, action[:, None], axis=-1)[:, 0]
    fallback = jnp.argmax(jnp.where(open_moves, policy, -1.0), axis=-1).astype(action.dtype)
    return jnp.where(chosen_lost & jnp.any(open_moves, axis=-1), fallback, action)


def select_action(result: SearchResult, temperature: jax.Array | float, key: jax.Array) -> jax.Array:
    """Sample from ``policy_target ** (1/T)`` where ``temperature > 0``, else the search's move."""
    temperature = jnp.broadcast_to(jnp.asarray(temperature, jnp.float32), result.action.shape)
    logp = jnp.log(jnp.maximum(result.policy_target, 1e-30)) / jnp.maximum(temperature, 1e-6)[:, None]
    sampled = keys.draw(lambda k, _, lg: jax.random.categorical(k, lg, axis=-1), key, result.action.shape,
                        jnp.where(result.legal, logp, -jnp.inf))
    return jnp.where(temperature > 0, sampled.astype(jnp.int32), result.action)
