"""The classic baselines: random, greedy (most flips), alpha-beta on a hand-made evaluation,
and tree search valued by random playouts (rollout MCTS)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from othello_jax.agents import alphabeta, rollout_mcts
from othello_jax.agents.base import Agent, AgentSpecError
from othello_jax.agents.neural import playing_search_config
from othello_jax.game import Othello, State
from othello_jax.game import bitboard as bb


def random_agent(game: Othello) -> Agent:
    """Uniformly random legal moves."""
    return Agent("random", jax.jit(game.random_legal_action))


def flip_counts(states: State, game: Othello) -> jax.Array:
    """Discs each placement would flip, int32[B, N*N] (-1 where the placement is illegal)."""
    squares = game.square_of_action(jnp.arange(game.num_squares))
    moves = bb.square_bit(squares)  # [N*N] single-bit boards
    expand = lambda b: jax.tree.map(lambda x: x[..., None], b)
    flipped = bb.flips(expand(states.mover), expand(states.opponent), moves, game.size)
    legal = game.legal_moves(states)[..., : game.num_squares]
    return jnp.where(legal, bb.popcount(flipped), -1)


def greedy_act(states: State, key: jax.Array, game: Othello) -> jax.Array:
    """The placement flipping the most discs (ties broken at random); pass when forced."""
    counts = flip_counts(states, game).astype(jnp.float32)
    noise = jax.random.uniform(key, counts.shape, maxval=0.5)
    best = jnp.argmax(counts + noise, axis=-1).astype(jnp.int32)
    return jnp.where(bb.any_set(states.legal), best, game.pass_action)


def greedy_agent(game: Othello) -> Agent:
    """Most flips now, no look-ahead (the classic weak baseline)."""
    return Agent("greedy", jax.jit(functools.partial(greedy_act, game=game)))


def alphabeta_agent(game: Othello, depth: int = 2) -> Agent:
    """Alpha-beta to ``depth`` plies on the hand-made evaluation (deterministic)."""
    if depth < 1:
        raise AgentSpecError(f"alphabeta depth must be at least 1, got {depth}")
    act = jax.jit(lambda states, key: alphabeta.negamax(states, game, depth)[0])
    return Agent(f"alphabeta:depth={depth}", act)


def mcts_agent(game: Othello, sims: int = 64, rollouts: int = 1, search: str = "puct") -> Agent:
    """Tree search with a uniform prior, leaves valued by ``rollouts`` random playouts each."""
    if sims < 1 or rollouts < 1:
        raise AgentSpecError(f"mcts needs sims >= 1 and rollouts >= 1, got sims={sims}, rollouts={rollouts}")
    config = playing_search_config(search, sims, traps=False)  # the baseline stays the plain search
    config.gumbel_scale = 1.0  # with a uniform prior only the Gumbel noise spreads the considered moves
    act = jax.jit(rollout_mcts.make_act(game, config, rollouts))
    name = f"mcts:sims={sims}" + (f",rollouts={rollouts}" if rollouts != 1 else "")
    return Agent(name + (f",search={search}" if search != "puct" else ""), act)
