"""Playout cap randomisation (KataGo): a few full searches recorded as targets, many fast ones played.

With ``selfplay.playout_cap.every = m`` (0 = off), at every ply one game in ``m`` of each lane
searches with the full ``search.num_simulations`` and its position is recorded for training;
the other games search with ``playout_cap.fast_simulations`` and only play their move (their
positions are not recorded). So a self-play call plays more games per second while every policy
target still comes from a full search, and the value targets come from more, less correlated
games.

In a lockstep batch a per-game budget saves nothing (the batch runs as long as its largest
search), so the games are split into two groups searched separately, with static sizes: in each
lane of ``G`` games, game ``g`` is in the full group at a ply iff ``(g + r) % m == 0``, with
``r`` drawn per lane and ply. Each game is therefore fully searched at a random ``1/m`` of its
plies, both colours alike, and each lane's draws use only its own key (lanes stay independent,
:mod:`othello_jax.search.keys`). The two groups' results are put back in game order with one
gather (an inverse permutation, no scatter).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections

from othello_jax import search
from othello_jax.errors import InputError
from othello_jax.game import Othello, State
from othello_jax.search import keys as search_keys


def default_playout_cap_config() -> ml_collections.ConfigDict:
    """``every``: one game in ``every`` searches fully per ply (0 = off); the rest use ``fast_simulations``."""
    return ml_collections.ConfigDict(dict(every=0, fast_simulations=4))


def check_playout_cap(selfplay_config: ml_collections.ConfigDict,
                      search_config: ml_collections.ConfigDict | None = None) -> None:
    """Raise a one-line ``InputError`` for an impossible playout-cap setting."""
    cap = selfplay_config.get("playout_cap")
    if cap is None or not int(cap.every):
        return
    every, games = int(cap.every), int(selfplay_config.num_games)
    if every < 2:
        raise InputError(f"selfplay.playout_cap.every must be 0 (off) or >= 2, got {every}")
    if games % every:
        raise InputError(f"selfplay.num_games ({games}) must be a multiple of selfplay.playout_cap.every ({every})")
    if int(cap.fast_simulations) < 1:
        raise InputError(f"selfplay.playout_cap.fast_simulations must be >= 1, got {cap.fast_simulations}")
    if int(selfplay_config.harvest.per_tree):
        raise InputError("selfplay.playout_cap needs selfplay.harvest.per_tree = 0 (the two groups' trees differ)")
    if search_config is not None and bool(search_config.get("reuse", False)):
        raise InputError("selfplay.playout_cap needs search.reuse off (a game's tree size changes between plies)")


def groups(key: jax.Array, lanes: int, per_lane: int, every: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """This ply's split of ``lanes * per_lane`` games: (full indices, fast indices, bool[B] full).

    Indices are global rows, lane by lane and in game order within a lane; ``key`` is one key
    (``lanes`` = 1) or ``[lanes]`` lane keys.
    """
    offset = search_keys.draw(lambda k, s: jax.random.randint(k, s, 0, every), key, (lanes,))  # [lanes]
    full = (jnp.arange(per_lane)[None, :] + offset[:, None]) % every == 0  # [lanes, per_lane]
    order = jnp.argsort(~full, axis=1, stable=True)  # full games first, then the fast ones
    order = order + (jnp.arange(lanes) * per_lane)[:, None]
    size = per_lane // every
    return order[:, :size].reshape(-1), order[:, size:].reshape(-1), full.reshape(-1)


def fast_search_config(search_config: ml_collections.ConfigDict, simulations: int) -> ml_collections.ConfigDict:
    """``search_config`` with ``num_simulations = simulations``."""
    fast = search_config.copy_and_resolve_references()
    with fast.unlocked():
        fast.num_simulations = int(simulations)
    return fast


def split_search(cap: ml_collections.ConfigDict, search_config: ml_collections.ConfigDict,
                 apply_fn: search.ApplyFn, variables: dict, states: State, key: jax.Array, game: Othello,
                 lanes: int, per_lane: int) -> tuple[search.SearchResult, jax.Array]:
    """Search the full group fully and the rest fast; returns (results in game order, bool[B] full).

    The merged result has no tree (``tree=None``): the groups' trees have different sizes.
    """
    group_key, full_key, fast_key = search_keys.split(key, 3)
    full_rows, fast_rows, is_full = groups(group_key, lanes, per_lane, int(cap.every))
    take = lambda rows: jax.tree.map(lambda x: x[rows], states)
    full = search.run_search(search_config, apply_fn, variables, take(full_rows), full_key, game)
    fast = search.run_search(fast_search_config(search_config, int(cap.fast_simulations)), apply_fn, variables,
                             take(fast_rows), fast_key, game)
    back = jnp.argsort(jnp.concatenate([full_rows, fast_rows]))  # the inverse permutation
    merge = lambda a, b: jnp.concatenate([a, b])[back]
    fields = {name: merge(getattr(full, name), getattr(fast, name))
              for name in search.SearchResult._fields if name != "tree"}
    return search.SearchResult(**fields, tree=None), is_full
