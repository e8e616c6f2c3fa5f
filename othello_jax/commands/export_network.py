"""`othello-jax export-network`: a trained network as one portable file (flax msgpack).

    othello-jax export-network --checkpoint=runs/othello6 --out=othello6.msgpack
    othello-jax play --checkpoint=othello6.msgpack

The file holds the network's variables, its config and board size, and provenance (the
checkpoint it came from, the training command given with --command, scores given with --note),
so it plays anywhere `--checkpoint=` or `net:ckpt=` is accepted, with any orbax version, or
none. The networks shipped with the package (builtin:6x6, builtin:8x8, builtin:8x8-expert,
builtin:8x8-large) were made this way.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

from othello_jax.commands.command import add_checkpoint_argument, failure, make_parser


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser("export-network", __doc__)
    add_checkpoint_argument(parser, required=True)
    parser.add_argument("--out", required=True, help="output file, ending in .msgpack")
    parser.add_argument("--command", default="", help="the command that trained it (kept as provenance)")
    parser.add_argument("--note", default="", help="free text kept as provenance (e.g. measured scores)")
    return parser


def _commit() -> str:
    """The project's git commit, or '' outside a checkout."""
    try:
        result = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                                cwd=Path(__file__).parent)
    except OSError:
        return ""
    return result.stdout.strip() if result.returncode == 0 else ""


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    fail = failure("export-network")
    from othello_jax import pretrained
    from othello_jax.checkpoint import CheckpointError, load_agent_variables

    if not args.out.endswith(pretrained.SUFFIX):
        return fail(f"--out must end in {pretrained.SUFFIX}, got {args.out!r}")
    try:
        network, variables, size = load_agent_variables(args.checkpoint)
    except CheckpointError as error:
        return fail(str(error))
    provenance = dict(source=str(args.checkpoint), command=args.command, note=args.note, exported_at_commit=_commit())
    try:
        path = pretrained.save(args.out, network, variables, size, provenance)
    except (OSError, pretrained.PortableNetworkError) as error:
        return fail(f"cannot write {args.out}: {error}")
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB): {size}x{size}, {network}")
    return 0
