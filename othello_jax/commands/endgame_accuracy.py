"""`othello-jax endgame-accuracy`: how well an agent plays its endgames, judged by the exact solver.

    othello-jax endgame-accuracy --agent greedy --games 64 --empties 14
    othello-jax endgame-accuracy --checkpoint runs/othello8 --opponent random \\
        --openings ../shared/data/xot/openingslarge.txt

The agent plays games (against itself, or against --opponent) from random starts or from
an openings file; every one of its moves with at most --empties empty squares left is
solved before and after, and the fraction of moves keeping the game-theoretic result, the
fraction of optimal moves and the mean disc loss are reported.
"""

from __future__ import annotations

import argparse
import sys
import time

import jax

from othello_jax.commands import agent_options
from othello_jax.commands.command import add_json_flag, failure, make_parser, print_json
from othello_jax.errors import InputError
from othello_jax.game import Othello
from othello_jax.notices import compiling_then
from othello_jax.solver import BACKENDS, resolve_backend
from othello_jax.solver.move_checks import (
    collect_moves,
    format_report,
    judge_moves,
    opening_starts,
    random_starts,
    summarize,
)


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser("endgame-accuracy", __doc__)
    agent_options.add_arguments(parser)
    parser.add_argument("--opponent", help="agent spec of the other side (default: the agent plays both sides)")
    parser.add_argument("--games", type=int, default=32, help="games to play (default 32)")
    parser.add_argument("--empties", type=int, default=14,
                        help="judge moves with at most this many empty squares (default 14)")
    parser.add_argument("--random-plies", type=int, default=10,
                        help="random moves before the agents take over (default 10)")
    parser.add_argument("--openings", help="file of opening transcripts to start from instead (e.g. XOT)")
    parser.add_argument("--backend", default="auto",
                        help=f"solver: {', '.join(BACKENDS)} (default auto: C if it builds)")
    parser.add_argument("--seed", type=int, default=0)
    add_json_flag(parser)
    return parser


def _check(args: argparse.Namespace, game: Othello) -> None:
    if args.games < 1:
        raise InputError(f"--games must be at least 1, got {args.games}")
    if not 0 <= args.empties <= game.num_squares - 4:
        raise InputError(f"--empties must be in 0..{game.num_squares - 4}, got {args.empties}")
    if args.random_plies < 0:
        raise InputError(f"--random-plies must be non-negative, got {args.random_plies}")


def _act(agent):
    """The agent's batched act function, compiled when the agent allows it."""
    return jax.jit(agent.act) if getattr(agent, "jittable", True) else agent.act


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    fail = failure("endgame-accuracy")
    try:
        player = agent_options.build(args)
        game = Othello(args.size or player.size)
        _check(args, game)
        backend = resolve_backend(args.backend)
        agent = player.make_agent(game)
        opponent = None
        if args.opponent:
            opponent = agent_options.spec_player(args.opponent, game.size).make_agent(game)
        key = jax.random.key(args.seed)
        if args.openings:
            starts = opening_starts(args.openings, game, args.games, args.seed)
        else:
            starts = random_starts(game, args.games, args.random_plies, jax.random.fold_in(key, 1))
    except (InputError, OSError) as error:  # bad options or openings, no C compiler for --backend=c
        return fail(error)
    if backend == "jax" and args.empties > 12:
        print(f"note: no C compiler, so the JAX solver judges the moves; {args.empties} empties may be slow",
              file=sys.stderr)
    begin = time.time()
    print(compiling_then(f"playing {args.games} games ({player.name}"
                         f"{' vs ' + args.opponent if opponent else ', both sides'}) ..."), file=sys.stderr)
    try:
        states, actions = collect_moves(_act(agent), starts, game, args.empties, key,
                                        None if opponent is None else _act(opponent))
    except InputError as error:  # e.g. an external engine that failed or played an illegal move
        return fail(error)
    print(f"solving {2 * len(actions)} positions with the {backend} solver ...", file=sys.stderr)
    report = summarize(judge_moves(states, actions, game, backend))
    if report.positions == 0:
        print(f"note: the agent made no move with at most {args.empties} empty squares left", file=sys.stderr)
        report = report._replace(keeps_result=None, optimal=None, mean_disc_loss=None)
    if args.json:
        print_json({"agent": player.name, "opponent": args.opponent, "games": args.games,
                    "max_empties": args.empties, **report._asdict(), "seconds": round(time.time() - begin, 1)})
    elif report.positions:
        print(format_report(report))
    return 0
