"""Notation: squares, transcripts, board strings, rendering; round trips and clear errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from othello_jax.game import (
    NotationError,
    Othello,
    board_string,
    format_transcript,
    parse_board,
    parse_square,
    parse_transcript,
    play_transcript,
    render,
    square_name,
)
from tests.game_helpers import random_games

pytestmark = pytest.mark.core


def test_square_names():
    assert square_name(0) == "a1" and square_name(63) == "h8" and square_name(64) == "--"
    assert parse_square("D3") == 19 and parse_square("pass") == 64 and parse_square("--") == 64
    assert square_name(35, 6) == "f6" and parse_square("f6", 6) == 35


@given(st.integers(0, 64))
def test_square_round_trip(action):
    assert parse_square(square_name(action)) == action


@pytest.mark.parametrize("size", [4, 6, 8])
def test_transcript_round_trip_with_passes(size):
    game = Othello(size)
    rec = random_games(game, 40, seed=11)
    with_pass = 0
    for g in range(40):
        end = int(rec["terminal"][g].argmax())
        actions = [int(a) for a in rec["action"][g, :end]]
        with_pass += game.pass_action in actions
        text = format_transcript(actions, size)
        assert parse_transcript(text, size) == actions
        assert parse_transcript(text.upper(), size) == actions
        state, played = play_transcript(text, game)
        assert played == actions and bool(state.terminal)
        # transcripts without explicit passes replay the same (passes are inserted)
        no_pass = text.replace("--", "")
        assert play_transcript(no_pass, game)[1] == actions
    assert with_pass > 0


def test_board_string_round_trip_and_obf_line(shared_data):
    game = Othello(8)
    line = (shared_data / "ffo" / "fforum-40-59.obf").read_text().splitlines()[0]
    state, parsed_game = parse_board(line)
    assert parsed_game.size == 8
    assert board_string(state, game) == " ".join(line.split()[:2]).rstrip(";")
    start = game.init()
    text = board_string(start, game)
    assert text == "-" * 27 + "OX------XO" + "-" * 27 + " X"
    again, _ = parse_board(text)
    assert board_string(again, game) == text
    small = board_string(Othello(6).init(), Othello(6))
    assert parse_board(small)[1].size == 6


@pytest.mark.parametrize(
    "text,message",
    [
        ("f5d6!9", "unreadable move"),
        ("f5d6z9", "off the"),
        ("f5f5", r"move 2 \(f5\) is illegal"),
        ("i1", "unreadable|off the"),
        ("a9", "off the"),
    ],
)
def test_bad_transcripts_name_the_problem(text, message):
    with pytest.raises(NotationError, match=message):
        play_transcript(text, Othello(8))


@pytest.mark.parametrize(
    "text,message",
    [
        ("X" * 63 + " X", "63 squares"),
        ("-" * 27 + "OX------XO" + "-" * 27, "side to move"),
        ("-" * 27 + "OX------XQ" + "-" * 27 + " X", "characters 'Q'"),
        ("-" * 64 + " Z", "must be X"),
    ],
)
def test_bad_board_strings_name_the_problem(text, message):
    with pytest.raises(NotationError, match=message):
        parse_board(text)


def test_render_shows_discs_legal_moves_and_side():
    game = Othello(8)
    text = render(game.init(), game)
    lines = text.splitlines()
    assert lines[0].split() == list("abcdefgh")
    assert lines[4].split() == ["4", ".", ".", "*", "O", "X", ".", ".", "."]
    assert "black (X) to move" in lines[-1]
