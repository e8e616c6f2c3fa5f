"""``experiments/endgame_anatomy``: the C solver's results and result-keeping moves along saved games,
checked against the JAX solver (an independent implementation), and the thrown-away/lost-before
split they imply."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from experiments import endgame_anatomy
from othello_jax.agents import parse_agent
from othello_jax.evaluation.arena import match_openings, play_match
from othello_jax.game import Othello
from othello_jax.solver import solve_batch_jit as solve_batch

EMPTIES = 10  # 12 took two of CI's minutes in the JAX solver (at -O0) for the same checks


@pytest.fixture(scope="module")
def saved_games(tmp_path_factory):
    game = Othello(6)
    openings_key, play_key = jax.random.split(jax.random.key(3))
    result = play_match(game, parse_agent("greedy", game), parse_agent("random", game),
                        match_openings(game, 8, openings_key), play_key)
    path = tmp_path_factory.mktemp("anatomy") / "games.txt"
    result.save_games(path)
    return path


def test_results_and_keeping_moves_match_the_jax_solver(saved_games):
    game = Othello(6)
    games = endgame_anatomy.read_games(str(saved_games), "greedy", 6, EMPTIES)
    assert len(games) == 8
    moves = [m for g in games for m in g.moves]
    assert len(moves) >= 8 * 4 and all(m.empties <= EMPTIES for m in moves)
    states = endgame_anatomy.as_states(moves, game)
    legal = np.asarray(game.legal_moves(states))
    # the positions and all their children in one batch: one solver program to compile
    rows = [(row, np.flatnonzero(legal[row][:game.pass_action])) for row in range(len(moves))]
    parents = np.concatenate([np.full(len(actions), row) for row, actions in rows])
    children = jax.vmap(game.step)(jax.tree.map(lambda x: x[parents], states),
                                   np.concatenate([actions for _, actions in rows]).astype(np.int32))
    both = jax.tree.map(lambda a, b: np.concatenate([a, b]), states, children)
    solved = np.asarray(solve_batch(both, game, EMPTIES).score)
    scores, child_scores = solved[:len(moves)], solved[len(moves):]
    np.testing.assert_array_equal([m.result for m in moves], np.sign(scores))
    start = 0
    for (_, actions), move in zip(rows, moves, strict=True):
        kept = -np.sign(child_scores[start:start + len(actions)]) >= move.result
        start += len(actions)
        squares = endgame_anatomy.solver_squares(actions, game)
        assert move.keeping == {s for s, k in zip(squares, kept, strict=True) if k}
        assert move.played in squares


def test_a_game_not_thrown_away_was_already_lost_and_the_report_adds_up(saved_games, capsys):
    games = endgame_anatomy.read_games(str(saved_games), "random", 6, EMPTIES)
    for g in games:
        if g.thrown_away is None and g.moves:  # every move kept its result: only the opponent changes it, upwards
            results = [m.result for m in g.moves]
            assert results == sorted(results) and np.sign(g.player_margin) >= results[-1]
    endgame_anatomy.main(["--games", str(saved_games), "--player", "random", "--size", "6", "--empties", str(EMPTIES)])
    out = capsys.readouterr().out.splitlines()
    not_won = sum(g.player_margin <= 0 for g in games)
    thrown = sum(g.player_margin <= 0 and g.thrown_away is not None for g in games)
    assert out[0].startswith(f"8 games, {not_won} not won by random: {thrown} thrown away at <= {EMPTIES} empties")


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    both = tmp_path / "both.txt"
    both.write_text("d3c3\tnet:a\tnet:b\t+0\n")
    garbled = tmp_path / "garbled.txt"
    garbled.write_text("d3c3 net:a greedy\n")
    for path, message in [(both, "exactly one side must be the player 'net': net:a vs net:b"),
                          (garbled, "line 1: not a saved game (transcript, black, white, black minus white discs)"),
                          (tmp_path / "none.txt", "does not exist")]:
        with pytest.raises(SystemExit) as exit_info:
            endgame_anatomy.main(["--games", str(path)])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert "error: " in err[-1] and message in err[-1]
