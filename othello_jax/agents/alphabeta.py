"""Depth-limited negamax with alpha-beta pruning, batch-first and jittable.

Every position of the batch runs its own depth-first search with an explicit stack inside one
``lax.while_loop``: each iteration either expands the next untried move of the lane's current
node (evaluating it on the spot when it is a leaf or a finished game, else pushing it) or pops
an exhausted (or cut-off) node into its parent. No Python recursion, static shapes, and far
fewer positions touched than expanding the full game tree to depth k. Moves are tried corners
first and X-squares last (a static ordering that produces early cut-offs).

A pass is a ply like any other (it uses one level of depth). Values come from
``othello_jax.agents.heuristic`` (finished games: +-WIN plus the disc difference).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from othello_jax.agents import heuristic
from othello_jax.errors import InputError
from othello_jax.game import Othello, State
from othello_jax.game import bitboard as bb
from othello_jax.game.bitboard import PASS_SQUARE
from othello_jax.game.fusion import materialize


class _Frame(NamedTuple):
    """One node per stack level (leaves of shape [depth, B] in the stack, [B] when read)."""

    mover: bb.Bitboard
    opponent: bb.Bitboard
    todo: bb.Bitboard  # placements not tried yet
    pass_todo: jax.Array  # the pass move is still to try (node with no placement, game not over)
    beta: jax.Array  # upper window bound at entry (alpha lives in ``best``'s running max)
    alpha: jax.Array
    best: jax.Array  # best value found so far (-INF before the first child)


class _Carry(NamedTuple):
    stack: _Frame
    level: jax.Array  # int32[B] current stack level
    done: jax.Array  # bool[B]
    root_move: jax.Array  # int32[B] square code of the root move being searched
    best_move: jax.Array  # int32[B] square code of the best root move so far
    iterations: jax.Array  # int32 scalar, for benchmarks


@functools.cache
def move_order_masks(size: int) -> tuple[int, ...]:
    """Square classes in the order moves are tried: corners, edges, inside, C-squares, X-squares."""
    classes = heuristic.square_classes(size)
    board = bb.board_mask_int(size)
    corner, edge, c_sq, x_sq = classes["corner"], classes["edge"], classes["c"], classes["x"]
    inside = board & ~(corner | edge | c_sq | x_sq)
    return tuple(m for m in (corner, edge, inside, c_sq, x_sq) if m)


def _next_move(todo: bb.Bitboard, size: int) -> tuple[bb.Bitboard, jax.Array]:
    """The next placement to try: the lowest square of the first non-empty ordering class."""
    chosen = bb.constant(0, todo.lo.shape)
    found = jnp.zeros(todo.lo.shape, bool)
    for mask in move_order_masks(size):
        candidates = todo & bb.constant(mask)
        take = ~found & bb.any_set(candidates)
        chosen = bb.where(take, candidates, chosen)
        found = found | take
    square = bb.lowest_square(chosen)  # 64 when there is none
    return bb.square_bit(square), square


def _read(stack: _Frame, onehot: jax.Array) -> _Frame:
    """The frame at each lane's level (``onehot`` is bool[depth, B])."""
    return jax.tree.map(lambda x: jnp.max(jnp.where(onehot, x, jnp.zeros((), x.dtype)), axis=0)
                        if x.dtype != jnp.int32 else jnp.sum(jnp.where(onehot, x, 0), axis=0), stack)


def _write(stack: _Frame, where: jax.Array, frame: _Frame) -> _Frame:
    """Replace the frames where ``where`` (bool[depth, B]) holds with ``frame`` ([B] leaves)."""
    return jax.tree.map(lambda old, new: jnp.where(where, new[None], old), stack, frame)


def negamax(states: State, game: Othello, depth: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Alpha-beta to ``depth`` plies for a batch of positions (leading axis B).

    Returns (best action int32[B], negamax value int32[B] for the side to move, loop
    iterations). Finished positions get the pass action and their final value.
    """
    if depth < 1:
        raise InputError(f"alpha-beta depth must be >= 1, got {depth}")
    size = game.size
    batch = states.ply.shape
    ninf = jnp.full(batch, -heuristic.INF, jnp.int32)
    root = _Frame(
        mover=states.mover,
        opponent=states.opponent,
        todo=states.legal,
        pass_todo=~bb.any_set(states.legal) & ~states.terminal,
        beta=jnp.full(batch, heuristic.INF, jnp.int32),
        alpha=ninf,
        best=ninf,
    )
    stack = jax.tree.map(lambda x: jnp.broadcast_to(x[None], (depth,) + x.shape), root)
    levels = jnp.arange(depth, dtype=jnp.int32)[:, None]
    init = _Carry(stack, jnp.zeros(batch, jnp.int32), states.terminal,
                  jnp.full(batch, PASS_SQUARE, jnp.int32), jnp.full(batch, PASS_SQUARE, jnp.int32),
                  jnp.zeros((), jnp.int32))

    def body(carry: _Carry) -> _Carry:
        stack, level, done = carry.stack, carry.level, carry.done
        node = _read(stack, levels == level[None])
        alpha = jnp.maximum(node.alpha, node.best)
        has_move = bb.any_set(node.todo) | node.pass_todo
        expand = ~done & has_move & (node.best < node.beta)
        pop = ~done & ~expand

        # -- expand the next move of the current node
        move_bit, move_square = _next_move(node.todo, size)
        is_pass = ~bb.any_set(node.todo)
        move_square = jnp.where(is_pass, PASS_SQUARE, move_square)
        flipped = materialize(bb.flips(node.mover, node.opponent, move_bit, size))
        child_mover = bb.where(is_pass, node.opponent, node.opponent & ~flipped)
        child_opponent = bb.where(is_pass, node.mover, node.mover | move_bit | flipped)
        child_value, child_finished, child_moves, _ = materialize(
            heuristic.position_value(child_mover, child_opponent, size))
        leaf = child_finished | (level + 1 >= depth)
        score = -child_value
        leaf_improves = expand & leaf & (score > node.best)
        current = node._replace(
            todo=bb.Bitboard(node.todo.lo & ~move_bit.lo, node.todo.hi & ~move_bit.hi),
            pass_todo=node.pass_todo & ~is_pass,
            best=jnp.where(leaf_improves, score, node.best),
        )
        child = _Frame(
            mover=child_mover,
            opponent=child_opponent,
            todo=child_moves,
            pass_todo=~bb.any_set(child_moves),  # not finished here, so a pass is the only move
            beta=-alpha,
            alpha=-node.beta,
            best=ninf,
        )
        push = expand & ~leaf

        # -- pop an exhausted node into its parent
        parent = _read(stack, levels == (level - 1)[None])
        popped = -node.best
        parent_improves = pop & (level > 0) & (popped > parent.best)
        parent = parent._replace(best=jnp.where(parent_improves, popped, parent.best))

        stack = _write(stack, (levels == level[None]) & expand[None], current)
        stack = _write(stack, (levels == (level + 1)[None]) & push[None], child)
        stack = _write(stack, (levels == (level - 1)[None]) & parent_improves[None], parent)

        at_root = level == 0
        root_move = jnp.where(expand & at_root, move_square, carry.root_move)
        best_move = jnp.where(leaf_improves & at_root, move_square, carry.best_move)
        best_move = jnp.where(parent_improves & (level == 1), root_move, best_move)
        level = level + push.astype(jnp.int32) - (pop & ~at_root).astype(jnp.int32)
        done = done | (pop & at_root)
        return _Carry(stack, level, done, root_move, best_move, carry.iterations + 1)

    out = jax.lax.while_loop(lambda c: ~jnp.all(c.done), body, init)
    root_value = out.stack.best[0]
    final = heuristic.final_value(states.mover, states.opponent, size)
    value = jnp.where(states.terminal, final, root_value)
    return game.action_of_square(out.best_move), value, out.iterations
