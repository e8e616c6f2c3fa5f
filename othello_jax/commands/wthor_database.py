"""`othello-jax wthor download`: fetch the WThor expert-game database where every command finds it.

    othello-jax wthor download                          # every year from 1977, ~9 MB, into the user cache
    othello-jax wthor download --years=2001-2010        # some years
    othello-jax wthor download --dir=data/wthor         # elsewhere (then --wthor=data/wthor for the commands)

The Fédération Française d'Othello publishes the database of tournament games on
https://www.ffothello.org/informatique/la-base-wthor/ : one file a year (WTH_YYYY.wtb) and the
player and tournament names (WTHOR.JOU, WTHOR.TRN). The default directory is $OTHELLO_JAX_WTHOR,
else $XDG_CACHE_HOME/othello-jax/wthor, else ~/.cache/othello-jax/wthor: where `accuracy`, the
supervised trainer (data.wthor_dir) and the experiment scripts look unless told. Files already
there and whole are kept; each download is checked (its header's count against its size) before
it is renamed into place; a run cut short resumes where it stopped. Offline, it fails in one
line naming the URL.
"""

from __future__ import annotations

import argparse
import datetime
import sys

from othello_jax.commands.command import failure, make_parser
from othello_jax.data import wthor, wthor_download
from othello_jax.errors import InputError


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser("wthor", __doc__)
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    last = datetime.date.today().year
    download = actions.add_parser("download", help="fetch the database (default: into the user cache)",
                                  description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    download.add_argument("--dir", default=None,
                          help=f"where to put it (default {wthor.default_directory()}: ${wthor.DIRECTORY_ENV}, "
                               "else $XDG_CACHE_HOME/othello-jax/wthor or ~/.cache/othello-jax/wthor)")
    download.add_argument("--years", default=f"{wthor_download.FIRST_YEAR}-{last}",
                          help=f"a year, a range or a list (2004, 2001-2010, 2001,2003-2005; default "
                               f"{wthor_download.FIRST_YEAR}-{last})")
    download.add_argument("--source", default=wthor_download.SOURCE,
                          help=f"the WThor folder to fetch from: SOURCE/base/WTH_YYYY.wtb, else "
                               f"SOURCE/base_zip/WTH_YYYY.ZIP (default {wthor_download.SOURCE})")
    download.add_argument("--force", action="store_true",
                          help="fetch every file again, even one already there and whole (the current "
                               "year's file grows as its games are entered)")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    fail = failure("wthor")
    this_year = datetime.date.today().year
    try:
        years = wthor_download.parse_years(args.years, this_year)
        directory = wthor.resolve_directory(args.dir)
        print(f"fetching the WThor database ({wthor_download.span(years)}) from {args.source} into {directory}",
              file=sys.stderr, flush=True)
        fetched = wthor_download.fetch_database(directory, years, args.source, args.force, log=_progress,
                                                this_year=this_year)
    except InputError as error:
        return fail(error)
    print(wthor_download.summary(directory, fetched, wthor.default_directory()))
    return 0


def _progress(line: str) -> None:
    print(f"  {line}", file=sys.stderr, flush=True)
