"""Agents: legality on every board size, greedy = most flips, alpha-beta = plain minimax, spec parsing."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments.bench_arena import full_width_negamax
from othello_jax import agents
from othello_jax.agents import AgentSpecError, alphabeta, heuristic, parse_agent
from othello_jax.game import Othello, State
from othello_jax.game import bitboard as bb
from tests.conftest import slow_unless


@functools.cache
def random_positions(size: int, count: int = 16, seed: int = 0) -> State:
    """Positions from random play, stopped after a random number of plies (some finished, some forced passes)."""
    game = Othello(size)
    rng = np.random.default_rng(seed)
    stop = rng.integers(0, size * size, count)
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (count,) + x.shape), game.init())
    key = jax.random.PRNGKey(seed)
    step = jax.jit(game.step)
    for ply in range(int(stop.max())):
        key, sub = jax.random.split(key)
        moved = step(states, game.random_legal_action(states, sub))
        keep = jnp.asarray(ply < stop)
        states = jax.tree.map(lambda new, old: jnp.where(keep.reshape((-1,) + (1,) * (old.ndim - 1)), new, old),
                              moved, states)
    return states


def legal_at(game: Othello, states: State, actions) -> np.ndarray:
    legal = np.asarray(game.legal_moves(states))
    actions = np.asarray(actions)
    return legal[np.arange(actions.shape[0]), actions] | np.asarray(states.terminal)


CASES = [(4, 1), (4, 3), (6, 2), (8, 2)]
# CI runs the largest board (a minute); the other three only with -m "": the same search code, whose
# pruning test_alphabeta_prunes checks on its own
CASE_PARAMS = slow_unless(CASES, lambda size, depth: (size, depth) == (8, 2))


@pytest.mark.parametrize("size,depth", CASE_PARAMS)
def test_alphabeta_value_equals_full_width_minimax(size, depth):
    """The pruned stack search and brute-force expansion (over the game's own step) agree."""
    game = Othello(size)
    states = random_positions(size)
    action, value, _ = alphabeta.negamax(states, game, depth)
    _, expected = full_width_negamax(states, game, depth)
    np.testing.assert_array_equal(np.asarray(value), np.asarray(expected))
    assert legal_at(game, states, action).all()
    # the chosen move attains the value
    after = game.step(states, action)
    attained = -full_width_negamax(after, game, depth - 1)[1]
    live = ~np.asarray(states.terminal)
    np.testing.assert_array_equal(np.asarray(attained)[live], np.asarray(value)[live])


def test_alphabeta_prunes():
    """With pruning, the slowest lane needs fewer loop iterations than its full tree has nodes."""
    game = Othello(8)
    states = random_positions(8)
    _, _, iterations = alphabeta.negamax(states, game, 2)
    live = ~np.asarray(states.terminal)
    mobility = np.asarray(bb.popcount(states.legal))[live]
    assert int(iterations) < np.max(mobility) ** 2


def test_heuristic_prefers_corners_and_final_scores_dominate():
    empty = bb.constant(0)
    corner = bb.constant(1)  # a1
    x_square = bb.constant(1 << 9)  # b2, next to the empty a1 corner
    no_moves = bb.constant(0)
    value = lambda mine, theirs: int(heuristic.evaluate(mine, theirs, no_moves, no_moves, 8))
    assert value(corner, empty) > value(empty, empty) > value(x_square, empty)
    won = heuristic.final_value(bb.constant(0b111), bb.constant(0b1000), 8)
    assert int(won) == heuristic.WIN + 64 - 2  # 3-1 with 60 empties to the winner
    assert heuristic.WIN > 10 * abs(value(corner, empty))


@pytest.mark.parametrize("size", [4, 6, 8])
def test_baseline_agents_play_legal_moves(size):
    game = Othello(size)
    states = random_positions(size)
    for spec in ("random", "greedy", "alphabeta:1"):
        agent = parse_agent(spec, game)
        assert agent.jittable
        assert legal_at(game, states, agent.act(states, jax.random.PRNGKey(1))).all(), spec


def test_random_agent_covers_the_legal_moves():
    game = Othello(8)
    start = jax.tree.map(lambda x: jnp.broadcast_to(x, (4000,) + x.shape), game.init())
    counts = np.bincount(np.asarray(agents.random_agent(game).act(start, jax.random.PRNGKey(0))),
                         minlength=game.num_actions)
    legal = np.flatnonzero(np.asarray(game.legal_moves(game.init())))
    assert set(np.flatnonzero(counts)) == set(legal)
    assert counts[legal].min() > 4000 / len(legal) * 0.8  # each of the 4 openers close to a quarter


@pytest.mark.parametrize("size", [6, 8])
def test_greedy_flips_the_most_discs(size):
    game = Othello(size)
    states = random_positions(size, seed=3)
    actions = np.asarray(agents.greedy_agent(game).act(states, jax.random.PRNGKey(0)))
    every = jnp.arange(game.num_squares, dtype=jnp.int32)
    widen = lambda x: jnp.broadcast_to(x[:, None], x.shape[:1] + every.shape + x.shape[1:])
    after = game.step(jax.tree.map(widen, states), jnp.broadcast_to(every, states.ply.shape + every.shape))
    gained = np.asarray(bb.popcount(after.opponent)) - np.asarray(bb.popcount(states.mover))[:, None] - 1
    legal = np.asarray(game.legal_moves(states))[:, : game.num_squares]
    flips = np.where(legal, gained, -1)
    for i in np.flatnonzero(~np.asarray(states.terminal)):
        if not legal[i].any():
            assert actions[i] == game.pass_action
        else:
            assert flips[i, actions[i]] == flips[i].max() > 0


def test_network_agents_play_legal_moves():
    """(Rollout MCTS is checked by the arena, which rejects illegal moves; every search compiles
    for a while, so this list stays short.)"""
    game = Othello(4)
    states = random_positions(4)
    for spec in ("net:preset=tiny", "net:preset=tiny,sims=4", "net:preset=tiny,temp=1"):
        agent = parse_agent(spec, game)
        assert legal_at(game, states, agent.act(states, jax.random.PRNGKey(2))).all(), spec


def test_network_agent_raw_policy_takes_the_top_legal_logit():
    game = Othello(4)
    bias = jnp.arange(game.num_actions, dtype=jnp.float32)  # the highest action number is preferred
    apply_fn = lambda variables, obs: (jnp.broadcast_to(variables, obs.shape[:1] + bias.shape),
                                       jnp.zeros(obs.shape[:1]))
    agent = agents.neural_agent(game, apply_fn, bias)
    states = random_positions(4)
    legal = np.asarray(game.legal_moves(states))
    expected = np.where(legal.any(-1), np.argmax(np.where(legal, np.arange(game.num_actions), -1), -1),
                        game.pass_action)
    np.testing.assert_array_equal(np.asarray(agent.act(states, jax.random.PRNGKey(0))), expected)


@pytest.mark.parametrize("spec, name, jittable", [
    ("random:solve=16", "random,solve=16", False),  # the C solver by default: a host agent
    ("random:solve=16,solver=jax", "random,solve=16,solver=jax", True),  # the batched JAX solver, compiled
])
def test_solve_option_plays_endgames_perfectly(spec, name, jittable):
    from othello_jax.solver import solve_batch_jit as solve_batch

    game = Othello(4)
    agent = parse_agent(spec, game)  # a 4x4 board has at most 12 empties: all solved
    assert agent.name == name and agent.jittable == jittable
    states = random_positions(4, seed=5)
    actions = np.asarray(agent.act(states, jax.random.PRNGKey(0)))
    assert legal_at(game, states, actions).all()
    best = solve_batch(states, game, 16).score  # the JAX solver judges both (for the C one, independently)
    after = solve_batch(game.step(states, jnp.asarray(actions)), game, 16).score
    live = ~np.asarray(states.terminal)
    np.testing.assert_array_equal(-np.asarray(after)[live], np.asarray(best)[live])
    with pytest.raises(AgentSpecError, match="solver=... only goes with solve=E"):
        parse_agent("random:solver=c", game)


def test_solve_zero_means_no_exact_endgame():
    game = Othello(4)
    plain, unsolved = parse_agent("greedy", game), parse_agent("greedy:solve=0", game)
    assert unsolved.name == "greedy" and unsolved.jittable
    assert dataclasses.replace(unsolved, act=plain.act) == plain  # not wrapped: the same agent otherwise


def test_spec_names_and_shorthands():
    game = Othello(6)
    assert parse_agent("alphabeta:3", game).name == "alphabeta:depth=3"
    assert parse_agent(" AlphaBeta : depth=2 ", game).name == "alphabeta:depth=2"
    assert parse_agent("mcts:16", game).name == "mcts:sims=16"
    assert parse_agent("greedy:name=G", game).name == "G"
    assert agents.split_options('cmd="edax -gtp, -l 6",timeout=3') == ['cmd="edax -gtp, -l 6"', "timeout=3"]


@pytest.mark.parametrize("spec,message", [
    ("minimax", "unknown agent kind"),
    ("alphabeta:depth=two", "must be an integer"),
    ("alphabeta:depth=0", "at least 1"),
    ("alphabeta:width=3", "unknown option 'width'"),
    ("alphabeta:depth=2,depth=3", "given twice"),
    ("random:3", "not KEY=VALUE"),
    ("mcts:sims=0", "sims >= 1"),
    ("mcts:search=beam", "unknown search variant"),
    ("net:sims=4", "exactly one of ckpt"),
    ("net:preset=small,sims=4,reuse=1", "net option reuse was removed: subtree reuse gave no gain"),
    ("net:preset=huge", "unknown network preset"),
    ("net:ckpt=/nonexistent/run", "does not exist"),
    ('gtp:cmd="unterminated', "unbalanced"),
    ("gtp:timeout=3", "engine command line"),
    ("gtp:cmd=/nonexistent/engine", "cannot start engine"),
])
def test_bad_specs_give_one_line_errors(spec, message):
    with pytest.raises(AgentSpecError, match=message) as error:
        parse_agent(spec, Othello(8))
    assert "\n" not in str(error.value)
