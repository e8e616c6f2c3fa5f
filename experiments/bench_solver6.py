"""How long the exact solver takes on 6x6: the start position and random positions at 28, 24
and 20 empty squares (one value each, and every move's value), fresh transposition table.

    python -m experiments.bench_solver6                 # 28, 24, 20 empties, 3 positions each
    python -m experiments.bench_solver6 --start         # also the start position (long)
    python -m experiments.bench_solver6 --start --empties= --value-only   # the start position's value only

Positions come from uniformly random play (seeded). Times are wall-clock seconds with this
process's CPU seconds in brackets (on a shared machine the wall clock counts others' work).
"""

from __future__ import annotations

import argparse

import jax
import numpy as np

from experiments.timing import timed
from othello_jax.game import Othello
from othello_jax.game.bitboard import board_mask_int
from othello_jax.solver import CSolver, c_solver
from othello_jax.solver.cache import child
from othello_jax.solver.host import bitboards_u64, count_empties
from othello_jax.solver.move_checks import random_starts


def positions(game: Othello, empties: int, count: int, seed: int) -> list[tuple[int, int]]:
    states = random_starts(game, 64, game.num_squares - 4 - empties, jax.random.key(seed + empties))
    ok = (np.asarray(count_empties(states, game)) == empties) & ~np.asarray(states.terminal)
    rows = np.flatnonzero(ok)[:count]
    return list(zip(bitboards_u64(states.mover)[rows].tolist(), bitboards_u64(states.opponent)[rows].tolist(),
                    strict=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--empties", default="28,24,20", help="comma-separated empties (default 28,24,20)")
    parser.add_argument("--count", type=int, default=3, help="positions per number of empties (default 3)")
    parser.add_argument("--start", action="store_true", help="also solve the start position (32 empties)")
    parser.add_argument("--value-only", action="store_true", help="skip solving every move (halves the time)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    game = Othello(6)
    empty_counts = [int(e) for e in args.empties.split(",") if e.strip()]
    cases = [(e, p) for e in empty_counts for p in positions(game, e, args.count, args.seed)]
    if args.start:
        init = game.init()
        cases.insert(0, (32, (int(bitboards_u64(init.mover)), int(bitboards_u64(init.opponent)))))
    print(f"{'empties':>7} {'value':>6} {'nodes':>14} {'value time':>24} {'all moves time':>24}")
    for empties, (mover, opponent) in cases:
        solver = CSolver(6)
        (score, _, nodes), value_time = timed(solver.solve, mover, opponent)
        line = f"{empties:>7} {score:>+6} {nodes:>14,} {value_time.wall:>9.2f} s ({value_time.cpu:>7.2f} s CPU)"
        if not args.value_only:
            mask = c_solver.library().oj_legal(mover, opponent, board_mask_int(6))
            legal = [sq for sq in range(64) if mask >> sq & 1]
            solver = CSolver(6)
            _, all_time = timed(lambda: [solver.solve(*child(mover, opponent, sq)) for sq in legal])
            line += f" {all_time.wall:>9.2f} s ({all_time.cpu:>7.2f} s CPU)"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
