"""Deeper 8x8 endgames at equal time (issue 66 item 4): what one exact C solve of a position at
E empties costs against what the shipped network player's search costs a move.

Positions come from real games of the network: XOT openings played out by its raw policy (both
sides), the first live position of each game with exactly E empties. Each is solved once by a
fresh C solver (one core; what ``with_exact_endgame`` does for the first solved move of a game),
and the same network at ``--sims`` simulations (the players' default, ``playing_search_config``)
chooses a move on them one position at a time (as ``play``/``engine`` do) and in one batch of
all of them (as ``othello-jax eval`` plays every opening at once), per position.

    python -m experiments.bench_solve_depth                     # --quick sizes: 4 positions each
    python -m experiments.bench_solve_depth --count=20 --empties=18,20,22,24

The candidate depth is the largest E whose median solve is no slower than a searched move.
Times are wall seconds with this process's CPU seconds beside them (on a shared machine the wall
clock also counts others' work; the load average is printed).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from experiments.timing import timed
from othello_jax.agents.specs import parse_agent
from othello_jax.evaluation import openings as openings_lib
from othello_jax.game import Othello, State
from othello_jax.solver import CSolver
from othello_jax.solver.host import bitboards_u64, count_empties

DEFAULT_OPENINGS = Path(__file__).resolve().parents[2] / "shared" / "data" / "xot" / "openingslarge.txt"
NETWORK = "net:ckpt=builtin:8x8-expert"


def positions_by_empties(game: Othello, policy_act, lines: list[list[int]], empties: list[int],
                         key: jax.Array) -> dict[int, State]:
    """For each count in ``empties``, the batch of the first live positions with that many empty
    squares in the games ``policy_act`` plays (both sides) from ``lines``."""
    states, _ = openings_lib.replay(lines, game)

    @jax.jit
    def advance(states: State, key: jax.Array) -> State:
        stepped = game.step(states, jnp.asarray(policy_act(states, key), jnp.int32))
        over = states.terminal
        return jax.tree.map(lambda new, old: jnp.where(over.reshape(over.shape + (1,) * (new.ndim - 1)), old, new),
                            stepped, states)

    found: dict[int, list[State]] = {e: [] for e in empties}
    taken = {e: np.zeros(len(lines), bool) for e in empties}
    for step_key in jax.random.split(key, 2 * game.num_squares):
        live = ~np.asarray(states.terminal)
        if not live.any():
            break
        count = np.asarray(count_empties(states, game))
        for e in empties:
            rows = live & (count == e) & ~taken[e]
            if rows.any():
                taken[e] |= rows
                found[e].append(jax.tree.map(lambda x, rows=rows: np.asarray(x)[rows], states))
        states = advance(states, step_key)
    return {e: jax.tree.map(lambda *xs: np.concatenate(xs), *parts) for e, parts in found.items() if parts}


def quantiles(values: list[float]) -> tuple[float, float]:
    """(median, 90th percentile)."""
    return float(np.median(values)), float(np.percentile(values, 90))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--empties", default="18,20,22,24", help="comma-separated empties (default 18,20,22,24)")
    parser.add_argument("--count", type=int, default=4, help="positions per empties (default 4: quick)")
    parser.add_argument("--games", type=int, default=0,
                        help="openings played out to find them (default 3 x count)")
    parser.add_argument("--sims", type=int, default=256, help="search simulations (default 256, the players')")
    parser.add_argument("--network", default=NETWORK, help=f"network spec without sims (default {NETWORK})")
    parser.add_argument("--openings", default=str(DEFAULT_OPENINGS), help="XOT openings file")
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--single", type=int, default=0,
                        help="positions per empties timed one at a time (default: all --count)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    empties = [int(e) for e in args.empties.split(",") if e]
    if args.count < 1 or args.sims < 1 or not empties:
        parser.error("--count and --sims must be >= 1 and --empties non-empty")
    game = Othello(args.size)
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}, "
          f"{os.cpu_count()} CPUs, {jax.default_backend()}", flush=True)

    rng = np.random.default_rng(args.seed)
    lines = openings_lib.load_openings(args.openings, game)
    chosen = rng.choice(len(lines), size=min(len(lines), args.games or 3 * args.count), replace=False)
    policy = parse_agent(args.network, game)
    searcher = parse_agent(f"{args.network},sims={args.sims}", game)
    key = jax.random.key(args.seed)
    found = positions_by_empties(game, policy.act, [lines[i] for i in chosen], empties, key)

    # compile the search for batch 1 and for each batch size first (not counted)
    one = {e: jax.tree.map(lambda x: x[:args.count], found[e]) for e in empties if e in found}
    for batch in one.values():
        jax.block_until_ready(searcher.act(jax.tree.map(lambda x: x[:1], batch), key))
        jax.block_until_ready(searcher.act(batch, key))

    print(f"{'empties':>7} {'n':>3} {'solve med s':>11} {'solve p90 s':>11} {'solve max s':>11} {'med nodes':>11} "
          f"{'search 1 med s':>14} {'search 1 p90 s':>14} {'batched s/pos':>13} {'solve/search':>12}")
    rows = []
    for e in empties:
        if e not in one:
            print(f"{e:>7}   0 (no game reached it)")
            continue
        batch = one[e]
        movers, opponents = bitboards_u64(batch.mover).tolist(), bitboards_u64(batch.opponent).tolist()
        solves, nodes = [], []
        for mover, opponent in zip(movers, opponents, strict=True):
            solver = CSolver(game.size)  # fresh table, made outside the clock
            (_, _, node_count), watch = timed(solver.solve, mover, opponent)
            solves.append(watch.wall)
            nodes.append(node_count)
        singles = []
        for i in range(min(len(movers), args.single or len(movers))):
            _, watch = timed(searcher.act, jax.tree.map(lambda x, i=i: x[i:i + 1], batch), jax.random.key(i))
            singles.append(watch.wall)
        _, batched = timed(searcher.act, batch, key)
        solve_med, solve_p90 = quantiles(solves)
        single_med, single_p90 = quantiles(singles)
        per_position = batched.wall / len(movers)
        rows.append((e, solve_med, single_med))
        print(f"{e:>7} {len(movers):>3} {solve_med:>11.3f} {solve_p90:>11.3f} {max(solves):>11.3f} "
              f"{int(np.median(nodes)):>11,} {single_med:>14.3f} {single_p90:>14.3f} {per_position:>13.3f} "
              f"{solve_med / single_med:>12.2f}", flush=True)
    fits = [e for e, solve_med, single_med in rows if solve_med <= single_med]
    print(f"candidate depth (largest E with median solve <= median searched move, one at a time): "
          f"{max(fits) if fits else 'none'}")
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
