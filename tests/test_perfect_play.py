"""The perfect-play yardstick on 6x6: the test set (exact move values, reproducible file,
scoring), the perfect agent (exact moves, its on-disk cache) and games against it (loss
bookkeeping), with the commands and their errors."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from othello_jax.agents import AgentSpecError, parse_agent
from othello_jax.agents.perfect import perfect_agent
from othello_jax.commands import eval as eval_command
from othello_jax.commands import make_testset as make_command
from othello_jax.commands import testset as testset_command
from othello_jax.errors import InputError
from othello_jax.evaluation.arena import play_match
from othello_jax.evaluation.openings import balanced_openings
from othello_jax.evaluation.perfect_play import judge_match
from othello_jax.evaluation.perfect_set import candidates, empties_counts, make_testset, mixed_play_games, score_agent
from othello_jax.game import Othello
from othello_jax.solver import c_solver
from othello_jax.solver import solved_moves as ts
from othello_jax.solver.cache import SolvedPositions
from othello_jax.solver.move_checks import wilson_interval
from tests.solver_helpers import BruteForce

GAME = Othello(6)
pytestmark = pytest.mark.skipif(not c_solver.available(), reason="needs a C compiler for the solver")


@pytest.fixture(scope="module")
def packaged() -> ts.TestSet:
    return ts.load()


def test_packaged_file_shape_and_spread(packaged):
    assert packaged.size == 6 and len(packaged) == 500
    assert packaged.empties.min() == 12 and packaged.empties.max() == 24
    counts = dict(zip(*np.unique(packaged.empties, return_counts=True), strict=True))
    assert counts == empties_counts(500)
    assert ts.informative(packaged).all()  # only positions worth scoring are stored
    keys = {(int(m), int(o)) for m, o in zip(packaged.mover, packaged.opponent, strict=True)}
    assert len(keys) == len(packaged)


@pytest.mark.slow  # ~40 s: 2000 games and a re-solve; the packaged file changes only when remade
def test_packaged_values_are_a_remake(packaged):
    """The stored positions at 12 empties are the first informative candidates of the seeded
    games, and re-solving them (with the JAX solver, independent of the C one) gives the file."""
    found = candidates(GAME, mixed_play_games(GAME, 2000, 0), 12, 0)
    stored = packaged.take(np.flatnonzero(packaged.empties == 12))
    remade = ts.build(jax.tree.map(lambda x: x[:60], found), GAME, backend="c")
    remade = remade.take(np.flatnonzero(ts.informative(remade))[: len(stored)])
    for field in ts.TestSet._fields[1:]:
        np.testing.assert_array_equal(getattr(remade, field), getattr(stored, field), err_msg=field)
    few = stored.take(np.arange(6))
    np.testing.assert_array_equal(ts.build(ts.to_states(few), GAME, backend="jax").values, few.values)


def test_move_values_against_brute_force():
    brute = BruteForce(6)
    rows = make_testset(GAME, count=4, low=8, high=9, seed=1)
    for mover, opponent, values, best in zip(rows.mover.tolist(), rows.opponent.tolist(), rows.values, rows.best,
                                             strict=True):
        assert best == brute.value(mover, opponent)
        for action in np.flatnonzero(values != ts.NO_VALUE):
            square = (action // 6) * 8 + action % 6
            assert values[action] == -brute.value(*brute.child(mover, opponent, int(square)))


def test_remaking_gives_the_same_bytes(tmp_path):
    first = make_testset(GAME, count=8, low=10, high=13, seed=3)
    again = make_testset(GAME, count=8, low=10, high=13, seed=3, workers=2)
    assert len(first) == 8 and ts.to_bytes(first) == ts.to_bytes(again)
    ts.save(first, tmp_path / "t.npz")
    assert (tmp_path / "t.npz").read_bytes() == ts.to_bytes(ts.load(tmp_path / "t.npz"))
    assert ts.to_bytes(make_testset(GAME, count=8, low=10, high=13, seed=4)) != ts.to_bytes(first)


def test_perfect_agent_scores_full_marks_random_does_not(packaged, tmp_path):
    small = packaged.take(np.flatnonzero(packaged.empties <= 14))
    perfect = perfect_agent(GAME, cache=str(tmp_path))
    report = score_agent(perfect.act, small, jax.random.key(0))
    assert report.total.moves == len(small) and report.total.optimal == 1.0 and report.total.disc_loss == 0.0
    low, high = report.total.optimal_interval
    assert low > 0.9 and high == 1.0
    random = score_agent(parse_agent("random", GAME).act, packaged, jax.random.key(0))
    assert random.total.moves == 500 and random.total.disc_loss > 1.0 and random.total.optimal < 0.7
    assert sum(line.moves for line in random.bands.values()) == 500


def test_wilson_interval():
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == 1.0
    low, high = wilson_interval(50, 100)
    assert low == pytest.approx(0.4038, abs=1e-3) and high == pytest.approx(0.5962, abs=1e-3)


class Counting:
    """The C solver, counted."""

    def __init__(self):
        self.calls, self.solver = 0, c_solver.CSolver(6)

    def __call__(self, *args):
        self.calls += 1
        return self.solver.solve(*args)


def test_cache_is_used_and_persists(tmp_path, packaged):
    counting = Counting()
    positions = SolvedPositions(6, tmp_path, solve=counting)
    agent = perfect_agent(GAME, positions=positions)
    rows = packaged.take(np.flatnonzero(packaged.empties == 14)[:4])
    states = ts.to_states(rows)
    first = np.asarray(agent.act(states, jax.random.key(1)))
    assert counting.calls > 0
    calls = counting.calls
    again = np.asarray(agent.act(states, jax.random.key(1)))
    assert counting.calls == calls  # the second call does no solve
    np.testing.assert_array_equal(first, again)  # same key, same choice among equal moves
    assert (rows.values[np.arange(4), first] == rows.best).all()
    fresh = Counting()
    reloaded = perfect_agent(GAME, positions=SolvedPositions(6, tmp_path, solve=fresh))
    np.testing.assert_array_equal(np.asarray(reloaded.act(states, jax.random.key(1))), first)
    assert fresh.calls == 0  # read back from disk


def test_perfect_picks_among_all_best_moves(packaged, tmp_path):
    rows = packaged.take(np.flatnonzero((packaged.empties == 12)
                                        & ((packaged.values == packaged.best[:, None]).sum(axis=1) >= 2))[:1])
    states = jax.tree.map(lambda x: np.repeat(np.asarray(x), 64, axis=0), ts.to_states(rows))
    actions = np.asarray(perfect_agent(GAME, cache=str(tmp_path)).act(states, jax.random.key(5)))
    assert set(actions.tolist()) == set(np.flatnonzero(rows.values[0] == rows.best[0]).tolist())


def _judge(black: str, tmp_path, games: int = 8, plies: int = 18):
    lines = balanced_openings(GAME, games // 2, plies, jax.random.key(2))
    first = parse_agent(black, GAME)
    second = perfect_agent(GAME, cache=str(tmp_path))
    result = play_match(GAME, first, second, lines, jax.random.key(3))
    return result, judge_match(result, SolvedPositions(6, tmp_path))


def test_perfect_against_perfect_loses_nothing(tmp_path):
    result, report = _judge(f"perfect:cache={tmp_path}", tmp_path)
    assert report.all.games == 8 and report.all.disc_loss == 0.0 and report.all.keeps_outcome == 1.0
    assert report.all.flawless == 1.0 and report.moves.total.moves > 0 and report.moves.total.optimal == 1.0
    assert (result.first_disc_diff[0] == -result.first_disc_diff[1]).all()  # both colours: the exact value


def test_random_against_perfect_loses_discs(tmp_path):
    result, report = _judge("random", tmp_path)
    assert report.all.disc_loss > 2.0 and report.black.games == report.white.games == 4
    # the loss per game is the sum of the agent's move losses (forced moves lose nothing)
    assert report.all.disc_loss * report.all.games == pytest.approx(report.moves.total.disc_loss
                                                                    * report.moves.total.moves)
    assert report.moves.total.optimal < 1.0 and (result.first_disc_diff <= 0).mean() > 0.5


@pytest.mark.parametrize("spec,size,message", [
    ("perfect", 8, "only affordable up to 6x6"),
    ("perfect:depth=3", 6, "unknown option 'depth' for perfect"),
])
def test_bad_specs_one_line(spec, size, message):
    with pytest.raises(AgentSpecError, match=message) as info:
        parse_agent(spec, Othello(size))
    assert "\n" not in str(info.value)


def test_eval_reports_against_perfect(capsys, tmp_path):
    code = eval_command.main(["--size=6", "--black=greedy", f"--white=perfect:cache={tmp_path}", "--games=4",
                              "--random-plies=20"])
    out = capsys.readouterr().out
    assert code == 0 and "greedy against perfect play" in out and "disc loss per game" in out and "16-9" in out
    assert eval_command.main(["--size=8", "--black=greedy", "--white=perfect", "--games=2"]) == 2
    assert "only affordable" in capsys.readouterr().err


def test_commands(capsys, tmp_path):
    out = tmp_path / "t.npz"
    assert make_command.main([f"--out={out}", "--count=4", "--low=10", "--high=11", "--workers=1"]) == 0
    assert testset_command.main(["--agent=greedy", f"--file={out}", "--json"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["positions"] == 4 and 0.0 <= report["optimal"] <= 1.0
    assert testset_command.main(["--agent=alphabeta:2"]) == 0
    assert "500 test positions" in capsys.readouterr().out
    assert make_command.main(["--low=20", "--high=10"]) == 2
    assert testset_command.main(["--agent=greedy", f"--file={tmp_path / 'none.npz'}"]) == 2
    assert testset_command.main(["--agent=greedy", "--size=8"]) == 2
    assert "not --size=8" in capsys.readouterr().err


def test_concatenated_parts_are_the_whole_and_sizes_must_agree(packaged):
    """``TestSet.concatenate`` (how made sets are joined) gives back the rows in order, every field;
    parts of different board sizes are a one-line error."""
    rows = len(packaged)
    parts = [packaged.take(np.arange(0, rows // 3)), packaged.take(np.arange(rows // 3, rows))]
    whole = ts.TestSet.concatenate(parts)
    assert len(whole) == rows and whole.size == packaged.size
    for got, expected in zip(whole[1:], packaged[1:], strict=True):
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(InputError, match="positions of different board sizes: 4x4, 6x6"):
        ts.TestSet.concatenate([parts[0], ts.TestSet(4, *parts[1][1:])])
