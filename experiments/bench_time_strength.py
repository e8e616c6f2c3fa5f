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
one. A cell is played ``--part`` openings at a time; each finished part, then the finished cell, is
appended to ``--cells`` (one JSON line each), and a run started again skips what is there, so a
cell of many hours can be played over several sittings.
A tiny check that it works: ``--seconds 0.2 --games=2``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np

from othello_jax.agents import Agent, playing_search_config
from othello_jax.agents.neural import load_network, network_apply_fn
from othello_jax.agents.time_control import MoveBudget
from othello_jax.agents.timed import TimedSearch
from othello_jax.commands.agent_options import PLAYING_SIMULATIONS, endgame_depth
from othello_jax.evaluation import arena
from othello_jax.game import Othello


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


def play_part(timed: TimedSearch, seconds: float, sims: int, lines: list, key: jax.Array) -> dict:
    """One match over ``lines`` (each twice, colours swapped), the player at ``seconds`` a move against
    it at ``sims``: the games' results and the moves' sums, to be added up with the cell's other parts."""
    game = timed.game
    mine, theirs = [], []
    player = counting(timed.agent(MoveBudget(per_move=seconds), f"{seconds:g} s a move"), timed, mine)
    opponent = counting(timed.agent(MoveBudget(simulations=sims), f"{sims} sims"), timed, theirs)
    begin = time.perf_counter()
    result = arena.play_match(game, player, opponent, lines, key)
    searched = [move for move in mine if move.source == "search"]
    their_searched = [move for move in theirs if move.source == "search"]
    return {
        "black_disc_diff": np.asarray(result.black_disc_diff).tolist(), "wall_s": time.perf_counter() - begin,
        "searched_moves": len(searched), "simulations": int(sum(m.simulations for m in searched)),
        "move_s": float(sum(m.seconds for m in searched)),
        "max_move_s": float(max((m.seconds for m in searched), default=0.0)),
        "opponent_searched_moves": len(their_searched),
        "opponent_move_s": float(sum(m.seconds for m in their_searched)),
    }


def cell_record(game: Othello, parts: list[dict], seconds: float, sims: int) -> dict:
    """The cell's line of the table from its parts: the score over every game (its interval from the
    opening pairs, as a match's) and the moves' means."""
    diffs = np.concatenate([np.asarray(part["black_disc_diff"], np.int32) for part in parts], axis=1)
    summary = arena.MatchResult(game, f"{seconds:g} s a move", f"{sims} sims", [[] for _ in range(diffs.shape[1])],
                                np.zeros((2, diffs.shape[1], 0), np.int32), diffs, 0.0).summary()
    searched = sum(part["searched_moves"] for part in parts)
    theirs = sum(part["opponent_searched_moves"] for part in parts)
    return {
        "seconds": seconds, "sims": sims, "games": summary.games, "score": summary.score, "ci95": summary.score_ci,
        "wall_s": round(sum(part["wall_s"] for part in parts), 1), "searched_moves": searched,
        "mean_simulations": sum(part["simulations"] for part in parts) / searched if searched else 0.0,
        "mean_move_s": sum(part["move_s"] for part in parts) / searched if searched else 0.0,
        "max_move_s": max(part["max_move_s"] for part in parts),
        "opponent_mean_move_s": sum(part["opponent_move_s"] for part in parts) / theirs if theirs else 0.0,
    }


def play_cell(timed: TimedSearch, seconds: float, sims: int, lines: list, key: jax.Array, part_openings: int,
              done_parts: dict[int, dict], save_part: Callable[[int, dict], None]) -> dict:
    """One cell, played ``part_openings`` openings at a time; parts in ``done_parts`` (from an earlier,
    stopped run) are not played again, and each new one is handed to ``save_part`` as it ends."""
    parts, so_far = [], {}
    count = -(-len(lines) // part_openings)
    for index in range(count):
        part = done_parts.get(index)
        if part is None:
            chunk = lines[index * part_openings:(index + 1) * part_openings]
            part = play_part(timed, seconds, sims, chunk, jax.random.fold_in(key, index))
            save_part(index, part)
        parts.append(part)
        so_far = cell_record(timed.game, parts, seconds, sims)
        print(f"  {seconds:g} s a move: part {index + 1}/{count}, {so_far['games']} games, score so far "
              f"{so_far['score']:.3f} +- {so_far['ci95']:.3f}", file=sys.stderr, flush=True)
    return so_far  # the record of every part


def append_line(path: str, record: dict) -> None:
    """One JSON line at the end of ``path``, flushed to disk (a stop loses at most the part playing)."""
    with open(path, "a") as out:
        out.write(json.dumps(record) + "\n")
        out.flush()
        os.fsync(out.fileno())


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
    parser.add_argument("--cells", default=None, help="JSON lines of finished cells and of the parts of unfinished "
                                                      "ones (appended; what is there is not played again)")
    parser.add_argument("--part", type=int, default=10, help="openings a part: a stopped cell resumes at its "
                                                             "first unplayed part (default 10, 20 games)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.part < 1:
        print("error: --part must be at least 1", file=sys.stderr)
        return 2
    game, network, variables = load_network(args.checkpoint)
    config = playing_search_config("gumbel", args.sims)
    timed = TimedSearch(game, network_apply_fn(game, network), variables, config, network.value_margin,
                        solve_empties=endgame_depth(game.size, args.solve))
    done, parts = {}, {}
    if args.cells and Path(args.cells).exists():
        for line in Path(args.cells).read_text().splitlines():
            record = json.loads(line)
            key = (record["checkpoint"], record["seconds"], record["sims"], record["games"], record["seed"])
            if "part" in record:
                if record.get("part_openings") == args.part:
                    parts.setdefault(key, {})[record["part"]] = record
            else:
                done[key] = record
    open_key, play_key = jax.random.split(jax.random.PRNGKey(args.seed))
    lines = arena.match_openings(game, args.games, open_key, args.openings)
    print(f"preparing the search of {args.checkpoint} (compiling)...", file=sys.stderr, flush=True)
    timed.prepare()
    rows = []
    for seconds in args.seconds:
        cell_key = (args.checkpoint, seconds, args.sims, args.games, args.seed)
        record = done.get(cell_key)
        if record is None:
            header = {"checkpoint": args.checkpoint, "seconds": seconds, "sims": args.sims, "games": args.games,
                      "seed": args.seed}

            def save_part(index: int, part: dict, header: dict = header) -> None:
                if args.cells:
                    append_line(args.cells, {**header, "part": index, "part_openings": args.part, **part})

            record = {"checkpoint": args.checkpoint, "seed": args.seed, "openings": args.openings or "",
                      **play_cell(timed, seconds, args.sims, lines, play_key, args.part, parts.get(cell_key, {}),
                                  save_part)}
            if args.cells:
                append_line(args.cells, record)
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
