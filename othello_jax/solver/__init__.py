"""Exact endgame solving: the final disc difference under perfect play and a best move.

- :func:`solve_batch` (``solve_batch_jit``): a batch of positions on device (JAX, jittable).
- :func:`solve`, :func:`solve_many`: from the host with the C solver (compiled on first use),
  falling back to the JAX solver where no C compiler exists.
- :func:`exact_endgame_act`: wrap an agent's act function so it plays the last moves perfectly.
- :func:`exact_values`: exact value targets for training (jittable).
- :func:`load_obf`: endgame test positions such as the FFO set.

Scores follow the FFO convention: the mover's discs minus the opponent's at the end, with
empty squares counted for the winner.
"""

from othello_jax.solver.c_solver import CSolver, CSolverUnavailable
from othello_jax.solver.exact_endgame import exact_endgame_act
from othello_jax.solver.host import (
    BACKENDS,
    Solution,
    count_empties,
    empties_on_host,
    resolve_backend,
    solve,
    solve_many,
)
from othello_jax.solver.jax_solver import SolveResult, solve_batch, solve_batch_jit
from othello_jax.solver.obf import EndgameProblem, load_obf, parse_obf_line
from othello_jax.solver.targets import exact_values

__all__ = [
    "BACKENDS", "CSolver", "CSolverUnavailable", "EndgameProblem", "Solution", "SolveResult",
    "count_empties", "empties_on_host", "exact_values", "load_obf", "parse_obf_line", "resolve_backend", "solve",
    "solve_batch", "solve_batch_jit", "solve_many", "exact_endgame_act",
]
