"""Play on the clock: the chunked search builds run_search's trees, a timed move stops within its
time plus one chunk and searches more with more time, the endgame solver's time is counted, and
game clocks give sensible budgets."""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

from othello_jax.agents import playing_search_config
from othello_jax.agents import timed as timed_module
from othello_jax.agents.time_control import GameClock, gtp_clock
from othello_jax.agents.timed import TimedSearch, legal_actions_on_host, solve_depth
from othello_jax.game import Othello, batch_of_one, play_transcript
from othello_jax.search import run_search
from othello_jax.search.chunked import FIRST_PLAN, ChunkedSearch
from othello_jax.search.policies import considered_visits
from tests.conftest import tiny_net

GAME = Othello(6)


class FakeClock:
    """Seconds that pass only when told: each compiled chunk costs ``per_chunk``."""

    def __init__(self, per_chunk: float):
        self.now, self.per_chunk = 100.0, per_chunk

    def __call__(self) -> float:
        return self.now


def timed_search(variant: str = "gumbel", per_chunk: float = 0.125, solve_empties: int = 0) -> TimedSearch:
    """A tiny 6x6 network's timed search on a fake clock (its chunks advance the clock), with no
    speed remembered from earlier moves."""
    timed = _timed_search(variant, solve_empties)
    timed.clock.per_chunk, timed.chunk_seconds = per_chunk, None
    return timed


@functools.cache
def _timed_search(variant: str, solve_empties: int) -> TimedSearch:
    apply_fn, variables = tiny_net(6)
    clock = FakeClock(0.125)
    timed = TimedSearch(GAME, apply_fn, variables, playing_search_config(variant, 16), solve_empties=solve_empties,
                        chunk=8, capacity=256, clock=clock)
    advance = timed.search.advance

    def ticking(*args):
        clock.now += clock.per_chunk
        return advance(*args)

    timed.search.advance = ticking
    timed.prepare()
    return timed


@pytest.mark.parametrize("variant", ["gumbel", "puct"])
def test_chunks_build_the_tree_of_one_search(variant):
    apply_fn, variables = tiny_net(6)
    config = playing_search_config(variant, 40)
    states = jax.tree.map(lambda *x: np.stack(x), GAME.init(), play_transcript("c2", GAME)[0])
    key = jax.random.PRNGKey(3)
    whole = run_search(config, apply_fn, variables, states, key, GAME)
    for capacity in (40, 160):  # chunks of 8 fill the tree exactly, or leave room
        chunked = ChunkedSearch(config, apply_fn, GAME, chunk=8, capacity=capacity).run(variables, states, key, 40)
        np.testing.assert_array_equal(chunked.visit_counts, whole.visit_counts)
        np.testing.assert_array_equal(chunked.action, whole.action)
        np.testing.assert_allclose(chunked.q, whole.q, atol=1e-6)
        np.testing.assert_allclose(chunked.policy_target, whole.policy_target, atol=1e-6)


def test_the_first_chunk_does_not_depend_on_the_plan():
    """Gumbel's schedule for the first plan is a prefix of every longer plan's over its first
    chunk, so the plan can be made after it; past the plan the schedule goes on."""
    chunk = 32
    first = considered_visits(16, FIRST_PLAN * chunk)
    for planned in range(FIRST_PLAN * chunk, 8192, 97):
        np.testing.assert_array_equal(considered_visits(16, planned)[:, :chunk], first[:, :chunk])
    longer = considered_visits(16, 100, 400)
    np.testing.assert_array_equal(longer[:, :100], considered_visits(16, 100))
    assert np.all(np.diff(longer[2:, 100:], axis=1) >= 0)


@pytest.mark.parametrize("variant", ["gumbel", "puct"])
def test_a_timed_move_stops_within_its_time_and_one_chunk(variant):
    timed = timed_search(variant)
    state = GAME.init()
    counts = []
    for seconds in (0.05, 0.35, 1.0, 2.0):  # chunks of 0.125 s: 1, 2, 8 and 16 of them
        move = timed.move(state, jax.random.PRNGKey(0), seconds)
        assert move.source == "search" and move.action in legal_actions_on_host(state, GAME)
        assert move.seconds <= max(seconds, 0.0) + timed.clock.per_chunk + 1e-9
        assert move.simulations == int(np.asarray(move.result.visit_counts).sum())
        counts.append(move.simulations)
    assert counts == sorted(counts) and counts == [8, 16, 64, 128]  # more time, more simulations


def test_a_loaded_machine_gets_fewer_simulations_not_more_time():
    timed = timed_search()
    timed.move(GAME.init(), jax.random.PRNGKey(0), 1.0)  # remembers chunks of 0.125 s
    timed.clock.per_chunk = 0.5  # the machine slows down in the middle of a game
    move = timed.move(GAME.init(), jax.random.PRNGKey(0), 1.0)
    assert move.seconds == 1.0 and move.simulations == 2 * 8


def test_a_single_legal_move_is_answered_at_once():
    timed = timed_search()
    only = _positions(lambda state: len(legal_actions_on_host(state, GAME)) == 1)
    assert only, "no position with one legal move found"
    for position in only:
        assert legal_actions_on_host(position, GAME) == [int(a) for a in
                                                         np.flatnonzero(np.asarray(GAME.legal_moves(position)))]
        move = timed.move(position, jax.random.PRNGKey(0), 5.0)
        assert move.source == "only move" and move.seconds == 0.0 and move.simulations == 0
        assert move.action == legal_actions_on_host(position, GAME)[0]


def _positions(wanted, count: int = 4) -> list:
    """Up to ``count`` positions of random 6x6 games that are ``wanted``."""
    rng = np.random.default_rng(0)
    found = []
    for _ in range(20):
        state = GAME.init()
        while not bool(state.terminal) and len(found) < count:
            if wanted(state):
                found.append(state)
            state = GAME.step(state, np.int32(rng.choice(legal_actions_on_host(state, GAME))))
    return found


def _empties(state) -> int:
    return int(timed_module.empties_on_host(batch_of_one(state), GAME)[0])


def test_the_solver_time_is_the_move_time(monkeypatch):
    timed = timed_search(solve_empties=8)
    real_solve = timed_module.solve

    def slow_solve(*args, **kwargs):
        timed.clock.now += 0.7
        return real_solve(*args, **kwargs)

    monkeypatch.setattr(timed_module, "solve", slow_solve)
    state = _positions(lambda state: _empties(state) <= 8 and len(legal_actions_on_host(state, GAME)) > 1)[0]
    move = timed.move(state, jax.random.PRNGKey(0), 5.0)
    assert move.source == "solver" and move.seconds == pytest.approx(0.7)
    assert move.action in legal_actions_on_host(state, GAME)
    assert solve_depth(5.0, 8) == 8 and solve_depth(0.25, 18) == 16 and solve_depth(0.001, 18) == 8


def test_a_timed_agent_plays_legal_moves_in_a_batch():
    timed = timed_search()
    agent = timed.agent(0.2)
    states = jax.tree.map(lambda *x: np.stack(x), GAME.init(), play_transcript("c2", GAME)[0])
    actions = agent.act(states, jax.random.PRNGKey(0))
    legal = np.asarray(GAME.legal_moves(states))
    assert legal[0, actions[0]] and legal[1, actions[1]] and not agent.jittable


def test_game_clocks_spread_the_main_time_and_keep_a_margin():
    assert GameClock(per_move=2.5).move_seconds(40) == 2.5
    clock = GameClock(main=300.0)
    first = clock.move_seconds(60)
    assert 5.0 < first < 300.0 / 30
    clock.spend(first)
    assert clock.main == pytest.approx(300.0 - first)
    assert GameClock(main=1.0).move_seconds(60) < 1.0  # never past the time left
    assert GameClock(main=0.0).move_seconds(60) > 0  # out of time: still a (tiny) move
    assert GameClock(main=10.0).move_seconds(4) == pytest.approx((10 * 0.9 - 0.3) / 6)  # at least 6 moves ahead
    # Canadian byoyomi: 30 s for 5 moves once the main time is gone
    clock = gtp_clock(0, 30, 5)
    clock.set_left(30, 5)
    assert clock.move_seconds(20) == pytest.approx((30 * 0.9 - 0.3) / 5)
    clock.spend(5.0)
    assert clock.period == 25.0 and clock.period_stones == 4
    assert gtp_clock(0, 10, 0).main is None  # byoyomi without stones: no time limit
    increment = GameClock(main=60.0, increment=2.0)
    assert increment.move_seconds(60) > GameClock(main=60.0).move_seconds(60)
