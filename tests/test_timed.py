"""Play on the clock: the chunked search builds run_search's trees, a timed move stops within its
time plus one chunk and searches more with more time, the endgame solver's time is counted, and
game clocks give sensible budgets."""

from __future__ import annotations

import functools
import io

import jax
import numpy as np
import pytest

from othello_jax.agents import playing_search_config
from othello_jax.agents import timed as timed_module
from othello_jax.agents.time_control import GameClock, MoveBudget, gtp_clock
from othello_jax.agents.timed import TimedMove, TimedSearch, solve_depth
from othello_jax.game import Othello, batch_of_one, play_transcript
from othello_jax.game.ggf import parse_clock, parse_game
from othello_jax.game.one_position import legal_actions as legal_actions_on_host
from othello_jax.interface.gtp_server import GtpEngine
from othello_jax.interface.nboard_server import NboardEngine
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


# puct (no schedule to plan, 42 s of CI) only with -m ""; gumbel, the default, in CI
@pytest.mark.parametrize("variant", ["gumbel", pytest.param("puct", marks=pytest.mark.slow)])
def test_chunks_build_the_tree_of_one_search(variant):
    apply_fn, variables = tiny_net(6)
    config = playing_search_config(variant, 40)
    states = jax.tree.map(lambda *x: np.stack(x), GAME.init(), play_transcript("c2", GAME)[0])
    key = jax.random.PRNGKey(3)
    whole = run_search(config, apply_fn, variables, states, key, GAME)
    # chunks of 16, 16 and 8 simulations in a tree with room for more (one compile of each program)
    chunked = ChunkedSearch(config, apply_fn, GAME, chunk=16, capacity=160).run(variables, states, key, 40)
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


# puct's chunks build its one-call tree (above); the clock around them is the variants' same code,
# so CI times puct's moves only with -m "" (slow: a second search compiled, 23 s of CI)
@pytest.mark.parametrize("variant", ["gumbel", pytest.param("puct", marks=pytest.mark.slow)])
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
    assert gtp_clock(0, 10, 0) is None  # byoyomi without stones: no time limit
    increment = GameClock(main=60.0, increment=2.0)
    assert increment.move_seconds(60) > GameClock(main=60.0).move_seconds(60)


def test_gtp_time_commands_set_the_budget_of_each_move():
    timed = timed_search()
    budget = MoveBudget(simulations=16)
    engine = GtpEngine(lambda game: timed.agent(budget), size=6, sizes=(6,), budget=budget)

    def genmove() -> TimedMove:
        response = engine.handle("genmove b" if engine.session.to_move == 0 else "genmove w")
        assert response.startswith("= ") and "pass" not in response, response
        return timed.last_move

    assert genmove().simulations == 16  # no clock: the --sims search (black's first move)
    assert engine.handle("time_settings 60 0 0") == "=\n\n"
    first = genmove()  # white, 31 empties
    assert first.seconds == pytest.approx(GameClock(main=60.0).move_seconds(31), abs=0.125)
    assert budget.clocks[1].main == pytest.approx(60.0 - first.seconds)  # white's clock charged
    assert engine.handle("time_left b 2 0") == "=\n\n"  # black is nearly out of time
    short = genmove()
    assert short.simulations < first.simulations and short.seconds <= 2.0
    assert engine.handle("time_left w 10 5") == "=\n\n"  # white in byoyomi: 10 s for 5 moves
    assert genmove().seconds == pytest.approx(_byoyomi_move(10, 5), abs=0.125)
    assert engine.handle("time_settings 0 10 0") == "=\n\n"  # no time limit: back to --sims
    assert genmove().simulations == 16
    budget.simulations = 5
    assert genmove().simulations == 5  # not rounded up to whole chunks
    for bad in ("time_settings 60 0", "time_left b x 0", "time_left q 10 0", "time_settings -5 0 0",
                "time_settings nan 0 0"):
        assert engine.handle(bad).startswith("? syntax error"), bad


def _byoyomi_move(seconds: float, stones: int) -> float:
    clock = GameClock(main=0.0, byoyomi=seconds, stones=stones)
    clock.set_left(seconds, stones)
    return clock.move_seconds(20)


def test_nboard_reads_the_game_clock_and_the_times_of_the_moves():
    timed = timed_search()
    budget = MoveBudget(simulations=16)
    engine = NboardEngine(lambda game: timed.agent(budget), size=6, sizes=(6,), budget=budget)
    record = "(;GM[Othello]PC[NBoard]TI[1:00]TY[6]B[C2//20.5]W[B2//3];)"
    list(engine.handle("set game " + record))
    assert engine.game_clock == (60.0, 0.0)
    lines = list(engine.handle("go"))
    assert lines[-1].startswith("=== ")
    black_left = 60.0 - 20.5
    assert timed.last_move.seconds == pytest.approx(GameClock(main=black_left).move_seconds(30), abs=0.125)
    move = lines[-1].split()[1].split("/")[0]
    list(engine.handle(f"move {move}//5"))
    list(engine.handle("go"))  # white: 60 - 3 left
    assert timed.last_move.seconds == pytest.approx(GameClock(main=57.0).move_seconds(29), abs=0.125)
    assert engine._used[0] == [20.5, 5.0]
    list(engine.handle("set game (;GM[Othello]TY[6];)"))
    assert engine.game_clock is None  # a game without a clock: the command line's budget
    list(engine.handle("go"))
    assert timed.last_move.simulations == 16


def test_ggf_clock_and_move_times_are_read():
    record = parse_game("(;GM[Othello]TI[5:00/2]TY[8]B[F5//2.5]W[D6/1.0/1:02]B[C3];)")
    assert record.clock == (300.0, 2.0)
    assert record.seconds_used(0) == 2.5 and record.seconds_used(1) == 62.0
    assert [move.seconds for move in record.moves] == [2.5, 62.0, None]
    assert parse_game("(;GM[Othello]TY[8];)").clock is None
    assert parse_clock("15:00//2:00") == (900.0, 0.0) and parse_clock("1:00:00") == (3600.0, 0.0)
    assert parse_clock("junk") is None and parse_clock("0") is None


@pytest.mark.parametrize("options, message", [
    (["--checkpoint=builtin:6x6", "--seconds=0"], "--seconds must be a positive number"),
    (["--checkpoint=builtin:6x6", "--seconds=nan"], "--seconds must be a positive number"),
    (["--checkpoint=builtin:6x6", "--clock=5:00"], "--clock must be SECONDS"),
    (["--agent=random", "--seconds=1"], "need a network"),
])
def test_bad_time_options_are_one_line_errors(options, message, capsys):
    from othello_jax.commands import play

    assert play.main(options, stdin=io.StringIO(""), stdout=io.StringIO()) == 2
    error = capsys.readouterr().err.strip()
    assert message in error and len(error.splitlines()) == 1


def test_play_and_engine_on_the_clock_end_to_end(monkeypatch, capsys):
    """`play --seconds` and `engine` with GTP time commands, in process, on the shipped 6x6 network
    (no solver: every move searched)."""
    from othello_jax.commands import engine, play

    out = io.StringIO()
    assert play.main(["--checkpoint=builtin:6x6", "--seconds=0.3", "--color=white", "--no-solve"],
                     stdin=io.StringIO("quit\n"), stdout=out) == 0
    text = out.getvalue()
    assert "black (network, 0.3 s a move) plays" in text and " simulations in " in text, text
    conversation = "boardsize 6\ntime_settings 20 0 0\ntime_left b 3 0\ngenmove b\ntime_left w 1 5\ngenmove w\nquit\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(conversation))
    assert engine.main(["--checkpoint=builtin:6x6", "--no-solve"]) == 0
    replies = [reply for reply in capsys.readouterr().out.split("\n\n") if reply]
    assert replies[:3] == ["=", "=", "="] and replies[3].startswith("= ") and replies[5].startswith("= "), replies
