"""A table of matches: every player (a row) against every opponent (a column), each cell a match
of ``--games`` games from sampled openings, each opening played with both colours.

Liskowski et al.'s strength table (issue 55): their 0-ply move predictors (policy argmax, no
search) against Edax at depths 1-5; here the project's alpha-beta at depths 1-4 stands in for
Edax-n (a weaker evaluation at equal depth), on XOT openings:

    python -m experiments.strength_table --games=200 \\
        --player expert=net:ckpt=runs/wthor_cpu,sims=0 --player zero=net:ckpt=builtin:8x8,sims=0 \\
        --opponent ab1=alphabeta:depth=1 --opponent ab2=alphabeta:depth=2 \\
        --opponent ab3=alphabeta:depth=3 --opponent ab4=alphabeta:depth=4 \\
        --openings=../shared/data/xot/openingslarge.txt --cells=runs/strength/cells.jsonl

Each finished cell is appended to ``--cells`` (one JSON line: players, specs, games, score and
its 95% interval, scores as black and as white), so a stopped table resumes where it stopped
(cells already there with the same specs and games are not played again) and the table is
re-printed from the file. Players and opponents are agent specs (``othello-jax eval --help``);
a cell's openings depend on ``--seed`` and the opponent's spec only, so every row of a column
meets the same openings.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from pathlib import Path

import jax

from othello_jax.agents import AgentSpecError, parse_agent
from othello_jax.errors import InputError
from othello_jax.evaluation import arena
from othello_jax.game import Othello


def labelled(text: str) -> tuple[str, str]:
    """``LABEL=VALUE`` (an agent spec, a checkpoint) -> ``(label, value)``, for argparse."""
    label, eq, value = text.partition("=")
    if not eq or not label.strip() or not value.strip():
        raise argparse.ArgumentTypeError(f"want LABEL=VALUE, got {text!r}")
    return label.strip(), value.strip()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--player", type=labelled, action="append", required=True, metavar="LABEL=SPEC", help="a row")
    parser.add_argument("--opponent", type=labelled, action="append", required=True, metavar="LABEL=SPEC",
                        help="a column")
    parser.add_argument("--games", type=int, default=200, help="games per cell, even (default 200)")
    parser.add_argument("--openings", default=None, help="file of opening lines (XOT); default: near-even "
                                                         "random openings")
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=0, help="openings played at once; 0 = all")
    parser.add_argument("--cells", default="", help="JSON-lines file of finished cells (resumes from it)")
    return parser


def cell_key(record: dict) -> tuple:
    return record["player_spec"], record["opponent_spec"], record["games"], record["openings"], record["seed"]


def read_cells(path: Path) -> dict[tuple, dict]:
    """The finished cells of a ``--cells`` file, by (player spec, opponent spec, games, openings, seed)."""
    if not path.is_file():
        return {}
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {cell_key(r): r for r in records}


def play_cell(game: Othello, player, opponent, games: int, openings: str | None, seed: int, opponent_spec: str,
              batch: int) -> arena.MatchSummary:
    """One match; its openings depend on the seed and the opponent's spec only, so every row of a
    column meets the same ones, whatever the columns' order or number."""
    column = zlib.crc32(opponent_spec.encode()) & 0x7FFFFFFF
    open_key, play_key = jax.random.split(jax.random.fold_in(jax.random.key(seed), column))
    lines = arena.match_openings(game, games, open_key, openings)
    return arena.play_match(game, player, opponent, lines, play_key, batch_size=batch or None).summary()


def format_table(players: list[tuple[str, str]], opponents: list[tuple[str, str]], cells: dict[tuple, dict],
                 games: int, openings: str | None, seed: int) -> str:
    """A markdown table: the row player's score (wins + draws/2) +- the 95% interval, per column."""
    head = "| player | " + " | ".join(label for label, _ in opponents) + " |"
    lines = [head, "|---" * (len(opponents) + 1) + "|"]
    for label, spec in players:
        row = []
        for _, opponent_spec in opponents:
            record = cells.get((spec, opponent_spec, games, openings or "", seed))
            row.append(f"{record['score']:.3f} +- {record['score_ci']:.3f}" if record else "")
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.games < 2 or args.games % 2:
        print(f"strength_table: --games must be even and at least 2, got {args.games}", file=sys.stderr)
        return 2
    game = Othello(args.size)
    path = Path(args.cells) if args.cells else None
    cells = read_cells(path) if path else {}
    built: dict[str, object] = {}

    def agent(spec: str):
        if spec not in built:
            built[spec] = parse_agent(spec, game)
        return built[spec]

    try:
        for opponent_label, opponent_spec in args.opponent:
            for player_label, player_spec in args.player:
                key = (player_spec, opponent_spec, args.games, args.openings or "", args.seed)
                if key in cells:
                    continue
                begin = time.perf_counter()
                summary = play_cell(game, agent(player_spec), agent(opponent_spec), args.games, args.openings,
                                    args.seed, opponent_spec, args.batch)
                record = dict(player=player_label, opponent=opponent_label, player_spec=player_spec,
                              opponent_spec=opponent_spec, games=args.games, openings=args.openings or "",
                              seed=args.seed, score=summary.score, score_ci=summary.score_ci,
                              score_as_black=summary.score_as_black, score_as_white=summary.score_as_white,
                              wins=summary.wins, draws=summary.draws, losses=summary.losses,
                              mean_disc_diff=summary.mean_disc_diff, seconds=round(time.perf_counter() - begin, 1))
                cells[key] = record
                print(f"{player_label} vs {opponent_label}: {summary.score:.3f} +- {summary.score_ci:.3f} "
                      f"({summary.wins}-{summary.draws}-{summary.losses}, {record['seconds']:.0f} s)", flush=True)
                if path:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    with path.open("a") as out:
                        out.write(json.dumps(record) + "\n")
    except (AgentSpecError, InputError) as error:
        print(f"strength_table: {error}", file=sys.stderr)
        return 2
    finally:
        for made in built.values():
            if getattr(made, "close", None) is not None:
                made.close()
    print(format_table(args.player, args.opponent, cells, args.games, args.openings, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
