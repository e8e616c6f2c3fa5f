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


def gtp_clock(main: float, byoyomi: float, stones: int, per_move: float = 1.0) -> GameClock:
    """A clock from GTP ``time_settings MAIN BYOYOMI STONES``: byoyomi 0 is sudden death, byoyomi
    with 0 stones means no time limit (then ``per_move``), as the GTP specification says."""
    if byoyomi > 0 and stones == 0:
        return GameClock(per_move=per_move)
    return GameClock(main=float(main), byoyomi=float(byoyomi), stones=int(stones), per_move=per_move)


def _usable(seconds: float) -> float:
    """What of ``seconds`` left may be planned: less the safety fraction and seconds."""
    return max(0.0, seconds * (1.0 - SAFETY_FRACTION) - SAFETY_SECONDS)
