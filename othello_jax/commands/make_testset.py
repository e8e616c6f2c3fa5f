"""`othello-jax make-testset`: the 6x6 perfect-play test set, every move solved once.

    othello-jax make-testset                         # ./testset6.npz (minutes)
    othello-jax make-testset --count=40 --out=/tmp/t.npz --workers=2
    othello-jax testset --agent=alphabeta:3 --file=testset6.npz

Positions come from seeded games of mixed random, greedy and alpha-beta play, spread over
--low..--high empty squares; the exact value of every legal move is stored. The same options
give the same file (byte for byte), whatever --workers. The file goes to --out (default
testsetN.npz in the current directory for an NxN board); the copy shipped inside the package,
which `othello-jax testset` reads by default, is rewritten only with --packaged (maintainers).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from othello_jax.commands.command import failure, make_parser
from othello_jax.errors import InputError
from othello_jax.evaluation.perfect_set import DEFAULT_COUNT, DEFAULT_HIGH, DEFAULT_LOW, make_testset
from othello_jax.game import SIZES, Othello
from othello_jax.solver import BACKENDS
from othello_jax.solver import solved_moves as ts


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser("make-testset", __doc__)
    parser.add_argument("--out", help="file to write (default: testsetN.npz here, N the board size)")
    parser.add_argument("--packaged", action="store_true",
                        help=f"write the test set shipped in the package instead ({ts.DEFAULT_PATH}; 6x6 only): "
                             "for maintainers updating it")
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT, help=f"positions (default {DEFAULT_COUNT})")
    parser.add_argument("--low", type=int, default=DEFAULT_LOW, help=f"fewest empties (default {DEFAULT_LOW})")
    parser.add_argument("--high", type=int, default=DEFAULT_HIGH, help=f"most empties (default {DEFAULT_HIGH})")
    parser.add_argument("--size", type=int, default=6, help="board size (default 6)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the games the positions come from")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                        help="solver processes (default: up to 2)")
    parser.add_argument("--backend", default="auto", help=f"solver: {', '.join(BACKENDS)} (default auto)")
    return parser


def output_path(args: argparse.Namespace) -> Path | str:
    """Where the test set goes, or why the options cannot say (a one-line message)."""
    if args.packaged:
        if args.out:
            return "give --out=FILE or --packaged, not both"
        if args.size != 6:
            return f"--packaged is the 6x6 test set; --size={args.size} needs --out=FILE"
        return ts.DEFAULT_PATH
    return Path(args.out) if args.out else Path(f"testset{args.size}.npz")


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    fail = failure("make-testset")

    if args.size not in SIZES:
        return fail(f"--size must be one of {', '.join(map(str, SIZES))}, got {args.size}")
    if not 1 <= args.low <= args.high <= args.size * args.size - 4:
        return fail(f"need 1 <= --low <= --high <= {args.size * args.size - 4}, got {args.low}..{args.high}")
    if args.count < 1 or args.workers < 1:
        return fail("--count and --workers must be at least 1")
    out = output_path(args)
    if isinstance(out, str):
        return fail(out)
    begin = time.perf_counter()
    progress = lambda text: print(f"  {text} ({time.perf_counter() - begin:.0f} s)", file=sys.stderr, flush=True)
    try:
        testset = make_testset(Othello(args.size), args.count, args.low, args.high, args.seed, args.backend,
                               args.workers, progress)
    except InputError as error:  # too few positions, no C compiler for --backend=c
        return fail(str(error))
    ts.save(testset, out)
    print(f"{len(testset)} positions ({args.low}-{args.high} empties) written to {out} "
          f"in {time.perf_counter() - begin:.0f} s")
    return 0
