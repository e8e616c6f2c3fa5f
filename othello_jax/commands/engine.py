"""`othello-jax engine`: serve an agent to Othello GUIs and match programs on stdin/stdout.

    othello-jax engine --protocol=gtp --checkpoint=runs/8x8/best --sims=200
    othello-jax engine --agent=alphabeta:3
    othello-jax engine --protocol=nboard --checkpoint=builtin:8x8-expert

Two protocols:

  gtp     the Go Text Protocol played as Othello, as Edax and Egaroucid speak it (GoGui-style
          controllers, arena programs): boardsize, clear_board, play, genmove, ... (send
          list_commands for all).
  nboard  the NBoard GUI's protocol (version 2), as Edax and NTest speak it: set game, move,
          go, hint, ping, learn. In NBoard, add an engine whose command is this command line.
          Evaluations (hint, go) are the side to move's: in the solved endgame the exact disc
          difference (depth 100%); before it the network search's expected score in percent
          minus 50 (-50 lost, +50 won; depth: its simulations), or the disc margin a network
          trained on margins predicts. set depth leaves the strength to --sims.

The GUI starts the engine as a subprocess. Only protocol lines go to stdout; messages go to
stderr. Like Edax and Egaroucid, the engine plays the endgame exactly with the C solver (how many
empties: --solve=E; --no-solve turns it off). A network's search starts compiling when the engine
starts (kept for the next start); until it is ready, 8x8 openings are answered from a book of the
WThor experts' most played moves, and other positions wait for it.

A network's engine plays on the clock: --seconds=S a move, or --clock=T[+I] for the game; a
controller's clock overrides both (GTP time_settings and time_left; NBoard's GGF clock, TI, with the
times of the moves). Without any it searches --sims simulations a move.

    othello-jax engine --checkpoint=builtin:8x8-expert --seconds=2
"""

from __future__ import annotations

import argparse
import sys

from othello_jax.commands import agent_options, clock_options
from othello_jax.commands.command import failure, make_parser
from othello_jax.game import SIZES
from othello_jax.interface import gtp_server, nboard_server

PROTOCOLS = ("gtp", "nboard")


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser("engine", __doc__)
    parser.add_argument("--protocol", default="gtp", type=str.lower, choices=PROTOCOLS,
                        help="engine protocol: gtp (the Go Text Protocol) or nboard (the NBoard GUI's) (default gtp)")
    agent_options.add_arguments(parser, endgame=True)
    clock_options.add_arguments(parser)
    parser.add_argument("--seed", type=int, default=0, help="random seed for the agent")
    parser.add_argument("--name", default="othello-jax", help="the engine's name as the GUI shows it")
    return parser


def exact_empties(solve: int | None) -> dict[int, int]:
    """Per board size, the empty squares at or below which the NBoard engine's evaluations are
    exact: the endgame the player solves with the C solver (none with --no-solve or without it)."""
    from othello_jax.solver import c_solver

    if solve == 0 or not c_solver.available():
        return {}
    return {size: agent_options.endgame_depth(size, solve) for size in SIZES}


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    fail = failure("engine")
    try:
        budget = clock_options.move_budget(args)
        player = clock_options.build(args, budget, timed=True)
    except agent_options.AgentOptionError as error:
        return fail(error)
    speaking = "the NBoard protocol" if args.protocol == "nboard" else "GTP"
    print(f"othello-jax engine: {player.name} on {player.size}x{player.size}, speaking {speaking}", file=sys.stderr)
    if args.protocol == "nboard":
        engine = nboard_server.NboardEngine(player.make_agent, size=player.size, sizes=player.sizes, seed=args.seed,
                                            name=args.name, analyzer=player.analyzer,
                                            exact_empties=exact_empties(args.solve), budget=budget)
        return nboard_server.serve(engine, sys.stdin, sys.stdout)
    engine = gtp_server.GtpEngine(player.make_agent, size=player.size, sizes=player.sizes, seed=args.seed,
                                  name=args.name, budget=budget)
    return gtp_server.serve(engine, sys.stdin, sys.stdout)
