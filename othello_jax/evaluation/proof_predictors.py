"""Value predictors for the proof search (:mod:`othello_jax.solver.proof_search`): what it
guesses a position is worth before solving it. The better the guesses, the fewer positions
the proof has to solve ("Othello is solved" spent most of its work where Edax guessed wrong).

- ``network``: the value head of a trained network (default ``builtin:6x6``), batched;
- ``heuristic``: the alpha-beta agent's hand-made evaluation (:mod:`othello_jax.agents.heuristic`);
- ``solver``: the C solver's fitted evaluation searched a few plies (its own first guess).

Each raw score is turned into discs by a least-squares line fitted on the shipped 6x6 test set
(500 positions with exact values; :mod:`othello_jax.solver.solved_moves`): the network's value
head says win or loss, the heuristic counts points, and the proof compares predictions with
disc thresholds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from othello_jax.errors import InputError
from othello_jax.solver.canonical import Position

PREDICTORS = ("network", "heuristic", "solver")
BUCKETS = (16, 128, 1024)  # network and heuristic batches are padded to one of these (one program each)
SOLVER_DEPTH = 4  # plies of the solver's evaluation search
CALIBRATION_SIZE = 6  # the shipped test set's board


class Calibrated(NamedTuple):
    """A predictor in discs and how well its line fits the test set."""

    name: str
    predict: Callable[[Sequence[Position]], list[float]]
    slope: float
    intercept: float
    rms: float  # discs, on the test set


def _planes(positions: Sequence[Position], size: int) -> np.ndarray:
    """(B, size, size, 2) float32: the mover's and the opponent's discs (the network's input)."""
    boards = np.asarray(positions, np.uint64).reshape(-1, 2)
    squares = np.asarray([r * 8 + c for r in range(size) for c in range(size)], np.uint64)
    bits = (boards[:, :, None] >> squares[None, None, :]) & np.uint64(1)
    return bits.astype(np.float32).reshape(-1, 2, size, size).transpose(0, 2, 3, 1)


def _batched(fn: Callable[[np.ndarray], np.ndarray], positions: Sequence[Position], size: int) -> list[float]:
    out = []
    for start in range(0, len(positions), BUCKETS[-1]):
        chunk = list(positions[start:start + BUCKETS[-1]])
        width = next(b for b in BUCKETS if b >= len(chunk))
        padded = chunk + [chunk[0]] * (width - len(chunk))
        out.extend(np.asarray(fn(_planes(padded, size)))[:len(chunk)].tolist())
    return out


def network_scores(checkpoint: str, size: int) -> Callable[[Sequence[Position]], list[float]]:
    """The network's value head (-1..1, mover's view)."""
    import jax

    from othello_jax.agents.neural import load_network, network_apply_fn

    game, config, variables = load_network(checkpoint)
    if game.size != size:
        raise InputError(f"{checkpoint} plays {game.size}x{game.size}, not {size}x{size}")
    apply = network_apply_fn(game, config)
    value = jax.jit(lambda obs: apply(variables, obs)[1])
    return lambda positions: _batched(value, positions, size)


def heuristic_scores(size: int) -> Callable[[Sequence[Position]], list[float]]:
    """The alpha-beta agent's evaluation (points, mover's view)."""
    import jax
    import jax.numpy as jnp

    from othello_jax.agents.heuristic import position_value
    from othello_jax.game import bitboard as bb

    def value(planes: jax.Array) -> jax.Array:
        mover, opponent = bb.from_grid(planes[..., 0] > 0), bb.from_grid(planes[..., 1] > 0)
        return position_value(mover, opponent, size)[0].astype(jnp.float32)

    jitted = jax.jit(value)
    return lambda positions: _batched(jitted, positions, size)


def solver_scores(size: int, depth: int = SOLVER_DEPTH) -> Callable[[Sequence[Position]], list[float]]:
    """The C solver's fitted evaluation searched ``depth`` plies (discs, mover's view)."""
    from othello_jax.solver.c_solver import CSolver

    solver = CSolver(size, table_bits=10)
    return lambda positions: [solver.guess(m, o, depth) for m, o in positions]


def calibrate(name: str, scores: Callable[[Sequence[Position]], list[float]], size: int) -> Calibrated:
    """``scores`` in discs: a least-squares line on the shipped test set's exact values."""
    from othello_jax.solver.solved_moves import load

    testset = load()
    if testset.size != size:
        raise InputError(f"predictors are calibrated on the {testset.size}x{testset.size} test set only")
    positions = list(zip(testset.mover.tolist(), testset.opponent.tolist(), strict=True))
    x = np.asarray(scores(positions), np.float64)
    y = testset.best.astype(np.float64)
    slope, intercept = np.polyfit(x, y, 1) if np.ptp(x) > 0 else (0.0, float(y.mean()))
    rms = float(np.sqrt(np.mean((slope * x + intercept - y) ** 2)))
    predict = lambda positions: (slope * np.asarray(scores(positions), np.float64) + intercept).tolist()
    return Calibrated(name, predict, float(slope), float(intercept), rms)


def _raw(name: str, size: int, checkpoint: str) -> Callable[[Sequence[Position]], list[float]]:
    if name == "network":
        return network_scores(checkpoint, size)
    if name == "heuristic":
        return heuristic_scores(size)
    if name == "solver":
        return solver_scores(size)
    raise InputError(f"unknown predictor {name!r}; choose from {', '.join(PREDICTORS)}")


@functools.cache
def predictor(name: str, size: int = 6, checkpoint: str = "builtin:6x6") -> Calibrated:
    """One of :data:`PREDICTORS`, in discs by its line on the 6x6 test set (other board sizes,
    such as the tests' 4x4, use the same family's scores on their board with the 6x6 line)."""
    fitted = calibrate(name, _raw(name, CALIBRATION_SIZE, checkpoint), CALIBRATION_SIZE)
    if size == CALIBRATION_SIZE:
        return fitted
    scores = _raw(name, size, checkpoint)
    return fitted._replace(predict=lambda positions: (fitted.slope * np.asarray(scores(positions), np.float64)
                                                      + fitted.intercept).tolist())
