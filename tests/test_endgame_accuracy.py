"""Endgame accuracy: judged moves against brute force, a perfect agent scores 100%, and the
`endgame-accuracy` command (flags, errors, report)."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from othello_jax.commands import endgame_accuracy
from othello_jax.game import Othello
from othello_jax.game import bitboard as bb
from othello_jax.solver import exact_endgame_act
from othello_jax.solver.move_checks import collect_moves, judge_moves, opening_starts, random_starts, summarize
from tests.solver_helpers import BruteForce, greedy_act, random_act, to_ints

GAME = Othello(8)
EMPTIES = 7


def starts(count: int, seed: int):
    return random_starts(GAME, count, GAME.num_squares - 4 - 12, jax.random.key(seed))


def test_random_agent_judged_like_brute_force():
    states, actions = collect_moves(jax.jit(random_act(GAME)), starts(16, 0), GAME, EMPTIES, jax.random.key(1),
                                    opponent=jax.jit(greedy_act(GAME)))
    assert len(actions) > 16
    checks = judge_moves(states, actions, GAME, backend="c")
    brute = BruteForce(8)
    for m, o, a, e, best, achieved in zip(*to_ints(states), actions, checks.empties, checks.best, checks.achieved,
                                          strict=False):
        assert e == 64 - bin(m | o).count("1") and e <= EMPTIES
        assert best == brute.value(m, o)
        assert achieved == -brute.value(*brute.child(m, o, int(a)))
    report = summarize(checks)
    loss = checks.best - checks.achieved
    assert (loss >= 0).all() and loss.max() > 0  # random play gives discs away
    assert report.positions == len(actions)
    assert report.optimal == pytest.approx(float((loss == 0).mean()))
    assert report.mean_disc_loss == pytest.approx(float(loss.mean()))
    assert report.keeps_result == pytest.approx(float((np.sign(checks.best) == np.sign(checks.achieved)).mean()))
    assert sum(n for n, _, _ in report.by_empties.values()) == report.positions


def test_perfect_endgame_agent_scores_full_marks():
    """The C solver plays, the JAX solver judges."""
    perfect = exact_endgame_act(jax.jit(random_act(GAME)), GAME, EMPTIES, backend="c")
    states, actions = collect_moves(perfect, starts(16, 2), GAME, EMPTIES, jax.random.key(3))
    assert len(actions) > 32  # both sides, so every late move is the agent's
    report = summarize(judge_moves(states, actions, GAME, backend="jax"))
    assert report.keeps_result == 1.0 and report.optimal == 1.0 and report.mean_disc_loss == 0.0


def test_illegal_agent_move_is_reported():
    def pass_always(states, key):
        return np.full(states.ply.shape, GAME.pass_action, np.int32)

    with pytest.raises(ValueError, match="agent chose illegal action 64"):
        collect_moves(pass_always, starts(2, 4), GAME, EMPTIES, jax.random.key(0))


def test_openings_from_the_xot_file(shared_data):
    states = opening_starts(shared_data / "xot" / "openingslarge.txt", GAME, 4, seed=1)
    discs = np.asarray(bb.popcount(states.mover) + bb.popcount(states.opponent))
    assert states.ply.shape == (4,) and (np.asarray(states.ply) == 8).all() and (discs == 12).all()


def test_command_reports_json(capsys):
    code = endgame_accuracy.main(["--agent", "greedy", "--games", "4", "--empties", "6", "--json", "--backend", "c"])
    assert code == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["games"] == 4 and report["max_empties"] == 6 and report["positions"] > 0
    assert 0.0 <= report["optimal"] <= report["keeps_result"] <= 1.0
    assert report["mean_disc_loss"] >= 0


@pytest.mark.parametrize("argv,message", [
    (["--agent", "greedy", "--games", "0"], "--games must be at least 1"),
    (["--agent", "greedy", "--empties", "61"], "--empties must be in 0..60"),
    (["--agent", "greedy", "--backend", "gpu"], "backend must be one of"),
    (["--agent", "greedy", "--openings", "/no/such/file.txt"], "openings file not found"),
    (["--agent", "nosuchkind"], "unknown agent kind"),
])
def test_command_bad_input_is_one_line(capsys, argv, message):
    assert endgame_accuracy.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_command_needs_an_agent(capsys):
    assert endgame_accuracy.main(["--games", "2"]) == 2
    assert "--checkpoint" in capsys.readouterr().err
