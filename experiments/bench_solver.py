"""Endgame solver speed: nodes/s of the C solver on the FFO test positions, and of the batched
JAX solver against the C solver on the same random late positions.

    python -m experiments.bench_solver                      # FFO #40-#44, 256 positions at 8 empties
    python -m experiments.bench_solver --ffo 40-49 --empties 10 --batch 1024

Times are wall-clock seconds (CPU seconds of this process in brackets: on a shared machine
the wall clock also counts other people's work).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax
import numpy as np

from experiments.timing import Stopwatch
from othello_jax.game import Othello
from othello_jax.solver import CSolver, load_obf, solve_batch_jit
from othello_jax.solver.host import bitboards_u64, count_empties
from othello_jax.solver.move_checks import random_starts

DEFAULT_FFO = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ffo" / "fforum-40-59.obf"


def parse_range(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def bench_ffo(path: Path, numbers: list[int]) -> None:
    problems = [p for p in load_obf(path, Othello(8)) if p.number in numbers]
    print(f"C solver, FFO positions from {path.name} (fresh transposition table each):")
    print(f"{'#':>3} {'empties':>7} {'score':>6} {'known':>6} {'nodes':>14} {'time':>22} {'nodes/s':>12}")
    total_nodes, total = 0, Stopwatch()
    for problem in problems:
        mover, opponent = int(bitboards_u64(problem.state.mover)), int(bitboards_u64(problem.state.opponent))
        solver = CSolver(8)
        with Stopwatch() as clock:
            score, _, nodes = solver.solve(mover, opponent)
        empties = 64 - bin(mover | opponent).count("1")
        flag = "" if score == problem.score else "  WRONG"
        print(f"{problem.number:>3} {empties:>7} {score:>+6} {problem.score:>+6} {nodes:>14,} {str(clock):>22} "
              f"{nodes / clock.wall:>12,.0f}{flag}")
        total_nodes += nodes
        total.wall += clock.wall
        total.cpu += clock.cpu
    print(f"all {len(problems)}: {total_nodes:,} nodes in {total}: {total_nodes / total.wall:,.0f} nodes/s\n")


def bench_batch(empties: int, batch: int, seed: int) -> None:
    game = Othello(8)
    starts = random_starts(game, batch, game.num_squares - 4 - empties, jax.random.key(seed))
    depth = int(np.max(np.asarray(count_empties(starts, game))))
    print(f"{batch} random positions with ~{empties} empty squares (at most {depth}), on {jax.devices()[0].platform}:")
    with Stopwatch() as compile_clock:
        compiled = solve_batch_jit.lower(starts, game, depth).compile()
    with Stopwatch() as jax_clock:
        result = jax.block_until_ready(compiled(starts))
    jax_nodes = int(np.asarray(result.nodes, np.int64).sum())
    per_lane = np.asarray(result.nodes)
    solver = CSolver(8)
    movers, opponents = bitboards_u64(starts.mover).tolist(), bitboards_u64(starts.opponent).tolist()
    c_nodes, c_scores = 0, []
    with Stopwatch() as c_clock:
        for mover, opponent in zip(movers, opponents, strict=False):
            score, _, nodes = solver.solve(mover, opponent)
            c_nodes += nodes
            c_scores.append(score)
    agree = np.array_equal(np.asarray(result.score), np.array(c_scores))
    jax_rate, c_rate = jax_nodes / jax_clock.wall, c_nodes / c_clock.wall
    print(f"  JAX batched: compile {compile_clock}, solve {jax_clock}: {jax_nodes:,} nodes "
          f"(per position mean {per_lane.mean():,.0f}, max {per_lane.max():,}), {jax_rate:,.0f} nodes/s, "
          f"{batch / jax_clock.wall:,.1f} positions/s")
    print(f"  C, one at a time: {c_clock}: {c_nodes:,} nodes, {c_rate:,.0f} nodes/s, "
          f"{batch / c_clock.wall:,.1f} positions/s")
    print(f"  ratio JAX/C: {jax_rate / c_rate:.3f}x nodes/s, {c_clock.wall / jax_clock.wall:.3f}x positions/s; "
          f"scores {'agree' if agree else 'DISAGREE'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ffo-file", type=Path, default=DEFAULT_FFO)
    parser.add_argument("--ffo", default="40-44", help="FFO numbers to solve, e.g. 40-49 (empty: none)")
    parser.add_argument("--empties", type=int, default=8, help="empty squares of the random positions")
    parser.add_argument("--batch", type=int, default=256, help="positions solved at once by the JAX solver")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.ffo:
        bench_ffo(args.ffo_file, parse_range(args.ffo))
    if args.batch > 0:
        bench_batch(args.empties, args.batch, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
