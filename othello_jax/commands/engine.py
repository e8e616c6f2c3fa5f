"""`othello-jax engine`: serve an agent over the Go Text Protocol on stdin/stdout.

    othello-jax engine --protocol=gtp --checkpoint=runs/8x8/best --sims=200
    othello-jax engine --agent=alphabeta:3

GUIs and match programs start it as a subprocess and send `boardsize`, `clear_board`, `play`,
`genmove`, ... (run `list_commands` for all). Only protocol responses go to stdout; messages go
to stderr. Like Edax and Egaroucid, the engine plays the endgame exactly with the C solver (how
many empties: ``--solve=E``; ``--no-solve`` turns it off).
"""

from __future__ import annotations

import argparse
import sys

from othello_jax.commands import agent_options
from othello_jax.commands.command import failure, make_parser
from othello_jax.interface.gtp_server import GtpEngine, serve


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser("engine", __doc__)
    parser.add_argument("--protocol", default="gtp", help="engine protocol (only gtp)")
    agent_options.add_arguments(parser, endgame=True)
    parser.add_argument("--seed", type=int, default=0, help="random seed for the agent")
    parser.add_argument("--name", default="othello-jax", help="name reported by the `name` command")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    fail = failure("engine")
    if args.protocol.lower() != "gtp":
        return fail(f"unknown --protocol {args.protocol!r}; only gtp is supported")
    try:
        player = agent_options.build(args)
    except agent_options.AgentOptionError as error:
        return fail(error)
    engine = GtpEngine(player.make_agent, size=player.size, sizes=player.sizes, seed=args.seed, name=args.name)
    print(f"othello-jax engine: {player.name} on {player.size}x{player.size}, speaking GTP", file=sys.stderr)
    return serve(engine, sys.stdin, sys.stdout)
