"""`othello-jax plot WORKDIR [WORKDIR ...] [--out FILE]`: draw training curves from metrics.jsonl to a PNG."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from othello_jax.commands.command import failure, make_parser, run_command
from othello_jax.errors import InputError


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser("plot", __doc__)
    parser.add_argument("workdirs", nargs="+", help="training run directories (several runs are overlaid)")
    parser.add_argument("--out", default=None, help="PNG path (default: FIRST_WORKDIR/curves.png)")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    from othello_jax.training.runner.metrics import plot

    out = Path(args.out) if args.out else Path(args.workdirs[0]) / "curves.png"
    try:
        path = plot(args.workdirs, out)
    except (InputError, OSError) as error:  # no metrics in a workdir, an unwritable or unknown --out
        return failure("plot")(error)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(run_command("plot", main, sys.argv[1:]))
