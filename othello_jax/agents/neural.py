"""A network as a player: its raw policy, or its search with any number of simulations."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from othello_jax.agents.base import Agent, AgentSpecError, parametric_agent
from othello_jax.checkpoint import CheckpointError, load_agent_variables
from othello_jax.errors import InputError
from othello_jax.game import Othello, State
from othello_jax.model import NetworkConfig, init_variables, make_network
from othello_jax.search import SearchResult, check_search_config, default_search_config, run_search, select_action


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


def playing_search_config(variant: str, sims: int, traps: bool = True):
    """Search settings for evaluation games: no exploration noise (Gumbel scale and Dirichlet 0),
    game-ending moves valued exactly (a wipeout reply is found whatever its prior) and, with
    ``traps``, no move the rules prove lost to a wipeout within the opponent's next two moves
    (next three where we have few discs; ``search/traps.py``)."""
    config = default_search_config()
    config.exact_endings = True
    config.avoid_traps = bool(traps)
    config.variant = variant
    config.num_simulations = int(sims)
    config.gumbel_scale = 0.0
    config.dirichlet_fraction = 0.0
    try:
        check_search_config(config)
    except InputError as error:
        raise AgentSpecError(str(error)) from None
    return config


def search_fn(game: Othello, apply_fn: Callable, config: Any,
              value_margin: float = 0.0) -> Callable[[Any, State, jax.Array], SearchResult]:
    """Jitted ``fn(variables, states, key) -> SearchResult``: ``run_search`` with fixed settings
    (``value_margin``: the network's, see ``NetworkConfig``).

    The one place a network and its search are compiled together (:func:`policy_fn` and
    ``othello_jax.evaluation.analysis.Analyzer`` build on it). The variables are an argument, so
    networks of one architecture share the compiled code.
    """
    return jax.jit(lambda variables, states, key: run_search(config, apply_fn, variables, states, key, game,
                                                             value_margin))


def policy_fn(game: Othello, apply_fn: Callable, sims: int = 0, search: str = "gumbel",
              temperature: float = 0.0, value_margin: float = 0.0,
              traps: bool = True) -> Callable[[Any, State, jax.Array], jax.Array]:
    """Jitted ``fn(variables, states, key) -> actions``: raw policy (``sims=0``) or ``search``
    (``value_margin``: the network's, see ``NetworkConfig``; ``traps``: see
    :func:`playing_search_config`).

    The variables are an argument, not a constant baked into the program, so every network of
    one architecture shares the compiled code (see ``Agent.act_with_params``).
    """
    if sims < 0 or temperature < 0:
        raise AgentSpecError(f"net needs sims >= 0 and temp >= 0, got sims={sims}, temp={temperature}")
    if sims == 0:
        return jax.jit(functools.partial(policy_act, apply_fn, game=game, temperature=float(temperature)))
    searched = search_fn(game, apply_fn, playing_search_config(search, sims, traps), value_margin)

    def act(variables: Any, states: State, key: jax.Array) -> jax.Array:
        search_key, pick_key = jax.random.split(key)
        return select_action(searched(variables, states, search_key), temperature, pick_key)

    return jax.jit(act)


def neural_agent(game: Othello, apply_fn: Callable, variables: Any, sims: int = 0, search: str = "gumbel",
                 temperature: float = 0.0, name: str = "net", traps: bool = True) -> Agent:
    """A network as a player: raw policy (``sims=0``) or ``search`` with ``sims`` simulations.

    ``apply_fn(variables, observation) -> (logits, value)`` in inference mode, e.g.
    ``functools.partial(net.apply, train=False)``. Agents built with the same ``apply_fn``
    object (and settings) share compiled matches; :func:`network_agent` arranges that for
    networks given by their config.
    """
    return parametric_agent(name, policy_fn(game, apply_fn, sims, search, temperature, traps=traps), variables)


@functools.lru_cache(maxsize=32)
def network_apply_fn(game: Othello, network_config: Any) -> Callable:
    """``apply(variables, observation) -> (logits, value)`` of an ``othello_jax.model`` network in
    inference mode: one object per config, so whatever is compiled around it is shared."""
    return functools.partial(make_network(game.size, network_config).apply, train=False)


@functools.lru_cache(maxsize=32)
def _network_policy(game: Othello, network_config: Any, sims: int, search: str, temperature: float,
                    traps: bool) -> Callable:
    return policy_fn(game, network_apply_fn(game, network_config), sims, search, temperature,
                     network_config.value_margin, traps)


def network_agent(game: Othello, network_config: Any, variables: Any, sims: int = 0, search: str = "gumbel",
                  temperature: float = 0.0, name: str = "net", traps: bool = True) -> Agent:
    """:func:`neural_agent` for an ``othello_jax.model`` network given by its config.

    Networks of the same config and settings (checkpoints of one run) share compiled code.
    """
    fn = _network_policy(game, network_config, int(sims), str(search), float(temperature), bool(traps))
    return parametric_agent(name, fn, variables)


def load_network(path: str) -> tuple[Othello, Any, Any]:
    """``(game, network config, variables)`` of a trained network, read with
    ``othello_jax.checkpoint.load_agent_variables`` (:class:`AgentSpecError` if it cannot be).

    What ``net:ckpt=PATH`` agents and the commands' ``--checkpoint`` (a network with its
    analysis) are both built from."""
    try:
        network_config, variables, size = load_agent_variables(path)
    except CheckpointError as error:
        raise AgentSpecError(str(error)) from None
    return Othello(size), network_config, variables


def checkpoint_agent(path: str, game: Othello, **options: Any) -> Agent:
    """A trained network (:func:`load_network`) as a player of ``game``."""
    network_game, network_config, variables = load_network(path)
    if network_game != game:
        size = network_game.size
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
