"""64-square bitboards as two uint32 words, for accelerators without 64-bit integers.

A :class:`Bitboard` is a pytree of two uint32 arrays of equal shape: ``lo`` holds squares
0..31 (rows 1-4), ``hi`` squares 32..63 (rows 5-8). Square index = row * 8 + col, with A1 = 0,
H1 = 7, A8 = 56. Boards smaller than 8x8 live in the top-left corner. Keeping the halves in
separate arrays (not a trailing axis of 2) lets XLA fuse the whole move generator into one
elementwise loop: about 50x faster on CPU than interleaved pairs.
Every function broadcasts over leading axes and is jit/vmap/shard_map safe.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

U32 = jnp.uint32
PASS_SQUARE = 64  # the pass move in square codes (0..63 are squares), as the solvers and alpha-beta use
_MASK32 = 0xFFFFFFFF


class Bitboard(NamedTuple):
    """Squares 0..31 in ``lo`` and 32..63 in ``hi`` (uint32 arrays of equal shape)."""

    lo: jax.Array
    hi: jax.Array

    def __and__(self, other: Bitboard) -> Bitboard:
        return Bitboard(self.lo & other.lo, self.hi & other.hi)

    def __or__(self, other: Bitboard) -> Bitboard:
        return Bitboard(self.lo | other.lo, self.hi | other.hi)

    def __invert__(self) -> Bitboard:
        return Bitboard(~self.lo, ~self.hi)


def constant(value: int, shape: tuple[int, ...] = ()) -> Bitboard:
    """A 64-bit Python integer as a bitboard (broadcast to ``shape``)."""
    value = int(value)
    return Bitboard(jnp.full(shape, value & _MASK32, U32), jnp.full(shape, (value >> 32) & _MASK32, U32))


def board_mask_int(size: int) -> int:
    """The squares of a size x size board (top-left of the 8x8 words) as a Python int."""
    return sum(1 << (r * 8 + c) for r in range(size) for c in range(size))


_COL_A = sum(1 << (r * 8) for r in range(8))
_COL_H = sum(1 << (r * 8 + 7) for r in range(8))
_FULL = (1 << 64) - 1
# (shift in square indices, squares a shifted bit may land on without wrapping a row edge)
DIRECTIONS: tuple[tuple[int, int], ...] = (
    (1, _FULL ^ _COL_A),  # east
    (-1, _FULL ^ _COL_H),  # west
    (8, _FULL),  # south (row + 1)
    (-8, _FULL),  # north
    (9, _FULL ^ _COL_A),  # south-east
    (7, _FULL ^ _COL_H),  # south-west
    (-7, _FULL ^ _COL_A),  # north-east
    (-9, _FULL ^ _COL_H),  # north-west
)


def _masked(b: Bitboard, mask: int) -> Bitboard:
    """``b & mask`` for a Python-int mask, skipping words where the mask is all ones."""
    lo_mask, hi_mask = mask & _MASK32, (mask >> 32) & _MASK32
    lo = b.lo if lo_mask == _MASK32 else b.lo & U32(lo_mask)
    hi = b.hi if hi_mask == _MASK32 else b.hi & U32(hi_mask)
    return Bitboard(lo, hi)


def shift(b: Bitboard, s: int) -> Bitboard:
    """Shift bits toward higher square indices by ``s`` (negative: lower); bits off the ends drop."""
    if s > 0:
        return Bitboard(b.lo << s, (b.hi << s) | (b.lo >> (32 - s)))
    s = -s
    return Bitboard((b.lo >> s) | (b.hi << (32 - s)), b.hi >> s)


def any_set(b: Bitboard) -> jax.Array:
    """True where the bitboard has at least one bit set."""
    return (b.lo | b.hi) != 0


def popcount(b: Bitboard) -> jax.Array:
    """Number of set bits, as int32."""
    return (jax.lax.population_count(b.lo) + jax.lax.population_count(b.hi)).astype(jnp.int32)


def where(flag: jax.Array, a: Bitboard, b: Bitboard) -> Bitboard:
    """Elementwise select between two bitboards."""
    return Bitboard(jnp.where(flag, a.lo, b.lo), jnp.where(flag, a.hi, b.hi))


def square_bit(square: jax.Array) -> Bitboard:
    """Bitboard with the single bit ``square`` (0..63) set; empty for any other value."""
    square = jnp.asarray(square, jnp.int32)
    one = U32(1) << (square & 31).astype(U32)
    lo = jnp.where((square >= 0) & (square < 32), one, U32(0))
    hi = jnp.where((square >= 32) & (square < 64), one, U32(0))
    return Bitboard(lo, hi)


_BIT_INDEX = np.arange(32, dtype=np.uint32)


def to_bits(b: Bitboard) -> jax.Array:
    """Unpack to a (..., 64) bool array, square index order."""
    lo = (b.lo[..., None] >> _BIT_INDEX) & U32(1)
    hi = (b.hi[..., None] >> _BIT_INDEX) & U32(1)
    return jnp.concatenate([lo, hi], axis=-1).astype(bool)


def from_bits(bits: jax.Array) -> Bitboard:
    """Pack a (..., 64) bool array into a bitboard (inverse of ``to_bits``)."""
    weights = U32(1) << _BIT_INDEX
    bits = bits.astype(U32)
    lo = jnp.sum(bits[..., :32] * weights, axis=-1, dtype=U32)
    hi = jnp.sum(bits[..., 32:] * weights, axis=-1, dtype=U32)
    return Bitboard(lo, hi)


def to_grid(b: Bitboard, size: int) -> jax.Array:
    """Unpack to a (..., size, size) bool grid (row, column)."""
    grid = to_bits(b).reshape(b.lo.shape + (8, 8))
    return grid[..., :size, :size]


def from_grid(grid: jax.Array) -> Bitboard:
    """Pack a (..., size, size) bool grid into a bitboard (top-left placement)."""
    size = grid.shape[-1]
    pad = [(0, 0)] * (grid.ndim - 2) + [(0, 8 - size), (0, 8 - size)]
    full = jnp.pad(grid.astype(bool), pad)
    return from_bits(full.reshape(grid.shape[:-2] + (64,)))


def _directional_run(seed: Bitboard, through: Bitboard, step: int, length: int) -> Bitboard:
    """The run of ``through`` squares next to ``seed`` in direction ``step`` (at most ``length``)."""
    x = shift(seed, step) & through
    for _ in range(length - 1):
        x = x | (shift(x, step) & through)
    return x


def legal_placements(mover: Bitboard, opponent: Bitboard, size: int) -> Bitboard:
    """Empty squares where the mover flanks at least one opponent line."""
    empty = _masked(~(mover | opponent), board_mask_int(size))
    moves = None
    for step, wrap in DIRECTIONS:
        run = _directional_run(mover, _masked(opponent, wrap), step, size - 2)
        found = _masked(shift(run, step), wrap) & empty
        moves = found if moves is None else moves | found
    return moves


def flips(mover: Bitboard, opponent: Bitboard, move: Bitboard, size: int) -> Bitboard:
    """Opponent discs flipped when the mover places on the single-bit bitboard ``move``."""
    flipped = None
    for step, wrap in DIRECTIONS:
        run = _directional_run(move, _masked(opponent, wrap), step, size - 2)
        closed = any_set(_masked(shift(run, step), wrap) & mover)
        run = Bitboard(jnp.where(closed, run.lo, U32(0)), jnp.where(closed, run.hi, U32(0)))
        flipped = run if flipped is None else flipped | run
    return flipped


def play(mover: Bitboard, opponent: Bitboard, move: Bitboard, size: int) -> tuple[Bitboard, Bitboard]:
    """(mover's discs, opponent's discs) after the mover places on the single-bit ``move``."""
    flipped = flips(mover, opponent, move, size)
    return mover | move | flipped, opponent & ~flipped


def _lowest_bit_index32(x: jax.Array) -> jax.Array:
    """Index of the lowest set bit of a uint32 (32 when x == 0)."""
    isolated = x & (~x + U32(1))
    return jnp.where(x == 0, 32, 31 - jax.lax.clz(isolated).astype(jnp.int32))


def lowest_square(b: Bitboard) -> jax.Array:
    """Index of the lowest set square (64 when empty), without loops over squares."""
    return jnp.where(b.lo != 0, _lowest_bit_index32(b.lo), 32 + _lowest_bit_index32(b.hi))


def _select_bit32(x: jax.Array, k: jax.Array) -> jax.Array:
    """Index of the k-th (0-based) set bit of a uint32, by binary search on popcounts."""
    pos = jnp.zeros_like(k)
    for width in (16, 8, 4, 2, 1):
        low = (x >> pos.astype(U32)) & U32((1 << width) - 1)
        count = jax.lax.population_count(low).astype(jnp.int32)
        go_high = k >= count
        k = jnp.where(go_high, k - count, k)
        pos = jnp.where(go_high, pos + width, pos)
    return pos


def select_square(b: Bitboard, k: jax.Array) -> jax.Array:
    """Index of the k-th (0-based) set square; k must be below ``popcount(b)``."""
    k = jnp.asarray(k, jnp.int32)
    in_lo = jax.lax.population_count(b.lo).astype(jnp.int32)
    high = k >= in_lo
    word = jnp.where(high, b.hi, b.lo)
    return jnp.where(high, 32, 0) + _select_bit32(word, jnp.where(high, k - in_lo, k))
