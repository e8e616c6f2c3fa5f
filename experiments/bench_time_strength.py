"""Strength at time: a network thinking S seconds a move against itself at a fixed simulation count.

Issue 65's table: the shipped 8x8 player at 1, 3 and 10 s a move against itself at 256
simulations, 200 XOT games each (100 openings, both colours), the endgame solved as the players
solve it (20 empties on 8x8, fewer when a move has less than a second: agents/timed.py):

    python -m experiments.bench_time_strength --seconds 1 3 10 --games=200 \\
        --openings=../shared/data/xot/openingslarge.txt --cells=runs/time_strength.jsonl

Both sides are one :class:`~othello_jax.agents.timed.TimedSearch` (one compiled search): the
timed side runs chunks until its seconds are spent, the other stops at ``--sims`` simulations
(the tree of the fixed search). Games are played one position at a time (a move's time is a
wall clock), so 200 games at 10 s a move take about 17 hours of one machine: run it on a quiet
one. Each finished cell is appended to ``--cells`` (one JSON line) and skipped when run again.
A tiny check that it works: ``--seconds 0.2 --games=2``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np

from othello_jax.agents import Agent, playing_search_config
from othello_jax.agents.neural import load_network, network_apply_fn
from othello_jax.agents.time_control import MoveBudget
from othello_jax.agents.timed import TimedSearch
from othello_jax.commands.agent_options import PLAYING_SIMULATIONS, endgame_depth
from othello_jax.evaluation import arena


def counting(agent: Agent, timed: TimedSearch, moves: list) -> Agent:
    """``agent``, keeping each of its moves (:class:`~othello_jax.agents.timed.TimedMove`) in ``moves``."""

    def act(states, key):
        actions = []
        for row in range(int(np.asarray(states.terminal).shape[0])):
            one = jax.tree.map(lambda x: np.asarray(x)[row:row + 1], states)
            timed.last_move = None
            actions.append(int(agent.act(one, jax.random.fold_in(key, row))[0]))
            if timed.last_move is not None:
                moves.append(timed.last_move)
        return np.asarray(actions, np.int32)

    return Agent(name=agent.name, act=act, jittable=False)


def play_cell(timed: TimedSearch, seconds: float, sims: int, lines: list, key: jax.Array) -> dict:
    """One match, the player at ``seconds`` a move against it at ``sims``: its record."""
    game = timed.game
    mine, theirs = [], []
    player = counting(timed.agent(MoveBudget(per_move=seconds), f"{seconds:g} s a move"), timed, mine)
    opponent = counting(timed.agent(MoveBudget(simulations=sims), f"{sims} sims"), timed, theirs)
    begin = time.perf_counter()
    summary = arena.play_match(game, player, opponent, lines, key).summary()
    searched = [move for move in mine if move.source == "search"]
    return {
        "seconds": seconds, "sims": sims, "games": summary.games, "score": summary.score,
        "ci95": summary.score_ci, "wall_s": round(time.perf_counter() - begin, 1),
        "searched_moves": len(searched),
        "mean_simulations": float(np.mean([m.simulations for m in searched])) if searched else 0.0,
        "mean_move_s": float(np.mean([m.seconds for m in searched])) if searched else 0.0,
        "max_move_s": float(np.max([m.seconds for m in searched])) if searched else 0.0,
        "opponent_mean_move_s": float(np.mean([m.seconds for m in theirs if m.source == "search"] or [0.0])),
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m experiments.bench_time_strength", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="builtin:8x8-expert", help="the network (default builtin:8x8-expert)")
    parser.add_argument("--seconds", type=float, nargs="+", default=[1.0, 3.0, 10.0], help="seconds a move to try")
    parser.add_argument("--sims", type=int, default=PLAYING_SIMULATIONS, help="the opponent's simulations a move")
    parser.add_argument("--games", type=int, default=200, help="games a cell (even: each opening twice)")
    parser.add_argument("--openings", default=None, help="file of opening lines (XOT); default near-even random ones")
    parser.add_argument("--solve", type=int, default=None, help="empties solved exactly (default: the players')")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cells", default=None, help="JSON lines of finished cells (appended; those there skipped)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    game, network, variables = load_network(args.checkpoint)
    config = playing_search_config("gumbel", args.sims)
    timed = TimedSearch(game, network_apply_fn(game, network), variables, config, network.value_margin,
                        solve_empties=endgame_depth(game.size, args.solve))
    done = {}
    if args.cells and Path(args.cells).exists():
        for line in Path(args.cells).read_text().splitlines():
            record = json.loads(line)
            done[(record["checkpoint"], record["seconds"], record["sims"], record["games"], record["seed"])] = record
    open_key, play_key = jax.random.split(jax.random.PRNGKey(args.seed))
    lines = arena.match_openings(game, args.games, open_key, args.openings)
    print(f"preparing the search of {args.checkpoint} (compiling)...", file=sys.stderr, flush=True)
    timed.prepare()
    rows = []
    for seconds in args.seconds:
        cell_key = (args.checkpoint, seconds, args.sims, args.games, args.seed)
        record = done.get(cell_key)
        if record is None:
            record = {"checkpoint": args.checkpoint, "seed": args.seed, "openings": args.openings or "",
                      **play_cell(timed, seconds, args.sims, lines, play_key)}
            if args.cells:
                with open(args.cells, "a") as out:
                    out.write(json.dumps(record) + "\n")
        rows.append(record)
        print(f"  {seconds:g} s a move: score {record['score']:.3f} +- {record['ci95']:.3f} over {record['games']} "
              f"games, {record['mean_simulations']:.0f} simulations a move", file=sys.stderr, flush=True)
    print(f"{args.checkpoint} at S seconds a move against itself at {args.sims} simulations")
    print(f"{'s/move':>7} {'games':>6} {'score':>7} {'ci95':>6} {'sims/move':>10} {'s/move used':>12} {'max s':>6} "
          f"{'opp s/move':>11}")
    for r in rows:
        print(f"{r['seconds']:>7g} {r['games']:>6} {r['score']:>7.3f} {r['ci95']:>6.3f} {r['mean_simulations']:>10.0f} "
              f"{r['mean_move_s']:>12.2f} {r['max_move_s']:>6.2f} {r['opponent_mean_move_s']:>11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
