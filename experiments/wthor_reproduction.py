"""Liskowski et al.'s WThor datasets, counted their way beside their figures (issue 55's data table).

    python -m experiments.wthor_reproduction [--wthor DIR] [--json]
    python -m experiments.wthor_reproduction --skip-counts --network resnet6x64=runs/wthor_cpu \
        --network zero=builtin:8x8

The database is ``--wthor``'s, else where ``othello-jax wthor download`` puts it (or
``$OTHELLO_JAX_WTHOR``). With ``--network LABEL=CHECKPOINT`` (any 8x8 checkpoint form) it also
scores each network's move prediction on both held-out sets, Liskowski et al.'s random 5% of the
unique pairs (the number comparable with theirs) and the games from 2015 on (the honest one),
overall, by game stage and by the number of legal moves, beside their networks' figures.

Original: every (position, move) example of every valid game; Unique: each (position, move) once;
Unique-S: Unique with each row under the 8 board symmetries, de-duplicated again. A perfect
classifier's accuracy on Original (the most played move of each position) and on Unique (one of a
position's distinct moves) is the ceiling any move predictor has there. The paper used the database
as it stood in 2016-2017 (119,339 games); a newer one holds more games, so the counts differ by
those. Positions are from the mover's view, as the paper's "inverted for white" boards.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from experiments.strength_table import labelled
from othello_jax.data import expert, wthor

# Liskowski et al., "Learning to Play Othello with Deep Neural Networks", section V-A
PAPER = {"games": 119_339, "original": 6_874_503, "unique": 4_880_413, "unique_s": 39_019_056,
         "ceiling_original": 0.9116, "ceiling_unique": 0.9749}
# their top-1 accuracies on the Unique-S random test set (Tables III, V, VI)
PAPER_NETWORKS = {"Conv4": 0.572, "Conv6": 0.592, "Conv8": 0.605, "Conv8+BN": 0.627, "Conv8+BN, 10 bagged": 0.640,
                  "ResNet-56-np-p": 0.605, "DenseNet-100": 0.619, "WideNet-40-4": 0.622}
SPLITS = {"random": "random 5% (theirs)", "year": "games 2015-"}


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


def accuracies(networks: list[tuple[str, str]], wthor_dir: str, cache_dir: str | None, positions: int) -> list[dict]:
    """Each network's move-prediction summary on both held-out sets (``move_prediction.summarize``)."""
    from othello_jax.checkpoint import load_agent_variables
    from othello_jax.data import move_prediction
    from othello_jax.model import make_network

    loaded = []
    for label, reference in networks:
        config, variables, size = load_agent_variables(reference)
        if size != 8:
            raise ValueError(f"{reference} is a {size}x{size} network; expert games are 8x8")
        loaded.append((label, reference, config, variables))
    out = []
    for split in SPLITS:
        rows = move_prediction.subsample(expert.load_expert_data(wthor_dir, cache_dir=cache_dir, split=split).test,
                                         positions)
        for label, reference, config, variables in loaded:
            out.append({"network": label, "checkpoint": reference, "split": split, "parameters": str(config),
                        **move_prediction.score_network(make_network(8, config), variables, rows)})
    return out


def accuracy_table(results: list[dict]) -> str:
    """Top-1 / top-3 and top-1 by stage, ours on both splits beside the paper's top-1."""
    stages = list(results[0]["by_stage"]) if results else []
    lines = ["| network | held out | positions | top-1 | top-3 | " + " | ".join(f"moves {s}" for s in stages) + " |",
             "|---" * (5 + len(stages)) + "|"]
    for r in results:
        lines.append(f"| {r['network']} | {SPLITS[r['split']]} | {r['positions']:,} | {r['top1']:.1%} | "
                     f"{r['top3']:.1%} | " + " | ".join(f"{r['by_stage'][s]['top1']:.1%}" for s in stages) + " |")
    for name, top1 in PAPER_NETWORKS.items():
        lines.append(f"| {name} (Liskowski et al.) | random 5% of Unique-S | | {top1:.1%} | | " + " | " * len(stages))
    if results:
        bins = list(results[0]["by_legal_moves"])
        lines += ["", "| network | held out | " + " | ".join(f"{b} legal" for b in bins) + " |",
                  "|---" * (2 + len(bins)) + "|"]
        for r in results:
            lines.append(f"| {r['network']} | {SPLITS[r['split']]} | "
                         + " | ".join(f"{r['by_legal_moves'][b]['top1']:.1%}" for b in bins) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wthor", default=None, help="a directory of WTH_YYYY.wtb files (default: where "
                                                      f"`{wthor.DOWNLOAD_COMMAND}` puts them, "
                                                      f"{wthor.default_directory()})")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    parser.add_argument("--network", type=labelled, action="append", default=[], metavar="LABEL=CHECKPOINT",
                        help="LABEL=CHECKPOINT: also score this network on both held-out sets")
    parser.add_argument("--skip-counts", action="store_true", help="only the networks' table")
    parser.add_argument("--positions", type=int, default=0, help="networks: a random subset of each held-out "
                                                                 "set; 0 = all")
    parser.add_argument("--cache-dir", default="~/.cache/othello-jax", help="where the built datasets are cached; "
                                                                            "'' = nowhere")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        args.wthor = str(wthor.require_database(args.wthor, "pass --wthor=DIR"))
        record = {}
        if not args.skip_counts:
            record["counts"] = count(args.wthor)
            if not args.json:
                print(table(record["counts"]), flush=True)
        if args.network:
            cache = str(Path(args.cache_dir).expanduser()) if args.cache_dir else None
            record["networks"] = accuracies(args.network, args.wthor, cache, args.positions)
            if not args.json:
                print("\n" + accuracy_table(record["networks"]))
        if args.json:
            print(json.dumps(record))
    except (OSError, ValueError, wthor.WthorError) as error:  # InputError is a ValueError
        print(f"wthor_reproduction: {error}", file=sys.stderr)
        return 2
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
