"""Labelled sets (othello_jax/evaluation/labels.py, `othello-jax make-labels`): exact move values
checked by brute force, the split by game, reproducible bytes whatever the workers, the cache
reused, self-play positions from the agent, scoring with the test-set scorer, one-line errors."""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

from othello_jax import cli
from othello_jax.agents import parse_agent
from othello_jax.errors import InputError
from othello_jax.evaluation import labels as labels_lib
from othello_jax.evaluation.perfect_set import score_agent
from othello_jax.game import Othello
from othello_jax.solver import c_solver
from othello_jax.solver import solved_moves as ts
from othello_jax.solver.cache import SolvedPositions
from othello_jax.training.supervised.label_targets import targets
from tests.solver_helpers import BruteForce, random_games_6x6

GAME = Othello(6)
BANDS = {(8, 9): 6, (10, 10): 3}
pytestmark = pytest.mark.skipif(not c_solver.available(), reason="needs a C compiler for the solver")


@pytest.fixture(scope="module")
def offdist() -> labels_lib.LabelSet:
    return labels_lib.make_labels(GAME, "offdist", BANDS, seed=1)[0]


def _keys(labels: labels_lib.LabelSet) -> set[tuple[int, int]]:
    return set(zip(labels.positions.mover.tolist(), labels.positions.opponent.tolist(), strict=True))


def test_values_against_brute_force(offdist):
    positions = offdist.positions
    assert len(offdist) == 9 and sorted(positions.empties.tolist()) == [8, 8, 8, 9, 9, 9, 10, 10, 10]
    assert len(_keys(offdist)) == 9 and (positions.values != ts.NO_VALUE).sum(axis=1).min() >= 2
    brute = BruteForce(6)
    for mover, opponent, values, best in zip(positions.mover.tolist(), positions.opponent.tolist(),
                                             positions.values, positions.best, strict=True):
        assert best == brute.value(mover, opponent)
        for action in np.flatnonzero(values != ts.NO_VALUE):
            square = (action // 6) * 8 + action % 6
            assert values[action] == -brute.value(*brute.child(mover, opponent, int(square)))


def test_split_is_by_game(offdist):
    test = offdist.split == "test"
    assert set(offdist.split.tolist()) <= {"train", "test"} and (offdist.source == "offdist").all()
    assert not set(offdist.game[test].tolist()) & set(offdist.game[~test].tolist())
    np.testing.assert_array_equal(test, labels_lib.held_out(offdist.game, 1))
    share = labels_lib.held_out(np.arange(2000), 0).mean()
    assert 0.17 < share < 0.23
    # a game's final result, seen from each of its positions' movers, is one number for black
    black_view = np.where(offdist.positions.color == 0, 1, -1) * offdist.outcome
    for game_id in np.unique(offdist.game):
        assert len(set(black_view[offdist.game == game_id].tolist())) == 1


def test_same_bytes_whatever_the_workers_and_the_cache(offdist, tmp_path):
    cache = SolvedPositions(6, tmp_path)
    again, costs = labels_lib.make_labels(GAME, "offdist", BANDS, seed=1, workers=2, cache=cache)
    assert labels_lib.to_bytes(again) == labels_lib.to_bytes(offdist)
    assert [(c.band, c.positions, c.solved) for c in costs] == [((8, 9), 6, 6), ((10, 10), 3, 3)]
    cached, costs = labels_lib.make_labels(GAME, "offdist", BANDS, seed=1, cache=SolvedPositions(6, tmp_path))
    assert labels_lib.to_bytes(cached) == labels_lib.to_bytes(offdist)
    assert [c.solved for c in costs] == [0, 0] and all(c.cpu_seconds == 0 for c in costs)  # read back from disk
    other = labels_lib.make_labels(GAME, "offdist", BANDS, seed=2)[0]
    assert labels_lib.to_bytes(other) != labels_lib.to_bytes(offdist)


def test_training_rows_solved_for_their_targets_only(tmp_path):
    """``train_solve="targets"``: training rows keep the exact value and the optimal moves of the
    full solve (so the same learning targets) with the other moves ``UNSOLVED``, are never scored,
    and held-out rows are solved in full; the cache and the workers change no byte."""
    full = labels_lib.make_labels(GAME, "offdist", BANDS, seed=1, test_share=0.5)[0]
    cheap = labels_lib.make_labels(GAME, "offdist", BANDS, seed=1, test_share=0.5, train_solve="targets")[0]
    train = cheap.split == "train"
    assert 0 < train.sum() < len(cheap) and (cheap.split == full.split).all()
    a, b = full.positions, cheap.positions
    np.testing.assert_array_equal(a.best, b.best)
    np.testing.assert_array_equal(a.values[~train], b.values[~train])
    optimal = (a.values == a.best[:, None]) & (a.values != ts.NO_VALUE)
    np.testing.assert_array_equal(b.values[train] == b.best[train, None], optimal[train])
    np.testing.assert_array_equal(b.values[train] == ts.UNSOLVED, ~optimal[train] & (a.values[train] != ts.NO_VALUE))
    assert (b.values[train] == ts.UNSOLVED).any()
    for got, want in zip(targets(b), targets(a), strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ts.informative(b), ts.informative(a) & ~train)
    again = labels_lib.make_labels(GAME, "offdist", BANDS, seed=1, test_share=0.5, train_solve="targets",
                                   workers=2, cache=SolvedPositions(6, tmp_path))[0]
    assert labels_lib.to_bytes(again) == labels_lib.to_bytes(cheap)
    cache = SolvedPositions(6, tmp_path)  # read back from disk: every optimal set is known
    cached, costs = labels_lib.make_labels(GAME, "offdist", BANDS, seed=1, test_share=0.5, train_solve="targets",
                                           cache=cache)
    assert labels_lib.to_bytes(cached) == labels_lib.to_bytes(cheap) and [c.solved for c in costs] == [0, 0]
    every_move = SolvedPositions(6, tmp_path / "full")  # a cache that knows every move's value
    labels_lib.make_labels(GAME, "offdist", BANDS, seed=1, test_share=0.5, cache=every_move)
    reduced = labels_lib.make_labels(GAME, "offdist", BANDS, seed=1, test_share=0.5, train_solve="targets",
                                     cache=every_move)[0]
    assert labels_lib.to_bytes(reduced) == labels_lib.to_bytes(cheap)
    brute = BruteForce(6)
    for mover, opponent in zip(b.mover[train].tolist(), b.opponent[train].tolist(), strict=True):
        value, mask = cache.value(mover, opponent), cache.optimal[mover, opponent]
        assert value == brute.value(mover, opponent)
        legal = cache.legal(mover, opponent)
        kept = {sq for sq in range(64) if legal >> sq & 1 and -brute.value(*brute.child(mover, opponent, sq)) == value}
        assert kept == {sq for sq in range(64) if mask >> sq & 1}
    with pytest.raises(InputError, match="train_solve"):
        labels_lib.make_labels(GAME, "offdist", BANDS, train_solve="some")


def test_selfplay_games_are_the_agents():
    """After the sampled plies every move is the agent's (a deterministic one here), and the
    positions are not the off-distribution ones."""
    agent = parse_agent("alphabeta:1", GAME)
    opening = labels_lib.opening_agent("alphabeta:1", GAME)
    trace = labels_lib.selfplay_games(GAME, agent, opening, 8, 4, jax.random.key(0))
    step = jax.jit(GAME.step)
    for ply in range(4, 30):
        states = jax.tree.map(lambda x: x[ply], trace)
        after = step(states, agent.act(states, jax.random.key(ply)))
        for got, want in zip(jax.tree.leaves(after), jax.tree.leaves(trace), strict=True):
            np.testing.assert_array_equal(np.asarray(got), want[ply + 1])
    assert len({trace.mover.lo[4, g].item() for g in range(8)}) > 1  # the opening differs between games
    assert "temp=1" in labels_lib.opening_agent("net:preset=tiny", GAME).name


def test_selfplay_set_and_scoring(offdist, tmp_path):
    spec = "net:preset=tiny,sims=0"
    labels, _ = labels_lib.make_labels(GAME, f"selfplay:{spec}", {(9, 10): 4}, seed=1)
    assert (labels.source == f"selfplay:{spec}").all() and len(labels) == 4
    assert not _keys(labels) & _keys(offdist)
    labels_lib.save(labels, tmp_path / "s.npz")
    assert labels_lib.to_bytes(labels_lib.load(tmp_path / "s.npz")) == labels_lib.to_bytes(labels)
    testset = ts.load(tmp_path / "s.npz")  # what `othello-jax testset --file` reads
    report = score_agent(parse_agent("random", GAME).act, testset, jax.random.key(0), bands=((10, 9),))
    assert report.total.moves == ts.informative(testset).sum() and 0 <= report.total.optimal <= 1


def test_command_and_bad_options(capsys, tmp_path):
    out = tmp_path / "c.npz"
    assert cli.main(["make-labels", "--source=offdist", "--per-band=8:2", f"--out={out}", "--workers=1",
                     f"--cache={tmp_path}"]) == 0
    printed = capsys.readouterr().out
    assert "2 positions" in printed and "CPU s/pos" in printed and len(labels_lib.load(out)) == 2
    # `othello-jax testset --file` on it: its 8-empty positions get a band of their own in the table
    assert cli.main(["testset", "--agent=random", f"--file={out}"]) == 0
    table = capsys.readouterr().out
    every = re.search(r"^ +all +(\d+) ", table, re.M)
    assert every and re.search(rf"^ +11-8 +{every.group(1)} ", table, re.M), table
    for options in (["--per-band=8-12"], ["--per-band=8-12:x"], ["--per-band=12-8:4"], ["--per-band=8-12:4,10-14:4"],
                    ["--per-band=8-40:4"], ["--source=selfplay"], ["--source=nets"], ["--workers=0"],
                    ["--source=selfplay:bogus"], ["--train-solve=values"]):
        argv = ["make-labels", "--source=offdist", f"--out={out}", "--cache=", *options]
        assert cli.main(argv) == 2, options
        err = capsys.readouterr().err.strip()
        assert err.startswith("othello-jax make-labels: error:") and "\n" not in err, err


def test_the_label_cost_benchmark_times_every_method_and_checks_the_optimal_moves(tmp_path, capsys):
    """``python -m experiments.bench_labels`` on a small labels file: one row per band, and the
    policy labels agree with the optimal moves of every move's exact value (the script checks)."""
    from experiments import bench_labels

    positions = random_games_6x6(6, 32, seed=4)
    mover, opponent = (np.asarray(side, np.uint64) for side in zip(*positions, strict=True))
    path = tmp_path / "labels.npz"
    np.savez(path, size=np.int32(6), mover=mover, opponent=opponent,
             empties=np.asarray([36 - (me | you).bit_count() for me, you in positions], np.int8))
    assert bench_labels.main(["--labels", str(path), "--bands", "5-8,9-12", "--per-band", "6"]) == 0
    out = capsys.readouterr().out
    for band in ("5-8", "9-12"):
        assert re.search(rf"^ +{band} +6( +\d+\.\d\d){{4}}$", out, re.M), out
    assert "optimal move sets agree" in out
    assert bench_labels.main(["--labels", str(tmp_path / "missing.npz")]) == 2
