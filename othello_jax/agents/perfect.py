"""The perfect player: an exact best move in every position, chosen at random among equal
best moves, with solved positions kept on disk (see :mod:`othello_jax.solver.cache`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.agents.base import Agent, AgentSpecError
from othello_jax.game import Othello, State
from othello_jax.solver import c_solver
from othello_jax.solver.cache import SolvedPositions, default_directory, shared
from othello_jax.solver.host import bitboards_u64

MAX_SIZE = 6  # 8x8 openings are far beyond exact solving; use solve=E there


def _key_seed(key: jax.Array) -> list[int]:
    """A numpy seed from a JAX key (new-style or raw uint32)."""
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    return np.asarray(key, np.uint32).ravel().tolist()


def perfect_act(states: State, key: jax.Array, game: Othello, positions: SolvedPositions) -> np.ndarray:
    """Host act: an optimal action per position (uniform among optimal ones), pass when forced."""
    states = jax.tree.map(np.asarray, states)
    movers, opponents = bitboards_u64(states.mover).tolist(), bitboards_u64(states.opponent).tolist()
    rng = np.random.default_rng(_key_seed(key))
    actions = np.full(len(movers), game.pass_action, np.int32)
    for row, (mover, opponent) in enumerate(zip(movers, opponents, strict=True)):
        if states.terminal[row]:
            continue
        _, mask = positions.best_moves(mover, opponent)
        squares = [sq for sq in range(64) if mask >> sq & 1]
        if squares:
            square = squares[int(rng.integers(len(squares)))]
            actions[row] = (square // 8) * game.size + square % 8
    return actions


def solved_positions(game: Othello, cache: str | None = None) -> SolvedPositions:
    """The process-wide solved positions a ``perfect:cache=...`` agent uses (judges share them)."""
    return shared(game.size, str(default_directory()) if cache is None else (cache or None))


def perfect_agent(game: Othello, cache: str | None = None, positions: SolvedPositions | None = None) -> Agent:
    """Exact play on boards up to 6x6 (a host agent: ``jittable=False``).

    ``cache``: directory of the solved positions (default ``$OTHELLO_JAX_CACHE/perfect`` or
    ``~/.cache/othello_jax/perfect``; ``""`` keeps nothing on disk). ``positions`` replaces
    the cache (tests inject a counting solver).
    """
    if game.size > MAX_SIZE:
        raise AgentSpecError(f"perfect play is only affordable up to {MAX_SIZE}x{MAX_SIZE}; on {game.size}x"
                             f"{game.size} use exact endgames instead, e.g. alphabeta:3,solve=20")
    if positions is None:
        try:
            c_solver.library()
        except c_solver.CSolverUnavailable as error:
            raise AgentSpecError(f"perfect needs the C solver: {error}") from None
        positions = solved_positions(game, cache)
    return Agent("perfect", lambda states, key: perfect_act(states, key, game, positions), jittable=False)
