"""Elo of a run's checkpoints against baselines, and the Elo curve over training iterations.

    python -m experiments.eval_ladder --workdir=runs/o8 --games=64 --sims=32 --out=runs/o8/elo.png
    python -m experiments.eval_ladder --checkpoint 10=runs/o8/checkpoints/10 \\
        --checkpoint 40=runs/o8/checkpoints/40 --baselines=random,greedy,alphabeta:2

Every checkpoint plays its neighbour in the series and every baseline (a ladder; ``--round-robin``
plays all pairs); ratings are fitted by maximum likelihood with the first baseline at 0, printed
with 95% intervals, and plotted against the iteration numbers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax

from othello_jax.agents import AgentSpecError, parse_agent
from othello_jax.evaluation import elo
from othello_jax.evaluation.arena import ArenaError
from othello_jax.game import Othello


def checkpoints_of(workdir: Path) -> dict[int, Path]:
    """Step directories of a training workdir (``WORKDIR/checkpoints/<iteration>``)."""
    directory = workdir / "checkpoints"
    if not directory.is_dir():
        raise ValueError(f"{workdir} has no checkpoints/ directory")
    steps = {int(p.name): p for p in directory.iterdir() if p.is_dir() and p.name.isdigit()}
    if not steps:
        raise ValueError(f"no checkpoints in {directory}")
    return steps


def parse_checkpoint_option(text: str) -> tuple[int, Path]:
    iteration, eq, path = text.partition("=")
    if not eq or not iteration.strip().isdigit():
        raise ValueError(f"--checkpoint wants ITERATION=PATH, got {text!r}")
    return int(iteration), Path(path)


def board_size_of(path: Path) -> int:
    from othello_jax.checkpoint import CheckpointError, load_agent_variables

    try:
        return load_agent_variables(path)[2]
    except CheckpointError as error:
        raise ValueError(str(error)) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, help="training workdir: rate every saved checkpoint")
    parser.add_argument("--checkpoint", action="append", default=[], help="ITERATION=PATH (repeatable)")
    parser.add_argument("--baselines", default="random,greedy,alphabeta:depth=2",
                        help="comma-separated agent specs; the first is the Elo anchor (0)")
    parser.add_argument("--sims", type=int, default=0, help="search simulations for the networks (0: raw policy)")
    parser.add_argument("--search", default="gumbel", help="search variant for the networks")
    parser.add_argument("--games", type=int, default=64, help="games per pair (even)")
    parser.add_argument("--round-robin", action="store_true", help="play every pair, not just a ladder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="PNG of Elo against iteration (default: WORKDIR/elo.png)")
    args = parser.parse_args(argv)

    def fail(message: str) -> int:
        print(f"eval_ladder: error: {message}", file=sys.stderr)
        return 2

    try:
        series = dict(parse_checkpoint_option(text) for text in args.checkpoint)
        if args.workdir is not None:
            series.update(checkpoints_of(args.workdir))
        if not series:
            return fail("give --workdir or at least one --checkpoint ITERATION=PATH")
        sizes = {board_size_of(path) for path in series.values()}
        if len(sizes) != 1:
            return fail(f"the checkpoints play different board sizes: {sorted(sizes)}")
        game = Othello(sizes.pop())
        agents = {}
        for iteration in sorted(series):
            spec = f'net:ckpt="{series[iteration]}",sims={args.sims},search={args.search}'
            agents[f"iteration {iteration}"] = parse_agent(spec, game)
        baselines = [spec.strip() for spec in args.baselines.split(",") if spec.strip()]
        for spec in baselines:
            agents[spec] = parse_agent(spec, game)
        names = [f"iteration {i}" for i in sorted(series)]
        ratings, _ = elo.rate_agents(agents, game, args.games, jax.random.PRNGKey(args.seed), anchor=baselines[0],
                                     series=None if args.round_robin else names, report=print)
    except (ValueError, AgentSpecError, ArenaError) as error:
        return fail(str(error))
    print(ratings.table())
    out = args.out or ((args.workdir or Path(".")) / "elo.png")
    elo.plot_elo(ratings, {f"iteration {i}": i for i in series}, out)
    print(f"Elo curve written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
