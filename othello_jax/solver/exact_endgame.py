"""Perfect endgames for any agent: positions with few empty squares are played by the solver."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.errors import InputError
from othello_jax.game import ActFn, Othello, State
from othello_jax.solver.host import empties_on_host, resolve_backend, solve_many
from othello_jax.solver.jax_solver import solve_batch


def exact_endgame_act(act_fn: ActFn, game: Othello, max_empties: int, backend: str = "jax") -> ActFn:
    """Wrap a batched ``act(states, key) -> int32[B]`` so every position with at most
    ``max_empties`` empty squares gets a move that keeps the exact (disc-difference) value.

    ``backend="jax"`` keeps the wrapper jittable (the batched solver runs inside it; the
    batch waits for its hardest position). ``"c"`` or ``"auto"`` solve on the host one
    position at a time with the C solver (fast for 20+ empties) and return numpy actions:
    not jittable, so mark such an agent ``jittable=False``.
    """
    if not isinstance(max_empties, int) or max_empties < 0:
        raise InputError(f"max_empties must be a non-negative integer, got {max_empties!r}")
    if backend == "jax":
        def act(states: State, key: jax.Array) -> jax.Array:
            proposed = jnp.asarray(act_fn(states, key), jnp.int32)
            result = solve_batch(states, game, max_empties)
            return jnp.where(result.action >= 0, result.action, proposed)

        return act
    backend = resolve_backend(backend)

    def host_act(states: State, key: jax.Array) -> np.ndarray:
        actions = np.array(act_fn(states, key), np.int32)
        small = (empties_on_host(states, game) <= max_empties) & ~np.asarray(states.terminal)
        if small.any():
            rows = jax.tree.map(lambda x: np.asarray(x)[small], states)
            actions[small] = solve_many(rows, game, backend)[1]
        return actions

    return host_act
