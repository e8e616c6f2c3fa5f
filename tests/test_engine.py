"""The GTP engine: protocol framing, errors, game commands, and whole games over a subprocess."""

from __future__ import annotations

import io
import os
import re
import shlex
import subprocess
import sys
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from othello_jax.agents import parse_agent
from othello_jax.agents.gtp import gtp_agent
from othello_jax.evaluation.arena import match_openings, play_match
from othello_jax.game import Othello, parse_board, play_transcript
from othello_jax.interface.gtp_server import GtpEngine, format_response, parse_command, serve
from tests.tiny_checkpoint import save_tiny_checkpoint


def first_legal_agent(game: Othello):
    """Plays the lowest-numbered legal action (deterministic, so games are reproducible)."""
    return types.SimpleNamespace(
        name="first-legal",
        act=lambda state, key: jnp.argmax(game.legal_moves(state), axis=-1).astype(jnp.int32),
    )


def reply(engine: GtpEngine, line: str) -> str:
    response = engine.handle(line)
    assert response is not None and response.endswith("\n\n"), response
    return response


@pytest.fixture
def engine() -> GtpEngine:
    return GtpEngine(first_legal_agent)


# ---- framing ------------------------------------------------------------------------------
def test_parse_command_ids_comments_and_control_characters():
    assert parse_command("12 play b d3") == ("12", "play", ("b", "d3"))
    assert parse_command("  GENMOVE\tw  # comment") == ("", "genmove", ("w",))
    assert parse_command("na\x01me") == ("", "name", ())
    assert parse_command("# only a comment") is None
    assert parse_command("   ") is None


def test_format_response_success_failure_and_no_blank_lines_inside():
    assert format_response("3", "d3") == "=3 d3\n\n"
    assert format_response("", "") == "=\n\n"
    assert format_response("7", "unknown command", ok=False) == "?7 unknown command\n\n"
    assert format_response("", "a\n\nb") == "= a\nb\n\n"


def test_basic_commands_echo_ids(engine):
    assert reply(engine, "1 protocol_version") == "=1 2\n\n"
    assert reply(engine, "2 name") == "=2 othello-jax\n\n"
    assert reply(engine, "version").startswith("= ")
    assert reply(engine, "5 known_command genmove") == "=5 true\n\n"
    assert reply(engine, "known_command fly") == "= false\n\n"
    listed = reply(engine, "list_commands")[2:].split()
    for name in ["protocol_version", "name", "version", "boardsize", "clear_board", "play",
                 "genmove", "undo", "showboard", "quit", "list_commands", "known_command"]:
        assert name in listed
    assert engine.handle("# a comment") is None


@pytest.mark.parametrize("line, message", [
    ("9 fly_away", "?9 unknown command"),
    ("play b", "? syntax error"),
    ("play b z9", "? syntax error"),
    ("play purple d3", "? syntax error"),
    ("play b a1", "? illegal move"),
    ("play w d3", "? illegal move: it is black's turn"),
    ("play b pass", "? illegal move: cannot pass"),
    ("boardsize 7", "? unacceptable size"),
    ("boardsize x", "? syntax error"),
    ("genmove", "? syntax error"),
    ("undo", "? cannot undo"),
    ("42", "?42 unknown command"),
])
def test_malformed_and_illegal_commands_get_protocol_errors(engine, line, message):
    response = reply(engine, line)
    assert response.startswith(message), response
    assert response.count("\n") == 2  # one line, then the terminating blank line
    assert engine.session.actions == []  # nothing was played


# ---- game commands ------------------------------------------------------------------------
def test_play_genmove_undo_showboard(engine):
    assert reply(engine, "play black F5") == "=\n\n"
    assert engine.session.transcript() == "f5"
    assert reply(engine, "genmove white") == "= f4\n\n"  # f4 is the lowest legal action for white
    assert engine.session.transcript() == "f5f4"
    board = reply(engine, "showboard")
    assert board.startswith("=\n  a b c d e f g h\n1 ") and "X 3 - O 3" in board
    assert reply(engine, "undo") == "=\n\n"
    assert engine.session.transcript() == "f5"
    assert reply(engine, "clear_board") == "=\n\n"
    assert engine.session.actions == []


def test_boardsize_switches_game_and_agent():
    built = []
    engine = GtpEngine(lambda game: built.append(game.size) or first_legal_agent(game))
    assert reply(engine, "boardsize 6") == "=\n\n"
    assert engine.session.game == Othello(6)
    assert reply(engine, "genmove b").startswith("= ")
    assert built == [6]


def test_forced_pass_is_inserted_and_undone_together(engine):
    # a1 black, b1 white, white to move: white has no placement, black can play c1.
    state, game = parse_board("XO" + "-" * 62 + " O")
    engine.session.reset(state)
    assert engine.session.must_pass()
    # The controller leaves out white's pass and asks black to move: the engine passes first.
    assert reply(engine, "genmove b") == "= c1\n\n"
    assert engine.session.actions == [game.pass_action, 2]
    assert engine.session.is_over  # black owns every disc
    assert reply(engine, "undo") == "=\n\n"
    assert engine.session.actions == []
    # Same through `play`, and a failing move leaves no inserted pass behind.
    assert reply(engine, "play b a2").startswith("? illegal move")
    assert engine.session.actions == []
    assert reply(engine, "play b c1") == "=\n\n"
    assert engine.session.actions == [game.pass_action, 2]


def test_final_score_after_a_full_game(engine):
    lines = []
    while not engine.session.is_over:
        color = "b" if engine.session.to_move == 0 else "w"
        lines.append(reply(engine, f"genmove {color}"))
    black, white = engine.session.score()
    assert black + white == engine.session.game.num_squares
    expected = "0" if black == white else (f"B+{black - white}" if black > white else f"W+{white - black}")
    assert reply(engine, "final_score") == f"= {expected}\n\n"
    # The record replays legally from the start with the same result.
    final, _ = play_transcript(engine.session.transcript())
    assert bool(final.terminal)
    assert reply(engine, "genmove b") == "= pass\n\n"


def test_serve_stops_at_quit_and_answers_each_command():
    commands = "1 name\n\n# skip\n2 play b d3\n3 quit\n4 name\n"
    out = io.StringIO()
    assert serve(GtpEngine(first_legal_agent), io.StringIO(commands), out) == 0
    assert out.getvalue() == "=1 othello-jax\n\n=2\n\n=3\n\n"


def test_agent_failures_become_protocol_errors_and_the_engine_keeps_serving():
    def broken(game):
        def act(state, key):
            raise RuntimeError("device lost\nmore detail")
        return types.SimpleNamespace(name="broken", act=act)

    engine = GtpEngine(broken)
    assert reply(engine, "3 genmove b") == "?3 internal error: RuntimeError: device lost\n\n"
    assert engine.session.actions == []
    engine.session.reset(parse_board("XO" + "-" * 62 + " O")[0])  # white must pass first
    assert reply(engine, "genmove b").startswith("? internal error")
    assert engine.session.actions == []  # the inserted pass was taken back too
    assert reply(engine, "4 name") == "=4 othello-jax\n\n"


def test_boardsize_refused_when_the_agent_cannot_play_it():
    def only_eight(game):
        if game.size != 8:
            raise ValueError(f"the checkpoint plays 8x8, not {game.size}x{game.size}")
        return first_legal_agent(game)

    engine = GtpEngine(only_eight)
    assert reply(engine, "boardsize 6") == "? unacceptable size: the checkpoint plays 8x8, not 6x6\n\n"
    assert engine.session.game == Othello(8)


# ---- the real command, as a subprocess ----------------------------------------------------
REPO = Path(__file__).resolve().parents[1]
ENGINE = [sys.executable, "-m", "othello_jax.cli", "engine", "--protocol=gtp"]


def engine_command(*options: str) -> str:
    return shlex.join(ENGINE + list(options))


@pytest.fixture
def repo_on_path(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))


def test_engine_subprocess_answers_malformed_commands_with_protocol_errors(repo_on_path):
    conversation = ["1 protocol_version", "2 boardsize 4", "3 frobnicate", "4 play b z9", "5 play b", "genmove",
                    "6 play w b1", "7 play b b1", "8 genmove w", "9 undo", "10 undo", "11 undo", "12 quit"]
    result = subprocess.run(ENGINE + ["--agent=random"], input="\n".join(conversation) + "\n", capture_output=True,
                            text=True, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    responses = result.stdout.split("\n\n")
    assert responses[-1] == ""  # every response ends with a blank line
    responses = responses[:-1]
    assert len(responses) == len(conversation)
    assert responses[0] == "=1 2" and responses[1] == "=2"
    assert responses[2] == "?3 unknown command: frobnicate"
    assert responses[3].startswith("?4 syntax error") and responses[4].startswith("?5 syntax error")
    assert responses[5].startswith("? syntax error")
    assert responses[6] == "?6 illegal move: it is black's turn"
    assert responses[7] == "=7"
    assert re.fullmatch(r"=8 [a-d][1-4]", responses[8]), responses[8]
    assert responses[9] == "=9" and responses[10] == "=10"
    assert responses[11] == "?11 cannot undo: no moves played"
    assert responses[12] == "=12"


def test_engine_plays_the_arena_gtp_agent_move_for_move_like_in_process(repo_on_path):
    """alphabeta:1 served over GTP plays exactly the games it plays in process (both sides are
    deterministic), through the arena's GTP client, on 4x4 with every opening twice (without the
    exact endgame the engine plays by default)."""
    game = Othello(4)
    lines = match_openings(game, 6, jax.random.PRNGKey(3))
    opponent = parse_agent("alphabeta:2", game)
    served = gtp_agent(engine_command("--agent=alphabeta:1", "--no-solve"), game, timeout=300)
    try:
        over_gtp = play_match(game, served, opponent, lines, jax.random.PRNGKey(0))
    finally:
        served.close()
    direct = play_match(game, parse_agent("alphabeta:1", game), opponent, lines, jax.random.PRNGKey(0))
    assert [r.actions for r in over_gtp.records()] == [r.actions for r in direct.records()]
    for record in over_gtp.records():
        final, _ = play_transcript(record.transcript(4), game)
        assert bool(final.terminal)
        sign, diff = game.outcome(final)
        assert record.black_disc_diff == (int(diff) if int(final.color) == 0 else -int(diff))


def test_a_served_checkpoint_plays_full_games_through_the_arena(repo_on_path, tmp_path):
    game = Othello(4)
    checkpoint = save_tiny_checkpoint(tmp_path, board_size=4)
    served = gtp_agent(engine_command(f"--checkpoint={checkpoint}", "--sims=4"), game, timeout=300)
    try:
        result = play_match(game, served, parse_agent("greedy", game), match_openings(game, 2, jax.random.PRNGKey(1)),
                            jax.random.PRNGKey(0))
    finally:
        served.close()
    summary = result.summary()
    assert summary.games == 2 and summary.wins + summary.draws + summary.losses == 2
    for record in result.records():
        final, _ = play_transcript(record.transcript(4), game)
        assert bool(final.terminal)


def test_engine_solves_endgames_by_default(monkeypatch, capsys):
    """`engine --agent=random` on 4x4 plays both sides perfectly (every move is within the default
    depth): the final score is the value of the start position by brute-force minimax."""
    from othello_jax.commands import engine as engine_command
    from othello_jax.commands.agent_options import PLAYING_SOLVE_DEPTH
    from tests.solver_helpers import BruteForce, to_ints

    genmoves = [f"genmove {'bw'[ply % 2]}" for ply in range(20)]  # a pass when forced or over
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(genmoves + ["final_score", "quit"]) + "\n"))
    assert engine_command.main(["--agent=random", "--size=4"]) == 0
    out, err = capsys.readouterr()
    assert f"engine: random,solve={PLAYING_SOLVE_DEPTH[4]},solver=c on 4x4" in err
    (black,), (white,) = to_ints(jax.tree.map(lambda x: x[None], Othello(4).init()))
    value = BruteForce(4).value(black, white)  # black's view: black moves first
    assert out.split("\n\n")[-3] == f"= {'0' if value == 0 else ('B+' if value > 0 else 'W+') + str(abs(value))}"
    monkeypatch.setattr(sys, "stdin", io.StringIO("quit\n"))
    assert engine_command.main(["--agent=random", "--size=4", "--no-solve"]) == 0
    assert "engine: random on 4x4" in capsys.readouterr().err
