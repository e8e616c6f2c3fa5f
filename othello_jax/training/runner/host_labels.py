"""Exact value (and policy) targets from the C solver on the host, solved while the device runs
the next iteration.

With ``selfplay.host_exact_empties = E`` (> 0), every compiled iteration also returns the
positions it stored in the replay buffer with ``exact_endgame_empties < empties <= E``, each
with its slot in its lane's ring (:func:`requests`: fixed-size ``[lanes, n]`` rows and a
``valid`` mask, n the rows one iteration adds per lane). The loop's :class:`HostLabeller`
solves them with the C solver (the result's sign for the mover, +1/0/-1: the scale of every
value target; with ``selfplay.host_exact_policy`` also the squares of the optimal moves, whose
uniform distribution replaces the search's policy target) while the device runs the next
iteration, and passes the labels into the iteration after that, which writes them into the
buffer before it plays or samples (:func:`write`, one masked scatter per lane and target)::

    device:  iteration i: write the labels of iteration i-2 | self-play, store, requests | SGD
    host:    dispatch iteration i | solve the requests of iteration i-1 | wait for iteration i

The iteration is dispatched from a thread of its own: on a GPU the call does not return until
its loops have run (XLA reads each while loop's condition on the host, in the calling thread),
so solving after the call would add the solve to the iteration instead of hiding it.

A label is written only where its slot still holds the position it was solved for and
counts as stale otherwise (the ring moved on: a buffer holding less than two iterations'
rows). The pending requests (at most two iterations', the older solved) go into each
checkpoint's meta (:meth:`HostLabeller.to_meta`), so a resumed run writes the same labels at
the same iterations as a run never stopped, however often it saves. One process only: the
rows of every local device are gathered on the host.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.errors import InputError
from othello_jax.game import Othello
from othello_jax.game import bitboard as bb
from othello_jax.solver import c_solver
from othello_jax.solver.host import count_empties, exact_signs, exact_signs_and_best
from othello_jax.solver.solved_moves import solver_pool
from othello_jax.training.compiled.replay import ReplayBuffer
from othello_jax.training.compiled.samples import Samples

META_KEY = "host_exact"  # the checkpoint meta's entry: {"pending": [one iteration's requests, ...]}
CHUNK = 8  # positions solved in the training process between two looks at the device
POLL_S = 0.005  # how often the host looks at the device while worker processes solve


# ---------------------------------------------------------------------------------------------
# on the device (inside the compiled iteration)
# ---------------------------------------------------------------------------------------------
class LabelRows(NamedTuple):
    """Replay rows to label, leaves ``[lanes, n]``: requests from the device (``value`` 0, no
    ``best``) or exact labels for it.

    mover, opponent: the row's position (mover's view), to check its slot still holds it.
    slot: int32, the row in its lane's ring. value: float32 +1/0/-1 for the mover.
    best: the squares of the optimal moves (empty: the row's policy target is kept).
    valid: bool, a real row (False: padding).
    """

    mover: bb.Bitboard
    opponent: bb.Bitboard
    slot: jax.Array
    value: jax.Array
    best: bb.Bitboard
    valid: jax.Array


def requests(samples: Samples, slots: jax.Array, game: Othello, above: int, upto: int) -> LabelRows:
    """The rows of ``samples`` (leaves ``[lanes, n]``, stored at ``slots``) with
    ``above < empties <= upto``: every other row is padding (``valid`` False)."""
    empties = count_empties(samples.state, game)
    valid = samples.mask.astype(bool) & (empties > above) & (empties <= upto)
    nothing = jnp.zeros(valid.shape, jnp.uint32)
    return LabelRows(samples.state.mover, samples.state.opponent, slots.astype(jnp.int32),
                     jnp.zeros(valid.shape, jnp.float32), bb.Bitboard(nothing, nothing), valid)


def _same(a: bb.Bitboard, b: bb.Bitboard) -> jax.Array:
    return (a.lo == b.lo) & (a.hi == b.hi)


def optimal_policy(best: bb.Bitboard, num_actions: int) -> jax.Array:
    """float32 ``[..., num_actions]``: uniform over the squares of ``best`` (a row of zeros where it
    is empty), in the game's action order (row * size + column; the pass last, never optimal here)."""
    size = round((num_actions - 1) ** 0.5)
    squares = bb.to_grid(best, size).reshape(best.lo.shape + (size * size,)).astype(jnp.float32)
    squares = squares / jnp.maximum(jnp.sum(squares, axis=-1, keepdims=True), 1.0)
    return jnp.concatenate([squares, jnp.zeros(squares.shape[:-1] + (1,), jnp.float32)], axis=-1)


def write(buffer: ReplayBuffer, labels: LabelRows) -> tuple[ReplayBuffer, dict[str, jax.Array]]:
    """``buffer`` with the value target of each labelled row replaced, and its policy target where
    the label names optimal moves, where its slot still holds a stored row of the same position;
    metrics ``host_exact/written``, ``host_exact/policies`` (rows given an exact policy) and
    ``host_exact/stale`` (labels whose slot holds another position now)."""
    def lane(data: Samples, rows: LabelRows):
        capacity = data.mask.shape[0]
        at = jnp.clip(rows.slot, 0, capacity - 1)
        held = jax.tree.map(lambda x: x[at], data.state)
        same = rows.valid & data.mask[at] & _same(held.mover, rows.mover) & _same(held.opponent, rows.opponent)
        value = data.value.at[jnp.where(same, at, capacity)].set(rows.value, mode="drop")
        policy_rows = same & bb.any_set(rows.best)
        policy = data.policy.at[jnp.where(policy_rows, at, capacity)].set(
            optimal_policy(rows.best, data.policy.shape[-1]), mode="drop")
        return value, policy, jnp.sum(same), jnp.sum(policy_rows), jnp.sum(rows.valid & ~same)

    value, policy, written, policies, stale = jax.vmap(lane)(buffer.data, labels)
    buffer = buffer._replace(data=buffer.data._replace(value=value, policy=policy))
    return buffer, {"host_exact/written": jnp.sum(written), "host_exact/policies": jnp.sum(policies),
                    "host_exact/stale": jnp.sum(stale)}


def no_labels(lanes: int, rows: int) -> LabelRows:
    """Host arrays of ``rows`` padding rows per lane (nothing to write; the compile's example)."""
    zeros = lambda dtype: np.zeros((lanes, rows), dtype)
    board = lambda: bb.Bitboard(zeros(np.uint32), zeros(np.uint32))
    return LabelRows(board(), board(), zeros(np.int32), zeros(np.float32), board(), zeros(bool))


# ---------------------------------------------------------------------------------------------
# on the host
# ---------------------------------------------------------------------------------------------
def _u64(board: bb.Bitboard) -> np.ndarray:
    return np.asarray(board.lo).astype(np.uint64) | (np.asarray(board.hi).astype(np.uint64) << np.uint64(32))


@dataclasses.dataclass
class Pending:
    """One iteration's requests on the host, its valid rows only (numpy): lane, slot, 64-bit
    boards, and once solved the exact values (int8 +1/0/-1) and, where asked for, the optimal
    squares (uint64 masks; None: values only)."""

    lane: np.ndarray
    slot: np.ndarray
    mover: np.ndarray
    opponent: np.ndarray
    value: np.ndarray | None = None
    best: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.lane)

    @classmethod
    def from_requests(cls, rows: LabelRows) -> Pending:
        """The valid rows of fetched :func:`requests` (host arrays ``[lanes, n]``)."""
        valid = np.asarray(rows.valid)
        lane, index = np.nonzero(valid)
        return cls(lane.astype(np.int32), np.asarray(rows.slot)[valid].astype(np.int32),
                   _u64(rows.mover)[valid], _u64(rows.opponent)[valid])

    def label_rows(self, lanes: int, rows: int) -> tuple[LabelRows, int]:
        """(the solved rows as a compiled iteration's labels, ``rows`` per lane; rows that do not
        fit, counted: only after a stage that stores fewer rows per iteration than the one before)."""
        assert self.value is not None, "labels need solved requests"
        order = np.argsort(self.lane, kind="stable")
        lane = self.lane[order]
        place = np.arange(len(lane)) - np.searchsorted(lane, lane)  # the row's rank in its lane
        keep = place < rows
        at = (lane[keep], place[keep])
        out = no_labels(lanes, rows)

        def put(grid: np.ndarray, values: np.ndarray) -> None:
            grid[at] = values[order][keep]

        best = np.zeros_like(self.mover) if self.best is None else self.best
        for grid, board in ((out.mover, self.mover), (out.opponent, self.opponent), (out.best, best)):
            put(grid.lo, (board & np.uint64(0xFFFFFFFF)).astype(np.uint32))
            put(grid.hi, (board >> np.uint64(32)).astype(np.uint32))
        put(out.slot, self.slot)
        put(out.value, self.value.astype(np.float32))
        out.valid[at] = True
        return out, int(np.sum(~keep))

    def to_json(self) -> dict:
        return {"lane": self.lane.tolist(), "slot": self.slot.tolist(), "mover": self.mover.tolist(),
                "opponent": self.opponent.tolist(), "value": None if self.value is None else self.value.tolist(),
                "best": None if self.best is None else self.best.tolist()}

    @classmethod
    def from_json(cls, item: dict) -> Pending:
        value, best = item.get("value"), item.get("best")  # no "best": written before policy labels
        return cls(np.asarray(item["lane"], np.int32), np.asarray(item["slot"], np.int32),
                   np.asarray(item["mover"], np.uint64), np.asarray(item["opponent"], np.uint64),
                   None if value is None else np.asarray(value, np.int8),
                   None if best is None else np.asarray(best, np.uint64))


def _signs_only(size: int, positions: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """:func:`~othello_jax.solver.host.exact_signs` as ``(sign, 0)`` pairs: no optimal squares."""
    return [(sign, 0) for sign in exact_signs(size, positions)]


def _ready(tree: Any) -> bool:
    """Whether every array of ``tree`` is computed (False where JAX cannot say)."""
    return all(getattr(x, "is_ready", lambda: False)() for x in jax.tree.leaves(tree))


def _finished(running: Future) -> bool:
    """Whether the dispatched iteration has returned (or failed) and its requests are computed."""
    return running.done() and (running.exception() is not None or _ready(running.result()[2]))


def _unique(mover: np.ndarray, opponent: np.ndarray) -> tuple[list[tuple[int, int]], np.ndarray]:
    """(the distinct positions in order of first appearance, each row's index among them)."""
    pairs = np.stack([mover, opponent], axis=1)
    _, first, inverse = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return [tuple(p) for p in pairs[first[order]].tolist()], rank[inverse.reshape(-1)]


class HostLabeller:
    """The host side of the exact labels: pending requests (oldest first), a pool of solvers,
    a thread that dispatches the iterations.

    :meth:`iterate` runs one compiled iteration (dispatched first, from that thread) and solves the previous
    iteration's requests meanwhile; the labels go into the iteration after next. With
    ``optimal_moves`` each label also names the optimal moves (the policy target).
    """

    def __init__(self, game: Othello, lanes: int, workers: int, optimal_moves: bool = False,
                 now: Callable[[], float] = time.perf_counter):
        if jax.process_count() > 1:
            raise InputError("selfplay.host_exact_empties is not supported with several processes "
                             "(jax.distributed) yet; set it to 0")
        try:
            c_solver.library()
        except c_solver.CSolverUnavailable as error:
            raise InputError(f"selfplay.host_exact_empties needs the C solver: {error}") from None
        self.game, self.lanes, self.workers, self.now = game, lanes, workers, now
        self.optimal_moves = optimal_moves
        self.pool = solver_pool(workers)
        self.dispatcher = ThreadPoolExecutor(1, thread_name_prefix="iteration")  # see the module's docstring
        self.pending: list[Pending] = []

    def close(self) -> None:
        """Stop the solver processes and the dispatching thread."""
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None
        self.dispatcher.shutdown()

    def restore(self, meta: dict) -> None:
        """The pending requests a checkpoint's meta holds (none in one written without them)."""
        self.pending = [Pending.from_json(item) for item in meta.get(META_KEY, {}).get("pending", [])]

    def to_meta(self) -> dict:
        """The pending requests for a checkpoint's meta (JSON)."""
        return {META_KEY: {"pending": [p.to_json() for p in self.pending]}}

    def iterate(self, call: Callable, state: Any, key: jax.Array, schedule: Sequence, rows: int) -> tuple[Any, dict]:
        """``(state, metrics)`` of one compiled iteration ``call(state, key, *schedule, labels=...)``
        taking ``rows`` labels per lane; host metrics fetched with the device's."""
        due = self.pending.pop(0) if len(self.pending) > 1 else None  # requested two iterations ago
        if due is not None and due.value is None:  # a checkpoint saved before its solve
            self._solve([due], lambda: False)
        labels, dropped = due.label_rows(self.lanes, rows) if due is not None else (no_labels(self.lanes, rows), 0)
        running = self.dispatcher.submit(call, state, key, *schedule, labels=labels)
        solved, solve_s, device_wait_s = self._solve([p for p in self.pending if p.value is None],
                                                     lambda: _finished(running))
        waiting = self.now()
        state, metrics, asked = running.result()
        metrics, asked = jax.device_get((metrics, asked._replace(value=None)))  # requests have no values
        host_wait_s = self.now() - waiting
        self.pending.append(Pending.from_requests(asked))
        return state, dict(metrics, **{
            "host_exact/requested": len(self.pending[-1]), "host_exact/solved": solved,
            "host_exact/dropped": dropped, "host_exact/solve_s": solve_s,
            "host_exact/host_wait_s": host_wait_s, "host_exact/device_wait_s": device_wait_s})

    def _solve(self, todo: list[Pending], ready: Callable[[], bool]) -> tuple[int, float, float]:
        """Solve every row of ``todo`` (a position once); ``(rows, seconds, seconds of them the
        device sat finished)``, the device's end seen by polling ``ready`` between solves."""
        begin = self.now()
        finished: list[float] = []

        def look() -> None:
            if not finished and ready():
                finished.append(self.now())

        look()
        rows = sum(len(p) for p in todo)
        if rows:
            positions, index = _unique(np.concatenate([p.mover for p in todo]),
                                       np.concatenate([p.opponent for p in todo]))
            labels = self._labels(positions, look)
            values = np.asarray([value for value, _ in labels], np.int8)[index]
            best = np.asarray([squares for _, squares in labels], np.uint64)[index]
            splits = np.cumsum([len(p) for p in todo])[:-1]
            for p, value, squares in zip(todo, np.split(values, splits), np.split(best, splits), strict=True):
                p.value, p.best = value, squares if self.optimal_moves else None
        end = self.now()
        look()
        return rows, end - begin, (end - finished[0]) if finished else 0.0

    def _labels(self, positions: list[tuple[int, int]], look: Callable[[], None]) -> list[tuple[int, int]]:
        """``(sign, optimal squares or 0)`` of each of ``positions``
        (:func:`~othello_jax.solver.host.exact_signs_and_best`, or the cheaper
        :func:`~othello_jax.solver.host.exact_signs` without ``optimal_moves``), in the worker
        processes (contiguous chunks: a game's positions share a solver table) or here, looking
        at the device in between."""
        size, solve = self.game.size, exact_signs_and_best if self.optimal_moves else _signs_only
        if self.pool is None:
            out: list[tuple[int, int]] = []
            for start in range(0, len(positions), CHUNK):
                out += solve(size, positions[start:start + CHUNK])
                look()
            return out
        pieces = min(len(positions), 4 * self.workers)
        bounds = np.linspace(0, len(positions), pieces + 1).astype(int)
        futures = [self.pool.submit(solve, size, positions[a:b]) for a, b in zip(bounds[:-1], bounds[1:],
                                                                                    strict=True)]
        while running := [f for f in futures if not f.done()]:
            wait(running, timeout=POLL_S, return_when=FIRST_COMPLETED)
            look()
        return [value for f in futures for value in f.result()]
