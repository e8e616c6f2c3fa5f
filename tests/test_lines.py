"""The one move-line replayer (game/lines.py) against an independent reference implementation."""

from __future__ import annotations

import numpy as np
import pytest

from othello_jax.game import Othello
from othello_jax.game import bitboard as bb
from othello_jax.game.lines import AFTER_END, AFTER_GAP, ILLEGAL, LINE_OK, NO_MOVE, pad_lines, replay_lines_jit
from tests.game_helpers import ReferenceOthello, random_games

pytestmark = pytest.mark.core


def reference_final(size: int, line: list[int]) -> tuple[list[list[int]], int, int]:
    """Board, side to move (1 black, -1 white) and forced passes after ``line`` (passes left out)."""
    ref, passes = ReferenceOthello(size), 0
    for action in line:
        if not ref.moves(ref.to_move) and not ref.game_over():
            ref.play(size * size)
            passes += 1
        ref.play(action)
    return ref.board, ref.to_move, passes


@pytest.mark.parametrize("size", [4, 6, 8])
def test_lines_without_passes_replay_like_the_reference(size):
    game = Othello(size)
    games = random_games(game, 48, seed=size)
    lines = []
    for row in range(48):
        played = [int(a) for a, over in zip(games["action"][row], games["terminal"][row], strict=True) if not over]
        lines.append([a for a in played if a != game.pass_action])
    out = replay_lines_jit(pad_lines(lines), game)
    assert (np.asarray(out.error) == LINE_OK).all()
    black, white = game.black_white(out.final)
    for row, line in enumerate(lines):
        board, to_move, passes = reference_final(size, line)
        board = np.asarray(board)
        assert np.array_equal(np.asarray(bb.to_grid(black, size))[row], board == 1)
        assert np.array_equal(np.asarray(bb.to_grid(white, size))[row], board == -1)
        assert int(out.final.color[row]) == (0 if to_move == 1 else 1)
        assert int(out.passes[row]) == passes == int(np.asarray(out.passed)[row].sum())
        assert int(np.asarray(out.valid)[row].sum()) == len(line)


def test_first_problem_is_reported_and_the_line_frozen_there():
    game = Othello(6)
    legal_line = [int(a) for a in random_games(game, 1, seed=3)["action"][0][:6]]
    assert game.pass_action not in legal_line
    occupied = 14  # a centre square, never a legal placement
    cases = {
        ILLEGAL: legal_line[:3] + [occupied] + legal_line[3:],
        AFTER_GAP: legal_line[:2] + [NO_MOVE] + legal_line[2:],
    }
    for kind, line in cases.items():
        out = replay_lines_jit(np.asarray([line], np.int32), game)
        where = 3  # the illegal move, or the first move after the gap
        assert int(out.error[0]) == kind and int(out.error_move[0]) == where
        valid = np.asarray(out.valid)[0]
        assert valid[:where].sum() == min(where, 3 if kind == ILLEGAL else 2) and not valid[where:].any()
        frozen = replay_lines_jit(np.asarray([line[:where]], np.int32), game).final
        assert int(out.final.ply[0]) == int(frozen.ply[0])
    # a finished 4x4 game, then one more move
    finished = random_games(Othello(4), 1, seed=1)
    game4 = Othello(4)
    done = [int(a) for a, over in zip(finished["action"][0], finished["terminal"][0], strict=True) if not over]
    out = replay_lines_jit(np.asarray([done + [0]], np.int32), game4)
    assert int(out.error[0]) == AFTER_END and int(out.error_move[0]) == len(done)
    assert bool(out.final.terminal[0])
