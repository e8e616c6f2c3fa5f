"""`othello-jax make-labels`: a labelled set, every move of positions from one source solved exactly.

    othello-jax make-labels --source=offdist --per-band=8-12:40,13-16:30 --out=/tmp/offdist.npz
    othello-jax make-labels --source="selfplay:net:ckpt=builtin:6x6,sims=16" --out=/tmp/self.npz --workers=2

Positions come from the network's own self-play (selfplay:AGENT_SPEC, the first
--sample-plies plies sampled) or from mixed random, greedy and alpha-beta play (offdist),
--per-band of them per band of empty squares; every legal move is solved (C solver in
--workers processes, solved positions kept in --cache), and ~20% of the games are held
out (split == "test"). --train-solve=targets solves training rows only as far as
supervised learning needs (value and optimal moves), held-out rows in full. Prints what each
band cost to solve. The same options give the same file, byte for byte, whatever --workers;
`othello-jax testset --file=FILE` scores an agent on it (its held-out rows, and training rows
solved in full).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from othello_jax.commands.command import make_parser
from othello_jax.errors import InputError
from othello_jax.evaluation import labels as labels_lib
from othello_jax.game import SIZES, Othello
from othello_jax.solver import BACKENDS, resolve_backend
from othello_jax.solver.cache import SolvedPositions, default_directory


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser("make-labels", __doc__)
    parser.add_argument("--source", required=True, help="selfplay:AGENT_SPEC or offdist")
    parser.add_argument("--per-band", default=labels_lib.DEFAULT_BANDS,
                        help=f"positions per band of empties, LOW-HIGH:COUNT,... (default {labels_lib.DEFAULT_BANDS})")
    parser.add_argument("--out", required=True, help="the .npz file to write")
    parser.add_argument("--size", type=int, default=6, help="board size (default 6)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the games and of the split")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                        help="solver processes (default: up to 2)")
    parser.add_argument("--backend", default="auto", help=f"solver: {', '.join(BACKENDS)} (default auto)")
    parser.add_argument("--cache", default=str(default_directory()),
                        help="directory of solved positions, reused and added to (default %(default)s; '' keeps none)")
    parser.add_argument("--sample-plies", type=int, default=labels_lib.DEFAULT_SAMPLE_PLIES,
                        help=f"self-play plies sampled (default {labels_lib.DEFAULT_SAMPLE_PLIES})")
    parser.add_argument("--train-solve", default="every-move",
                        help="training rows: every-move (each move's exact value, the default) or targets: the "
                             "position's value and its optimal moves (2.4-2.8x cheaper at 13-18 empties; "
                             "held-out rows are always solved in full)")
    parser.add_argument("--test-share", type=float, default=labels_lib.TEST_SHARE,
                        help=f"share of games held out (default {labels_lib.TEST_SHARE})")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.size not in SIZES:
        raise InputError(f"--size must be one of {', '.join(map(str, SIZES))}, got {args.size}")
    if args.workers < 1 or args.sample_plies < 0 or not 0 <= args.test_share <= 1:
        raise InputError("need --workers >= 1, --sample-plies >= 0 and 0 <= --test-share <= 1")
    game = Othello(args.size)
    bands = labels_lib.parse_bands(args.per_band, game)
    labels_lib.parse_source(args.source)  # a bad source fails before anything runs
    if args.train_solve not in labels_lib.TRAIN_SOLVES:
        raise InputError(f"--train-solve must be one of {', '.join(labels_lib.TRAIN_SOLVES)}, got {args.train_solve!r}")
    backend = resolve_backend(args.backend)  # the cache needs the C solver
    cache = SolvedPositions(args.size, args.cache or None) if backend == "c" else None
    begin = time.perf_counter()
    progress = lambda text: print(f"  {text} ({time.perf_counter() - begin:.0f} s)", file=sys.stderr, flush=True)
    labels, costs = labels_lib.make_labels(game, args.source, bands, args.seed, backend, args.workers, cache,
                                           args.sample_plies, args.test_share, args.train_solve, progress)
    labels_lib.save(labels, args.out)
    test = labels.split == "test"
    print(f"{len(labels)} positions from {len(np.unique(labels.game))} games ({int(test.sum())} held out, from "
          f"{len(np.unique(labels.game[test]))} games) written to {args.out} in {time.perf_counter() - begin:.0f} s")
    print(f"solving cost by band ({args.workers} workers):")
    print(labels_lib.format_costs(costs))
    return 0
