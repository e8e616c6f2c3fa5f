"""How varied are self-play's positions? Distinct positions per band of empty squares among the
positions that self-play records, as training plays (the quickstart's search and temperature),
for each ``--random-plies`` (the setting ``selfplay.random_plies``: 0..R uniformly random
opening moves per game)::

    python -m experiments.selfplay_diversity --checkpoint=builtin:6x6 --games=1024 --random-plies 0 10

A network that has settled on a narrow opening book replays the same lines: most of the
positions it trains on at 21-28 empties are repeats, and the evaluations' random openings
lead elsewhere. No timing here: the counts depend on the network and the seed only.
"""

from __future__ import annotations

import argparse
import sys
from typing import NamedTuple

import jax
import numpy as np

from experiments.target_errors import play
from othello_jax.game import Othello

BANDS = ((25, 28), (21, 24), (17, 20), (13, 16), (9, 12), (5, 8))


class BandCount(NamedTuple):
    band: tuple[int, int]  # (fewest, most) empties
    positions: int  # recorded positions in the band
    distinct: int  # distinct (mover's discs, opponent's discs, colour) among them


def distinct_by_band(out, game: Othello, bands=BANDS) -> list[BandCount]:
    """Per band: recorded positions of a self-play lane (leaves [T, B]) and how many are distinct."""
    flat = jax.tree.map(lambda x: np.asarray(x).reshape((-1,) + np.asarray(x).shape[2:]), out.samples.state)
    recorded = np.asarray(out.samples.mask).reshape(-1)
    black, white = (np.asarray(board.lo).astype(np.uint64) | (np.asarray(board.hi).astype(np.uint64) << np.uint64(32))
                    for board in game.black_white(flat))
    empties = game.num_squares - np.bitwise_count(black | white).astype(np.int32)
    color = np.asarray(flat.color).astype(np.uint64)
    counts = []
    for low, high in bands:
        rows = recorded & (empties >= low) & (empties <= high)
        keys = np.stack([black[rows], white[rows], color[rows]], axis=1)
        counts.append(BandCount((low, high), int(rows.sum()), len(np.unique(keys, axis=0)) if rows.any() else 0))
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="builtin:6x6", help="a network (builtin:6x6, a workdir, ...)")
    parser.add_argument("--games", type=int, default=1024)
    parser.add_argument("--sims", type=int, default=16, help="self-play simulations (othello6_cpu: 16)")
    parser.add_argument("--temperature-plies", type=int, default=8, help="othello6_cpu: 8")
    parser.add_argument("--random-plies", type=int, nargs="+", default=[0, 10])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"{args.checkpoint}: {args.games} self-play games, {args.sims} simulations, "
          f"{args.temperature_plies} sampled plies, seed {args.seed}")
    print(f"{'random plies':>12} {'empties':>8} {'positions':>10} {'distinct':>9} {'share':>6}")
    for random_plies in args.random_plies:
        out, game, _, _ = play(args.checkpoint, args.games, args.sims, args.temperature_plies, args.seed, random_plies)
        for band in distinct_by_band(out, game):
            share = 100 * band.distinct / max(band.positions, 1)
            print(f"{random_plies:>12} {f'{band.band[0]}-{band.band[1]}':>8} {band.positions:>10} "
                  f"{band.distinct:>9} {share:>5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
