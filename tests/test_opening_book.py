"""The shipped opening book: legal moves, found in every orientation, built from games as said, and
answering a timed player's first moves while its search compiles."""

from __future__ import annotations

import re
import threading

import jax
import numpy as np

from othello_jax.agents import playing_search_config
from othello_jax.agents.opening_book import PERMUTATIONS, OpeningBook, build_book, canonical, shipped_book, transform
from othello_jax.agents.timed import TimedSearch
from othello_jax.game import Othello, play_transcript, square_name
from othello_jax.game.bitboard import board_mask_int
from othello_jax.interface import session as session_module
from othello_jax.interface.session import GameSession
from othello_jax.solver import c_solver
from tests.conftest import tiny_net

GAME = Othello(8)


def test_every_book_move_is_legal_in_its_position():
    book = shipped_book()
    assert len(book) > 1000
    lib = c_solver.library()
    for (mover, opponent), (square, games) in book.entries.items():
        assert lib.oj_legal(mover, opponent, board_mask_int(8)) >> square & 1, (hex(mover), hex(opponent), square)
        assert games >= 1
    movers, opponents = (np.asarray(side, np.uint64) for side in zip(*book.entries, strict=True))
    least_movers, least_opponents, _ = canonical(movers, opponents)  # stored in canonical orientation
    assert np.array_equal(least_movers, movers) and np.array_equal(least_opponents, opponents)


def test_the_book_answers_mirrored_openings_with_mirrored_moves():
    book = shipped_book()
    assert square_name(book.move(GAME.init(), GAME).action, 8) in ("f5", "d3", "c4", "e6")
    # the four first moves are one position up to symmetry: the replies are its images
    replies = {first: square_name(book.move(play_transcript(first, GAME)[0], GAME).action, 8)
               for first in ("f5", "d3", "c4", "e6")}
    assert replies == {"f5": "d6", "d3": "c5", "c4": "e3", "e6": "f4"}
    assert book.move(Othello(6).init(), Othello(6)) is None  # 8x8 only
    far = play_transcript("f5d6c3d3c4f4f6f3e6e7d7c5b6", GAME)[0]
    assert book.move(far, GAME) is None  # past the book's 12 plies


def test_symmetries_are_the_eight_of_the_square():
    assert sorted(map(tuple, PERMUTATIONS)) == sorted(set(map(tuple, PERMUTATIONS)))
    bits = np.asarray([0x0000_0010_0800_0001], np.uint64)
    for symmetry in range(8):
        assert bin(int(transform(bits, symmetry)[0])).count("1") == 3


def test_a_book_keeps_positions_enough_games_reached_with_their_most_played_move():
    lib = c_solver.library()
    games = [[37, 43, 18]] * 3 + [[37, 45]] * 2 + [[19, 34]] * 4  # f5 d6 c3 (3), f5 f6 (2), d3 c5 (4)
    book = build_book(games, lib.oj_flips, plies=3, min_games=4)
    assert len(book) == 2  # the start (9 games) and the position after f5 or its mirror d3 (9 games)
    start = book.move(GAME.init(), GAME)
    assert start is not None and start.games == 5 and square_name(start.action, 8) in ("f5", "d3", "c4", "e6")
    after_f5 = book.move(play_transcript("f5", GAME)[0], GAME)
    assert square_name(after_f5.action, 8) == "d6" and after_f5.games == 7  # d3 c5 is f5 d6 mirrored
    assert OpeningBook.from_lines(book.lines()).entries == book.entries


def test_a_timed_player_answers_from_the_book_until_its_search_is_ready(monkeypatch):
    apply_fn, variables = tiny_net(8)
    timed = TimedSearch(GAME, apply_fn, variables, playing_search_config("gumbel", 16), chunk=8, capacity=64,
                        book=shipped_book())
    move = timed.move(GAME.init(), jax.random.PRNGKey(0), seconds=1.0)
    assert move.source == "book" and move.games > 100000 and move.simulations == 0
    assert not timed.ready  # nothing was compiled for it
    started = threading.Event()

    def prepare():
        started.set()
        timed.ready = True

    monkeypatch.setattr(timed, "prepare", prepare)
    thread = timed.prepare_in_background()
    thread.join(10)
    assert started.is_set() and not thread.daemon and timed.ready


def test_a_book_reply_says_nothing_of_compiling_and_a_move_that_waits_for_the_search_does(monkeypatch):
    monkeypatch.setattr(session_module, "_PREPARED", {})  # no agent has moved yet
    apply_fn, variables = tiny_net(8)
    timed = TimedSearch(GAME, apply_fn, variables, playing_search_config("gumbel", 16), chunk=8, capacity=64,
                        book=shipped_book())
    agent, lines = timed.agent(1.0), []
    GameSession(GAME).agent_move(agent, jax.random.PRNGKey(0), say=lines.append)
    assert timed.last_move.source == "book" and lines == []  # no one waited for a compile
    past_the_book = play_transcript("f5d6c3d3c4f4f6f3e6e7d7c5b6", GAME)[0]
    with session_module.announce_preparation(agent, GAME, lines.append, past_the_book):  # this move waits
        pass
    assert len(lines) == 1 and re.fullmatch(r"preparing the search: (compiling|loading) the search for 8x8.*\.\.\.",
                                            lines[0]), lines
    with session_module.announce_preparation(agent, GAME, lines.append, past_the_book):  # said once
        pass
    assert len(lines) == 1
    # without a book the first move waits: said as before; once the search is ready, nothing is
    bookless = TimedSearch(GAME, apply_fn, variables, playing_search_config("gumbel", 16), chunk=8, capacity=64)
    first = bookless.agent(1.0)
    with session_module.announce_preparation(first, GAME, lines.append, GAME.init()):
        pass
    assert len(lines) == 2 and lines[1].startswith("preparing the first move: "), lines
    bookless.ready = True
    ready = bookless.agent(1.0)
    with session_module.announce_preparation(ready, GAME, lines.append, past_the_book):
        pass
    assert len(lines) == 2
