"""Solved positions kept for good: exact values and the set of optimal moves, in memory and
appended to a text file, so a position is solved once per machine (repeated openings of a
perfect player cost nothing).

Positions are (mover, opponent) 64-bit boards as in :mod:`othello_jax.solver.c_solver`. The
file (``perfect{size}.txt`` under the cache directory: ``$OTHELLO_JAX_CACHE``, else
``~/.cache/othello_jax``) has one line per fact: ``v MOVER OPPONENT VALUE`` or
``o MOVER OPPONENT VALUE MASK`` (hex boards; MASK the optimal squares).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

from othello_jax.game.bitboard import PASS_SQUARE, board_mask_int
from othello_jax.solver import c_solver

SolveFn = Callable[[int, int, int, int], tuple[int, int, int]]  # (mover, opponent, alpha, beta) -> (score, sq, nodes)


def default_directory() -> Path:
    """Where solved positions are kept unless told otherwise (shared with the compiled solver)."""
    return c_solver.cache_dir() / "perfect"


def child(mover: int, opponent: int, square: int) -> tuple[int, int]:
    """The position after the mover plays ``square`` (64: a pass), from the other side."""
    if square == PASS_SQUARE:
        return opponent, mover
    flipped = c_solver.library().oj_flips(mover, opponent, square)
    return opponent & ~flipped, mover | flipped | (1 << square)


class SolvedPositions:
    """Exact values and optimal-move sets of positions on one board size, solved on demand.

    ``solve`` (default: this thread's C solver) is called only for positions not known yet;
    ``solves`` counts its calls. ``directory=None`` keeps nothing on disk.
    """

    def __init__(self, size: int, directory: str | os.PathLike | None = None, solve: SolveFn | None = None):
        self.size = size
        self.board = board_mask_int(size)
        self.path = Path(directory).expanduser() / f"perfect{size}.txt" if directory is not None else None
        self._solve = solve or c_solver.solver_for(size).solve
        self.solves = 0
        self.values: dict[tuple[int, int], int] = {}
        self.optimal: dict[tuple[int, int], int] = {}
        if self.path is not None and self.path.is_file():
            self._read(self.path)

    def _read(self, path: Path) -> None:
        for line in path.read_text().splitlines():
            parts = line.split()
            try:
                key = (int(parts[1], 16), int(parts[2], 16))
                self.values[key] = int(parts[3])
                if parts[0] == "o":
                    self.optimal[key] = int(parts[4], 16)
            except (IndexError, ValueError):
                continue  # a line cut short by an interrupted write

    def _append(self, lines: list[str]) -> None:
        if self.path is None or not lines:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as f:  # whole lines, appended: concurrent writers only repeat facts
            f.write("".join(line + "\n" for line in lines))

    def _call(self, mover: int, opponent: int, alpha: int, beta: int) -> int:
        self.solves += 1
        return int(self._solve(mover, opponent, alpha, beta)[0])

    def remember(self, values: dict[tuple[int, int], int]) -> None:
        """Keep exact values solved elsewhere (e.g. in worker processes): {(mover, opponent): value}."""
        new = {key: value for key, value in values.items() if key not in self.values}
        self.values.update(new)
        self._append([f"v {mover:x} {opponent:x} {value}" for (mover, opponent), value in new.items()])

    def remember_optimal(self, solved: dict[tuple[int, int], tuple[int, int]]) -> None:
        """Keep values and optimal sets solved elsewhere: {(mover, opponent): (value, optimal mask)}."""
        new = {key: fact for key, fact in solved.items() if key not in self.optimal}
        for key, (value, mask) in new.items():
            self.values[key], self.optimal[key] = value, mask
        self._append([f"o {m:x} {o:x} {value} {mask:x}" for (m, o), (value, mask) in new.items()])

    def legal(self, mover: int, opponent: int) -> int:
        """The mover's legal squares as a mask."""
        return int(c_solver.library().oj_legal(mover, opponent, self.board))

    def value(self, mover: int, opponent: int) -> int:
        """The exact final disc difference for the mover under perfect play."""
        key = (mover, opponent)
        if key not in self.values:
            self.values[key] = self._call(mover, opponent, -64, 64)
            self._append([f"v {mover:x} {opponent:x} {self.values[key]}"])
        return self.values[key]

    def best_moves(self, mover: int, opponent: int) -> tuple[int, int]:
        """(exact value, mask of every optimal square); the mask is 0 when the mover must pass
        or the game is over.

        Beyond the position's own solve, each move costs one null-window search (is the
        move's value at least the position's?), unless the position after it is known.
        """
        key = (mover, opponent)
        if key in self.optimal:
            return self.values[key], self.optimal[key]
        value, mask, lines = self.value(mover, opponent), 0, []
        legal = self.legal(mover, opponent)
        for square in range(64):
            if not legal >> square & 1:
                continue
            after = child(mover, opponent, square)
            if after in self.values:
                best = -self.values[after] == value
            else:
                best = self._call(*after, -value, -value + 1) <= -value
                if best:  # the null window proved the move's value exactly
                    self.values[after] = -value
                    lines.append(f"v {after[0]:x} {after[1]:x} {-value}")
            mask |= best << square
        self.optimal[key] = mask
        self._append(lines + [f"o {mover:x} {opponent:x} {value} {mask:x}"])
        return value, mask


@functools.cache
def shared(size: int, directory: str | None) -> SolvedPositions:
    """One cache per board size and directory in this process (agents and judges share it)."""
    return SolvedPositions(size, directory)
