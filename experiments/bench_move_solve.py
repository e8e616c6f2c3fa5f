"""What an exact endgame move costs the players: one C solve of the position (as
``with_exact_endgame`` does), fresh transposition table, on positions from random and from
greedy play, per board size and number of empty squares. Picks the players' default depth
(``othello_jax.commands.agent_options.PLAYING_SOLVE_DEPTH``): the largest depth whose worst case stays
under a second.

    python -m experiments.bench_move_solve                                # 6x6 and 8x8, 6 positions each
    python -m experiments.bench_move_solve --size=8 --empties=16-22 --count=10

Times are this process's CPU seconds (one core; the wall clock on a shared machine also counts
other people's work) with wall seconds beside them.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

from experiments.timing import timed
from othello_jax.agents.baselines import greedy_act
from othello_jax.game import Othello, State
from othello_jax.solver import CSolver
from othello_jax.solver.host import bitboards_u64, count_empties
from othello_jax.solver.move_checks import random_starts

DEFAULT_EMPTIES = {6: "16-23", 8: "14-20"}


def greedy_positions(game: Othello, empties: int, batch: int, key: jax.Array, random_plies: int = 4) -> State:
    """Positions reached by ``random_plies`` random moves, then greedy moves for both sides,
    stopped where ``empties`` squares are empty (games ending early stay terminal)."""
    key, start_key = jax.random.split(key)
    states = random_starts(game, batch, random_plies, start_key)

    @jax.jit
    def step(states: State, key: jax.Array) -> State:
        going = (count_empties(states, game) > empties) & ~states.terminal
        stepped = game.step(states, greedy_act(states, key, game))
        return jax.tree.map(lambda new, old: jnp.where(going.reshape(going.shape + (1,) * (new.ndim - 1)), new, old),
                            stepped, states)

    for step_key in jax.random.split(key, 2 * game.num_squares):  # passes included: at most two plies a square
        states = step(states, step_key)
    return states


def sample(game: Othello, source: str, empties: int, count: int, seed: int) -> list[tuple[int, int]]:
    """Up to ``count`` live positions with exactly ``empties`` empty squares, as (mover, opponent)."""
    key = jax.random.key(seed * 1000 + empties)
    if source == "random":
        states = random_starts(game, 64, game.num_squares - 4 - empties, key)
    else:
        states = greedy_positions(game, empties, 64, key)
    ok = (np.asarray(count_empties(states, game)) == empties) & ~np.asarray(states.terminal)
    rows = np.flatnonzero(ok)[:count]
    movers, opponents = bitboards_u64(states.mover)[rows].tolist(), bitboards_u64(states.opponent)[rows].tolist()
    return list(zip(movers, opponents, strict=True))


def parse_range(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=0, help="6 or 8 (default both)")
    parser.add_argument("--empties", default="", help="range such as 16-22 (default per size: "
                                                      f"{DEFAULT_EMPTIES})")
    parser.add_argument("--count", type=int, default=6, help="positions per source and empties (default 6)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"{'size':>4} {'empties':>7} {'source':>7} {'n':>3} {'max nodes':>12} {'median CPU s':>12} "
          f"{'max CPU s':>9} {'max wall s':>10}")
    for size in [args.size] if args.size else [6, 8]:
        game = Othello(size)
        for empties in parse_range(args.empties or DEFAULT_EMPTIES[size]):
            for source in ("random", "greedy"):
                cases = sample(game, source, empties, args.count, args.seed)
                runs = [timed(CSolver(size).solve, mover, opponent) for mover, opponent in cases]
                if not runs:
                    continue
                cpu = [watch.cpu for _, watch in runs]
                print(f"{size:>4} {empties:>7} {source:>7} {len(runs):>3} {max(r[0][2] for r in runs):>12,} "
                      f"{np.median(cpu):>12.3f} {max(cpu):>9.3f} {max(w.wall for _, w in runs):>10.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
