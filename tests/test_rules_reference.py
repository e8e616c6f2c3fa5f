"""Random games agree ply by ply with a plain reference implementation, on every board size."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from othello_jax.game import Othello
from tests.game_helpers import ReferenceOthello, random_games

pytestmark = pytest.mark.core


def check_game_against_reference(size: int, rec: dict[str, np.ndarray], g: int) -> None:
    ref = ReferenceOthello(size)
    n = size * size
    for t in range(rec["action"].shape[1]):
        board = np.array(ref.board)
        assert np.array_equal(rec["black"][g, t], board == 1), f"game {g} ply {t}: black discs differ"
        assert np.array_equal(rec["white"][g, t], board == -1), f"game {g} ply {t}: white discs differ"
        assert rec["color"][g, t] == (0 if ref.to_move == 1 else 1)
        over = ref.game_over()
        assert bool(rec["terminal"][g, t]) == over, f"game {g} ply {t}: terminal flag differs"
        if over:
            mover = ref.to_move
            assert rec["diff"][g, t] == ref.final_diff_for(mover)
            assert not rec["legal"][g, t].any(), "no action is legal after the end"
            return
        moves = ref.moves(ref.to_move)
        expected = np.zeros(n + 1, bool)
        expected[moves] = True
        expected[n] = not moves
        assert np.array_equal(rec["legal"][g, t], expected), f"game {g} ply {t}: legal moves differ"
        assert rec["ply"][g, t] == t
        ref.play(int(rec["action"][g, t]))
    raise AssertionError(f"game {g} did not end within {rec['action'].shape[1]} plies")


@pytest.mark.parametrize("size,games", [(8, 200), (6, 300), (4, 500)])
def test_random_games_match_reference(size, games):
    rec = random_games(Othello(size), games, seed=size)
    for g in range(games):
        check_game_against_reference(size, rec, g)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), size=st.sampled_from([4, 6, 8]))
def test_any_seed_matches_reference(seed, size):
    rec = random_games(Othello(size), 4, seed=seed)
    for g in range(4):
        check_game_against_reference(size, rec, g)


def test_some_random_games_contain_passes():
    """The comparison above only means something if passes really occur."""
    rec = random_games(Othello(6), 300, seed=1)
    assert rec["passed"].any()
    rec = random_games(Othello(4), 300, seed=1)
    assert rec["passed"].any()
