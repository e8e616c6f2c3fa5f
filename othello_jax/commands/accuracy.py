"""`othello-jax accuracy`: how often a network's policy picks the expert's move.

    othello-jax wthor download                                          # once: the database, ~9 MB
    othello-jax accuracy --checkpoint=runs/sl_cpu
    othello-jax accuracy --checkpoint=runs/o8/best --positions=50000 --json
    othello-jax accuracy --checkpoint=runs/wthor_cpu --split=random     # Liskowski et al.'s split
    othello-jax accuracy --checkpoint=builtin:8x8-expert --split=random --symmetries=8

Held-out positions are the de-duplicated (position, move) pairs of the WThor games from
--test-from-year on (built once and cached), or with --split=random Liskowski et al.'s random 5%
of every game's unique pairs (what supervised:wthor_cpu holds out). The network's prediction is its
highest-scoring legal move; top-3 counts the expert move among its three best; the table also
splits by game stage and by the number of legal moves. --symmetries=8 averages the policy over
the board's 8 symmetries (8 network calls a position; the paper's figures are single-view).
Works for any 8x8 checkpoint (supervised or self-play, a training workdir, a .msgpack file,
builtin:8x8-expert).
"""

from __future__ import annotations

import argparse
import sys
import time

from othello_jax.commands.command import add_checkpoint_argument, add_json_flag, failure, make_parser, print_json
from othello_jax.data import wthor
from othello_jax.errors import InputError
from othello_jax.notices import compiling_then

DEFAULT_CACHE = "~/.cache/othello-jax"


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser("accuracy", __doc__)
    add_checkpoint_argument(parser, required=True)
    parser.add_argument("--wthor", default=None,
                        help=f"WThor directory with WTH_YYYY.wtb files (default ${wthor.DIRECTORY_ENV}, else "
                             f"where `{wthor.DOWNLOAD_COMMAND}` puts it: {wthor.default_directory()})")
    parser.add_argument("--cache-dir", default=DEFAULT_CACHE,
                        help=f"where the built dataset is cached (default {DEFAULT_CACHE}; '' to disable)")
    parser.add_argument("--split", choices=("year", "random"), default="year",  # expert.SPLITS; --help imports no jax
                        help="held out: the games from --test-from-year on (default), or a random 5%% of the "
                             "unique (position, move) pairs as Liskowski et al. (supervised:wthor_cpu's)")
    parser.add_argument("--test-from-year", type=int, default=2015, help="held-out games: this year on (default 2015)")
    parser.add_argument("--positions", type=int, default=0,
                        help="evaluate a fixed random subset of this many positions (default 0 = all)")
    parser.add_argument("--symmetries", type=int, choices=(1, 8), default=1,
                        help="1: the network as it is (default, as Liskowski et al. report); 8: its policy "
                             "averaged over the board's 8 symmetries (8x the network calls)")
    parser.add_argument("--batch-size", type=int, default=4096, help="positions per network call (default 4096)")
    add_json_flag(parser)
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    fail = failure("accuracy")

    if args.positions < 0:
        return fail(f"--positions must be >= 0, got {args.positions}")
    if args.batch_size < 1:
        return fail(f"--batch-size must be >= 1, got {args.batch_size}")
    from othello_jax.checkpoint import CheckpointError, load_agent_variables
    from othello_jax.data import expert, move_prediction
    from othello_jax.model import make_network

    try:  # the network first (a second's read), then the database (which may need a download)
        network_config, variables, size = load_agent_variables(args.checkpoint)
    except CheckpointError as error:
        return fail(str(error))
    if size != 8:
        return fail(f"the checkpoint holds a {size}x{size} network; expert games are 8x8")
    try:
        database = wthor.require_database(args.wthor, "pass --wthor=DIR")
    except InputError as error:
        return fail(error)
    progress = None if args.json else _progress
    try:
        data = expert.load_expert_data(database, args.test_from_year,
                                       args.cache_dir or None, progress=progress, split=args.split)
    except InputError as error:  # an unreadable WThor file
        return fail(str(error))
    rows = move_prediction.subsample(data.test, args.positions)
    if rows.size == 0:
        return fail(f"no held-out positions in {database} ({held_out(args)})")
    print(compiling_then(f"ranking the expert moves of {rows.size} positions", "the network") + "...",
          file=sys.stderr, flush=True)
    started = time.time()
    net = make_network(size, network_config)
    result = move_prediction.score_network(net, variables, rows, args.batch_size, progress, args.symmetries)
    if args.json:
        print_json({"checkpoint": args.checkpoint, "network": str(network_config), "symmetries": args.symmetries,
                    **result})
        return 0
    print(f"\r{' ' * 40}\r", end="", file=sys.stderr)
    print(f"{args.checkpoint}: {network_config}")
    views = "" if args.symmetries == 1 else f", the policy averaged over {args.symmetries} symmetries"
    print(f"held-out WThor positions ({held_out(args)}): {rows.size} (position, move) pairs "
          f"evaluated in {time.time() - started:.0f}s{views}")
    print(move_prediction.format_report(result))
    return 0


def held_out(args: argparse.Namespace) -> str:
    """Which positions are held out, in words."""
    return f"games from {args.test_from_year} on" if args.split == "year" else "a random 5% of the unique pairs"


def _progress(done: int, total: int) -> None:
    print(f"\r  {done}/{total}", end="", file=sys.stderr, flush=True)
