"""The rules for one position at a time on the host (64-bit Python integers, numpy leaves).

A game played move by move (`play`, the GTP and NBoard engines, the web page:
:class:`~othello_jax.interface.session.GameSession`) asks for the legal moves and plays one move
at a time. Jitted, each of those rules is a program to compile at a player's start (1.2-1.5 s of a
2-core CPU before its first reply, with the compilation cache full); here they run in
microseconds and compile nothing. The states are the jitted rules' own (:class:`State`, the same
dtypes and shapes, numpy leaves), so agents and the jitted rules take them as they are.
"""

from __future__ import annotations

import numpy as np

from othello_jax.game import bitboard as bb
from othello_jax.game.rules import BLACK, Othello, State

_MASK32 = 0xFFFFFFFF
_FULL = (1 << 64) - 1


def to_int(board: bb.Bitboard) -> int:
    """One (unbatched) bitboard as a 64-bit Python integer."""
    return int(np.asarray(board.lo)) | (int(np.asarray(board.hi)) << 32)


def _bitboard(bits: int) -> bb.Bitboard:
    return bb.Bitboard(np.asarray(bits & _MASK32, np.uint32), np.asarray(bits >> 32 & _MASK32, np.uint32))


def _shift(bits: int, step: int) -> int:
    return (bits << step) & _FULL if step > 0 else bits >> -step


def _run(seed: int, through: int, step: int, length: int) -> int:
    """The run of ``through`` squares next to ``seed`` in direction ``step`` (at most ``length``)."""
    run = _shift(seed, step) & through
    for _ in range(length - 1):
        run |= _shift(run, step) & through
    return run


def legal_placements(mover: int, opponent: int, size: int) -> int:
    """Empty squares where the mover flanks at least one opponent line (``bitboard.legal_placements``)."""
    empty = ~(mover | opponent) & bb.board_mask_int(size)
    moves = 0
    for step, wrap in bb.DIRECTIONS:
        moves |= _shift(_run(mover, opponent & wrap, step, size - 2), step) & wrap & empty
    return moves


def flips(mover: int, opponent: int, move: int, size: int) -> int:
    """Opponent discs flipped when the mover places on the single-bit ``move`` (``bitboard.flips``)."""
    flipped = 0
    for step, wrap in bb.DIRECTIONS:
        run = _run(move, opponent & wrap, step, size - 2)
        if _shift(run, step) & wrap & mover:
            flipped |= run
    return flipped


def from_discs(game: Othello, mover: int, opponent: int, color: int, passed: bool = False, ply: int = 0) -> State:
    """A consistent state from two 64-bit boards (``Othello.from_discs`` on the host)."""
    legal = legal_placements(mover, opponent, game.size)
    terminal = not legal and not legal_placements(opponent, mover, game.size)
    return State(mover=_bitboard(mover), opponent=_bitboard(opponent), legal=_bitboard(legal),
                 color=np.asarray(color, np.int8), passed=np.asarray(passed, bool),
                 terminal=np.asarray(terminal, bool), ply=np.asarray(ply, np.int16))


def init(game: Othello) -> State:
    """The standard start (``Othello.init``)."""
    h = game.size // 2
    white = (1 << ((h - 1) * 8 + h - 1)) | (1 << (h * 8 + h))
    black = (1 << ((h - 1) * 8 + h)) | (1 << (h * 8 + h - 1))
    return from_discs(game, black, white, BLACK)


def step(game: Othello, state: State, action: int) -> State:
    """Play a legal ``action`` for the mover (``Othello.step``): a finished game is returned unchanged."""
    if bool(np.asarray(state.terminal)):
        return state
    action = int(action)
    mover, opponent = to_int(state.mover), to_int(state.opponent)
    if action < game.num_squares:
        move = 1 << ((action // game.size) * 8 + action % game.size)
        flipped = flips(mover, opponent, move, game.size)
        mover, opponent = mover | move | flipped, opponent & ~flipped
    return from_discs(game, opponent, mover, 1 - int(np.asarray(state.color)), action >= game.num_squares,
                      int(np.asarray(state.ply)) + 1)


def legal_actions(state: State, game: Othello) -> list[int]:
    """The legal actions of one position (``[pass]`` when forced, ``[]`` at the end)."""
    if bool(np.asarray(state.terminal)):
        return []
    bits = to_int(state.legal)
    return [(square // 8) * game.size + square % 8 for square in range(64) if bits >> square & 1] or [game.pass_action]


def disc_counts(state: State) -> tuple[int, int]:
    """(black discs, white discs) of one position."""
    mover, opponent = to_int(state.mover).bit_count(), to_int(state.opponent).bit_count()
    return (mover, opponent) if int(np.asarray(state.color)) == BLACK else (opponent, mover)
