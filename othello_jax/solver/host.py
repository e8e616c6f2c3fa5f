"""Solving positions from the host with the best backend available: the C solver (fast for
single positions), else the batched JAX solver.

Backends: ``"c"`` (the C solver; an error if it cannot be built), ``"jax"`` (the JAX solver)
and ``"auto"`` (C when it builds, else JAX, with a one-time warning saying why).
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.errors import InputError
from othello_jax.game import Othello, State
from othello_jax.game import bitboard as bb
from othello_jax.solver import c_solver
from othello_jax.solver.cache import child
from othello_jax.solver.jax_solver import solve_batch_jit, square_to_action

BACKENDS = ("auto", "c", "jax")


class Solution(NamedTuple):
    """The exact score of one position (mover's view), a best action (-1 if the game is over)
    and the nodes searched."""

    score: int
    action: int
    nodes: int


@functools.cache
def _warn_fallback(reason: str) -> None:
    warnings.warn(f"using the (slower) JAX solver on the host: {reason}", RuntimeWarning, stacklevel=3)


def resolve_backend(backend: str) -> str:
    """``"auto"`` -> ``"c"`` or ``"jax"``; checks the name and that ``"c"`` can be built."""
    if backend not in BACKENDS:
        raise InputError(f"solver backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "jax":
        return backend
    try:
        c_solver.library()
    except c_solver.CSolverUnavailable as err:
        if backend == "c":
            raise
        _warn_fallback(str(err))
        return "jax"
    return "c"


def bitboards_u64(b: bb.Bitboard) -> np.ndarray:
    """A (batched) bitboard as uint64 numbers, for the C solver."""
    lo = np.asarray(b.lo).astype(np.uint64)
    hi = np.asarray(b.hi).astype(np.uint64)
    return lo | (hi << np.uint64(32))


def bitboards_from_u64(u64: np.ndarray | Sequence[int]) -> bb.Bitboard:
    """uint64 numbers (the C solver's boards) as a (batched) bitboard: the inverse of
    :func:`bitboards_u64`."""
    u64 = np.asarray(u64, np.uint64)
    lo = (u64 & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return bb.Bitboard(jnp.asarray(lo), jnp.asarray((u64 >> np.uint64(32)).astype(np.uint32)))


def count_empties(states: State, game: Othello) -> jax.Array:
    """Empty squares of each position (int32, jittable)."""
    return game.num_squares - bb.popcount(states.mover) - bb.popcount(states.opponent)


def empties_on_host(states: State, game: Othello) -> np.ndarray:
    """:func:`count_empties` in numpy, for host code: no jax operation to compile (a player's
    first move ran seven)."""
    discs = np.asarray(bitboards_u64(states.mover) | bitboards_u64(states.opponent), np.uint64)
    bits = np.unpackbits(np.ascontiguousarray(discs.reshape(-1, 1)).view(np.uint8), axis=1)
    return game.num_squares - bits.sum(axis=1, dtype=np.int32).reshape(discs.shape)


def solve_many(states: State, game: Othello = Othello(8), backend: str = "auto", alpha: int = -64,
               beta: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Solve a batch [B] of positions: (scores, actions, nodes) as numpy int arrays.

    Scores are exact inside (alpha, beta), bounds outside. The JAX backend searches the whole
    batch at once (its cost grows steeply with the number of empty squares).
    """
    backend = resolve_backend(backend)
    if backend == "jax":
        max_empties = int(np.max(empties_on_host(states, game), initial=0))
        # round up so batches of similar depth share one compiled search
        result = solve_batch_jit(states, game, -(-max_empties // 4) * 4, alpha, beta)
        return tuple(np.asarray(x, np.int64) for x in (result.score, result.action, result.nodes))
    solver = c_solver.solver_for(game.size)
    movers, opponents = bitboards_u64(states.mover), bitboards_u64(states.opponent)
    out = np.zeros((3, len(movers)), np.int64)
    for i, (mover, opponent) in enumerate(zip(movers.tolist(), opponents.tolist(), strict=False)):
        out[:, i] = solver.solve(mover, opponent, alpha, beta)
    return out[0], np.asarray(square_to_action(out[1], game.size), np.int64), out[2]


def exact_signs(size: int, positions: Sequence[tuple[int, int]]) -> list[int]:
    """The exact result of each ``(mover, opponent)`` position (64-bit boards) for its mover: +1
    win, 0 draw, -1 loss, with this thread's C solver (its table kept between calls).

    Searched with the window (-1, 1) around a draw, much cheaper than the exact margin. Plain
    integers in and out, so it runs in worker processes too (:func:`~othello_jax.solver.solved_moves.solver_pool`).
    """
    solver = c_solver.solver_for(size)
    return [(score > 0) - (score < 0) for score in (solver.solve(m, o, -1, 1)[0] for m, o in positions)]


def scores_and_optimal(size: int, positions: Sequence[tuple[int, int]]) -> list[tuple[int, int, float]]:
    """``(score, optimal squares, CPU seconds)`` of each ``(mover, opponent)`` position: its exact
    score for the mover, the 64-bit mask of the placements that keep it (0 when the mover must
    pass) and the solver's CPU time, with this thread's C solver.

    The score ``v`` is solved with the full window; each placement is then only tested against
    it with the null window around ``-v`` (a child scores at least ``-v`` for its mover, exactly
    ``-v`` when the move is optimal): 2.4-2.8x cheaper than solving every move exactly, 4-5x a
    sign solve's (6x6, 13-16 empties: 1.2-6.2 ms against 0.3-1.3 ms; ``experiments.bench_labels``
    in experiments/RESULTS.md). Plain integers in and out, for worker processes.
    """
    solver, lib = c_solver.solver_for(size), c_solver.library()
    board = bb.board_mask_int(size)
    out = []
    for mover, opponent in positions:
        begin = time.process_time()
        score = solver.solve(mover, opponent)[0]
        legal, best = lib.oj_legal(mover, opponent, board), 0
        while legal:
            square = (legal & -legal).bit_length() - 1
            legal &= legal - 1
            if solver.solve(*child(mover, opponent, square), -score - 1, -score + 1)[0] <= -score:
                best |= 1 << square
        out.append((score, best, time.process_time() - begin))
    return out


def exact_signs_and_best(size: int, positions: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``(result, optimal squares)`` of each ``(mover, opponent)`` position: the sign of its exact
    score for the mover (+1/0/-1) and the mask of :func:`scores_and_optimal`."""
    return [((score > 0) - (score < 0), best) for score, best, _ in scores_and_optimal(size, positions)]


def solve(state: State, game: Othello = Othello(8), backend: str = "auto", alpha: int = -64,
          beta: int = 64) -> Solution:
    """Solve one (unbatched) position exactly; see :func:`solve_many`."""
    batch = jax.tree.map(lambda x: np.asarray(x)[None], state)
    score, action, nodes = solve_many(batch, game, backend, alpha, beta)
    return Solution(int(score[0]), int(action[0]), int(nodes[0]))
