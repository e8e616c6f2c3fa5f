"""`othello-jax eval`: a match between two agents, each opening played with both colours.

    othello-jax eval --black=alphabeta:depth=3 --white=greedy --games=200
    othello-jax eval --black="net:ckpt=runs/o8,sims=64" --white='gtp:cmd="edax -gtp -l 4"' \\
        --games=100 --openings=../shared/data/xot/openingslarge.txt --save-games=games.txt

--black names the first player (black in the first game of every opening, white in the
second). Agent specs: see the --black help below.

While the match is played a line every few seconds says how far it is: the games over, the ply,
the first player's score over the games over, the time. With --json the result is one JSON line
on standard output and every other line goes to standard error.

Against perfect (6x6) the other agent is also judged: disc loss per game against the exact
value of each opening, the share of games keeping the game-theoretic outcome, and its share
of optimal moves by empty squares (--random-plies=0 plays from the start position).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable

import jax

from othello_jax.agents import parse_agent
from othello_jax.agents.gtp import EngineError
from othello_jax.agents.perfect import solved_positions
from othello_jax.agents.specs import parse_spec
from othello_jax.commands.command import add_json_flag, failure, make_parser, print_json
from othello_jax.errors import InputError
from othello_jax.evaluation.arena import (
    ArenaError,
    MatchProgress,
    MatchResult,
    format_summary,
    match_openings,
    play_match,
)
from othello_jax.evaluation.perfect_play import PerfectPlayReport, judge_match
from othello_jax.evaluation.perfect_play import format_report as format_perfect
from othello_jax.game import SIZES, Othello
from othello_jax.notices import Say, to_stream

SPEC_HELP = ("agent spec: random | greedy | alphabeta:depth=D | mcts:sims=S[,rollouts=R] | "
             "net:ckpt=PATH[,sims=S,search=gumbel|puct,temp=T,traps=0|1] | net:preset=tiny|small|... | "
             'gtp:cmd="ENGINE ARGS"[,timeout=SEC] | perfect[:cache=DIR] (exact play, up to 6x6); '
             'any with ,solve=E (exact play at <= E empties)')


PROGRESS_SECONDS = 5.0  # at most one progress line this often


def progress_lines(say: Say, every: float | None = None) -> Callable[[MatchProgress], None]:
    """A match's progress callback printing ``  48/200 games over (ply 42), score 0.562 so far,
    1m12s`` once ``every`` seconds (default PROGRESS_SECONDS) have passed since the last line (or
    the start)."""
    every = PROGRESS_SECONDS if every is None else every
    shown = [0.0]  # the match's seconds at the last line

    def show(done: MatchProgress) -> None:
        if done.seconds - shown[0] >= every:
            shown[0] = done.seconds
            say("  " + done.line())

    return show


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser("eval", __doc__)
    parser.add_argument("--black", required=True, help="first player; " + SPEC_HELP)
    parser.add_argument("--white", required=True, help="second player (same spec syntax)")
    parser.add_argument("--games", type=int, default=100, help="games in all, even (default 100)")
    parser.add_argument("--openings", help="file of opening transcripts, one per line (e.g. the XOT list); "
                                           "a random sample of games/2 of them is played")
    parser.add_argument("--random-plies", type=int, help="generate near-even openings of this many plies "
                                                         "(default when no --openings: 2/4/6 on 4/6/8 boards)")
    parser.add_argument("--size", type=int, default=8, help="board size 4, 6 or 8 (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (openings, random agents)")
    parser.add_argument("--batch", type=int, default=0, help="openings played at a time (default: all)")
    parser.add_argument("--save-games", help="write every game's transcript and result to this file")
    add_json_flag(parser)
    return parser


def json_record(result: MatchResult, perfect_report: PerfectPlayReport | None = None) -> dict:
    """The match as the --json line: its summary (the first player's view), the Elo difference,
    the playing and compiling seconds, and the perfect-play judgement where there is one."""
    summary = result.summary()
    record = {**dataclasses.asdict(summary), "elo": summary.elo, "elo_interval": list(summary.elo_interval),
              "seconds": result.seconds, "compile_seconds": result.compile_seconds}
    if perfect_report is not None:
        record["perfect_play"] = {"agent": perfect_report.agent, **{
            side: getattr(perfect_report, side)._asdict() for side in ("all", "black", "white")}}
    return record


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    fail = failure("eval")

    if args.size not in SIZES:
        return fail(f"--size must be one of {', '.join(map(str, SIZES))}, got {args.size}")
    if args.openings and args.random_plies is not None:
        return fail("give at most one of --openings and --random-plies")
    if args.random_plies is not None and args.random_plies < 0:
        return fail(f"--random-plies must be >= 0, got {args.random_plies}")
    if args.batch < 0:
        return fail(f"--batch must be >= 0, got {args.batch}")
    say = to_stream(sys.stderr if args.json else sys.stdout)  # the human lines; stdout is the JSON line's
    game = Othello(args.size)
    open_key, play_key = jax.random.split(jax.random.PRNGKey(args.seed))
    try:
        lines = match_openings(game, args.games, open_key, args.openings, args.random_plies)
    except InputError as error:  # an odd number of games, an unreadable openings file
        return fail(str(error))
    agents = []
    try:
        for option, spec in (("--black", args.black), ("--white", args.white)):
            try:
                agents.append(parse_agent(spec, game))
            except InputError as error:  # a bad spec, or an engine that does not start
                return fail(f"{option}: {error}")
        first, second = agents
        source = args.openings or f"{len(lines[0])}-ply near-even openings"
        say(f"{args.games} games on {args.size}x{args.size}: {first.name} vs {second.name} ({source})")
        try:
            result = play_match(game, first, second, lines, play_key, batch_size=args.batch or None,
                                progress=progress_lines(say), say=say)
        except (ArenaError, EngineError) as error:  # engine failures, illegal moves
            return fail(str(error), code=1)
        report = None
        kinds = [parse_spec(spec) for spec in (args.black, args.white)]
        if any(kind == "perfect" for kind, _ in kinds):
            judged_first = kinds[1][0] == "perfect"  # judge the side that is not perfect (the first if both are)
            perfect_options = kinds[1 if judged_first else 0][1]
            positions = solved_positions(game, perfect_options.get("cache"))
            report = judge_match(result, positions, first=judged_first)
        if args.json:
            print_json(json_record(result, report))
        else:
            print(format_summary(result.summary(), result.seconds, result.compile_seconds))
            if report is not None:
                print(format_perfect(report))
        if args.save_games:
            result.save_games(args.save_games)
            say(f"games saved to {args.save_games}")
        return 0
    finally:
        for agent in agents:
            if agent.close is not None:
                agent.close()
