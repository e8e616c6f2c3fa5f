"""The NBoard engine (`othello-jax engine --protocol=nboard`) and the GGF records it reads: a
scripted GUI talks to the engine as the protocol (version 2) describes, in process with a
cheap agent, and once through the real command with a tiny network."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from othello_jax.commands import engine as engine_command
from othello_jax.errors import InputError
from othello_jax.game import (
    BLACK,
    WHITE,
    Othello,
    board_string,
    parse_board,
    parse_square,
    play_transcript,
    square_name,
)
from othello_jax.game.ggf import GgfError, format_game, parse_game, parse_move_item
from othello_jax.interface.nboard_server import PREPARING, NboardEngine, search_eval, serve
from tests.solver_helpers import BruteForce, to_ints
from tests.tiny_checkpoint import save_tiny_checkpoint

REPO = Path(__file__).resolve().parents[1]
OTHELLO_JAX = str(Path(sys.executable).parent / "othello-jax")  # the console script users run
START_8 = "-" * 27 + "O*" + "-" * 6 + "*O" + "-" * 27  # d4 white, e4 black, d5 black, e5 white
START_4 = "-----O*--*O-----"
MOVE_LINE = re.compile(r"=== ([A-H][1-8]|PA)(?:/(-?\d+\.\d\d)?(?:/(\d+\.\d))?)?")
SEARCH_LINE = re.compile(r"search ([A-H][1-8]|PA) (-?\d+\.\d\d) 0 (\S+)(?: .*)?")


def record(moves: list[str], board: str = START_8, side: str = "*", size: int = 8) -> str:
    """A GGF game as NBoard sends it, written by hand: moves alternate colours from ``side``."""
    colors = "BW" if side == "*" else "WB"
    body = "".join(f"{colors[i % 2]}[{move}]" for i, move in enumerate(moves))
    return (f"(;GM[Othello]PC[NBoard]DT[2024-03-01 20:52:27 GMT]PB[human]PW[othello-jax]RE[?]TI[15:00]"
            f"TY[{size}]BO[{size} {board} {side}]{body};)")


def first_legal_agent(game: Othello):
    """Plays the lowest-numbered legal action (deterministic and cheap)."""
    return types.SimpleNamespace(
        name="first-legal", act=lambda states, key: jnp.argmax(game.legal_moves(states), axis=-1).astype(jnp.int32))


def converse(engine: NboardEngine, lines: list[str]) -> tuple[int, list[str], list[str]]:
    """Serve ``lines`` as a GUI would send them: (exit code, stdout lines, stderr lines)."""
    out, err = io.StringIO(), io.StringIO()
    code = serve(engine, io.StringIO("".join(line + "\n" for line in lines)), out, err)
    return code, out.getvalue().splitlines(), err.getvalue().splitlines()


def between_pongs(out: list[str]) -> dict[int, list[str]]:
    """The engine's lines grouped by the ping they precede: {n: the lines before `pong n`}."""
    groups, current = {}, []
    for line in out:
        match = re.fullmatch(r"pong (\d+)", line)
        if match:
            groups[int(match.group(1))], current = current, []
        else:
            current.append(line)
    groups["after"] = current
    return groups


def same_position(state, expected) -> bool:
    return board_string(state) == board_string(expected) and bool(state.terminal) == bool(expected.terminal)


# ---- GGF ----------------------------------------------------------------------------------
def test_ggf_game_from_a_transcript_ends_where_the_transcript_does():
    text = record(["F5//1.0", "d6/-2.00/3.5", "C3", "D3/0.25", "c4"])
    game = parse_game(text)
    expected, actions = play_transcript("f5d6c3d3c4")
    assert game.game == Othello(8) and game.from_standard_start
    assert same_position(game.final, expected) and int(game.final.color) == int(expected.color) == WHITE
    assert list(game.actions) == actions
    assert [move.color for move in game.moves] == [BLACK, WHITE, BLACK, WHITE, BLACK]
    assert game.properties["PB"] == "human" and game.properties["DT"] == "2024-03-01 20:52:27 GMT"


def test_ggf_start_position_other_than_the_standard_one():
    """BO[...] written by hand as the position after f5 (rows apart, x/o spelling too), white to
    move: the record's moves continue the game from there."""
    after_f5 = "-------- -------- -------- ---ox--- ---xxx-- -------- -------- --------"
    game = parse_game(record(["D6", "C3", "D3"], board=after_f5, side="O"))
    expected, _ = play_transcript("f5d6c3d3")
    assert not game.from_standard_start and int(game.start.color) == WHITE
    assert same_position(game.final, expected) and int(game.final.color) == int(expected.color)
    assert list(game.actions) == [parse_square(s) for s in ("d6", "c3", "d3")]


def test_ggf_forced_pass_left_out_or_written_as_pa():
    """Black (b1) cannot flank white's corner disc (a1) and must pass; white takes b1 with c1,
    which ends the game (black has no discs left)."""
    for moves in ("B[PA]W[C1]", "W[C1]"):
        game = parse_game(f"(;GM[Othello]TY[8]BO[8 O*{'-' * 62} *]{moves};)")
        assert list(game.actions) == [64, parse_square("c1")]
        assert bool(game.final.terminal)
        assert board_string(game.final) == "OOO" + "-" * 61 + " X"


@pytest.mark.parametrize("text, message", [
    ("GM[Othello]BO[8 x *];)", "starts with '(;'"),
    ("(;GM[Othello]PB[never closed", "not closed"),
    ("(;GM[Othello]TY[8]", "does not end with ';)'"),
    ("(;GM[Othello]!!;)", "unreadable GGF"),
    ("(;GM[Othello];)extra", "text after the end"),
    ("(;GM[Chess]BO[8 " + START_8 + " *];)", "not an Othello game"),
    ("(;GM[Othello]TY[8a]BO[8 " + START_8 + " *];)", "anti-Othello"),
    ("(;GM[Othello]BO[10 " + "-" * 100 + " *];)", "board size 10 is not one this engine plays"),
    ("(;GM[Othello]BO[8 " + START_8[:-1] + " *];)", "has 63 squares"),
    ("(;GM[Othello]BO[8 " + START_8[:-1] + "# *];)", "has squares '#'"),
    ("(;GM[Othello]BO[8 " + START_8 + " ?];)", "side to move '?'"),
    (record(["F5", "A1"]), "move 2 (W[A1]) is illegal in this position"),
    (record(["F5"]).replace("B[F5]", "W[F5]"), "move 1 (W[F5]) is out of turn: black is to move"),
    (record(["F5", "Z9"]), "move 2 (W[Z9])"),
    (record(["F5", "PA"]), "move 2 (W[PA]) is illegal in this position"),
    (record(["PA", "C1", "D1"], board="O*" + "-" * 62), "move 3 (B[D1]) comes after the end of the game"),
])
def test_ggf_malformed_records_are_one_line_errors(text, message):
    with pytest.raises(GgfError) as raised:
        parse_game(text)
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert isinstance(raised.value, InputError)


def test_ggf_written_then_read_back_from_any_start():
    game = Othello(6)
    start, _ = parse_board("------" "--X---" "--XXO-" "--OXO-" "------" "------ O", game)
    _, actions = play_transcript("b1c1d1", game, start=start)
    text = format_game(game, start, actions, black="a [tricky] name", white="b\\c")
    parsed = parse_game(text)
    assert parsed.game == game and list(parsed.actions) == actions
    assert board_string(parsed.start, game) == board_string(start, game)
    assert parsed.properties["PB"] == "a [tricky] name" and parsed.properties["PW"] == "b\\c"
    assert "BO[6 --------*-----**O---O*O------------- O]W[B1]B[C1]W[D1];)" in text


@pytest.mark.parametrize("text, square", [("F5", "f5"), ("f5/1.23/4.5", "f5"), ("F5//2", "f5"), (" c4/ ", "c4"),
                                          ("PA", "pass"), ("pa/0.00/1.0", "pass")])
def test_move_items(text, square):
    assert parse_move_item(text) == parse_square(square)


@pytest.mark.parametrize("text", ["", "/1.0/2", "Z9", "F55"])
def test_move_items_malformed(text):
    with pytest.raises(InputError):
        parse_move_item(text)


SQUARE_TEXT = st.sampled_from(["*", "O", "-", "x", "o", ".", "#", " ", "]", "\\]"])
BOARD_VALUES = st.builds(lambda size, squares, side: f"{size} {''.join(squares)} {side}",
                         st.sampled_from(["4", "6", "8", "10", "x", "", "99999999"]),
                         st.lists(SQUARE_TEXT, min_size=10, max_size=70), st.sampled_from(["*", "O", "?", ""]))
MOVE_VALUES = st.builds(lambda move, suffix: move + suffix,
                        st.sampled_from(["F5", "d6", "C3", "PA", "pass", "Z9", "", "a1", "d3", "c4", "B1"]),
                        st.sampled_from(["", "/1.0/2", "//3", "/x", "]"]))
PROPERTIES = st.lists(st.one_of(
    st.tuples(st.just("BO"), BOARD_VALUES), st.tuples(st.sampled_from(["B", "W", "b"]), MOVE_VALUES),
    st.tuples(st.sampled_from(["GM", "TY", "PB", "XX"]),
              st.sampled_from(["Othello", "8", "8a", "s8r20", "Go", "a\\]b"]))), max_size=8)
GGF_TEXTS = st.builds(lambda head, properties, tail: head + "".join(f"{n}[{v}]" for n, v in properties) + tail,
                      st.sampled_from(["(;", " ( ;", "", "(;;", "("]), PROPERTIES,
                      st.sampled_from([";)", ")", "", ";) (;;)", ";)\n"]))
FUZZ = settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(GGF_TEXTS)
def test_ggf_fuzzed_records_parse_or_fail_in_one_line(text):
    try:
        parse_game(text)
    except InputError as error:
        assert isinstance(error, GgfError) and "\n" not in str(error).strip()


ENGINE_LINES = st.one_of(
    st.sampled_from(["nboard 2", "ping 3", "go", "hint 2", "learn", "set depth 5", "set contempt -100", "",
                     "set", "move", "hint", "analyze", "set game", f"set game {record(['F5', 'D6'])}",
                     f"set game {record([], board='O*' + '-' * 62)}"]),
    st.builds(lambda word, move: f"{word} {move}", st.sampled_from(["move", "hint", "ping", "set depth"]), MOVE_VALUES),
    st.builds(lambda text: f"set game {text}", GGF_TEXTS))


@settings(FUZZ, max_examples=40)
@given(st.lists(ENGINE_LINES, min_size=1, max_size=10))
def test_engine_fuzzed_conversations_never_fail_inside(lines):
    """Any conversation: the engine answers, or says in one stderr line what it ignored, and
    keeps serving to the end of its input (never an internal error)."""
    code, out, err = converse(NboardEngine(first_legal_agent, size=8, sizes=(8,)), lines + ["ping 99"])
    assert code == 0 and out[-1] == "pong 99"
    assert not [line for line in err if "internal error" in line or not line.startswith("othello-jax engine: ")]


# ---- the engine, in process ---------------------------------------------------------------
@pytest.fixture
def engine() -> NboardEngine:
    return NboardEngine(first_legal_agent, size=8, sizes=(8,))


def test_a_gui_conversation(engine):
    """Handshake, a game, a move, go, hint, ping, learn, an unknown command, a malformed game and
    an illegal move (one stderr line each, the engine keeps serving), quit."""
    after_c4, _ = play_transcript("f5d6c3d3c4")
    lines = ["nboard 2", "set depth 12", "set contempt 0", f"set game {record(['F5//1.0', 'D6', 'C3', 'D3'])}",
             "ping 1", "move C4/0.50/2.0", "ping 2", "go", "ping 3", "hint 3", "ping 4", "learn", "ping 5",
             "frobnicate 3", "set time 90", "ping 6", "set game (;GM[Othello]BO[8 xx *];)", "ping 7", "move A1",
             "ping 8", "", "quit", "ping 9"]
    code, out, err = converse(engine, lines)
    assert code == 0
    replies = between_pongs(out)
    assert replies[1] == ["set myname othello-jax"]
    assert replies[2] == []
    assert same_position(engine.session.state, after_c4)  # go plays nothing: the GUI sends `move`
    status, answer = replies[3]
    assert status == f"status {PREPARING}"
    move = MOVE_LINE.fullmatch(answer)
    assert move and move.group(2) is None and move.group(3) is not None  # no evaluation from this agent
    legal = [a for a in range(64) if bool(Othello(8).legal_moves(after_c4)[a])]
    assert parse_square(move.group(1)) == min(legal)
    assert replies[4][0] == "status thinking" and replies[4][-1] == "status"
    hints = [SEARCH_LINE.fullmatch(line) for line in replies[4][1:-1]]
    assert len(hints) == 1 and hints[0] and parse_square(hints[0].group(1)) == min(legal)
    assert replies[5] == ["learned"]
    assert replies[6] == [] and replies[7] == [] and replies[8] == [] and replies["after"] == []
    assert err == ["othello-jax engine: ignoring unknown command 'frobnicate'",
                   "othello-jax engine: set time: not a setting this engine knows; ignored",
                   "othello-jax engine: set game: BO[...] has 2 squares; a 8x8 board has 64",
                   "othello-jax engine: move: a1 is illegal here; legal moves: "
                   + ", ".join(square_name(action) for action in legal)]
    assert same_position(engine.session.state, after_c4)  # neither bad line changed the game
    assert engine.depth == 12 and engine.finished


def test_end_of_input_ends_the_engine_with_status_0(engine):
    assert converse(engine, ["nboard 2", "ping 1"]) == (0, ["set myname othello-jax", "pong 1"], [])


def test_a_forced_pass(engine):
    """Black must pass (its b1 cannot flank white's corner): go answers PA, hint offers PA, and
    white's move after a left-out pass is played after the pass."""
    code, out, err = converse(engine, [f"set game {record([], board='O*' + '-' * 62)}", "go", "hint 2", "ping 1",
                                       "move C1", "ping 2", "go"])
    assert code == 0
    assert out == ["=== PA", f"status {PREPARING}", "search PA 0.00 0 0 no evaluation: this agent only picks moves",
                   "status", "pong 1", "pong 2", "=== PA"]
    assert engine.session.actions == [64, parse_square("c1")] and engine.session.is_over
    assert err == ["othello-jax engine: go: the game is over: answered PA"]


def test_a_game_of_another_size_is_refused_in_one_line(engine):
    code, out, err = converse(engine, [f"set game {record([], board=START_4, size=4)}", "ping 1",
                                       "set game (;GM[Othello]TY[10]BO[10 " + "-" * 100 + " *];)", "ping 2"])
    assert out == ["pong 1", "pong 2"]
    assert err == ["othello-jax engine: set game: the game is 4x4; this engine plays 8x8",
                   "othello-jax engine: set game: BO board size 10 is not one this engine plays (4, 6, 8)"]
    assert engine.session.game == Othello(8) and same_position(engine.session.state, Othello(8).init())


def test_malformed_numbers_and_the_protocol_version(engine):
    code, out, err = converse(engine, ["nboard 1", "hint lots", "hint 0", "ping x", "set depth 0", "ping 3"])
    assert out == ["set myname othello-jax", "pong 3"]
    assert err == ["othello-jax engine: nboard: the GUI speaks version 1; this engine speaks version 2",
                   "othello-jax engine: hint: expected `hint N` with a whole number, got 'lots'",
                   "othello-jax engine: hint: the number of moves must be at least 1, got 0",
                   "othello-jax engine: ping: expected `ping N` with a whole number, got 'x'",
                   "othello-jax engine: set depth: the depth must be at least 1, got 0"]


def test_exact_evaluations_in_the_solved_endgame():
    """4x4 is solved from its first move: hint gives every move's exact value (depth 100%) and
    go the exact value of the move it picked, both equal to an independent brute-force minimax."""
    game = Othello(4)
    engine = NboardEngine(first_legal_agent, size=4, sizes=(4,), exact_empties={4: 16})
    code, out, err = converse(engine, [f"set game {record(['D3'], board=START_4, size=4)}", "hint 10", "go"])
    assert code == 0 and err == []
    state, _ = play_transcript("d3", game)
    (mover,), (opponent,) = to_ints(jax.tree.map(lambda x: x[None], state))
    brute = BruteForce(4)
    legal = [a for a in range(16) if bool(game.legal_moves(state)[a])]
    exact = {a: -brute.value(*brute.child(mover, opponent, (a // 4) * 8 + a % 4)) for a in legal}
    assert out[0] == "status solving the endgame exactly" and out[len(legal) + 1] == "status"
    hints = [SEARCH_LINE.fullmatch(line) for line in out[1:len(legal) + 1]]
    assert {parse_square(h.group(1), 4): float(h.group(2)) for h in hints} == exact
    assert [float(h.group(2)) for h in hints] == sorted(exact.values(), reverse=True)
    assert {h.group(3) for h in hints} == {"100%"}
    assert out[-2] == f"status {PREPARING}"
    move = MOVE_LINE.fullmatch(out[-1])
    assert parse_square(move.group(1), 4) == min(legal) and float(move.group(2)) == exact[min(legal)]


def test_search_evaluations_in_discs_or_expected_score():
    game = Othello(8)
    assert search_eval(0.5, game) == 25.0 and search_eval(-1.0, game) == -50.0
    for difference in (-20, -1, 3, 64):
        value = float(game.result_value(difference, 0.4))
        assert search_eval(value, game, 0.4) == pytest.approx(difference, abs=1e-3)


def test_protocol_choice_is_enforced(capsys):
    parser = engine_command.build_parser()
    assert parser.parse_args(["--protocol=NBoard", "--agent=greedy"]).protocol == "nboard"
    with pytest.raises(SystemExit) as raised:
        parser.parse_args(["--protocol=uci", "--agent=greedy"])
    assert raised.value.code == 2 and "invalid choice: 'uci'" in capsys.readouterr().err


# ---- the real command, with a network -----------------------------------------------------
def test_engine_command_with_a_network_speaks_nboard(tmp_path):
    """`othello-jax engine --protocol=nboard` with a tiny 4x4 network: the search's evaluations
    before the solved endgame (depth = simulations), exact ones in it, a game of another size
    refused, quit. 4x4 keeps the compile short; NBoard's own games are 8x8, the same code."""
    game = Othello(4)
    checkpoint = save_tiny_checkpoint(tmp_path, board_size=4)
    late = ["D3", "B4", "A3", "D4", "A2", "C1", "D1", "B1"]  # no pass; 4 empties after these
    late_state, _ = play_transcript("".join(late).lower(), game)
    assert board_string(late_state, game).count("-") == 4 and not bool(late_state.terminal)
    lines = ["nboard 2", "set depth 10", f"set game {record([], board=START_4, size=4)}", "hint 3", "ping 1", "go",
             "ping 2", f"set game {record([], size=8)}", "ping 3", f"set game {record(late, board=START_4, size=4)}",
             "hint 8", "ping 4", "learn", "quit", "ping 5"]
    result = subprocess.run([OTHELLO_JAX, "engine", "--protocol=nboard", f"--checkpoint={checkpoint}", "--sims=4",
                             "--solve=4"], input="\n".join(lines) + "\n", capture_output=True, text=True, cwd=REPO,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    replies = between_pongs(result.stdout.splitlines())
    start_legal = {a for a in range(16) if bool(game.legal_moves(game.init())[a])}
    assert replies[1][0] == "set myname othello-jax" and replies[1][1] == f"status {PREPARING}"
    assert replies[1][-1] == "status"
    hints = [SEARCH_LINE.fullmatch(line) for line in replies[1][2:-1]]
    assert 1 <= len(hints) <= 3 and {parse_square(h.group(1), 4) for h in hints} <= start_legal
    assert {h.group(3) for h in hints} == {"4"}  # the simulations of one search
    assert all(-50 <= float(h.group(2)) <= 50 for h in hints)
    assert replies[2][0] == "status thinking"
    move = MOVE_LINE.fullmatch(replies[2][1])
    assert parse_square(move.group(1), 4) in start_legal and -50 <= float(move.group(2)) <= 50
    assert replies[3] == [] and "set game: the game is 8x8; this engine plays 4x4" in result.stderr
    (mover,), (opponent,) = to_ints(jax.tree.map(lambda x: x[None], late_state))
    brute = BruteForce(4)
    exact = {a: -brute.value(*brute.child(mover, opponent, (a // 4) * 8 + a % 4))
             for a in range(17) if bool(game.legal_moves(late_state)[a])}
    hints = [SEARCH_LINE.fullmatch(line) for line in replies[4][1:-1]]
    assert replies[4][0] == "status solving the endgame exactly" and replies[4][-1] == "status"
    assert {parse_square(h.group(1), 4): float(h.group(2)) for h in hints} == exact
    assert replies["after"] == ["learned"]  # nothing after quit
    assert "speaking the NBoard protocol" in result.stderr
