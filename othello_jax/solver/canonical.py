"""Positions on the host as the proofs keep them: (mover, opponent) 64-bit boards, passes
settled, one representative per class of the 8 board symmetries.

The proof search and its checker meet millions of positions, so this works on Python ints
with per-row lookup tables (no JAX): a symmetry maps each row's byte to the bits it lands on.
The symmetry numbering is :mod:`othello_jax.game.symmetry`'s (``k % 4`` quarter turns
counter-clockwise, after a transpose for ``k >= 4``).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from othello_jax.game.bitboard import board_mask_int
from othello_jax.solver import c_solver

Position = tuple[int, int]  # (mover, opponent): square = row * 8 + col, bit 0 = A1


def _image(square: int, k: int, size: int) -> int:
    """The square that symmetry ``k`` sends ``square`` to (as ``jnp.rot90`` on the grid)."""
    row, col = divmod(square, 8)
    if k >= 4:
        row, col = col, row
    for _ in range(k % 4):  # rot90 counter-clockwise: (r, c) -> (size - 1 - c, r)
        row, col = size - 1 - col, row
    return row * 8 + col


@functools.cache
def _tables(size: int) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """tables[k][row][byte]: the board bits of ``byte`` on ``row`` after symmetry ``k``."""
    out = []
    for k in range(8):
        rows = []
        for row in range(size):
            images = [1 << _image(row * 8 + col, k, size) for col in range(size)]
            rows.append(tuple(sum(images[c] for c in range(size) if byte >> c & 1) for byte in range(256)))
        out.append(tuple(rows))
    return tuple(out)


def transform(board: int, k: int, size: int) -> int:
    """``board`` under symmetry ``k``."""
    rows = _tables(size)[k]
    return sum(rows[r][(board >> (8 * r)) & 0xFF] for r in range(size))


def square_image(square: int, k: int, size: int) -> int:
    """Where symmetry ``k`` sends a square (64, a pass, stays 64)."""
    return square if square >= 64 else _image(square, k, size)


def inverse(k: int) -> int:
    """The symmetry undoing ``k`` (transposed ones are reflections, their own inverses)."""
    return k if k >= 4 else (4 - k) % 4


def canonical(position: Position, size: int) -> tuple[Position, int]:
    """(the smallest image of ``position`` over the 8 symmetries, the symmetry giving it)."""
    mover, opponent = position
    tables = _tables(size)
    best, best_k = position, 0
    for k in range(1, 8):
        rows = tables[k]
        image = (sum(rows[r][(mover >> (8 * r)) & 0xFF] for r in range(size)),
                 sum(rows[r][(opponent >> (8 * r)) & 0xFF] for r in range(size)))
        if image < best:
            best, best_k = image, k
    return best, best_k


class Settled(NamedTuple):
    """A position with its passes resolved: ``position`` has a legal move unless the game is
    over (``final`` then holds its score); ``sign`` is +1 if the same side is to move as in
    the position asked about, -1 after a pass."""

    position: Position
    sign: int
    final: int | None


class Rules:
    """Moves and game ends of one board size on Python ints (the C solver's move generator)."""

    def __init__(self, size: int):
        self.size = size
        self.board = board_mask_int(size)
        self.squares = size * size
        self._lib = c_solver.library()

    def start(self) -> Position:
        """The standard start, black to move."""
        h = self.size // 2
        black = (1 << ((h - 1) * 8 + h)) | (1 << (h * 8 + h - 1))
        white = (1 << ((h - 1) * 8 + h - 1)) | (1 << (h * 8 + h))
        return black, white

    def legal(self, position: Position) -> int:
        return self._lib.oj_legal(position[0], position[1], self.board)

    def play(self, position: Position, square: int) -> Position:
        """The position after the mover plays ``square``, from the other side's view."""
        mover, opponent = position
        flipped = self._lib.oj_flips(mover, opponent, square)
        return opponent & ~flipped, mover | flipped | (1 << square)

    def empties(self, position: Position) -> int:
        return self.squares - (position[0] | position[1]).bit_count()

    def final_score(self, position: Position) -> int:
        """The mover's discs minus the opponent's, empty squares to the winner."""
        mine, theirs = position[0].bit_count(), position[1].bit_count()
        diff = mine - theirs
        return diff + (self.squares - mine - theirs) * ((diff > 0) - (diff < 0))

    def settle(self, position: Position) -> Settled:
        """Resolve a forced pass (or the end of the game)."""
        if self.legal(position):
            return Settled(position, 1, None)
        swapped = (position[1], position[0])
        if self.legal(swapped):
            return Settled(swapped, -1, None)
        return Settled(position, 1, self.final_score(position))

    def moves(self, position: Position) -> list[int]:
        """The mover's legal squares, lowest first."""
        legal, out = self.legal(position), []
        while legal:
            low = legal & -legal
            out.append(low.bit_length() - 1)
            legal ^= low
        return out
