"""Subtree reuse where moves are played: self-play's scan, the arena's matches, interactive sessions."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from othello_jax import search
from othello_jax.agents import parse_agent
from othello_jax.agents.network import SearchMemory
from othello_jax.evaluation.arena import play_match
from othello_jax.game import Othello, batch_of_one
from othello_jax.interface.gtp_server import GtpEngine
from othello_jax.interface.session import GameSession
from othello_jax.search import keys as search_keys
from othello_jax.search.reuse import find_descendant
from othello_jax.training import selfplay
from tests.conftest import tiny_net
from tests.test_selfplay import GAME, search_config

GAMES, PLIES, SIMS = 8, 4, 8
NEVER = selfplay.ResignState(jnp.float32(-2.0), jnp.float32(0.0))


def selfplay_config():
    c = selfplay.default_selfplay_config()
    c.num_games = GAMES
    c.max_plies = PLIES
    c.temperature_plies = 2  # sampled moves, then the search's
    return c


def reuse_config(variant, reuse):
    c = search_config(variant, SIMS)
    c.reuse = reuse
    return c


@functools.cache
def selfplayed(variant, reuse):
    apply_fn, variables = tiny_net(GAME.size)
    fn = jax.jit(lambda v, k: selfplay.play_games(selfplay_config(), GAME, apply_fn, v, k, NEVER,
                                                  search_config=reuse_config(variant, reuse)))
    return jax.device_get(fn(variables, jax.random.key(5)))


@functools.cache
def searcher(variant, reuse):
    apply_fn, _ = tiny_net(GAME.size)
    config = reuse_config(variant, reuse)
    return jax.jit(lambda v, s, k, start: search.run_search(config, apply_fn, v, s, k, GAME, start=start))


def reference(variant, reuse):
    """The same games ply by ply from Python (one jitted search per ply, no scan), keeping the
    tree by hand with reuse_tree."""
    _, variables = tiny_net(GAME.size)
    config, sp = reuse_config(variant, reuse), selfplay_config()
    key, _, _ = search_keys.split(jax.random.key(5), 3)
    state = jax.tree.map(lambda x: jnp.broadcast_to(x, (GAMES,) + x.shape), GAME.init())
    start, plies = search.run.empty_start(config, state, GAME.num_actions) if reuse else None, []
    for _ in range(PLIES):
        key, search_key, act_key = search_keys.split(key, 3)
        result = jax.device_get(searcher(variant, reuse)(variables, state, search_key, start))
        temperature = jnp.where(state.ply < sp.temperature_plies, sp.temperature, 0.0)
        action = search.select_action(result, temperature, act_key)
        plies.append((result, action, start))
        if reuse:
            start = search.reuse_tree(config, result.tree, action)
        state = GAME.step(state, action)
    return plies


@pytest.mark.parametrize("variant", ["gumbel", "puct"])
def test_selfplay_reuse_continues_from_the_played_child_as_a_reference_loop_does(variant):
    out, stats, _ = selfplayed(variant, True)
    plies = reference(variant, True)
    assert out.samples.mask.all()  # 4x4 games last longer than PLIES
    kept = []
    for t, (result, action, start) in enumerate(plies):
        np.testing.assert_array_equal(out.action[t], action)
        np.testing.assert_allclose(out.samples.policy[t], result.policy_target, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out.search_value[t], result.root_value, rtol=1e-5, atol=1e-6)
        count = np.asarray(start[1])
        kept.append(count)
        root_visits, child_visits = result.tree.node_visits[:, 0], result.tree.children_visits[:, 0].sum(-1)
        if variant == "puct":  # the root keeps its inherited visits, and so does the visit-count target
            inherited = np.asarray(start[0].node_visits[:, 0])  # 0 in an empty start
            inherited_children = np.asarray(start[0].children_visits[:, 0]).sum(-1)
            np.testing.assert_array_equal(root_visits, inherited + SIMS + (t == 0))
            np.testing.assert_array_equal(child_visits, inherited_children + SIMS)
        else:  # Gumbel restarts the root's statistics: SIMS new visits, the subtrees below are inherited
            np.testing.assert_array_equal(child_visits, SIMS)
        np.testing.assert_array_equal((result.tree.node_visits > 0).sum(1), np.maximum(count, 1) + SIMS)
    kept = np.stack(kept)
    assert (kept[0] == 0).all() and (kept[1:] > 0).all()
    share = kept.sum() / (kept.sum() + SIMS * kept.size)
    assert float(stats.reused_share) == pytest.approx(share, rel=1e-6) and share > 0.1


def test_selfplay_without_reuse_is_the_plain_search_ply_by_ply():
    out, stats, _ = selfplayed("gumbel", False)
    for t, (result, action, start) in enumerate(reference("gumbel", False)):
        assert start is None
        np.testing.assert_array_equal(out.action[t], action)
        np.testing.assert_allclose(out.samples.policy[t], result.policy_target, rtol=1e-5, atol=1e-6)
        assert result.tree.node_visits.shape[1] == SIMS + 1  # no reuse capacity
    assert float(stats.reused_share) == 0.0
    # reuse changes the games' searches (same keys): the second ply inherits and differs
    reused, _, _ = selfplayed("gumbel", True)
    np.testing.assert_array_equal(reused.action[0], out.action[0])
    assert not np.allclose(reused.search_value[1:], out.search_value[1:])


def test_lanes_with_reuse_play_what_each_lane_plays_alone():
    apply_fn, variables = tiny_net(GAME.size)
    play = functools.partial(selfplay.play_games, selfplay_config(), GAME, apply_fn,
                             search_config=reuse_config("puct", True))
    keys = jax.random.split(jax.random.key(9), 2)
    resign = jax.tree.map(lambda x: jnp.stack([x, x]), NEVER)
    lanes, lane_stats, _ = jax.jit(jax.vmap(play, in_axes=(None, 0, 0)))(variables, keys, resign)
    for lane in range(2):
        alone, stats, _ = jax.jit(play)(variables, keys[lane], NEVER)
        np.testing.assert_array_equal(lanes.action[lane], alone.action)
        np.testing.assert_allclose(lanes.search_value[lane], alone.search_value, rtol=1e-5, atol=1e-6)
        assert float(lane_stats.reused_share[lane]) == pytest.approx(float(stats.reused_share), rel=1e-6)


# ---------------------------------------------------------------------------------------------
REUSER, OTHER = "net:preset=tiny,seed=0,sims=8,reuse=1", "net:preset=tiny,seed=1,sims=8"


def test_a_reusing_player_finds_the_grandchild_and_drops_unknown_positions():
    agent = parse_agent(REUSER, GAME)
    states = batch_of_one(GAME.init())  # batch 1: the compiled code of the session tests
    memory = agent.init_memory(agent.params, states)
    action, memory = agent.act_with_memory(agent.params, memory, states, jax.random.key(0))
    assert isinstance(memory, SearchMemory) and (np.asarray(memory.inherited) == 0).all()
    tree = jax.device_get(memory.tree)
    rows = np.arange(1)
    child = tree.children_index[rows, 0, np.asarray(action)]
    reply = np.argmax(tree.children_visits[rows, child], axis=-1).astype(np.int32)  # a reply the tree holds
    after = GAME.step(GAME.step(states, action), jnp.asarray(reply))
    config = search.default_search_config()
    config.num_simulations, config.reuse = 8, True
    _, expected = search.reuse_tree(config, memory.tree, action, jnp.asarray(reply))
    _, again = agent.act_with_memory(agent.params, memory, after, jax.random.key(1))
    np.testing.assert_array_equal(again.inherited, expected)
    assert (np.asarray(expected) > 0).all()
    # the root itself (depth 0) and an unrelated position are not reused
    assert (np.asarray(find_descendant(memory.tree, states)) == -1).all()
    _, fresh = agent.act_with_memory(agent.params, again, states, jax.random.key(2))
    assert (np.asarray(fresh.inherited) == 0).all()


def test_arena_match_with_a_reusing_player_is_legal_deterministic_and_replays_in_sessions():
    first, second = parse_agent(REUSER, GAME), parse_agent(OTHER, GAME)
    lines = [[], [int(np.flatnonzero(GAME.legal_moves(GAME.init()))[0])]]
    result = play_match(GAME, first, second, lines, jax.random.key(0))  # raises on an illegal move
    again = play_match(GAME, first, second, lines, jax.random.key(0))
    np.testing.assert_array_equal(result.moves, again.moves)
    host = play_match(GAME, dataclasses.replace(first, jittable=False), second, lines, jax.random.key(0))
    np.testing.assert_array_equal(host.moves, result.moves)
    # both colours: replay opening 0's two games move by move in a session (one memory per game there)
    for copy in range(2):
        session, reused = GameSession(GAME), []
        players = (first, second) if copy == 0 else (second, first)  # by colour: copy 0 has `first` black
        for move in result.moves[copy, 0]:
            if move < 0:
                break
            mover = players[session.to_move]
            assert session.agent_move(mover, jax.random.key(0)) == move
            if mover is first:
                reused.append(session.reused_nodes)
            session.play(int(move))
        assert session.is_over and reused[0] == 0 and max(reused) > 0


def test_the_session_and_gtp_engine_forget_the_tree_on_undo_and_clear_board():
    engine = GtpEngine(lambda game: parse_agent(REUSER, game), size=GAME.size)
    said = lambda line: engine.handle(line).strip()
    reused = lambda: engine.session.reused_nodes
    assert said("genmove b").startswith("=") and reused() == 0
    assert said("genmove w").startswith("=") and reused() > 0  # one ply down: its own last tree
    assert said("undo") == "=" and reused() is None
    assert said("genmove w").startswith("=") and reused() == 0
    assert said("genmove b").startswith("=") and reused() > 0
    assert said("clear_board") == "=" and reused() is None
    assert said("genmove b").startswith("=") and reused() == 0
    # a session started anew (e.g. a set position) also forgets
    session = GameSession(GAME)
    agent = parse_agent(REUSER, GAME)
    session.play(session.agent_move(agent, jax.random.key(0)))
    session.agent_move(agent, jax.random.key(1))
    assert session.reused_nodes > 0
    session.reset(session.state)
    assert session.reused_nodes is None
    session.agent_move(agent, jax.random.key(1))
    assert session.reused_nodes == 0


def test_reuse_option_is_checked():
    with pytest.raises(ValueError, match="reuse must be 0 or 1"):
        parse_agent("net:preset=tiny,sims=8,reuse=2", GAME)
    with pytest.raises(ValueError, match="needs sims >= 1"):
        parse_agent("net:preset=tiny,reuse=1", GAME)
    agent = parse_agent(REUSER, GAME)
    plain = agent.act(batch_of_one(GAME.init()), jax.random.key(0))  # act alone: no memory, legal
    assert bool(GAME.legal_moves(GAME.init())[int(plain[0])])
    solved = parse_agent(REUSER + ",solve=4", Othello(4))
    assert solved.act_with_memory is None  # the solver's wrapper has no memory


def test_the_equal_time_search_finds_the_closest_simulation_count():
    """bench_reuse's equal-time step brackets the goal and bisects it (it used to stop at the first overshoot)."""
    from experiments.bench_reuse import equal_time_sims

    calls = []

    def measure(sims):  # 0.1 ms per simulation plus a fixed 1 ms
        calls.append(sims)
        return 1e-3 + 1e-4 * sims

    # reuse 64 sims takes 7.8 ms; plain at 64 takes 7.4 ms: 68 simulations match 7.8 ms
    assert equal_time_sims(measure, 64, measure(64), 7.8e-3) == 68
    assert len(set(calls)) == len(calls) and calls[1:] == [74, 69, 66, 67, 68]  # each count once: grow, then bisect
    assert equal_time_sims(measure, 64, measure(64), 7.84e-3) == 68  # 68.4: the nearer of 68 and 69
    assert equal_time_sims(measure, 64, measure(64), 7.86e-3) == 69
    assert equal_time_sims(measure, 10, measure(10), 1.0) == 43  # never reached: the first count past 4x (37 -> 43)
