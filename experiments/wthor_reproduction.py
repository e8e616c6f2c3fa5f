"""Liskowski et al.'s WThor datasets, counted their way beside their figures (issue 55's data table).

    python -m experiments.wthor_reproduction --wthor ../shared/data/wthor [--json]

Original: every (position, move) example of every valid game; Unique: each (position, move) once;
Unique-S: Unique with each row under the 8 board symmetries, de-duplicated again. A perfect
classifier's accuracy on Original (the most played move of each position) and on Unique (one of a
position's distinct moves) is the ceiling any move predictor has there. The paper used the database
as it stood in 2016-2017 (119,339 games); the shared one is newer, so the counts differ by its
games. Positions are from the mover's view, as the paper's "inverted for white" boards.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from othello_jax.data import expert, wthor

# Liskowski et al., "Learning to Play Othello with Deep Neural Networks", section V-A
PAPER = {"games": 119_339, "original": 6_874_503, "unique": 4_880_413, "unique_s": 39_019_056,
         "ceiling_original": 0.9116, "ceiling_unique": 0.9749}


def count(wthor_dir: str) -> dict:
    """The datasets' sizes and ceilings from a WThor directory (every valid game, no split)."""
    games = wthor.load_database(wthor_dir).games
    data = expert.build_expert_data(games, test_from_year=10_000)  # every game in one split
    out = {"games": data.info["train_games"], **expert.ceilings(data.train)}
    out["unique_s"] = expert.symmetric_unique(data.train)
    out["rejected"] = data.info["rejected"]["count"]
    return out


def table(ours: dict) -> str:
    rows = [("valid games", "games", "{:,}"), ("Original examples", "original", "{:,}"),
            ("Unique (position, move) rows", "unique", "{:,}"), ("Unique-S rows", "unique_s", "{:,}"),
            ("distinct positions", "positions", "{:,}"),
            ("perfect classifier on Original", "ceiling_original", "{:.2%}"),
            ("perfect classifier on Unique", "ceiling_unique", "{:.2%}")]
    lines = ["| | Liskowski et al. | this database |", "|---|---|---|"]
    for label, key, fmt in rows:
        paper = fmt.format(PAPER[key]) if key in PAPER else "-"
        lines.append(f"| {label} | {paper} | {fmt.format(ours[key])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wthor", default="../shared/data/wthor", help="a directory of WTH_YYYY.wtb files")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        ours = count(args.wthor)
    except (OSError, wthor.WthorError) as error:
        print(f"wthor_reproduction: {error}", file=sys.stderr)
        return 2
    print(json.dumps(ours) if args.json else table(ours))
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
