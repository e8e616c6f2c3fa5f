"""Exact endgame solving of a batch of positions on device: alpha-beta with an explicit stack.

Each position (a "lane") runs its own negamax alpha-beta search; the recursion is unrolled
into a stack of frames inside one ``lax.while_loop``. Every iteration advances every lane by
one step: a finished top frame is popped into its parent, then the top frame expands its
next move (a child with at most one empty square, or a finished game, is scored on the spot;
any other child is pushed). Everything is batch-first elementwise bitboard work; the stack is
indexed by gathers and scatters, or on TPU (slow at those) by one-hot selects. The loop runs
until the slowest lane is done.

Moves are tried in a cheap static order that needs no child move generation: squares in
quadrants with an odd number of empties first (parity: the last move in a region is worth
having), then by square class (corners, edges, inner squares, then the squares next to a
corner). Scores are final disc differences for the side to move with the empty
squares going to the winner (the FFO convention).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from othello_jax.game import Othello, State
from othello_jax.game import bitboard as bb
from othello_jax.game.bitboard import PASS_SQUARE

NO_SQUARE = -1
_MINUS_INF = -127


class SolveResult(NamedTuple):
    """Per position: score (exact inside the window, else a bound), best action, work done.

    score: int32 final disc difference for the mover under perfect play.
    action: int32 action of a best move (``game.pass_action`` for a forced pass; -1 when the
        game is over or the position was not solved).
    nodes: int32 positions visited by the search.
    solved: bool, whether the position had at most ``max_empties`` empty squares.
    """

    score: jax.Array
    action: jax.Array
    nodes: jax.Array
    solved: jax.Array


class Frame(NamedTuple):
    """One node of a lane's search: the position, the moves still to try and the window."""

    mover: bb.Bitboard
    opponent: bb.Bitboard
    todo: bb.Bitboard  # legal moves not tried yet
    must_pass: jax.Array  # no placement: the one move is a pass (a finished game shows below it)
    alpha: jax.Array
    beta: jax.Array
    best: jax.Array
    best_square: jax.Array
    trying: jax.Array  # square of the child being searched below (PASS_SQUARE for a pass)


def square_classes(size: int) -> tuple[int, ...]:
    """Masks of the board's squares in search order: corners, edges, inner, C-squares, X-squares.

    C- and X-squares are the edge and diagonal neighbours of a corner: playing them early
    often hands the corner to the opponent, so they come last.
    """
    last = size - 1
    classes = [0, 0, 0, 0, 0]
    for r in range(size):
        for c in range(size):
            dr, dc = min(r, last - r), min(c, last - c)  # distance to the nearest corner's row/column
            edge = dr == 0 or dc == 0
            if (dr, dc) == (0, 0):
                rank = 0  # corner
            elif (dr, dc) == (1, 1):
                rank = 4  # X-square
            elif (dr, dc) in ((0, 1), (1, 0)):
                rank = 3  # C-square
            else:
                rank = 1 if edge else 2
            classes[rank] |= 1 << (r * 8 + c)
    return tuple(classes)


def square_to_action(square: jax.Array, size: int) -> jax.Array:
    """Solver square (row * 8 + col; 64 pass; -1 none) -> game action (row * size + col; size*size pass; -1)."""
    square = jnp.asarray(square, jnp.int32)
    action = jnp.where(square == PASS_SQUARE, size * size, (square // 8) * size + square % 8)
    return jnp.where(square >= 0, action, -1)


def _lowest_square(b: bb.Bitboard) -> jax.Array:
    """Index of the lowest set square (64 when empty)."""
    lowest = lambda x: jax.lax.population_count((x & (~x + jnp.uint32(1))) - jnp.uint32(1)).astype(jnp.int32)
    return jnp.where(b.lo != 0, lowest(b.lo), jnp.where(b.hi != 0, 32 + lowest(b.hi), PASS_SQUARE))


def quadrants(size: int) -> tuple[int, ...]:
    """Masks of the four board quadrants (the regions of the parity heuristic)."""
    half = size // 2
    masks = [0, 0, 0, 0]
    for r in range(size):
        for c in range(size):
            masks[(r >= half) * 2 + (c >= half)] |= 1 << (r * 8 + c)
    return tuple(masks)


def _odd_regions(empty: bb.Bitboard, size: int) -> bb.Bitboard:
    """The quadrants holding an odd number of empty squares."""
    odd = bb.Bitboard(jnp.zeros_like(empty.lo), jnp.zeros_like(empty.hi))
    for mask in quadrants(size):
        quadrant = bb.constant(mask)
        is_odd = (bb.popcount(empty & quadrant) & 1) == 1
        odd = bb.where(is_odd, odd | quadrant, odd)
    return odd


def _pick(todo: bb.Bitboard, classes: tuple[int, ...], odd: bb.Bitboard) -> jax.Array:
    """The next square to try: odd regions first (parity), within them by square class."""
    square = jnp.full(todo.lo.shape, PASS_SQUARE, jnp.int32)
    by_class = [todo & bb.constant(mask) for mask in classes]
    groups = [g & odd for g in by_class] + [g & ~odd for g in by_class]
    for candidates in reversed(groups):
        square = jnp.where(bb.any_set(candidates), _lowest_square(candidates), square)
    return square


def _final_score(mover: bb.Bitboard, opponent: bb.Bitboard, empties: jax.Array) -> jax.Array:
    diff = bb.popcount(mover) - bb.popcount(opponent)
    return diff + jnp.sign(diff) * empties


def _leaf_score(mover: bb.Bitboard, opponent: bb.Bitboard, mover_can: jax.Array, empty: bb.Bitboard,
                empties: jax.Array, size: int) -> jax.Array:
    """Exact score of a position with at most one empty square, or of a finished game.

    With one empty square the mover fills it if it can, else the opponent if that flips
    anything, else the game is over: one flip count decides.
    """
    diff = bb.popcount(mover) - bb.popcount(opponent)
    player = bb.where(mover_can, mover, opponent)
    other = bb.where(mover_can, opponent, mover)
    flipped = bb.flips(player, other, empty, size)
    gain = 2 * bb.popcount(flipped) + 1
    played = jnp.where(mover_can, diff + gain, diff - gain)
    last_move = (empties == 1) & (mover_can | bb.any_set(flipped))
    return jnp.where(last_move, played, _final_score(mover, opponent, empties))


def _one_hot_stack() -> bool:
    """TPUs are slow at gathers and scatters: index the stack with one-hot selects there."""
    return jax.default_backend() == "tpu"


def _read(stack: Frame, index: jax.Array) -> Frame:
    """stack[lane, index[lane]] for every lane."""
    if not _one_hot_stack():
        return jax.tree.map(lambda x: jnp.take_along_axis(x, index[:, None], axis=1)[:, 0], stack)
    hot = jnp.arange(stack.alpha.shape[1]) == index[:, None]
    return jax.tree.map(lambda x: jnp.sum(jnp.where(hot, x, jnp.zeros((), x.dtype)), axis=1, dtype=x.dtype), stack)


def _write(stack: Frame, index: jax.Array, frame: Frame, when: jax.Array) -> Frame:
    """stack[lane, index[lane]] = frame[lane] where ``when``."""
    if not _one_hot_stack():
        lanes = jnp.arange(index.shape[0])
        return jax.tree.map(lambda s, f: s.at[lanes, index].set(jnp.where(when, f, s[lanes, index])), stack, frame)
    hot = (jnp.arange(stack.alpha.shape[1]) == index[:, None]) & when[:, None]
    return jax.tree.map(lambda s, f: jnp.where(hot, f[:, None], s), stack, frame)


def _select(flag: jax.Array, a: Frame, b: Frame) -> Frame:
    return jax.tree.map(lambda x, y: jnp.where(flag, x, y), a, b)


def _solve_flat(states: State, game: Othello, max_empties: int, alpha: jax.Array, beta: jax.Array) -> SolveResult:
    size = game.size
    board = bb.board_mask_int(size)
    classes = square_classes(size)
    depth = 2 * max_empties + 2  # each placement may be followed by a pass
    lanes = states.ply.shape[0]
    int32 = lambda x: jnp.broadcast_to(jnp.asarray(x, jnp.int32), (lanes,))

    def empty_of(mover, opponent):
        return ~(mover | opponent) & bb.constant(board)

    empties = bb.popcount(empty_of(states.mover, states.opponent))
    solved = empties <= max_empties
    has_moves = bb.any_set(states.legal)
    root = Frame(
        mover=states.mover, opponent=states.opponent, todo=states.legal,
        must_pass=~has_moves,
        alpha=int32(alpha), beta=int32(beta), best=int32(_MINUS_INF), best_square=int32(NO_SQUARE),
        trying=int32(NO_SQUARE),
    )
    root_final = _final_score(states.mover, states.opponent, empties)
    root = root._replace(best=jnp.where(states.terminal, root_final, root.best))
    stack = jax.tree.map(lambda x: jnp.zeros((lanes, depth), x.dtype), root)
    done = ~solved | states.terminal
    carry = (root, stack, jnp.zeros(lanes, jnp.int32), done, solved.astype(jnp.int32))

    def finished(frame: Frame) -> jax.Array:
        return (~bb.any_set(frame.todo) & ~frame.must_pass) | (frame.alpha >= frame.beta)

    def body(carry):
        cur, stack, sp, done, nodes = carry

        # A finished frame returns its score to its parent (the root's ends the lane's search).
        over = ~done & finished(cur)
        pop = over & (sp > 0)
        done = done | (over & (sp == 0))
        parent = _read(stack, jnp.maximum(sp - 1, 0))
        returned = -cur.best
        better = returned > parent.best
        parent = parent._replace(
            best=jnp.where(better, returned, parent.best),
            best_square=jnp.where(better, parent.trying, parent.best_square),
            alpha=jnp.maximum(parent.alpha, returned),
        )
        cur = _select(pop, parent, cur)
        sp = sp - pop.astype(jnp.int32)

        # Then the top frame (the parent, if one was popped) tries its next move.
        expand = ~done & ~finished(cur)
        odd = _odd_regions(empty_of(cur.mover, cur.opponent), size)
        square = jnp.where(cur.must_pass, PASS_SQUARE, _pick(cur.todo, classes, odd))
        move = bb.square_bit(square)
        flipped = bb.flips(cur.mover, cur.opponent, move, size)
        child_mover = bb.where(cur.must_pass, cur.opponent, cur.opponent & ~flipped)
        child_opponent = bb.where(cur.must_pass, cur.mover, cur.mover | move | flipped)
        child_moves = bb.legal_placements(child_mover, child_opponent, size)
        child_can = bb.any_set(child_moves)
        child_empty = empty_of(child_mover, child_opponent)
        child_empties = bb.popcount(child_empty)
        # A child without placements is pushed with a pass to play; if the position after that
        # pass has none either, the game is over and it is scored here.
        leaf = (child_empties <= 1) | (cur.must_pass & ~child_can)
        value = -_leaf_score(child_mover, child_opponent, child_can, child_empty, child_empties, size)
        rest = cur._replace(todo=cur.todo & ~move, must_pass=jnp.zeros_like(cur.must_pass), trying=square)
        better = value > cur.best
        scored = rest._replace(
            best=jnp.where(better, value, cur.best),
            best_square=jnp.where(better, square, cur.best_square),
            alpha=jnp.maximum(cur.alpha, value),
        )
        child = Frame(
            mover=child_mover, opponent=child_opponent, todo=child_moves, must_pass=~child_can,
            alpha=-cur.beta, beta=-cur.alpha, best=jnp.full_like(cur.best, _MINUS_INF),
            best_square=jnp.full_like(cur.best, NO_SQUARE), trying=jnp.full_like(cur.best, NO_SQUARE),
        )
        push = expand & ~leaf
        stack = _write(stack, sp, rest, push)
        cur = _select(push, child, _select(expand, scored, cur))
        sp = sp + push.astype(jnp.int32)
        return cur, stack, sp, done, nodes + expand.astype(jnp.int32)

    cur, _, _, _, nodes = jax.lax.while_loop(lambda c: jnp.any(~c[3]), body, carry)
    action = jnp.where(solved, square_to_action(cur.best_square, size), -1)
    return SolveResult(score=jnp.where(solved, cur.best, 0), action=action, nodes=nodes, solved=solved)


def solve_batch(states: State, game: Othello, max_empties: int, alpha: jax.Array | int = -64,
                beta: jax.Array | int = 64) -> SolveResult:
    """Solve every position with at most ``max_empties`` empty squares (others: ``solved`` False).

    ``states`` may have any leading batch shape; ``alpha``/``beta`` (scalars or per-position)
    set the search window: the score is exact inside it, a bound at or outside it. Jittable
    with ``game`` and ``max_empties`` static (see ``solve_batch_jit``).
    """
    batch = states.ply.shape
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[len(batch):]), states)
    alpha = jnp.broadcast_to(jnp.asarray(alpha, jnp.int32), batch).reshape(-1)
    beta = jnp.broadcast_to(jnp.asarray(beta, jnp.int32), batch).reshape(-1)
    result = _solve_flat(flat, game, max_empties, alpha, beta)
    return jax.tree.map(lambda x: x.reshape(batch), result)


solve_batch_jit = jax.jit(solve_batch, static_argnames=("game", "max_empties"))
