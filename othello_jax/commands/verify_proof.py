"""`othello-jax verify-proof`: check a weak solution independently of the search that found it.

    othello-jax verify-proof                       # the shipped 6x6 proof
    othello-jax verify-proof --proof=proof6.npz --json

The tree above the proof's leaves is walked again from the start with the rules (every reply
where the proof says a side cannot do better, the recorded move where it says a side can), and
every leaf is solved again with the C solver in the window the tree needs of it. Exit 0 when the
proof holds; a proof that does not hold is one line naming the position and what failed, exit 2.
"""

from __future__ import annotations

import argparse
import sys

from othello_jax.commands.command import add_json_flag, failure, make_parser, print_json


def build_parser() -> argparse.ArgumentParser:
    from othello_jax.solver.proof_file import DEFAULT_PATH

    parser = make_parser("verify-proof", __doc__)
    parser.add_argument("--proof", default=str(DEFAULT_PATH), help=f"the proof file (default: the shipped "
                                                                   f"{DEFAULT_PATH.name})")
    add_json_flag(parser)
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    fail = failure("verify-proof")
    from othello_jax.solver import proof_file
    from othello_jax.solver.proof_check import ProofRejected, verify

    proof = proof_file.read(args.proof)  # ProofFileError: one line, exit 2
    say = lambda line: print(line, file=sys.stderr, flush=True)
    say(f"checking {args.proof}: {len(proof.records):,} positions, {proof.size}x{proof.size}, "
        f"value {proof.value:+d} for black")
    try:
        report = verify(proof, say)
    except ProofRejected as error:
        return fail(f"the proof does not hold: {error}")
    if args.json:
        print_json(dict(report._asdict(), size=proof.size, seconds=round(report.seconds, 1), holds=True))
        return 0
    colour = "black" if report.value > 0 else "white"
    verdict = "a draw" if report.value == 0 else f"{colour} wins by {abs(report.value)}"
    print(f"the proof holds: {verdict} ({proof.size}x{proof.size}); {report.positions:,} positions walked, "
          f"{report.leaves:,} leaves solved again ({report.solver_nodes / 1e6:,.1f}M nodes) in {report.seconds:.1f} s")
    return 0
