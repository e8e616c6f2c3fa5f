"""A network as a player: its raw policy, or its search with any number of simulations."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import mctx

from othello_jax import search as search_lib
from othello_jax.agents.base import Agent, AgentSpecError, parametric_agent
from othello_jax.checkpoint import CheckpointError, load_agent_variables
from othello_jax.errors import InputError
from othello_jax.game import Othello, State
from othello_jax.model import NetworkConfig, init_variables, make_network
from othello_jax.search import SearchResult
from othello_jax.search.run import empty_start, reuse_for


def policy_act(apply_fn: Callable, variables: Any, states: State, key: jax.Array, game: Othello,
               temperature: float) -> jax.Array:
    """Raw network policy: the most likely legal move, or a sample at ``temperature`` > 0."""
    logits, _ = apply_fn(variables, game.observation(states))
    legal = game.legal_moves(states)
    logits = jnp.where(legal, logits.astype(jnp.float32), -jnp.inf)
    if temperature > 0:
        chosen = jax.random.categorical(key, logits / temperature, axis=-1)
    else:
        chosen = jnp.argmax(logits, axis=-1)
    return jnp.where(jnp.any(legal, axis=-1), chosen, game.pass_action).astype(jnp.int32)


def playing_search_config(variant: str, sims: int, reuse: bool = False):
    """Search settings for evaluation games: no exploration noise (Gumbel scale and Dirichlet 0)."""
    config = search_lib.default_search_config()
    config.variant = variant
    config.num_simulations = int(sims)
    config.reuse = bool(reuse)
    config.gumbel_scale = 0.0
    config.dirichlet_fraction = 0.0
    try:
        search_lib.check_search_config(config)
    except InputError as error:
        raise AgentSpecError(str(error)) from None
    return config


def search_fn(game: Othello, apply_fn: Callable, config: Any) -> Callable[[Any, State, jax.Array], SearchResult]:
    """Jitted ``fn(variables, states, key) -> SearchResult``: ``run_search`` with fixed settings.

    The one place a network and its search are compiled together (:func:`policy_fn` and
    ``othello_jax.evaluation.analysis.Analyzer`` build on it). The variables are an argument, so
    networks of one architecture share the compiled code.
    """
    return jax.jit(lambda variables, states, key: search_lib.run_search(config, apply_fn, variables, states, key, game))


def policy_fn(game: Othello, apply_fn: Callable, sims: int = 0, search: str = "gumbel",
              temperature: float = 0.0) -> Callable[[Any, State, jax.Array], jax.Array]:
    """Jitted ``fn(variables, states, key) -> actions``: raw policy (``sims=0``) or ``search``.

    The variables are an argument, not a constant baked into the program, so every network of
    one architecture shares the compiled code (see ``Agent.act_with_params``).
    """
    if sims < 0 or temperature < 0:
        raise AgentSpecError(f"net needs sims >= 0 and temp >= 0, got sims={sims}, temp={temperature}")
    if sims == 0:
        return jax.jit(functools.partial(policy_act, apply_fn, game=game, temperature=float(temperature)))
    searched = search_fn(game, apply_fn, playing_search_config(search, sims))

    def act(variables: Any, states: State, key: jax.Array) -> jax.Array:
        search_key, pick_key = jax.random.split(key)
        return search_lib.select_action(searched(variables, states, search_key), temperature, pick_key)

    return jax.jit(act)


class SearchMemory(NamedTuple):
    """What a reusing network player keeps between its moves in one game (leading axis B).

    tree: its last search's tree (``search.reuse_capacity`` nodes; empty at the start).
    inherited: int32 [B] nodes the last search inherited (0: it started from an empty tree).
    """

    tree: mctx.Tree
    inherited: jax.Array


class MemoryFns(NamedTuple):
    """The three functions of a reusing player (see ``Agent.init_memory``/``act_with_memory``)."""

    act: Callable[[Any, State, jax.Array], jax.Array]
    init_memory: Callable[[Any, State], SearchMemory]
    act_with_memory: Callable[[Any, SearchMemory, State, jax.Array], tuple[jax.Array, SearchMemory]]


def reuse_policy_fns(game: Othello, apply_fn: Callable, sims: int, search: str = "gumbel",
                     temperature: float = 0.0) -> MemoryFns:
    """Jitted functions of a search player that keeps its tree between its moves (subtree reuse).

    Each move searches from the subtree of the last tree whose root is the position now on the
    board: normally two plies down (its own move, then the reply), one ply down if it plays
    both sides; any other position (an undo, a new game, a move the tree never expanded) starts
    from an empty tree. ``sims`` new evaluations per move, as without reuse (``search.reuse``).
    ``act`` alone searches from an empty tree: the same moves as without reuse.
    """
    if sims < 1 or temperature < 0:
        raise AgentSpecError(f"net reuse=1 needs sims >= 1 and temp >= 0, got sims={sims}, temp={temperature}")
    config = playing_search_config(search, sims, reuse=True)

    def init_memory(variables: Any, states: State) -> SearchMemory:
        tree, count = empty_start(config, states, game.num_actions)
        return SearchMemory(tree, count)

    def act_with_memory(variables: Any, memory: SearchMemory, states: State,
                        key: jax.Array) -> tuple[jax.Array, SearchMemory]:
        search_key, pick_key = jax.random.split(key)
        start = reuse_for(config, memory.tree, states)
        result = search_lib.run_search(config, apply_fn, variables, states, search_key, game, start=start)
        action = search_lib.select_action(result, temperature, pick_key)
        return action, SearchMemory(result.tree.replace(extra_data=None), start[1])

    def act(variables: Any, states: State, key: jax.Array) -> jax.Array:
        return act_with_memory(variables, init_memory(variables, states), states, key)[0]

    return MemoryFns(jax.jit(act), jax.jit(init_memory), jax.jit(act_with_memory))


def neural_agent(game: Othello, apply_fn: Callable, variables: Any, sims: int = 0, search: str = "gumbel",
                 temperature: float = 0.0, name: str = "net", reuse: bool = False) -> Agent:
    """A network as a player: raw policy (``sims=0``) or ``search`` with ``sims`` simulations
    (``reuse``: keeping its tree between moves, :func:`reuse_policy_fns`).

    ``apply_fn(variables, observation) -> (logits, value)`` in inference mode, e.g.
    ``functools.partial(net.apply, train=False)``. Agents built with the same ``apply_fn``
    object (and settings) share compiled matches; :func:`network_agent` arranges that for
    networks given by their config.
    """
    if reuse:
        return _memory_agent(name, reuse_policy_fns(game, apply_fn, sims, search, temperature), variables)
    return parametric_agent(name, policy_fn(game, apply_fn, sims, search, temperature), variables)


def _memory_agent(name: str, fns: MemoryFns, variables: Any) -> Agent:
    agent = parametric_agent(name, fns.act, variables)
    return dataclasses.replace(agent, init_memory=fns.init_memory, act_with_memory=fns.act_with_memory)


@functools.lru_cache(maxsize=32)
def _network_policy(game: Othello, network_config: Any, sims: int, search: str, temperature: float,
                    reuse: bool = False) -> Callable | MemoryFns:
    net = make_network(game.size, network_config)
    apply_fn = functools.partial(net.apply, train=False)
    if reuse:
        return reuse_policy_fns(game, apply_fn, sims, search, temperature)
    return policy_fn(game, apply_fn, sims, search, temperature)


def network_agent(game: Othello, network_config: Any, variables: Any, sims: int = 0, search: str = "gumbel",
                  temperature: float = 0.0, name: str = "net", reuse: bool = False) -> Agent:
    """:func:`neural_agent` for an ``othello_jax.model`` network given by its config.

    Networks of the same config and settings (checkpoints of one run) share compiled code.
    """
    fn = _network_policy(game, network_config, int(sims), str(search), float(temperature), bool(reuse))
    if reuse:
        return _memory_agent(name, fn, variables)
    return parametric_agent(name, fn, variables)


def checkpoint_agent(path: str, game: Othello, **options: Any) -> Agent:
    """A trained network loaded with ``othello_jax.checkpoint.load_agent_variables``."""
    try:
        network_config, variables, size = load_agent_variables(path)
    except CheckpointError as error:
        raise AgentSpecError(str(error)) from None
    if size != game.size:
        raise AgentSpecError(f"checkpoint {path} plays {size}x{size}, not {game.size}x{game.size}")
    return network_agent(game, network_config, variables, **options)


def untrained_agent(game: Othello, preset: str, seed: int = 0, **options: Any) -> Agent:
    """A freshly initialised network (a reference point for Elo curves, and for tests)."""
    try:
        network_config = NetworkConfig.preset(preset)
    except InputError as error:
        raise AgentSpecError(str(error)) from None
    variables = init_variables(make_network(game.size, network_config), jax.random.PRNGKey(seed), game.size)
    return network_agent(game, network_config, variables, **options)
