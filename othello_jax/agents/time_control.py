"""How long a move may take: a fixed budget a move, or a share of what is left on a game clock.

A game clock is what GUIs and tournament managers give: main time for the game, then byoyomi
(Canadian: ``byoyomi`` seconds for every ``stones`` moves; stones 0 means none) or an increment
after each move (GGF's ``TI``). :meth:`GameClock.move_seconds` spends the main time evenly over
the moves a player still has to make (about half the empty squares: the endgame solver's moves
are fast, but every move is counted), keeps a safety margin for what the program does around
the search (reading input, the protocol's answer), and never plans past the time that is left.
"""

from __future__ import annotations

import dataclasses
from typing import Any

SAFETY_FRACTION = 0.1  # of the time left, never planned (the answer must reach the controller in time)
SAFETY_SECONDS = 0.3  # nor these seconds, for the program around the search
MIN_MOVE_SECONDS = 0.05  # the least a move is given: one chunk of search
MIN_MOVES_LEFT = 6  # the main time is split over at least this many moves of ours


@dataclasses.dataclass
class GameClock:
    """One player's clock, in seconds.

    ``main``: main time left (None: no game clock; then ``per_move`` seconds a move, the
    ``--seconds`` budget); ``increment``: added after each move; Canadian byoyomi: once the main
    time is spent, ``byoyomi`` seconds for every ``stones`` moves. ``period`` and
    ``period_stones``: what is left of the current byoyomi period (None before it starts).
    """

    main: float | None = None
    increment: float = 0.0
    byoyomi: float = 0.0
    stones: int = 0
    per_move: float = 1.0
    period: float | None = None
    period_stones: int = 0

    def move_seconds(self, empties: int) -> float:
        """The seconds for the next move, with ``empties`` empty squares on the board."""
        if self.main is None:
            return max(MIN_MOVE_SECONDS, self.per_move)
        stone = self.byoyomi / self.stones if self.byoyomi > 0 and self.stones > 0 else 0.0
        if self.period is not None:  # in byoyomi: the period's time over its moves
            return max(MIN_MOVE_SECONDS, _usable(self.period) / max(1, self.period_stones))
        moves_left = max(MIN_MOVES_LEFT, (empties + 1) // 2)
        seconds = _usable(self.main) / moves_left + (self.increment + stone) * (1.0 - SAFETY_FRACTION)
        return max(MIN_MOVE_SECONDS, min(seconds, _usable(self.main + self.increment) + _usable(stone)))

    def spend(self, seconds: float) -> None:
        """Count one of our moves that took ``seconds``."""
        if self.main is None:
            return
        if self.period is None:
            self.main = self.main - seconds + self.increment
            if self.main > 0 or self.byoyomi <= 0 or self.stones <= 0:
                return
            self.period, self.period_stones = self.byoyomi, self.stones  # overran into byoyomi
            return
        self.period, self.period_stones = self.period - seconds, self.period_stones - 1
        if self.period_stones <= 0:  # a new period
            self.period, self.period_stones = self.byoyomi, self.stones

    def set_left(self, seconds: float, stones: int = 0) -> None:
        """The controller's word on what is left (GTP ``time_left``): ``seconds`` of main time, or
        with ``stones`` > 0 of the current byoyomi period, for that many moves."""
        if self.main is None:
            self.main = 0.0
        if stones > 0:
            self.main, self.period, self.period_stones = 0.0, float(seconds), int(stones)
        else:
            self.main, self.period, self.period_stones = float(seconds), None, 0


def gtp_clock(main: float, byoyomi: float, stones: int) -> GameClock | None:
    """A clock from GTP ``time_settings MAIN BYOYOMI STONES``: byoyomi 0 is sudden death; byoyomi
    with 0 stones means no time limit (None), as the GTP specification says."""
    if byoyomi > 0 and stones == 0:
        return None
    return GameClock(main=float(main), byoyomi=float(byoyomi), stones=int(stones))


def _usable(seconds: float) -> float:
    """What of ``seconds`` left may be planned: less the safety fraction and seconds."""
    return max(0.0, seconds * (1.0 - SAFETY_FRACTION) - SAFETY_SECONDS)


class MoveBudget:
    """What a player's next move may spend: each colour's :class:`GameClock` once a game clock is
    set (:meth:`set_clocks`, or the controller's word), else ``per_move`` seconds, else
    ``simulations`` (a fixed search, the strength of ``--sims``).

    Shared by the one who knows the clock (a GTP or NBoard engine, `play`) and the timed agent
    (:meth:`othello_jax.agents.timed.TimedSearch.agent`), which asks it before each move and
    charges it after.
    """

    def __init__(self, per_move: float | None = None, simulations: int | None = None):
        if per_move is None and simulations is None:
            raise ValueError("a move budget needs seconds a move or simulations")
        self.per_move, self.simulations = per_move, simulations
        self.clocks: list[GameClock] | None = None

    def set_clocks(self, clock: GameClock | None) -> None:
        """The same clock for both colours (a copy each); None: back to the fixed budget."""
        self.clocks = None if clock is None else [dataclasses.replace(clock) for _ in range(2)]

    def for_move(self, state: Any, game: Any) -> tuple[float | None, int | None]:
        """``(seconds, simulations)`` for the side to move in ``state`` (one of them None)."""
        if self.clocks is not None:
            empties = int(game.num_squares - _discs(state))
            return self.clocks[int(state.color)].move_seconds(empties), None
        return (self.per_move, None) if self.per_move is not None else (None, self.simulations)

    def spend(self, color: int, seconds: float) -> None:
        """Charge ``seconds`` to ``color``'s clock (nothing without a game clock)."""
        if self.clocks is not None:
            self.clocks[int(color)].spend(seconds)


def _discs(state: Any) -> int:
    """Discs on the board of one (unbatched) position, on the host."""
    words = (state.mover.lo, state.mover.hi, state.opponent.lo, state.opponent.hi)
    return sum(bin(int(word)).count("1") for word in words)
