"""An opening book from expert games: in the first plies of 8x8, the move experts played most.

The book ships with the package (``pretrained/opening_book_8x8.txt``, made from the WThor games
by ``python -m experiments.make_opening_book``): one line per position, ``MOVER OPPONENT SQUARE
GAMES`` (the position's two 64-bit boards in hex, square = row * 8 + column, how many games
played it), each position in its canonical orientation (the least of its 8 symmetric images), so
a position reached by a mirrored move order is found too. A player answers from it at once while
its search is still being compiled (:class:`~othello_jax.agents.timed.TimedSearch`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from othello_jax.game import Othello, State, one_position

BOOK_FILE = Path(__file__).resolve().parent.parent / "pretrained" / "opening_book_8x8.txt"
_FULL = (1 << 64) - 1


def _permutations() -> np.ndarray:
    """int32[8, 64]: where each square goes under the 8 symmetries of the 8x8 board."""
    row, col = np.divmod(np.arange(64), 8)
    images = []
    for turn in range(4):
        r, c = row, col
        for _ in range(turn):
            r, c = c, 7 - r
        images += [r * 8 + c, r * 8 + (7 - c)]
    return np.stack(images).astype(np.int32)


PERMUTATIONS = _permutations()


def transform(bits: np.ndarray, symmetry: int) -> np.ndarray:
    """64-bit boards (uint64 array) under one of the 8 symmetries."""
    bits = np.asarray(bits, np.uint64)
    out = np.zeros_like(bits)
    for square, image in enumerate(PERMUTATIONS[symmetry]):
        out |= ((bits >> np.uint64(square)) & np.uint64(1)) << np.uint64(image)
    return out


def canonical(mover: np.ndarray, opponent: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mover, opponent, symmetry)``: each position's least image (by mover, then opponent) and
    the symmetry that gives it."""
    movers = np.stack([transform(mover, s) for s in range(8)])
    opponents = np.stack([transform(opponent, s) for s in range(8)])
    best = np.zeros(movers.shape[1:], np.int32)
    for s in range(1, 8):
        take = lambda x: np.take_along_axis(x, best[None], 0)[0]
        better = (movers[s] < take(movers)) | ((movers[s] == take(movers)) & (opponents[s] < take(opponents)))
        best = np.where(better, s, best)
    pick = lambda x: np.take_along_axis(x, best[None], 0)[0]
    return pick(movers), pick(opponents), best


class BookMove(NamedTuple):
    """A book answer: the action and how many expert games played it here."""

    action: int
    games: int


class OpeningBook:
    """Positions -> the experts' move (``entries``: canonical ``(mover, opponent)`` -> ``(square, games)``)."""

    def __init__(self, entries: dict[tuple[int, int], tuple[int, int]]):
        self.entries = entries

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> OpeningBook:
        entries = {}
        for line in lines:
            fields = line.split()
            if len(fields) == 4 and not line.startswith("#"):
                entries[int(fields[0], 16), int(fields[1], 16)] = (int(fields[2]), int(fields[3]))
        return cls(entries)

    def lines(self) -> list[str]:
        """The book as its file's lines (sorted)."""
        return [f"{m:016x} {o:016x} {square} {games}" for (m, o), (square, games) in sorted(self.entries.items())]

    def __len__(self) -> int:
        return len(self.entries)

    def move(self, state: State, game: Othello) -> BookMove | None:
        """The book's move for one (unbatched) 8x8 position, or None where it has none."""
        if game.size != 8 or not self.entries:
            return None
        board = lambda b: np.uint64(one_position.to_int(b))
        mover, opponent, symmetry = canonical(np.asarray([board(state.mover)]), np.asarray([board(state.opponent)]))
        found = self.entries.get((int(mover[0]), int(opponent[0])))
        if found is None:
            return None
        square = int(np.flatnonzero(PERMUTATIONS[int(symmetry[0])] == found[0])[0])  # back to the board's orientation
        return BookMove(square, found[1])


@functools.cache
def shipped_book() -> OpeningBook:
    """The book that ships with the package (empty where the file is missing)."""
    if not BOOK_FILE.exists():
        return OpeningBook({})
    return OpeningBook.from_lines(BOOK_FILE.read_text().splitlines())


def build_book(games: Iterable[Iterable[int]], flips, plies: int = 12, min_games: int = 30) -> OpeningBook:
    """A book of the first ``plies`` plies of ``games`` (8x8 squares from the standard start, no
    passes): every position reached by at least ``min_games`` games, with its most played move.
    ``flips(mover, opponent, square)`` -> the discs a move flips (64-bit integers)."""
    movers, opponents, squares = [], [], []
    start_mover, start_opponent = (1 << 28) | (1 << 35), (1 << 27) | (1 << 36)  # black e4 d5, white d4 e5
    for moves in games:
        mover, opponent = start_mover, start_opponent
        for square in list(moves)[:plies]:
            if not 0 <= square < 64:
                break
            movers.append(mover)
            opponents.append(opponent)
            squares.append(square)
            flipped = flips(mover, opponent, square)
            mover, opponent = opponent & ~flipped & _FULL, (mover | flipped | (1 << square)) & _FULL
    mover, opponent, symmetry = canonical(np.asarray(movers, np.uint64), np.asarray(opponents, np.uint64))
    square = PERMUTATIONS[symmetry, np.asarray(squares, np.int32)]
    counts: dict[tuple[int, int], dict[int, int]] = {}
    for m, o, s in zip(mover.tolist(), opponent.tolist(), square.tolist(), strict=True):
        moves = counts.setdefault((m, o), {})
        moves[s] = moves.get(s, 0) + 1
    entries = {}
    for position, moves in counts.items():
        if sum(moves.values()) >= min_games:
            best = max(moves, key=lambda s: (moves[s], -s))
            entries[position] = (best, moves[best])
    return OpeningBook(entries)
