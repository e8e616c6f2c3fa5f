"""Make the shipped opening book (``othello_jax/pretrained/opening_book_8x8.txt``) from the WThor
expert games: the first 12 plies of every game, positions reached by at least 30 games, each with
the move played most (:func:`othello_jax.agents.opening_book.build_book`).

    python -m experiments.make_opening_book --wthor=../shared/data/wthor
"""

from __future__ import annotations

import argparse
import sys
import time

from othello_jax.agents.opening_book import BOOK_FILE, build_book
from othello_jax.data.wthor import decode_moves, load_database
from othello_jax.solver import c_solver


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.make_opening_book", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wthor", required=True, help="the WThor directory (WTH_YYYY.wtb files)")
    parser.add_argument("--plies", type=int, default=12, help="plies of each game in the book (default 12)")
    parser.add_argument("--min-games", type=int, default=30, help="games a position needs (default 30)")
    parser.add_argument("--out", default=str(BOOK_FILE), help="the book file (default: the shipped one)")
    args = parser.parse_args(argv)
    begin = time.perf_counter()
    database = load_database(args.wthor)
    moves = decode_moves(database.games.moves[:, :args.plies])
    book = build_book(moves.tolist(), c_solver.library().oj_flips, args.plies, args.min_games)
    header = (f"# opening book: {len(book)} positions of the first {args.plies} plies of {len(moves)} WThor games "
              f"({', '.join(database.files[:1] + database.files[-1:])}), each reached by at least {args.min_games} "
              "games, with the move played most\n# MOVER OPPONENT SQUARE GAMES (canonical orientation; "
              "python -m experiments.make_opening_book)\n")
    with open(args.out, "w") as out:
        out.write(header + "\n".join(book.lines()) + "\n")
    print(f"{len(book)} positions -> {args.out} in {time.perf_counter() - begin:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
