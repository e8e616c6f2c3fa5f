"""Othello rules as pure functions of a tiny canonical ``State``.

Use through :class:`Othello`, a hashable description of the board size (pass it as a static
argument to ``jit``)::

    game = Othello(8)
    state = game.init()
    state = game.step(state, action)

Actions ``0 .. N*N-1`` are squares (row * N + column, A1 = 0); action ``N*N`` is pass, legal
only when no placement is. The game ends as soon as neither side can place a disc. Every
method broadcasts over leading batch axes and also works under ``vmap``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.errors import InputError
from othello_jax.game import bitboard as bb

BLACK = 0
WHITE = 1
SIZES = (4, 6, 8)
DRAW_BAND = 0.5  # a value within this of 0 (on the result's share of the scale) reads as a draw


class State(NamedTuple):
    """One position, always seen from the side to move (29 bytes; every leaf has the batch shape).

    mover, opponent: discs of the side to move and of the other side (bitboards).
    legal: the mover's legal placements (cached, so legality and the end are free to query).
    color: colour to move (0 black, 1 white).
    passed: whether the previous ply was a pass.
    terminal: whether neither side can move (the game is over).
    ply: number of plies played (passes included).
    """

    mover: bb.Bitboard
    opponent: bb.Bitboard
    legal: bb.Bitboard
    color: jax.Array
    passed: jax.Array
    terminal: jax.Array
    ply: jax.Array


# A batched move chooser, what every agent and judge passes around: (states, key) -> int32[B] actions.
ActFn = Callable[[State, jax.Array], jax.Array]


def state_nbytes(state: State) -> int:
    """Bytes used by one (unbatched) state."""
    return int(sum(np.asarray(x).nbytes for x in jax.tree.leaves(state)))


@dataclasses.dataclass(frozen=True)
class Othello:
    """Rules for one board size (4, 6 or 8); hashable so it can be a static jit argument."""

    size: int = 8

    def __post_init__(self) -> None:
        if self.size not in SIZES:
            raise InputError(f"board size must be one of {SIZES}, got {self.size!r}")

    # ---- sizes and constants ------------------------------------------------------------
    @property
    def num_squares(self) -> int:
        return self.size * self.size

    @property
    def num_actions(self) -> int:
        """Squares plus the pass action."""
        return self.size * self.size + 1

    @property
    def pass_action(self) -> int:
        return self.size * self.size

    def square_of_action(self, action: jax.Array) -> jax.Array:
        """Square index (row * 8 + col) of a placement action; -1 for pass."""
        action = jnp.asarray(action, jnp.int32)
        square = (action // self.size) * 8 + action % self.size
        return jnp.where(action < self.num_squares, square, -1)

    # ---- construction -------------------------------------------------------------------
    def from_discs(self, mover: bb.Bitboard, opponent: bb.Bitboard, color: jax.Array | int,
                   passed: jax.Array | bool = False, ply: jax.Array | int = 0) -> State:
        """Build a consistent state (legal moves and end derived) from two bitboards."""
        legal = bb.legal_placements(mover, opponent, self.size)
        other = bb.legal_placements(opponent, mover, self.size)
        terminal = ~bb.any_set(legal) & ~bb.any_set(other)
        shape = terminal.shape
        return State(
            mover=mover,
            opponent=opponent,
            legal=legal,
            color=jnp.broadcast_to(jnp.asarray(color, jnp.int8), shape),
            passed=jnp.broadcast_to(jnp.asarray(passed, bool), shape),
            terminal=terminal,
            ply=jnp.broadcast_to(jnp.asarray(ply, jnp.int16), shape),
        )

    def init(self) -> State:
        """The standard start: white on the top-left and bottom-right centre squares, black to move."""
        h = self.size // 2
        white = (1 << ((h - 1) * 8 + h - 1)) | (1 << (h * 8 + h))
        black = (1 << ((h - 1) * 8 + h)) | (1 << (h * 8 + h - 1))
        return self.from_discs(bb.constant(black), bb.constant(white), BLACK)

    # ---- queries ------------------------------------------------------------------------
    def legal_moves(self, state: State) -> jax.Array:
        """Bool mask over actions (..., N*N+1). All false once the game is over."""
        squares = bb.to_grid(state.legal, self.size).reshape(state.legal.lo.shape + (self.num_squares,))
        can_pass = ~bb.any_set(state.legal) & ~state.terminal
        return jnp.concatenate([squares, can_pass[..., None]], axis=-1)

    def action_of_square(self, square: jax.Array) -> jax.Array:
        """Action of a square index (row * 8 + col); 64 (no square) maps to pass."""
        square = jnp.asarray(square, jnp.int32)
        return jnp.where(square < 64, (square // 8) * self.size + square % 8, self.pass_action)

    def first_legal_action(self, state: State) -> jax.Array:
        """The lowest-numbered legal action (pass when no placement), straight from the bitboard."""
        return self.action_of_square(bb.lowest_square(state.legal))

    def random_legal_action(self, state: State, key: jax.Array) -> jax.Array:
        """A uniformly random legal action (pass when no placement), straight from the bitboard.

        Much cheaper than sampling from the (N*N+1)-wide mask: one random word per game.
        """
        return self.legal_action_of_bits(state, jax.random.bits(key, state.ply.shape, jnp.uint32))

    def legal_action_of_bits(self, state: State, bits: jax.Array) -> jax.Array:
        """The legal action that one random uint32 word per game picks (uniform up to 2**-32; pass
        when no placement): :meth:`random_legal_action` with the draw made by the caller."""
        count = bb.popcount(state.legal)
        k = (bits % jnp.maximum(count, 1).astype(jnp.uint32)).astype(jnp.int32)
        square = jnp.where(count > 0, bb.select_square(state.legal, k), 64)
        return self.action_of_square(square)

    def is_terminal(self, state: State) -> jax.Array:
        return state.terminal

    def disc_difference(self, state: State) -> jax.Array:
        """Mover's discs minus opponent's; at the end empty squares go to the winner (WOF rule)."""
        mine = bb.popcount(state.mover)
        theirs = bb.popcount(state.opponent)
        diff = mine - theirs
        empties = self.num_squares - mine - theirs
        awarded = jnp.sign(diff) * empties
        return jnp.where(state.terminal, diff + awarded, diff).astype(jnp.int32)

    def outcome(self, state: State) -> tuple[jax.Array, jax.Array]:
        """(+1/0/-1 result, final disc difference), both from the mover's view (int32)."""
        diff = self.disc_difference(state)
        return jnp.sign(diff).astype(jnp.int32), diff

    def black_white(self, state: State) -> tuple[jax.Array, jax.Array]:
        """(black discs, white discs) bitboards, undoing the mover's-view canonical form."""
        white_to_move = state.color == WHITE
        black = bb.where(white_to_move, state.opponent, state.mover)
        white = bb.where(white_to_move, state.mover, state.opponent)
        return black, white

    def observation(self, state: State, dtype: jnp.dtype = jnp.float32) -> jax.Array:
        """Network input (..., N, N, 2): plane 0 the mover's discs, plane 1 the opponent's."""
        planes = [bb.to_grid(state.mover, self.size), bb.to_grid(state.opponent, self.size)]
        return jnp.stack(planes, axis=-1).astype(dtype)

    def result_value(self, difference: jax.Array, margin: float = 0.0) -> jax.Array:
        """A final disc difference (mover's view) on the value head's scale, float32:
        ``(1 - margin) * sign + margin * difference / squares``.

        ``margin`` 0 is the result alone (+1/0/-1, as :meth:`outcome`); any margin in (0, 1]
        keeps every win above every draw above every loss and orders results by their margin,
        so a search on such values can tell losing by 2 from losing by 20.
        """
        difference = jnp.asarray(difference).astype(jnp.float32)
        return (1.0 - margin) * jnp.sign(difference) + margin * difference / self.num_squares

    def read_value(self, value: np.ndarray | float, margin: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """What values on the value head's scale say, on the host: ``(result, difference)``, the
        inverse of :meth:`result_value`.

        ``result`` (int32 -1/0/+1) is the nearest result on its share of the scale: a draw within
        ``DRAW_BAND * (1 - margin)`` of 0. ``difference`` (float32) is the final disc difference the
        rest of the value gives with that result, kept on the result's side (a win by at least 1
        disc, a loss by at least 1, a draw 0) and within the board's squares; NaN for ``margin`` 0,
        whose values say nothing of margins.
        """
        value = np.asarray(value, np.float32)
        band = DRAW_BAND * (1.0 - margin)
        result = np.where(value > band, 1, np.where(value < -band, -1, 0)).astype(np.int32)
        if not margin:
            return result, np.full(value.shape, np.nan, np.float32)
        squares = self.num_squares
        difference = (value - (1.0 - margin) * result) * squares / margin
        difference = np.where(result > 0, np.clip(difference, 1, squares),
                              np.where(result < 0, np.clip(difference, -squares, -1), 0.0))
        return result, difference.astype(np.float32)

    def every_placement(self, state: State) -> tuple[bb.Bitboard, bb.Bitboard]:
        """(mover's discs, opponent's discs) after a placement on each square, on a trailing axis
        of N*N squares (meaningful where the placement is legal)."""
        squares = np.array([(a // self.size) * 8 + a % self.size for a in range(self.num_squares)], np.int32)
        widen = lambda b: bb.Bitboard(b.lo[..., None], b.hi[..., None])
        return bb.play(widen(state.mover), widen(state.opponent), bb.square_bit(squares), self.size)

    def ending_moves(self, state: State) -> tuple[jax.Array, jax.Array]:
        """Which legal moves end the game, and the final disc difference for the mover: (bool,
        int32), both (..., N*N+1); the difference is 0 where the move does not end the game, pass
        never does.

        One ply for every square at once (a trailing axis of squares, no loop): the placement's
        flips, then whether either side can move afterwards (a wipeout and a full board are
        covered: nobody can move). The difference counts the empty squares for the winner, as
        :meth:`disc_difference` does at the end.
        """
        placed, remaining = self.every_placement(state)
        stuck = (~bb.any_set(bb.legal_placements(remaining, placed, self.size))
                 & ~bb.any_set(bb.legal_placements(placed, remaining, self.size)))
        ends = self.legal_moves(state)[..., : self.num_squares] & stuck
        mine, theirs = bb.popcount(placed), bb.popcount(remaining)
        final = (mine - theirs) + jnp.sign(mine - theirs) * (self.num_squares - mine - theirs)
        difference = jnp.where(ends, final, 0).astype(jnp.int32)
        no_pass = jnp.zeros(ends.shape[:-1] + (1,), bool)
        return (jnp.concatenate([ends, no_pass], axis=-1),
                jnp.concatenate([difference, no_pass.astype(jnp.int32)], axis=-1))

    # ---- transitions --------------------------------------------------------------------
    def step(self, state: State, action: jax.Array) -> State:
        """Play ``action`` for the mover. A finished game is returned unchanged.

        The action must be legal (see ``legal_moves``); an illegal placement leaves the board
        in an unspecified (but well-formed) state. Pass is ``N*N``.
        """
        action = jnp.asarray(action, jnp.int32)
        placed, remaining = bb.play(state.mover, state.opponent, bb.square_bit(self.square_of_action(action)),
                                    self.size)
        nxt = self.from_discs(
            mover=remaining,
            opponent=placed,
            color=1 - state.color,
            passed=action >= self.num_squares,
            ply=state.ply + 1,
        )
        return jax.tree.map(lambda old, new: jnp.where(state.terminal, old, new), state, nxt)


def batch_of_one(state: State) -> State:
    """Add a leading batch axis of size 1 to every leaf, on the host (numpy): a player wraps each
    position it is asked about, and jnp's indexing compiled a small program per leaf."""
    return jax.tree.map(lambda x: np.asarray(x)[None], state)
