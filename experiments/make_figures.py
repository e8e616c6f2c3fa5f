"""Remake the README's two pictures from files committed in the repository.

    python -m experiments.make_figures                 # writes docs/figures/board.svg and learning_curve.svg

- board.svg: a middle-game position of a real game, drawn by the players' own SVG board
  (othello_jax.interface.board_svg). The game comes from docs/figures/game.txt, a file written by
  `othello-jax eval --save-games` (builtin:8x8 against alpha-beta depth 2).
- learning_curve.svg: a run's in-run evaluation scores (against random, greedy and alpha-beta
  depth 3 for othello6_cpu) and its training loss against minutes of training, read from
  docs/figures/othello6_cpu_metrics.jsonl (a run's metrics.jsonl, copied as it was written) by
  the training metrics' own reader.

Both are text files that diff: the board is plain string formatting, the curve matplotlib's SVG
with its text kept as text, no date and a fixed id salt, so the same matplotlib remakes the same
bytes (tests/test_readme.py checks both).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

FIGURES = Path(__file__).resolve().parents[1] / "docs" / "figures"
GAMES = FIGURES / "game.txt"
METRICS = FIGURES / "othello6_cpu_metrics.jsonl"
BOARD = "board.svg"
CURVE = "learning_curve.svg"
BOARD_SIZE = 8  # the saved games' board
GAME_LINE = 0  # the file's first game: builtin:8x8 as black
MOVES = 30  # how far into it the picture is: the middle game
# one per opponent, told apart where their scores coincide (random and greedy both at 1.0)
STYLES = ({"marker": "s", "markersize": 8, "linestyle": "--"}, {"marker": "o"}, {"marker": "^"}, {"marker": "v"})


def board_picture(games: Path = GAMES, line: int = GAME_LINE, moves: int = MOVES) -> tuple[str, str]:
    """The SVG of game ``line`` of a saved-games file after its first ``moves`` moves, with its
    caption (who played, the move number, the disc count)."""
    from othello_jax.evaluation.arena import read_saved_games
    from othello_jax.game import Othello, format_transcript, parse_transcript, play_transcript
    from othello_jax.game import bitboard as bb
    from othello_jax.interface.board_svg import board_svg

    game = Othello(BOARD_SIZE)
    saved = read_saved_games(games)[line]
    transcript = format_transcript(parse_transcript(saved.transcript, game.size)[:moves], game.size)
    state, played = play_transcript(transcript, game)
    black, white = (int(bb.popcount(discs)) for discs in game.black_white(state))
    caption = (f"{saved.black} (black) against {saved.white} (white), after move {len(played)} "
               f"({transcript[-2:]}): {black} black discs, {white} white")
    return board_svg(state, game, last_move=played[-1]) + "\n", caption


def curve_figure(metrics: Path = METRICS):
    """The in-run evaluation scores (left) and the training loss (right) against minutes of
    training, as a matplotlib Figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from othello_jax.training.runner.metrics import AXES, read_records

    minutes = dict(AXES)["minutes of training"]
    records = read_records(metrics)
    opponents = [key for key in records[-1] if key.startswith("eval/")]
    fig, (scores, loss) = plt.subplots(1, 2, figsize=(9.0, 3.4))
    for key, style in zip(opponents, STYLES, strict=False):
        points = [(minutes(r), r[key]) for r in records if r.get(key) is not None]
        xs, ys = zip(*points, strict=True)
        scores.plot(xs, ys, label=key.removeprefix("eval/"), **style)
    scores.set(title="score in the run's evaluations", xlabel="minutes of training", ylim=(0.0, 1.05))
    scores.legend(loc="lower right", fontsize=8)
    xs, ys = zip(*[(minutes(r), r["loss"]) for r in records], strict=True)
    loss.plot(xs, ys, ".", color="tab:gray", markersize=4)  # one dot an iteration: the evaluations show as gaps
    loss.set(title="training loss (policy + value)", xlabel="minutes of training")
    for ax in (scores, loss):
        ax.set_xlim(0.0, None)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def write_curve(out: Path, metrics: Path = METRICS) -> Path:
    """The curve as an SVG at ``out``: text as text, no date, a fixed id salt (stable bytes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "othello-jax"}):
        fig = curve_figure(metrics)
        try:
            fig.savefig(out, format="svg", metadata={"Date": None})
        finally:
            plt.close(fig)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.make_figures", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=FIGURES,
                        help=f"directory for {BOARD} and {CURVE} (default docs/figures)")
    parser.add_argument("--games", type=Path, default=GAMES, help="saved games (othello-jax eval --save-games)")
    parser.add_argument("--metrics", type=Path, default=METRICS, help="a training run's metrics.jsonl")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    svg, caption = board_picture(args.games)
    (args.out / BOARD).write_text(svg)
    print(f"wrote {args.out / BOARD}: {caption}")
    print(f"wrote {write_curve(args.out / CURVE, args.metrics)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
