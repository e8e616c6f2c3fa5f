"""`analyze`: the network's policy and value and the search's visits, for board strings and
transcripts, and one-line errors for bad input."""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from othello_jax.agents import playing_search_config
from othello_jax.checkpoint import load_agent_variables
from othello_jax.commands import analyze
from othello_jax.evaluation.analysis import Analyzer, format_analysis, format_value
from othello_jax.game import Othello, play_transcript, square_name
from othello_jax.model import make_network
from tests.tiny_checkpoint import save_tiny_checkpoint


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> str:
    return str(save_tiny_checkpoint(tmp_path_factory.mktemp("tiny4"), board_size=4))


def test_analysis_matches_the_network_and_counts_every_simulation(checkpoint):
    network, variables, size = load_agent_variables(checkpoint)
    game, net = Othello(size), make_network(size, network)
    analyzer = Analyzer(game, functools.partial(net.apply, train=False), variables,
                        playing_search_config("gumbel", 12))
    state, _ = play_transcript("b1", game)
    analysis = analyzer.analyze(state, jax.random.PRNGKey(0))

    logits, value = net.apply(variables, game.observation(state)[None], train=False)
    legal = np.asarray(game.legal_moves(state))
    prior = np.asarray(jax.nn.softmax(jnp.where(legal, logits[0], -jnp.inf)))
    assert analysis.network_value == pytest.approx(float(value[0]), abs=1e-5)
    assert sorted(m.action for m in analysis.moves) == list(np.flatnonzero(legal))
    for move in analysis.moves:
        assert move.prior == pytest.approx(float(prior[move.action]), abs=1e-5)
        assert move.square == square_name(move.action, size)
    assert sum(m.visits for m in analysis.moves) == analysis.simulations == 12
    visits = [m.visits for m in analysis.moves]
    assert visits == sorted(visits, reverse=True)
    assert analysis.best in [m.action for m in analysis.moves]
    assert -1 <= analysis.search_value <= 1

    table = format_analysis(analysis, top=2)
    assert f"network value {analysis.network_value:+.2f}" in table
    assert len(table.splitlines()) == 2 + 2 + 1  # header lines, two moves, "... more"


def test_a_margin_network_is_read_as_a_result_and_a_margin_not_a_winning_chance(checkpoint):
    """With ``value_margin`` the values printed name the result and the discs they stand for."""
    game = Othello(6)
    win_by_10, lose_by_4 = (float(game.result_value(d, 0.5)) for d in (10, -4))
    assert format_value(0.3, game) == "+0.30 (65%)"
    assert format_value(win_by_10, game, 0.5) == f"{win_by_10:+.2f} (wins by ~10)"
    assert format_value(lose_by_4, game, 0.5) == f"{lose_by_4:+.2f} (loses by ~4)"
    assert format_value(0.05, game, 0.5) == "+0.05 (about a draw)"

    network, variables, size = load_agent_variables(checkpoint)
    game, net = Othello(size), make_network(size, network)
    analyzer = Analyzer(game, functools.partial(net.apply, train=False), variables,
                        playing_search_config("gumbel", 8), value_margin=0.5)
    analysis = analyzer.analyze(play_transcript("b1", game)[0], jax.random.PRNGKey(0))
    assert analysis.value_margin == 0.5
    header = format_analysis(analysis).splitlines()[0]
    assert format_value(analysis.network_value, game, 0.5) in header and "%)" not in header


def test_analyze_command_prints_board_values_and_moves(checkpoint, capsys):
    code = analyze.main([f"--checkpoint={checkpoint}", "--board=-XO--XO--OX--X-- O", "--sims=8", "--top=3"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "white to move" in out and "after 8 simulations" in out
    rows = [line.split() for line in out.splitlines() if re.fullmatch(r"\s+[a-d][1-4]\s+\d+\s+[\d.]+%\s+\S+", line)]
    assert 1 <= len(rows) <= 3
    visits = [int(row[1]) for row in rows]
    assert visits == sorted(visits, reverse=True)


def test_analyze_reports_a_finished_game_without_searching(checkpoint, capsys):
    # black owns every disc: nobody can move
    assert analyze.main([f"--checkpoint={checkpoint}", "--board=XX" + "-" * 14 + " O"]) == 0
    assert "game over: black wins 16-0" in capsys.readouterr().out  # empties go to the winner


@pytest.mark.parametrize("options, message", [
    (["--checkpoint=/no/such/run"], "checkpoint path /no/such/run does not exist"),
    (["--moves=a1"], "move 1 (a1) is illegal in this position"),
    (["--moves=b1z"], "transcript has an unreadable move"),
    (["--board=" + "-" * 36 + " X"], "the board string is 6x6 but this game is 4x4"),
    (["--board=XO-Q------------ X"], "only X, O and - are allowed"),
    (["--sims=0"], "--sims must be at least 1"),
    (["--top=0"], "--top must be at least 1"),
    ([], "--checkpoint=PATH is required"),
])
def test_bad_input_is_one_line_error(checkpoint, capsys, options, message):
    if not any(o.startswith("--checkpoint") for o in options) and options:
        options = [f"--checkpoint={checkpoint}"] + options
    assert analyze.main(options) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("othello-jax analyze: ") and message in err, err
    assert len(err.splitlines()) == 1
