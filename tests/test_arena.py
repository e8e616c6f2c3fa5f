"""Arena: fair pairing, results, records, openings, gating, and the baselines' strength order."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from othello_jax.agents import Agent, alphabeta, parse_agent
from othello_jax.evaluation import arena, openings
from othello_jax.evaluation.arena import ArenaError, MatchResult, play_match, read_saved_games, score_to_elo
from othello_jax.evaluation.openings import OpeningError
from othello_jax.game import Othello, play_transcript


def from_start(pairs: int) -> list[list[int]]:
    return [[] for _ in range(pairs)]


def match(size: int, first: str, second: str, lines, seed: int = 0) -> MatchResult:
    game = Othello(size)
    return play_match(game, parse_agent(first, game), parse_agent(second, game), lines, jax.random.PRNGKey(seed))


# ---------------------------------------------------------------------------------------------
# strength order of the baselines
# ---------------------------------------------------------------------------------------------
def test_random_against_itself_scores_half():
    summary = match(8, "random", "random", from_start(500)).summary()
    assert summary.games == summary.wins + summary.draws + summary.losses == 1000
    # a game's score has variance <= 1/4: four standard errors
    assert abs(summary.score - 0.5) < 4 * 0.5 / math.sqrt(summary.games)


def test_greedy_beats_random():
    summary = match(8, "greedy", "random", from_start(500)).summary()
    assert summary.score - summary.score_ci > 0.5
    assert summary.mean_disc_diff > 0


@pytest.mark.slow  # a strength check (100 games on 8x8); tests/test_agents.py checks alpha-beta against minimax
def test_alphabeta_depth3_beats_greedy(shared_data):
    game = Othello(8)
    xot = openings.load_openings(shared_data / "xot" / "openingslarge.txt", game)
    lines = openings.sample_openings(xot, 50, jax.random.PRNGKey(0))
    summary = match(8, "alphabeta:depth=3", "greedy", lines).summary()
    assert summary.score > 0.8 and summary.score - summary.score_ci > 0.5
    assert summary.mean_disc_diff > 10


@pytest.mark.slow  # a strength check (64 games); the search itself is checked against mctx (test_search_engine)
def test_rollout_mcts_with_more_simulations_beats_fewer():
    game = Othello(4)
    lines = openings.balanced_openings(game, 32, 2, jax.random.PRNGKey(0))
    summary = match(4, "mcts:sims=32", "mcts:sims=4", lines).summary()
    assert summary.score - summary.score_ci > 0.5


# ---------------------------------------------------------------------------------------------
# pairing, records and the two ways of playing
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_match(shared_data) -> tuple[MatchResult, list[list[int]], Agent, Agent, list]:
    """12 XOT openings, played 5 at a time (the last batch padded)."""
    game = Othello(8)
    xot = openings.load_openings(shared_data / "xot" / "openingslarge.txt", game)
    lines = openings.sample_openings(xot, 12, jax.random.PRNGKey(3))
    first, second = parse_agent("greedy", game), parse_agent("random", game)
    calls = []
    result = play_match(game, first, second, lines, jax.random.PRNGKey(4), batch_size=5,
                        progress=lambda done: calls.append((done.games, done.total, done.ply)))
    return result, lines, first, second, calls


def test_every_opening_is_played_twice_with_colours_swapped(small_match):
    result, lines, first, second, _ = small_match
    records = result.records()
    assert len(records) == 2 * len(lines)
    for i, line in enumerate(lines):
        as_black, as_white = records[2 * i], records[2 * i + 1]
        assert (as_black.black, as_black.white) == (first.name, second.name)
        assert (as_white.black, as_white.white) == (second.name, first.name)
        assert as_black.actions[: len(line)] == as_white.actions[: len(line)] == line
    prefixes = [tuple(r.actions[:8]) for r in records]
    assert all(prefixes.count(tuple(line)) == 2 * lines.count(line) for line in lines)


def test_records_replay_to_the_reported_results(small_match, tmp_path):
    result = small_match[0]
    game = result.game
    path = tmp_path / "games.txt"
    result.save_games(path)
    saved = openings.read_transcripts(path)
    assert len(saved) == len(result.records())
    for (_, transcript), record in zip(saved, result.records(), strict=False):
        state, _ = play_transcript(transcript, game)
        assert bool(state.terminal)
        _, diff = game.outcome(state)
        black_diff = int(diff) if int(state.color) == 0 else -int(diff)
        assert black_diff == record.black_disc_diff
    summary = result.summary()
    scores = result.first_scores
    assert summary.score == pytest.approx(scores.mean())
    assert (summary.wins, summary.draws, summary.losses) == (
        int((scores == 1).sum()), int((scores == 0.5).sum()), int((scores == 0).sum()))


def test_saved_games_read_back_as_the_records_and_a_bad_line_names_itself(small_match, tmp_path):
    result = small_match[0]
    path = tmp_path / "games.txt"
    result.save_games(path)
    records = result.records()
    saved = read_saved_games(path)
    assert [(g.transcript, g.black, g.white, g.black_disc_diff) for g in saved] == [
        (r.transcript(result.game.size), r.black, r.white, r.black_disc_diff) for r in records]
    first, second = records[0].black, records[0].white
    assert [g.side_of(first) for g in saved[:2]] == [0, 1] and saved[0].side_of(second) == 1
    with pytest.raises(ValueError, match="exactly one side"):
        saved[0].side_of("nobody")
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines[:3], lines[3].rsplit("\t", 1)[0] + "\tten", *lines[4:]]) + "\n")
    with pytest.raises(ValueError, match="line 4: not a saved game"):
        read_saved_games(path)


def test_host_loop_plays_the_same_games_as_the_compiled_match(small_match):
    result, lines, first, second, progress = small_match
    games = [done for done, _, _ in progress]
    assert games == sorted(games) and {10, 20, 24} <= set(games) and games[-1] == 24  # each batch ends reported
    assert {total for _, total, _ in progress} == {24}
    assert result.moves.shape[1] == len(lines) and result.black_disc_diff.shape == (2, len(lines))
    host = [dataclasses.replace(agent, jittable=False) for agent in (first, second)]
    again = play_match(result.game, host[0], host[1], lines, jax.random.PRNGKey(4), batch_size=5)
    np.testing.assert_array_equal(again.moves, result.moves)
    np.testing.assert_array_equal(again.black_disc_diff, result.black_disc_diff)


def test_networks_of_one_architecture_share_a_compiled_match():
    """Parameters are arguments of the compiled match, not constants: the second network reuses
    the first one's program, and still plays its own moves (as in the host loop)."""
    game = Othello(4)
    opponent = parse_agent("random", game)
    lines = from_start(8)
    first = play_match(game, parse_agent("net:preset=tiny,seed=0", game), opponent, lines, jax.random.PRNGKey(0))
    other = parse_agent("net:preset=tiny,seed=1", game)
    second = play_match(game, other, opponent, lines, jax.random.PRNGKey(0))
    assert first.compile_seconds > 0 and second.compile_seconds == 0
    host = play_match(game, dataclasses.replace(other, jittable=False), opponent, lines, jax.random.PRNGKey(0))
    np.testing.assert_array_equal(second.moves, host.moves)
    assert not np.array_equal(first.moves, second.moves)


def test_an_illegal_move_is_reported_with_the_agent_name():
    game = Othello(4)
    corner = Agent("corner-grabber", lambda states, key: jnp.zeros(states.ply.shape, jnp.int32))
    with pytest.raises(ArenaError, match="corner-grabber chose an illegal move"):
        play_match(game, corner, parse_agent("random", game), from_start(2), jax.random.PRNGKey(0))


def test_gate_accepts_only_a_stronger_challenger():
    game = Othello(8)  # the same pairs and batch as above: no new compilation
    greedy, random = parse_agent("greedy", game), parse_agent("random", game)
    accepted, score = arena.gate(greedy, random, 1000, 0.52, jax.random.PRNGKey(2), game=game, lines=from_start(500))
    assert accepted and score >= 0.52
    accepted, score = arena.gate(random, random, 1000, 0.55, jax.random.PRNGKey(2), game=game, lines=from_start(500))
    assert not accepted and score < 0.55
    with pytest.raises(ArenaError, match="threshold"):
        arena.gate(greedy, random, 1000, 1.5, jax.random.PRNGKey(2), game=game)


# ---------------------------------------------------------------------------------------------
# openings
# ---------------------------------------------------------------------------------------------
def test_xot_openings_load_and_sample(shared_data):
    game = Othello(8)
    path = shared_data / "xot" / "openingslarge.txt"
    lines = openings.load_openings(path, game)
    assert len(lines) == 10784 and all(len(line) == 8 for line in lines)
    first_transcript = openings.read_transcripts(path)[0][1]
    assert play_transcript(first_transcript, game)[1] == lines[0]
    sample = openings.sample_openings(lines, 300, jax.random.PRNGKey(0))
    assert len({tuple(line) for line in sample}) == 300
    cycled = openings.sample_openings(lines[:3], 7, jax.random.PRNGKey(0))
    assert sorted(map(tuple, cycled)).count(tuple(lines[0])) >= 2 and len(cycled) == 7


def test_bad_opening_files_name_the_problem(tmp_path):
    game = Othello(8)
    path = tmp_path / "openings.txt"
    path.write_text("# comment\nf5d6\n\nf5f5\n")
    with pytest.raises(OpeningError, match=r"opening 2 \(f5f5\): move 2 is illegal"):
        openings.load_openings(path, game)
    path.write_text("f5d6\nf5zz\n")
    with pytest.raises(OpeningError, match="line 2"):
        openings.load_openings(path, game)
    path.write_text("# nothing\n")
    with pytest.raises(OpeningError, match="holds no transcripts"):
        openings.load_openings(path, game)
    with pytest.raises(OpeningError, match="does not exist"):
        openings.load_openings(tmp_path / "missing.txt", game)


def test_forced_passes_are_written_out():
    """A line that leaves a forced pass out replays with the pass inserted."""
    game = Othello(4)
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (256,) + x.shape), game.init())
    played = []
    for key in jax.random.split(jax.random.PRNGKey(0), 10):  # random 4x4 games pass often
        action = game.random_legal_action(states, key)
        played.append(np.where(np.asarray(states.terminal), -1, np.asarray(action)))
        states = game.step(states, action)
    played = np.stack(played, axis=1)
    for row in played:
        passes = np.flatnonzero(row == game.pass_action)
        if passes.size and passes[0] + 2 < row.size and row[passes[0] + 2] >= 0:  # the game goes on after
            line = [int(a) for a in row[: passes[0] + 2]]  # up to the placement after the first pass
            _, normalised = openings.replay([[a for a in line if a != game.pass_action]], game)
            assert normalised[0] == line
            return
    pytest.fail("no random 4x4 game with a pass in its first 8 plies")


def test_balanced_openings_are_distinct_unfinished_and_the_most_even():
    game = Othello(4)  # as in the MCTS match above: the same compiled draw
    lines = openings.balanced_openings(game, 8, 2, jax.random.PRNGKey(7))
    assert len(lines) == 8 and all(len(line) == 2 for line in lines)
    # every 2-ply line of the 4x4 board, by brute force
    every = [[a, b] for a in np.flatnonzero(np.asarray(game.legal_moves(game.init())))
             for b in np.flatnonzero(np.asarray(game.legal_moves(game.step(game.init(), a))))]
    states, _ = openings.replay(every, game)
    assert not np.asarray(states.terminal).any()
    _, values, _ = alphabeta.negamax(states, game, 2)
    black, white = game.black_white(states)
    position = {tuple(line): (int(b), int(w), int(c))
                for line, b, w, c in zip(every, black.lo, white.lo, states.color, strict=False)}
    evenness = {position[tuple(line)]: abs(int(v)) for line, v in zip(every, values, strict=False)}
    chosen = [position[tuple(int(a) for a in line)] for line in lines]
    assert len(set(chosen)) == 8
    assert sorted(evenness[p] for p in chosen) == sorted(evenness.values())[:8]


def test_match_openings_needs_an_even_number_of_games():
    with pytest.raises(ArenaError, match="must be even"):
        arena.match_openings(Othello(8), 7, jax.random.PRNGKey(0))


def test_a_wipeout_is_a_final_difference_of_minus_every_square():
    """``MatchResult.first_wiped_out``: the rules score a position where one side has no disc as
    minus every square for it (the empties go to the winner), and only such games count."""
    from othello_jax.game import bitboard as bb

    game = Othello(8)
    squares = np.zeros(64, bool)
    squares[[0, 1, 9]] = True  # three discs of the mover's opponent, none of the mover's
    none, three = bb.from_grid(np.zeros((8, 8), bool)), bb.from_grid(squares.reshape(8, 8))
    ended = game.from_discs(none, three, color=0)
    assert bool(ended.terminal) and int(game.disc_difference(ended)) == -64
    # black's difference per (copy, opening); copy 1 has the first agent as white
    result = MatchResult(game, "a", "b", [[], []], np.zeros((2, 2, 1), np.int32),
                         np.array([[-64, -62], [64, 0]], np.int32), seconds=0.0)
    np.testing.assert_array_equal(result.first_wiped_out, [[True, False], [True, False]])
    summary = result.summary()
    assert (summary.wiped_out, summary.wiped_out_opponent, summary.losses) == (2, 0, 3)
    assert "W/D/L      0 / 1 / 3  (wipeouts: 0 won, 2 lost)" in arena.format_summary(summary)
    assert "wipeouts" not in arena.format_summary(dataclasses.replace(summary, wiped_out=0))


def test_score_to_elo():
    assert score_to_elo(0.5, 100) == 0
    assert score_to_elo(0.75, 100) == pytest.approx(190.85, abs=0.01)
    assert score_to_elo(1.0, 100) == pytest.approx(-score_to_elo(0.0, 100))
    assert math.isfinite(score_to_elo(1.0, 100))
