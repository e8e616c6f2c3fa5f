"""`othello-jax testset`: an agent's score on the 6x6 perfect-play test set.

    othello-jax testset --agent=alphabeta:3
    othello-jax testset --agent="net:ckpt=runs/othello6,sims=128"
    othello-jax testset --checkpoint=runs/othello6 --sims=128 --json

The agent picks a move in every test position (one batched call, no solving): the share of
optimal moves (95% Wilson interval) and the mean disc loss per move (95% normal interval),
by band of empty squares (the packaged set's three, and more for a file with positions
outside 12-24 empties). Positions with one legal move, or whose moves all have the same
value, do not count. Make a set of your own with `othello-jax make-testset` (then --file=testset6.npz).
"""

from __future__ import annotations

import argparse
import time

import jax

from othello_jax.commands import agent_options
from othello_jax.commands.command import add_json_flag, failure, make_parser, print_json
from othello_jax.errors import InputError
from othello_jax.evaluation.perfect_set import bands_covering, score_agent
from othello_jax.game import Othello
from othello_jax.notices import compiling_then, say_while
from othello_jax.solver import solved_moves as ts
from othello_jax.solver.move_checks import format_bands


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser("testset", __doc__)
    agent_options.add_arguments(parser)
    parser.add_argument("--file", help=f"test set file (default: the packaged {ts.DEFAULT_PATH.name})")
    parser.add_argument("--batch", type=int, default=0, help="positions per agent call (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    add_json_flag(parser)
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    fail = failure("testset")

    try:
        testset = ts.load(args.file)
    except (InputError, OSError) as error:  # missing, or not a test set file
        return fail(str(error))
    if args.size and args.size != testset.size:
        return fail(f"the test set is {testset.size}x{testset.size}, not --size={args.size}")
    if args.batch < 0:
        return fail(f"--batch must be >= 0, got {args.batch}")
    if not args.checkpoint:
        args.size = testset.size  # an agent spec plays any size: the test set's (a network knows its own)
    try:
        player = agent_options.build(args)
        if testset.size not in player.sizes:
            return fail(f"the checkpoint plays {player.size}x{player.size}; the test set is "
                        f"{testset.size}x{testset.size}")
        agent = player.make_agent(Othello(testset.size))
    except InputError as error:
        return fail(str(error))
    act = jax.jit(agent.act) if getattr(agent, "jittable", True) else agent.act
    begin = time.perf_counter()
    try:
        with say_while(compiling_then(f"choosing its moves in {len(testset.empties)} test positions")):
            report = score_agent(act, testset, jax.random.key(args.seed), args.batch, bands_covering(testset.empties))
    except InputError as error:  # e.g. an external engine that failed
        return fail(str(error))
    seconds = time.perf_counter() - begin
    if args.json:
        bands = {f"{high}-{low}": line._asdict() for (high, low), line in report.bands.items()}
        print_json({"agent": player.name, "positions": report.total.moves, **report.total._asdict(),
                    "bands": bands, "seconds": round(seconds, 1)})
        return 0
    print(f"{player.name} on {report.total.moves} test positions ({testset.size}x{testset.size}), "
          f"{seconds:.1f} s; intervals 95% (Wilson for shares, normal for means)")
    print(format_bands(report))
    return 0
