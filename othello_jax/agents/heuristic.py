"""A classic hand-made Othello evaluation for the alpha-beta baseline (any board size 4, 6, 8).

Terms, all from the side to move's view and in integer points:
  * disc weights table: edges good, the ring next to the edge bad, corners handled below;
  * corners owned;
  * X-squares (diagonal to a corner) and C-squares (edge, next to a corner) next to an *empty*
    corner: they tend to give the corner away (X-squares only on 6x6 and up: on 4x4 they are
    the four centre squares);
  * mobility: legal moves of the mover minus legal moves of the opponent;
  * parity near the end: with few empties, an odd count means the mover gets the last move.
Finished games score ``WIN`` plus the final disc difference, so any win beats any heuristic
value. Everything is popcounts of masked bitboards: no gathers, batched over leading axes.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from othello_jax.game import bitboard as bb

WIN = 1 << 16  # a finished game's base value; heuristic values stay far below it
INF = 1 << 24  # larger than any value (alpha-beta window bounds)

CORNER_WEIGHT = 30
X_WEIGHT = 12  # penalty per X-square held while its corner is empty
C_WEIGHT = 4  # penalty per C-square held while its corner is empty
MOBILITY_WEIGHT = 4
PARITY_WEIGHT = 3
# disc weights by square class (corners carry their own term)
EDGE_WEIGHT = 3
INNER_RING_WEIGHT = -1


def _square(row: int, col: int) -> int:
    return 1 << (row * 8 + col)


@functools.cache
def square_classes(size: int) -> dict[str, int]:
    """Python-int masks of the square classes of a ``size`` board (top-left of the 8x8 words)."""
    last = size - 1
    corners = [(0, 0), (0, last), (last, 0), (last, last)]
    per_corner = []
    for r, c in corners:
        dr, dc = (1 if r == 0 else -1), (1 if c == 0 else -1)
        x_square = _square(r + dr, c + dc) if size >= 6 else 0
        c_squares = _square(r + dr, c) | _square(r, c + dc)
        per_corner.append((_square(r, c), x_square, c_squares))
    corner = sum(m for m, _, _ in per_corner)
    x_squares = sum(x for _, x, _ in per_corner)
    c_squares = sum(cs for _, _, cs in per_corner)
    edge = sum(_square(r, c) for r in range(size) for c in range(size) if r in (0, last) or c in (0, last))
    ring = sum(_square(r, c) for r in range(1, last) for c in range(1, last)
               if r in (1, last - 1) or c in (1, last - 1))
    return {
        "corner": corner,
        "edge": edge & ~corner & ~c_squares,  # A and B squares
        "inner_ring": ring & ~x_squares if size >= 6 else 0,
        "x": x_squares,
        "c": c_squares,
        "per_corner": tuple(per_corner),
    }


def _count(board: bb.Bitboard, mask: int) -> jax.Array:
    return bb.popcount(board & bb.constant(mask))


def _balance(mover: bb.Bitboard, opponent: bb.Bitboard, mask: int) -> jax.Array:
    """Discs of the mover minus discs of the opponent on ``mask``."""
    return _count(mover, mask) - _count(opponent, mask)


def evaluate(mover: bb.Bitboard, opponent: bb.Bitboard, mover_moves: bb.Bitboard,
             opponent_moves: bb.Bitboard, size: int) -> jax.Array:
    """Heuristic value (int32) of an unfinished position for the side to move.

    ``mover_moves``/``opponent_moves`` are both sides' legal placements (callers usually have
    them already from deciding whether the position is finished).
    """
    classes = square_classes(size)
    value = CORNER_WEIGHT * _balance(mover, opponent, classes["corner"])
    value += EDGE_WEIGHT * _balance(mover, opponent, classes["edge"])
    if classes["inner_ring"]:
        value += INNER_RING_WEIGHT * _balance(mover, opponent, classes["inner_ring"])
    occupied = mover | opponent
    for corner, x_square, c_squares in classes["per_corner"]:
        corner_empty = ~bb.any_set(occupied & bb.constant(corner))
        danger = -C_WEIGHT * _balance(mover, opponent, c_squares)
        if x_square:
            danger -= X_WEIGHT * _balance(mover, opponent, x_square)
        value += jnp.where(corner_empty, danger, 0)
    value += MOBILITY_WEIGHT * (bb.popcount(mover_moves) - bb.popcount(opponent_moves))
    empties = size * size - bb.popcount(occupied)
    near_end = empties <= (size * size) // 4
    parity = jnp.where(empties % 2 == 1, PARITY_WEIGHT, -PARITY_WEIGHT)
    value += jnp.where(near_end, parity, 0)
    return value.astype(jnp.int32)


def final_value(mover: bb.Bitboard, opponent: bb.Bitboard, size: int) -> jax.Array:
    """Value of a finished game for the side to move: +-WIN plus the disc difference (empties to the winner)."""
    mine, theirs = bb.popcount(mover), bb.popcount(opponent)
    diff = mine - theirs
    diff = diff + jnp.sign(diff) * (size * size - mine - theirs)
    return (jnp.sign(diff) * WIN + diff).astype(jnp.int32)


def position_value(mover: bb.Bitboard, opponent: bb.Bitboard,
                   size: int) -> tuple[jax.Array, jax.Array, bb.Bitboard, bb.Bitboard]:
    """(value, finished, mover's moves, opponent's moves) of a position for the side to move."""
    mover_moves = bb.legal_placements(mover, opponent, size)
    opponent_moves = bb.legal_placements(opponent, mover, size)
    finished = ~bb.any_set(mover_moves) & ~bb.any_set(opponent_moves)
    value = jnp.where(finished, final_value(mover, opponent, size),
                      evaluate(mover, opponent, mover_moves, opponent_moves, size))
    return value, finished, mover_moves, opponent_moves
