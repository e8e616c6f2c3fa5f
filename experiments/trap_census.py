"""Where wipeout traps stand in a match: at each move of the followed player, how many discs it
has, whether some legal move is lost to a wipeout by force within four plies, within six but not
four, and whether the move it played was (the rules as ground truth, no network).

Evidence for the players' six-ply check (``othello_jax/search/traps.py``'s ``DEEP_DISCS``): it
runs only where we have few discs. The verdicts come from the tests' plain-Python Othello
(``tests/test_traps.py``: no bitboards, no JAX, the JAX checks' bounds), so the census is
independent of the code it justifies.

    othello-jax eval --size=8 --black="net:ckpt=builtin:8x8,sims=128" --white=greedy --games=200 --save-games=G
    python -m experiments.trap_census G [G ...] --max-discs=10
"""

from __future__ import annotations

import argparse
import collections
import sys

from othello_jax.evaluation.arena import read_saved_games
from othello_jax.game import Othello, parse_transcript
from tests.test_traps import discs, loses_by_force, loses_by_force_deep, moves, play

GAME = Othello(8)


def census(paths: list[str], player: str, max_discs: int) -> dict[int, collections.Counter]:
    """Per disc count of the followed player (at most ``max_discs``): its moves, those where a
    legal move is lost in four plies / in six but not four, and those where it played such a move."""
    counts: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for path in paths:
        for saved in read_saved_games(path):
            follow = saved.side_of(player)
            mover, opponent = discs(GAME.init())
            color = 0  # black to move
            for action in parse_transcript(saved.transcript, 8):
                if moves(mover, opponent) == [64] and action != 64:  # a pass the transcript left out
                    mover, opponent, color = opponent, mover, 1 - color
                if color == follow and action != 64 and bin(mover).count("1") <= max_discs:
                    record(counts[bin(mover).count("1")], mover, opponent, action)
                mover, opponent = play(mover, opponent, action)
                color = 1 - color
    return counts


def record(tally: collections.Counter, mover: int, opponent: int, action: int) -> None:
    """One move of the followed player into its disc count's tally."""
    legal = [square for square in moves(mover, opponent) if square < 64]
    four = {square for square in legal if loses_by_force(mover, opponent, square)}
    six = {square for square in legal if square not in four and loses_by_force_deep(mover, opponent, square)}
    tally["moves"] += 1
    tally["a move lost in 4"] += bool(four)
    tally["a move lost in 6, not 4"] += bool(six)
    tally["played one lost in 6, not 4"] += action in six
    tally["every move lost in 6"] += bool(legal) and len(four | six) == len(legal)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("games", nargs="+", help="files written by othello-jax eval --save-games")
    parser.add_argument("--player", default="net", help="follow the side whose spec starts with this")
    parser.add_argument("--max-discs", type=int, default=10)
    args = parser.parse_args(argv)
    try:
        counts = census(args.games, args.player, args.max_discs)
    except (OSError, ValueError) as error:
        print(f"trap_census: {error}", file=sys.stderr)
        return 2
    columns = ["moves", "a move lost in 4", "a move lost in 6, not 4", "played one lost in 6, not 4",
               "every move lost in 6"]
    print("| our discs | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for own in sorted(counts):
        print(f"| {own} | " + " | ".join(str(counts[own][column]) for column in columns) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
