"""A fixed test set of positions with the exact value of every legal move, stored once.

Scoring an agent on it costs only the agent's own move choices, never a solve: a move is
optimal when its value equals the position's, and its disc loss is the difference. The file
(``.npz``) holds host arrays; :func:`load` reads it and :func:`to_states` makes a batched
:class:`~othello_jax.game.State` of its positions. Move values are the final disc difference
for the side to move after that move under perfect play (FFO convention, empties to the
winner); ``NO_VALUE`` marks the actions that are not legal. Training rows of a labelled set may
be solved only as far as their targets need (the position's value and its optimal moves):
``UNSOLVED`` marks their other legal moves, and such rows are never scored.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import time
import zipfile
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.errors import InputError
from othello_jax.game import Othello, State
from othello_jax.game import bitboard as bb
from othello_jax.solver import c_solver
from othello_jax.solver.cache import SolvedPositions, child
from othello_jax.solver.host import (
    bitboards_from_u64,
    bitboards_u64,
    count_empties,
    resolve_backend,
    scores_and_optimal,
    solve_many,
)

NO_VALUE = -128  # an illegal action's entry in ``values``
UNSOLVED = -127  # a legal action known to lose something, its exact value not solved
DEFAULT_PATH = Path(__file__).with_name("data") / "testset6.npz"
FORMAT_VERSION = 1


class TestSet(NamedTuple):
    """Positions (one row each) and the exact values of their moves, all numpy arrays.

    mover, opponent: uint64 bitboards (square = row * 8 + col); color, passed, ply: as in
    :class:`~othello_jax.game.State`; empties: empty squares; best: the position's exact
    value; values: int8[P, num_actions], each legal action's exact value (``UNSOLVED`` for a
    suboptimal one in a row solved for its targets only), ``NO_VALUE`` elsewhere.
    """

    __test__ = False  # not a pytest class

    size: int
    mover: np.ndarray
    opponent: np.ndarray
    color: np.ndarray
    passed: np.ndarray
    ply: np.ndarray
    empties: np.ndarray
    best: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.mover)

    def take(self, rows: np.ndarray | Sequence[int]) -> TestSet:
        """The positions at ``rows`` (same order)."""
        rows = np.asarray(rows, np.int64)
        return TestSet(self.size, *(np.asarray(x)[rows] for x in self[1:]))

    @staticmethod
    def concatenate(parts: Sequence[TestSet]) -> TestSet:
        """The rows of every part, in order (one board size; an ``InputError`` otherwise).
        (``len`` counts rows, so build new sets with this, ``take`` or the constructor,
        not ``_replace``.)"""
        sizes = sorted({part.size for part in parts})
        if len(sizes) != 1:
            raise InputError(f"positions of different board sizes: {', '.join(f'{s}x{s}' for s in sizes)}")
        return TestSet(sizes[0], *(np.concatenate(x) for x in zip(*(part[1:] for part in parts), strict=True)))


# compiled once per board size and count: op by op, the legal-move bitboard ops compile one by one
_from_discs = jax.jit(Othello.from_discs, static_argnums=0)


def to_states(testset: TestSet) -> State:
    """The test positions as one batched state for agents."""
    game = Othello(testset.size)
    return _from_discs(game, bitboards_from_u64(testset.mover), bitboards_from_u64(testset.opponent),
                       jnp.asarray(testset.color), jnp.asarray(testset.passed), jnp.asarray(testset.ply))


def c_move_values(size: int, positions: Sequence[tuple[int, int]]) -> list[tuple[list[tuple[int, int]], float]]:
    """((square, exact value) of every placement, solver CPU seconds) of each (mover, opponent)
    position, C solver.

    Runs in worker processes: plain integers in and out, one table per process (siblings
    solved one after the other share it).
    """
    lib, solver = c_solver.library(), c_solver.solver_for(size)
    board = bb.board_mask_int(size)
    out = []
    for mover, opponent in positions:
        begin = time.process_time()
        legal, found = lib.oj_legal(mover, opponent, board), []
        for square in range(64):
            if legal >> square & 1:
                found.append((square, -solver.solve(*child(mover, opponent, square))[0]))
        out.append((found, time.process_time() - begin))
    return out


def c_optimal_values(size: int, positions: Sequence[tuple[int, int]]) -> list[tuple[list[tuple[int, int]], float]]:
    """Like :func:`c_move_values`, but only the position's exact value and which placements keep
    it are solved: an optimal placement gets the position's value, the others ``UNSOLVED``
    (:func:`~othello_jax.solver.host.scores_and_optimal`, 2.4-2.8x cheaper at 13-18 empties)."""
    lib, board = c_solver.library(), bb.board_mask_int(size)
    solved = scores_and_optimal(size, positions)
    return [(_targets_only(lib.oj_legal(mover, opponent, board), best, score), cpu)
            for (mover, opponent), (score, best, cpu) in zip(positions, solved, strict=True)]


def _targets_only(legal: int, best: int, value: int) -> list[tuple[int, int]]:
    """(square, value) of every legal placement: the position's ``value`` on the optimal ones
    (``best``), ``UNSOLVED`` on the others."""
    return [(square, value if best >> square & 1 else UNSOLVED) for square in range(64) if legal >> square & 1]


def solver_pool(workers: int) -> Executor | None:
    """Processes for :func:`move_values` (None for one worker); spawned, since JAX threads
    and fork do not mix. Close it (``with``) when done."""
    if workers <= 1:
        return None
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


def move_values(states: State, game: Othello, backend: str = "auto", pool: Executor | None = None,
                workers: int = 1) -> np.ndarray:
    """Exact value of every legal action of each position: int8[B, num_actions], ``NO_VALUE``
    where illegal (a forced pass gets the value of the position after it).

    With a ``pool`` of ``workers`` processes (see :func:`solver_pool`) the C solver runs in
    them; the result does not depend on it.
    """
    return solve_moves(states, game, backend, pool, workers)[0]


def _known_values(positions: SolvedPositions, mover: int, opponent: int) -> list[tuple[int, int]] | None:
    """(square, value) of every placement when the cache knows every position after one, else None."""
    legal, found = positions.legal(mover, opponent), []
    for square in range(64):
        if legal >> square & 1:
            after = child(mover, opponent, square)
            if after not in positions.values:
                return None
            found.append((square, -positions.values[after]))
    return found


def _known_optimal(positions: SolvedPositions, mover: int, opponent: int) -> list[tuple[int, int]] | None:
    """(square, value or ``UNSOLVED``) of every placement when the cache knows the position's
    optimal set, or every move's value (then reduced to the same, so the cache changes no byte), else None."""
    legal = positions.legal(mover, opponent)
    if (mover, opponent) in positions.optimal:
        return _targets_only(legal, positions.optimal[mover, opponent], positions.values[mover, opponent])
    found = _known_values(positions, mover, opponent)
    if not found:
        return found
    value = max(v for _, v in found)
    return _targets_only(legal, sum(1 << square for square, v in found if v == value), value)


def _solve_spread(solve, size: int, pairs: list[tuple[int, int]], pool: Executor | None,
                  workers: int) -> list[tuple[list[tuple[int, int]], float]]:
    """``solve(size, pairs)`` split round-robin over the pool's ``workers`` (in this process
    without a pool), results in the order of ``pairs``."""
    workers = workers if pool is not None else 1
    chunks = [pairs[i::workers] for i in range(workers)]
    solved = list(pool.map(solve, [size] * workers, chunks)) if pool is not None else [solve(size, chunks[0])]
    out: list = [None] * len(pairs)
    for start, rows in enumerate(solved):
        for offset, result in enumerate(rows):
            out[start + offset * workers] = result
    return out


def solve_moves(states: State, game: Othello, backend: str = "auto", pool: Executor | None = None,
                workers: int = 1, cache: SolvedPositions | None = None,
                targets_only: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`move_values`, the solver's CPU seconds per position: float64[B]).

    With a ``cache`` (C solver only) a position whose every move's result it knows costs no
    solve (0 seconds), and the positions solved are added to it, so a remake solves nothing.
    Rows where ``targets_only`` (bool[B]) is set are solved only for training targets with the
    C solver (:func:`c_optimal_values`: suboptimal moves ``UNSOLVED``); the JAX solver solves
    every move of every row.
    """
    states = jax.tree.map(np.asarray, states)
    count = len(states.ply)
    legal = np.asarray(game.legal_moves(states))
    values = np.full((count, game.num_actions), NO_VALUE, np.int8)
    seconds = np.zeros(count)
    if count == 0:
        return values, seconds
    if resolve_backend(backend) == "c":
        cheap = np.zeros(count, bool) if targets_only is None else np.asarray(targets_only, bool)
        pairs = list(zip(bitboards_u64(states.mover).tolist(), bitboards_u64(states.opponent).tolist(), strict=True))
        lookup = lambda row: (_known_optimal if cheap[row] else _known_values)(cache, *pairs[row])
        known = [None if cache is None else lookup(row) for row in range(count)]
        for partial, solve in ((False, c_move_values), (True, c_optimal_values)):
            todo = [row for row, found in enumerate(known) if found is None and cheap[row] == partial]
            if not todo:
                continue
            solved = _solve_spread(solve, game.size, [pairs[row] for row in todo], pool, workers)
            for row, (found, cpu) in zip(todo, solved, strict=True):
                known[row], seconds[row] = found, cpu
            if cache is None:
                continue
            cache.remember({child(*pairs[row], square): -value for row in todo for square, value in known[row]
                            if value != UNSOLVED})
            if partial:  # the position's value and optimal set, as SolvedPositions.best_moves keeps them
                cache.remember_optimal({pairs[row]: (max(v for _, v in known[row]),
                                                     sum(1 << square for square, v in known[row] if v != UNSOLVED))
                                        for row in todo if known[row]})
        for row, found in enumerate(known):
            for square, value in found:
                values[row, (square // 8) * game.size + square % 8] = value
        passes = legal[:, game.pass_action]
        if passes.any():  # a forced pass: the position after it, from the other side
            rows = np.flatnonzero(passes)
            begin = time.process_time()
            after = jax.jit(game.step)(jax.tree.map(lambda x: x[rows], states), jnp.full(len(rows), game.pass_action))
            values[rows, game.pass_action] = -solve_many(after, game, "c")[0]
            seconds[rows] += (time.process_time() - begin) / len(rows)
        return values, seconds
    begin = time.process_time()
    rows, actions = np.nonzero(legal)
    children = jax.jit(game.step)(jax.tree.map(lambda x: x[rows], states), jnp.asarray(actions, jnp.int32))
    values[rows, actions] = -solve_many(children, game, "jax")[0]
    return values, np.full(count, (time.process_time() - begin) / count)


def build(states: State, game: Othello, backend: str = "auto", pool: Executor | None = None,
          workers: int = 1) -> TestSet:
    """Solve every move of the (host or device) positions into a test set."""
    return from_values(states, game, move_values(states, game, backend, pool, workers))


def from_values(states: State, game: Othello, values: np.ndarray) -> TestSet:
    """A test set of the (host or device) positions and their move values (see :func:`move_values`)."""
    states = jax.tree.map(np.asarray, states)
    best = np.where(values == NO_VALUE, -127, values.astype(np.int16)).max(axis=1).astype(np.int8)
    return TestSet(game.size, bitboards_u64(states.mover), bitboards_u64(states.opponent),
                   states.color.astype(np.int8), states.passed.astype(bool), states.ply.astype(np.int16),
                   np.asarray(count_empties(states, game)).astype(np.int8), best, values)


def informative(testset: TestSet) -> np.ndarray:
    """Rows worth scoring: at least two legal moves that do not all have the same value, every
    one solved (a row solved for its training targets only cannot say what a move loses)."""
    legal = testset.values != NO_VALUE
    worst = np.where(legal, testset.values, 127).min(axis=1)
    solved = ~(testset.values == UNSOLVED).any(axis=1)
    return (legal.sum(axis=1) >= 2) & (worst < testset.best) & solved


def to_bytes(testset: TestSet, extra: dict[str, np.ndarray] | None = None) -> bytes:
    """The ``.npz`` file's bytes (deterministic: the same test set gives the same bytes); ``extra``
    arrays are stored beside the test set's (files that extend the format; :func:`load` skips them)."""
    buffer = io.BytesIO()
    arrays = {name: np.asarray(value) for name, value in testset._asdict().items()}
    np.savez_compressed(buffer, format_version=np.int32(FORMAT_VERSION), **arrays, **(extra or {}))
    return buffer.getvalue()


def save(testset: TestSet, path: str | os.PathLike, extra: dict[str, np.ndarray] | None = None) -> None:
    """Write the test set (and ``extra`` arrays) as an ``.npz`` file (see :func:`to_bytes`)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(to_bytes(testset, extra))


def load(path: str | os.PathLike | None = None) -> TestSet:
    """Read a test set (default: the 6x6 set shipped with the package)."""
    path = Path(path) if path is not None else DEFAULT_PATH
    if not path.is_file():
        raise FileNotFoundError(f"test set not found: {path} (make it with `othello-jax make-testset`)")
    try:
        with np.load(path) as data:
            version = int(data["format_version"])
            arrays = [data[name] for name in TestSet._fields]
    except (KeyError, ValueError, zipfile.BadZipFile) as error:  # not an .npz file, or not a test set's
        raise InputError(f"{path}: not a test set file ({str(error).strip() or type(error).__name__})") from None
    if version != FORMAT_VERSION:
        raise InputError(f"{path.name}: test set format {version}, expected {FORMAT_VERSION}")
    return TestSet(int(arrays[0]), *arrays[1:])
