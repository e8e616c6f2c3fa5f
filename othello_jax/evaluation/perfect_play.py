"""Games against perfect play, judged: how many discs an agent gives away against the exact
value of each opening, how often it keeps the game-theoretic outcome, and how often its
moves are optimal, by band of empty squares.

Against a perfect opponent the final disc difference can only fall short of the opening's
exact value, and only through the agent's own mistakes, so the shortfall is the agent's
disc loss for the game. Judging uses the solved positions of the perfect player (the
position after each of its moves is known exactly), so it adds almost no solving.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from othello_jax.evaluation.arena import MatchResult
from othello_jax.game.bitboard import PASS_SQUARE
from othello_jax.solver.cache import SolvedPositions, child
from othello_jax.solver.move_checks import (
    GAME_BANDS,
    BandReport,
    MoveChecks,
    mean_interval,
    summarize_bands,
    wilson_interval,
)


class GameLine(NamedTuple):
    """Games of one kind (all, as black, as white): disc loss per game and share keeping the
    outcome, each with a 95% interval (normal; Wilson), and the share of flawless games."""

    games: int
    disc_loss: float
    disc_loss_interval: tuple[float, float]
    keeps_outcome: float
    keeps_outcome_interval: tuple[float, float]
    flawless: float


class PerfectPlayReport(NamedTuple):
    agent: str
    all: GameLine
    black: GameLine
    white: GameLine
    moves: BandReport


def _square(action: int, size: int) -> int:
    return PASS_SQUARE if action == size * size else (action // size) * 8 + action % size


def _start(size: int) -> tuple[int, int]:
    """(black, white) discs of the start position."""
    h = size // 2
    return (1 << ((h - 1) * 8 + h)) | (1 << (h * 8 + h - 1)), (1 << ((h - 1) * 8 + h - 1)) | (1 << (h * 8 + h))


def _game_line(loss: np.ndarray, keeps: np.ndarray) -> GameLine:
    mean, low, high = mean_interval(loss)
    share = float(keeps.mean()) if keeps.size else float("nan")
    return GameLine(int(loss.size), mean, (low, high), share, wilson_interval(int(keeps.sum()), int(keeps.size)),
                    float((loss == 0).mean()) if loss.size else float("nan"))


def judge_match(result: MatchResult, positions: SolvedPositions, first: bool = True,
                bands=GAME_BANDS) -> PerfectPlayReport:
    """Judge the first agent's games (``first=False``: the second's) against exact values.

    Every move of the agent after the opening in a position with two or more legal moves is
    judged; forced moves and passes are not.
    """
    size = result.game.size
    losses, keeps, colours = [], [], []
    empties, best, achieved = [], [], []
    for i, opening in enumerate(result.openings):
        for copy in (0, 1):
            agent_colour = copy if first else 1 - copy  # copy 0: the first agent plays black
            mover, opponent = _start(size)
            line = list(opening) + [int(a) for a in result.moves[copy, i] if a >= 0]
            for ply, action in enumerate(line):
                if ply == len(opening):
                    value = positions.value(mover, opponent)
                    opening_value = value if ply % 2 == agent_colour else -value
                square = _square(action, size)
                if ply >= len(opening) and ply % 2 == agent_colour and square != PASS_SQUARE \
                        and positions.legal(mover, opponent).bit_count() >= 2:
                    empties.append(size * size - (mover | opponent).bit_count())
                    best.append(positions.value(mover, opponent))
                    achieved.append(-positions.value(*child(mover, opponent, square)))
                mover, opponent = child(mover, opponent, square)
            if len(line) == len(opening):  # no move after the opening: the game was already over
                continue
            final = int(result.black_disc_diff[copy, i]) * (1 if agent_colour == 0 else -1)
            losses.append(opening_value - final)
            keeps.append(np.sign(opening_value) == np.sign(final))
            colours.append(agent_colour)
    losses, keeps, colours = np.asarray(losses, np.float64), np.asarray(keeps, bool), np.asarray(colours)
    checks = MoveChecks(np.asarray(empties, np.int64), np.asarray(best, np.int64), np.asarray(achieved, np.int64))
    name = result.first if first else result.second
    return PerfectPlayReport(name, _game_line(losses, keeps), _game_line(losses[colours == 0], keeps[colours == 0]),
                             _game_line(losses[colours == 1], keeps[colours == 1]), summarize_bands(checks, bands))


def format_report(report: PerfectPlayReport) -> str:
    """Games (all, as black, as white), then the agent's moves by band; 95% intervals."""
    from othello_jax.solver.move_checks import format_bands

    rows = [f"{report.agent} against perfect play (95% intervals: normal for means, Wilson for shares)",
            f"{'games':>8} {'n':>5} {'disc loss per game':>26} {'keeps outcome':>24} {'flawless':>9}"]
    for label, line in (("all", report.all), ("as black", report.black), ("as white", report.white)):
        if not line.games:
            continue
        low, high = line.disc_loss_interval
        klow, khigh = line.keeps_outcome_interval
        rows.append(f"{label:>8} {line.games:>5} {line.disc_loss:>9.2f} [{low:>6.2f}, {high:>6.2f}] "
                    f"{line.keeps_outcome:>9.1%} [{klow:>5.1%}, {khigh:>6.1%}] {line.flawless:>8.1%}")
    rows.append(f"{report.agent}'s moves (two or more legal), by empty squares before the move:")
    rows.append(format_bands(report.moves))
    return "\n".join(rows)
