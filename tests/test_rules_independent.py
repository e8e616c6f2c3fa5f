"""Random games agree move by move with two independent engines: pgx's Othello (JAX) and the
rust-reversi package (Rust): legal moves, flips, passes, terminal detection, final score."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pytest
import rust_reversi

from othello_jax.game import Othello
from tests.game_helpers import random_games

pytestmark = pytest.mark.core

GAMES = 2000


@pytest.fixture(scope="module")
def games() -> dict[str, np.ndarray]:
    return random_games(Othello(8), GAMES, seed=2024)


def test_games_agree_with_pgx(games):
    env = pgx.make("othello")
    init = jax.jit(jax.vmap(env.init))
    step = jax.jit(jax.vmap(env.step))
    state = init(jax.random.split(jax.random.key(0), GAMES))
    plies = games["action"].shape[1]
    pgx_over = np.zeros(GAMES, bool)
    for t in range(plies):
        ours_over = games["terminal"][:, t]
        # pgx ends a game on the second consecutive pass; we end it as soon as neither side can
        # move, so a game over for us is either over for pgx or a forced pass away from it.
        board = np.asarray(state._x.board).reshape(GAMES, 8, 8)  # +1 mover, -1 opponent
        mover_black = games["color"][:, t] == 0
        black = np.where(mover_black[:, None, None], board == 1, board == -1)
        white = np.where(mover_black[:, None, None], board == -1, board == 1)
        live = ~ours_over
        assert np.array_equal(black[live], games["black"][live, t]), f"ply {t}: black discs differ"
        assert np.array_equal(white[live], games["white"][live, t]), f"ply {t}: white discs differ"
        mask = np.asarray(state.legal_action_mask)
        assert np.array_equal(mask[live], games["legal"][live, t]), f"ply {t}: legal moves differ"
        pgx_over |= np.asarray(state.terminated)
        assert not (pgx_over & live).any(), f"ply {t}: pgx ended a game we did not"
        action = np.where(ours_over, 64, games["action"][:, t])
        state = step(state, jnp.asarray(action, jnp.int32))
    pgx_over |= np.asarray(state.terminated)
    assert games["terminal"][:, -1].all() and pgx_over.all()


def test_games_agree_with_rust_reversi(games):
    plies = games["action"].shape[1]
    for g in range(GAMES):
        board = rust_reversi.Board()
        for t in range(plies):
            over = board.is_game_over()
            assert bool(games["terminal"][g, t]) == over, f"game {g} ply {t}: terminal differs"
            line = np.array(list(board.get_board_line())).reshape(8, 8)
            assert np.array_equal(line == "X", games["black"][g, t]), f"game {g} ply {t}: black discs differ"
            assert np.array_equal(line == "O", games["white"][g, t]), f"game {g} ply {t}: white discs differ"
            if over:
                black, white = board.black_piece_num(), board.white_piece_num()
                diff = black - white
                diff += np.sign(diff) * (64 - black - white)
                mover_sign = 1 if games["color"][g, t] == 0 else -1
                assert games["diff"][g, t] == mover_sign * diff, f"game {g}: final score differs"
                break
            expected = np.zeros(65, bool)
            moves = board.get_legal_moves_vec()
            expected[moves] = True
            expected[64] = not moves
            assert np.array_equal(games["legal"][g, t], expected), f"game {g} ply {t}: legal moves differ"
            action = int(games["action"][g, t])
            if action == 64:
                board.do_pass()
            else:
                board.do_move(action)
        else:
            raise AssertionError(f"game {g} never ended")


def test_sample_covers_passes_and_early_ends(games):
    assert games["passed"].any(), "the random sample should contain passes"
    lengths = games["terminal"].argmax(axis=1)
    assert lengths.min() < 60, "some games should end before the board is full"
