"""Anything that picks moves, behind one batched interface: ``act(states, key) -> actions``.

Agents: ``random``, ``greedy`` (most flips), ``alphabeta`` (depth-k search on a hand-made
evaluation), ``mcts`` (tree search valued by random playouts), ``net`` (a network, raw policy
or with search) and ``gtp`` (an external engine over the Go Text Protocol). :func:`parse_agent`
builds any of them from a short spec string such as ``alphabeta:depth=4`` or
``net:ckpt=runs/o8,sims=64,search=gumbel``; ``solve=E`` makes any of them play the last E
empties perfectly with the exact endgame solver.

Modules: ``base`` (the Agent type), ``baselines``, ``network``, ``endgame`` (solver wrapper),
``gtp`` (external engines) with ``gtp_protocol``, ``alphabeta`` + ``heuristic``,
``rollout_mcts``, and ``specs`` (the registry of kinds, the only module that knows them all).
"""

from othello_jax.agents.base import ActFn, Agent, AgentSpecError, parametric_agent, renamed
from othello_jax.agents.baselines import (
    alphabeta_agent,
    flip_counts,
    greedy_act,
    greedy_agent,
    mcts_agent,
    random_agent,
)
from othello_jax.agents.endgame import with_exact_endgame
from othello_jax.agents.neural import (
    checkpoint_agent,
    network_agent,
    neural_agent,
    playing_search_config,
    policy_act,
    policy_fn,
    untrained_agent,
)
from othello_jax.agents.specs import parse_agent, parse_spec, split_options

__all__ = [
    "ActFn", "Agent", "AgentSpecError", "alphabeta_agent", "checkpoint_agent", "flip_counts", "greedy_act",
    "greedy_agent", "mcts_agent", "network_agent", "neural_agent", "parametric_agent", "parse_agent",
    "parse_spec", "playing_search_config", "policy_act", "policy_fn", "random_agent", "renamed",
    "split_options", "untrained_agent", "with_exact_endgame",
]
