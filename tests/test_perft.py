"""perft from the 8x8 start matches the published counts (a forced pass is a ply)."""

from __future__ import annotations

import pytest

from othello_jax.game import Othello, perft
from othello_jax.game.perft import perft_levels

pytestmark = pytest.mark.core

PUBLISHED = [1, 4, 12, 56, 244, 1396, 8200, 55092, 390216, 3005288]


def test_perft_8x8_depths_0_to_9():
    game = Othello(8)
    start = game.init()
    assert [1] + perft_levels(start, 9, game) == PUBLISHED  # one walk down, every depth counted
    assert perft(start, 0, game) == 1 and perft(start, 6, game) == PUBLISHED[6]


def test_perft_convention_counts_finished_games_at_deeper_depths():
    """On 4x4 many games end early; a finished game must still count once per deeper level."""
    game = Othello(4)
    start = game.init()
    counts = perft_levels(start, 25, game)
    assert all(b >= a for a, b in zip(counts, counts[1:], strict=False))
    # every game ends within 12 placements plus passes, after which the count stops growing
    exhausted = counts.index(counts[-1])
    assert exhausted < 20 and counts[exhausted:] == [counts[-1]] * (len(counts) - exhausted)
    assert counts[11] < counts[-1]  # games longer than 12 plies exist (passes)
