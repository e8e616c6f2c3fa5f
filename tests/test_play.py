"""Terminal play: whole games through piped input, illegal input, forced passes, undo."""

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

from othello_jax.commands.agent_options import PLAYING_SIMULATIONS, PLAYING_SOLVE_DEPTH
from othello_jax.commands.play import finish, play_game
from othello_jax.game import Othello, play_transcript, square_name
from othello_jax.interface.session import GameSession
from tests.tiny_checkpoint import save_tiny_checkpoint

REPO = Path(__file__).resolve().parents[1]


def first_legal_agent(game: Othello):
    return types.SimpleNamespace(
        name="first-legal",
        act=lambda state, key: jnp.argmax(game.legal_moves(state), axis=-1).astype(jnp.int32),
    )


def last_legal_choice(session: GameSession) -> str:
    legal = session.legal_actions()
    return square_name(legal[-1], session.game.size) if legal != [session.game.pass_action] else "pass"


def scripted_game(game: Othello, human: int) -> tuple[list[str], str]:
    """Human inputs (last legal move, `pass` when forced) against the first-legal agent, and
    the resulting transcript, computed independently of the play loop."""
    session, agent, inputs = GameSession(game), first_legal_agent(game), []
    while not session.is_over:
        if session.to_move == human:
            inputs.append(last_legal_choice(session))
            session.play(session.parse_move(inputs[-1]))
        else:
            session.play(int(agent.act(jax.tree.map(lambda x: x[None], session.state), None)[0]))
    return inputs, session.transcript()


def run(session: GameSession, lines: list[str], human: int = 0) -> tuple[bool, str]:
    out = io.StringIO()
    completed = play_game(session, first_legal_agent(session.game), human, jax.random.PRNGKey(0),
                          io.StringIO("".join(line + "\n" for line in lines)), out)
    finish(session, out)
    return completed, out.getvalue()


@pytest.mark.parametrize("size, human", [(6, 0), (6, 1)])
def test_full_game_with_illegal_input_and_undo(size, human):
    game = Othello(size)
    inputs, transcript = scripted_game(game, human)
    # Noise before the first move: unreadable, off-board, illegal square, pass with moves left;
    # then a move that is taken back with undo and played again.
    noisy = ["zz9", "a9", "a1", "pass", "", "help", "hint", inputs[0], "undo", inputs[0]] + inputs[1:]
    session = GameSession(game)
    completed, out = run(session, noisy, human)
    assert completed and session.is_over
    assert session.transcript() == transcript
    final, _ = play_transcript(transcript, game)
    assert bool(final.terminal)
    assert f"record: {transcript}" in out
    assert f"result: {session.result_text()}" in out
    assert "illegal: 'zz9' is not a square" in out
    assert "illegal: square 'a9' is off the 6x6 board" in out
    assert "illegal: a1 is illegal here" in out
    assert "illegal: cannot pass" in out
    assert "took back your last move" in out
    assert "legal: " in out


def test_forced_pass_must_be_typed(capsys):
    # a1 white, b1 black, black to move: black has no move; white's only move c1 ends the game.
    from othello_jax.commands import play

    out = io.StringIO()
    code = play.main(["--agent=greedy", "--board=OX" + "-" * 62 + " X"], stdin=io.StringIO("c1\npass\n"), stdout=out)
    out = out.getvalue()
    assert code == 0, capsys.readouterr().err
    assert "You have no legal move; type pass" in out
    assert "illegal: c1 is illegal: black has no legal move and must pass" in out
    assert f"white (greedy,solve={PLAYING_SOLVE_DEPTH[8]},solver=c) plays c1" in out  # solved by default
    assert "result: white wins 64-0" in out  # 3 discs plus the empties
    assert "record: --c1" in out


def test_input_ending_or_quit_stops_the_game_and_prints_the_record():
    session = GameSession(Othello(8))
    completed, out = run(session, ["f5"])
    assert not completed and "input ended" in out
    assert "record: f5" in out  # black f5, then white's first legal reply
    assert session.transcript().startswith("f5") and len(session.actions) == 2
    completed, out = run(GameSession(Othello(8)), ["quit"])
    assert not completed and "record: (no moves)" in out


@pytest.mark.parametrize("typed", ["quit\n", "f5\n", ""])
def test_the_command_exits_0_when_the_human_quits_or_the_input_ends(typed):
    """Leaving a game early is no error: exit 0 (1 is a bug, 2 bad input), the record printed."""
    from othello_jax.commands import play

    out = io.StringIO()
    assert play.main(["--agent=greedy", "--size=4", "--no-solve"], stdin=io.StringIO(typed), stdout=out) == 0
    assert ("game stopped" in out.getvalue()) and "record: " in out.getvalue()


def test_undo_turn_goes_back_to_that_sides_previous_turn():
    session = GameSession(Othello(8))
    assert not session.undo_turn(1)  # white has not moved yet
    for move in ["f5", "d6", "c3"]:
        session.play(session.parse_move(move))
    assert session.undo_turn(1) and session.transcript() == "f5"
    assert session.undo_turn(0) and session.transcript() == ""
    assert not session.undo_turn(0)
    for move in ["f5", "d6", "c3", "d3", "c4"]:
        session.play(session.parse_move(move))
    assert session.undo_turn(1) and session.transcript() == "f5d6c3"
    assert session.undo_turn(1) and session.transcript() == "f5"
    # a pass between: a1 black, b1 white... white must pass, black plays c1 and the game ends
    session = GameSession.from_text(Othello(8), board="XO" + "-" * 62 + " O", moves="c1")
    assert session.transcript() == "--c1"
    assert session.undo_turn(0) and session.transcript() == "--" and session.to_move == 0
    assert session.undo_turn(1) and session.transcript() == ""


def test_play_command_against_a_checkpoint_through_piped_stdin(tmp_path):
    """The real command in a subprocess: every square (then pass) is typed in turn, over and
    over, so each turn plays the first legal one after rejecting the others."""
    checkpoint = save_tiny_checkpoint(tmp_path, board_size=4)
    squares = [square_name(a, 4) for a in range(16)] + ["pass"]
    result = subprocess.run(
        [sys.executable, "-m", "othello_jax.cli", "play", f"--checkpoint={checkpoint}", "--sims=4", "--color=white",
         "--solve=6"],
        input="\n".join(["hint"] + squares * 12) + "\n", capture_output=True, text=True, cwd=REPO, timeout=600,
        env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    record = re.search(r"^record: (\S+)$", out, re.M).group(1)
    final, actions = play_transcript(record, Othello(4))
    assert bool(final.terminal)
    assert f"result: {GameSession.from_text(Othello(4), moves=record).result_text()}" in out
    assert "illegal: " in out and "black (network, 4 sims,solve=6,solver=c) plays" in out
    assert "value estimate" in out  # the agent's commentary after its moves
    assert "perfect play: the exact endgame solver chose this move" in out  # the last 6 empties
    assert "search value" in out and "after 4 simulations" in out  # the hint: the search on your position


@pytest.mark.parametrize("options, message", [
    (["--color=green", "--agent=random"], "--color must be black or white"),
    (["--checkpoint=/no/such/run"], "checkpoint path /no/such/run does not exist"),
    ([], "give exactly one of --checkpoint=PATH or --agent=SPEC"),
    (["--checkpoint=x", "--agent=random"], "give exactly one of --checkpoint=PATH or --agent=SPEC"),
    (["--agent=random", "--size=5"], "--size must be one of 4, 6, 8"),
    (["--agent=random", "--moves=f5f5"], "move 2 (f5) is illegal in this position"),
    (["--agent=random", "--size=8", "--board=" + "-" * 36 + " X"], "the board string is 6x6 but this game is 8x8"),
    (["--agent=nonsense"], "unknown agent kind 'nonsense'"),
])
def test_play_command_bad_options(options, message, capsys):
    from othello_jax.commands import play

    assert play.main(options, stdin=io.StringIO(""), stdout=io.StringIO()) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("othello-jax play: ") and message in err and len(err.splitlines()) == 1


# ---- notebook play: SVG board and the game object behind the buttons ----------------------
def test_board_svg_draws_discs_legal_moves_last_move_and_labels():
    import xml.etree.ElementTree as ET

    from othello_jax.interface.board_svg import board_svg

    session = GameSession.from_text(Othello(8), moves="f5d6")
    svg = board_svg(session.state, session.game, last_move=session.actions[-1], labels={20: "17", 34: "<3>"})
    root = ET.fromstring(svg)  # well-formed XML
    ns = "{http://www.w3.org/2000/svg}"
    circles = root.findall(f"{ns}circle")
    discs = [c for c in circles if c.get("stroke") == "#000"]
    assert len(discs) == sum(session.disc_counts()) == 6
    assert sum(c.get("fill") == "#111" for c in discs) == session.disc_counts()[0]
    assert sum(c.get("fill") == "#e53935" for c in circles) == 1  # the last move
    legal_dots = [c for c in circles if c.get("fill") == "#0009"]
    assert len(legal_dots) == len(session.legal_actions()) - 1  # one legal square carries a label
    texts = [t.text for t in root.findall(f"{ns}text")]
    assert "17" in texts and "<3>" in texts  # escaped in the markup, intact once parsed
    assert texts[:2] == ["a", "1"]


def test_notebook_game_typed_and_clicked_moves():
    from othello_jax.interface.notebook_play import NotebookGame  # the widget needs ipywidgets (a dev dependency)

    game = Othello(6)
    nb = NotebookGame(first_legal_agent(game), game, human=1)  # the agent (black) opens at once
    assert len(nb.session.actions) == 1 and nb.session.to_move == 1
    assert "plays" in nb.message
    nb.move("a1")
    assert nb.message.startswith("illegal: a1 is illegal here") and len(nb.session.actions) == 1
    widget = nb.widget()
    target = nb.session.legal_actions()[0]
    nb.square_buttons[target].click()
    assert nb.session.actions[1] == target and len(nb.session.actions) == 3  # the agent replied
    assert nb.square_buttons[target].disabled  # now a disc
    assert "<svg" in widget.children[1].value  # the board picture beside the buttons was redrawn
    nb.undo()
    assert len(nb.session.actions) == 1 and nb.message == "took back your last move"
    html = nb._repr_html_()
    assert "<svg" in html and "Your move (white)" in html
    assert nb.hint().message == "no search available for hints"


def test_play_command_in_a_pseudo_terminal():
    """Interactive use: prompts appear, the terminal (not the program) echoes typed moves."""
    import pty
    import select
    import time

    fd, terminal = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "othello_jax.cli", "play", "--agent=greedy", "--size=4",
                                "--no-solve"],
                               stdin=terminal, stdout=terminal, stderr=terminal, cwd=REPO, start_new_session=True,
                               env=dict(os.environ, PYTHONPATH=str(REPO)))
    os.close(terminal)
    transcript = b""

    def read_until_prompt(prompts: int, seconds: float = 120.0) -> None:
        """Read until the ``prompts``-th move prompt (or the end of output)."""
        nonlocal transcript
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and transcript.count(b"Your move") < prompts:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    transcript += os.read(fd, 4096)
                except OSError:  # the command ended
                    return

    try:
        read_until_prompt(1)
        for number, line in enumerate(["b1", "a1", "quit"], start=2):
            os.write(fd, (line + "\n").encode())
            read_until_prompt(number)
        read_until_prompt(99, seconds=30)  # the rest: final board and record
    finally:
        code = process.wait(timeout=60)
        os.close(fd)
    text = transcript.decode(errors="replace").replace("\r\n", "\n")
    assert code == 0  # quitting before the end is no error
    assert "Your move (black): b1\n" in text  # echoed once, by the terminal
    assert "white (greedy) plays c1" in text
    assert "illegal: a1 is illegal here" in text
    assert "record: b1c1" in text


def test_play_against_an_external_gtp_engine_agent(monkeypatch):
    """A host-side agent that replays games (our own engine behind the arena's GTP client):
    the session tells it every move so far, so it can follow the human's moves."""
    from othello_jax.commands import play

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    engine = shlex.join([sys.executable, "-m", "othello_jax.cli", "engine", "--agent=greedy"])
    squares = [square_name(a, 4) for a in range(16)] + ["pass"]
    out = io.StringIO()
    code = play.main([f"--agent=gtp:cmd='{engine}',timeout=120", "--size=4"],
                     stdin=io.StringIO("\n".join(squares * 12) + "\n"), stdout=out)
    out = out.getvalue()
    assert code == 0, out[-2000:]
    record = re.search(r"^record: (\S+)$", out, re.M).group(1)
    final, _ = play_transcript(record, Othello(4))
    assert bool(final.terminal) and "result: " in out


# ---- exact endgames by default (play, the notebook player) ---------------------------------
# 6x6, 10 empty squares, black to move: f6 alone keeps the draw (the other five moves lose),
# found with tests.solver_helpers.BruteForce
SOLVE_BOARD = "X-XX-OXXXXO-XOXXO-OOOOOX--XOO---OOO- X"


def agent_moves(options: list[str]) -> str:
    """play's output when the agent (black) moves once and the human quits."""
    from othello_jax.commands import play

    out = io.StringIO()
    assert play.main(options + ["--color=white"], stdin=io.StringIO("quit\n"), stdout=out) == 0
    return out.getvalue()


def test_play_solves_the_endgame_by_default_and_no_solve_turns_it_off():
    depth = PLAYING_SOLVE_DEPTH[6]
    for options, name in [(["--agent=random"], f"random,solve={depth},solver=c"),
                          (["--agent=random", "--no-solve"], "random"),
                          (["--agent=random:solve=0"], "random")]:  # solve=0 in a spec: no exact endgame
        assert f"black ({name}) plays" in agent_moves(options + ["--size=6"]), options


def test_play_options_name_the_solve_depth_of_checkpoints_and_specs():
    from othello_jax.commands import agent_options, play

    def name(*options: str) -> str:
        return agent_options.build(play.build_parser().parse_args(list(options))).name

    solved = f"solve={PLAYING_SOLVE_DEPTH[6]},solver=c"
    assert name("--checkpoint=builtin:6x6") == f"network, {PLAYING_SIMULATIONS} sims,{solved},proof"  # + the proof
    assert name("--checkpoint=builtin:6x6", "--no-solve") == f"network, {PLAYING_SIMULATIONS} sims"
    assert name("--agent=greedy", "--size=8") == f"greedy,solve={PLAYING_SOLVE_DEPTH[8]},solver=c"
    assert name("--agent=greedy", "--solve=7") == "greedy,solve=7,solver=c"
    assert name("--agent=greedy", "--solve=0") == "greedy"
    assert name("--agent=greedy:solve=5", "--size=4") == "greedy:solve=5"  # the spec's own depth wins
    assert name("--agent=perfect", "--size=4") == "perfect"  # exact already: left alone
    with pytest.raises(agent_options.AgentOptionError, match="give the endgame depth once"):
        name("--agent=greedy:solve=5", "--no-solve")
    with pytest.raises(agent_options.AgentOptionError, match="--solve must be >= 0"):
        name("--agent=greedy", "--solve=-1")


def test_play_without_the_c_solver_plays_on_and_says_so_once(monkeypatch, capsys):
    from othello_jax.solver import CSolverUnavailable, c_solver

    def no_compiler():
        raise CSolverUnavailable("no C compiler found (set $CC or install cc/gcc/clang); the JAX solver still works")

    monkeypatch.setattr(c_solver, "library", no_compiler)
    assert "black (random) plays" in agent_moves(["--agent=random", "--size=6"])
    err = capsys.readouterr().err
    assert err == "othello-jax: endgames are not solved exactly: no C compiler found (set $CC or install " \
                  "cc/gcc/clang); the JAX solver still works\n"


def test_play_default_agent_plays_the_exact_endgame_move():
    """A random agent finds the only move keeping the draw (1 in 6 by chance), as an independent
    brute-force minimax says."""
    from othello_jax.game import parse_board
    from tests.solver_helpers import BruteForce, to_ints

    out = agent_moves(["--agent=random", f"--board={SOLVE_BOARD}"])
    played = re.search(r"^black \(random,solve=\d+,solver=c\) plays (\w+)$", out, re.M).group(1)
    assert "perfect play: the exact endgame solver chose this move" in out
    state, game = parse_board(SOLVE_BOARD)
    (me,), (you,) = to_ints(jax.tree.map(lambda x: x[None], state))
    brute = BruteForce(6)
    values = {square_name(sq // 8 * 6 + sq % 8, 6): -brute.value(*brute.child(me, you, sq))
              for sq in brute.moves(me, you)}
    best = max(values.values())
    assert played in values and values[played] == best
    assert sum(v == best for v in values.values()) < len(values)  # a wrong move was possible


def test_notebook_player_solves_the_endgame_unless_told_not_to():
    from othello_jax.commands.agent_options import spec_player, with_endgame_solve
    from othello_jax.interface.notebook_play import NotebookGame

    game = Othello(4)  # 12 empties at most: every move is solved
    for solve, name, report in [(None, f"random,solve={PLAYING_SOLVE_DEPTH[4]},solver=c",
                                 "perfect play: the exact endgame solver chose this move"),
                                (0, "random", "")]:
        player = with_endgame_solve(spec_player("random", 4), solve, "random")
        nb = NotebookGame(player.make_agent(game), game, human=1, commentary=player.commentary)
        assert nb.message.startswith(f"black ({name}) plays") and nb.agent_report() == report
        nb.move(last_legal_choice(nb.session))
        assert nb.agent_report() == report and len(nb.session.actions) == 3
        assert nb.undo().agent_report() == ""
