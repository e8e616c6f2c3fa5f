"""`othello-jax solve-6x6`: weakly solve 6x6 Othello by the method of "Othello is solved"
(Takizawa 2023): predict every position at a first pivot, select the few whose predicted values
would prove the start's value (Algorithm 1), carry the selection to a second pivot (Algorithm 5),
solve those exactly, and select again where a prediction was wrong (Algorithm 6).

    othello-jax solve-6x6                              # ~3 CPU minutes; proof6.npz here
    othello-jax solve-6x6 --predictor=network --out=proof6.npz --state=solve6.state.npz
    othello-jax solve-6x6 --target=auto                # start from the predictions' own value
    othello-jax solve-6x6 --size=4 --pivots=10,6       # 4x4, in a moment
    othello-jax verify-proof --proof=proof6.npz        # check it independently

Pivots (empty squares) default to 24 and 18 on 6x6: 51,964 positions at 24 empties (one per
symmetry class) are predicted in seconds, and a position at 18 empties is solved in
milliseconds, so the cost is the number of positions the proof needs. The search keeps its
state in --state (every 30 s and after every round); the same command resumes it. Predictors:
network (the value head of --checkpoint, default builtin:6x6), heuristic (the alpha-beta
agent's evaluation), solver (the C solver's fitted evaluation, 4 plies); each is turned into
discs by a line fitted on the shipped test set. With --target=auto each predictor's own value
is wrong at first (+2 for solver and heuristic, -12 for the network); the target then follows
the predictions round by round, the refuted ones replaced by what was proved (the solver's
evaluation: 336 s of CPU, against 195 s from -4; experiments/RESULTS.md, 2026-12-02).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from othello_jax.commands.command import add_json_flag, failure, make_parser, print_json
from othello_jax.errors import InputError

DEFAULT_PIVOTS = {4: (10, 6), 6: (24, 18)}
KNOWN_VALUES = {6: -4}  # white wins 6x6 by 4, long known: the default first hypothesis
PAPER = "8x8 in the paper: 2,958,551 positions at 50 empties, 2,587 selected by Algorithm 1"


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser("solve-6x6", __doc__)
    parser.add_argument("--predictor", default="solver", help="solver, network or heuristic (default solver: "
                                                               "the fewest solves and the least time)")
    parser.add_argument("--checkpoint", default="builtin:6x6", help="the network of --predictor=network")
    parser.add_argument("--size", type=int, default=6, choices=(4, 6), help="board size (default 6)")
    parser.add_argument("--pivots", help="the two pivots' empty squares, e.g. 24,18 (default 24,18 on 6x6, "
                                         "10,6 on 4x4)")
    parser.add_argument("--target", default=None,
                        help="the value to prove first, for black: a number, or auto for the minimax of the "
                             "predictions at the first pivot (default: -4 on 6x6, the known value, as the paper "
                             "took the draw it expected; auto on 4x4). Where the solves refute it, the search moves "
                             "on to the predictions' value within what is proved, so the proof is exact either way")
    parser.add_argument("--out", default="", help="the proof file to write (default proof{size}.npz here)")
    parser.add_argument("--state", default="", help="the search's state file, for resuming "
                                                    "(default: beside --out, .state.npz)")
    add_json_flag(parser)
    return parser


def _pivots(text: str | None, size: int) -> tuple[int, int]:
    if not text:
        return DEFAULT_PIVOTS[size]
    try:
        first, second = (int(part) for part in text.split(","))
    except ValueError:
        raise InputError(f"--pivots takes two numbers of empty squares like 24,18, got {text!r}") from None
    if not 0 <= second <= first <= size * size - 4:
        raise InputError(f"--pivots must satisfy {size * size - 4} >= first >= second >= 0, got {text}")
    return first, second


def _target(text: str | None, size: int) -> int | None:
    """The first hypothesis (None: the predictions' own)."""
    if text is None:
        return KNOWN_VALUES.get(size)
    if text == "auto":
        return None
    try:
        value = int(text)
    except ValueError:
        raise InputError(f"--target takes a disc difference for black or auto, got {text!r}") from None
    if abs(value) > size * size or value % 2:
        raise InputError(f"--target must be an even number within +-{size * size}, got {value}")
    return value


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    fail = failure("solve-6x6")
    from othello_jax.evaluation.proof_predictors import PREDICTORS, predictor
    from othello_jax.solver import proof_file
    from othello_jax.solver.proof_search import ProofSearch, StateMismatch

    if args.predictor not in PREDICTORS:
        return fail(f"unknown --predictor {args.predictor!r}; choose from {', '.join(PREDICTORS)}")
    try:
        pivot1, pivot2 = _pivots(args.pivots, args.size)
        target = _target(args.target, args.size)
    except InputError as error:
        return fail(str(error))
    out = Path(args.out or f"proof{args.size}.npz")
    state = Path(args.state) if args.state else out.with_name(out.stem + ".state.npz")
    if out.is_dir() or state.is_dir():
        return fail(f"{out if out.is_dir() else state} is a directory; --out and --state name files")
    say = lambda line: print(line, file=sys.stderr, flush=True)
    begin = time.monotonic()
    try:
        scores = predictor(args.predictor, args.size, args.checkpoint)
    except InputError as error:  # a network that cannot be read, or of another board size
        return fail(str(error))
    say(f"predictor {scores.name}: discs = {scores.slope:.3g} x score {scores.intercept:+.2f} "
        f"(rms {scores.rms:.1f} discs on the 6x6 test set)")
    try:
        search = ProofSearch(args.size, pivot1, pivot2, scores.predict, state, say, target=target)
        result = search.run()
    except StateMismatch as error:
        return fail(str(error))
    meta = dict(predictor=scores.name, pivots=[pivot1, pivot2], stats=result.stats.__dict__, target=target,
                command="othello-jax solve-6x6 " + " ".join(argv))
    proof_file.write(out, args.size, result.value, result.records, meta)
    leaves = sum(1 for r in result.records if r["leaf"])
    pivot_in_proof = sum(1 for r in result.records if search.empties[r["position"]] == pivot1)
    stats = result.stats
    summary = dict(size=args.size, value=result.value, predictor=scores.name, pivots=[pivot1, pivot2],
                   enumerated=stats.pivot1_positions, selected_first=stats.first_selection,
                   pivot1_in_proof=pivot_in_proof, solved=stats.solves, refuted=stats.refuted,
                   proof_positions=len(result.records), proof_leaves=leaves, solver_nodes=stats.solver_nodes,
                   rounds=stats.rounds, wall_seconds=round(stats.wall_seconds, 1),
                   cpu_seconds=round(stats.cpu_seconds, 1), out=str(out))
    if args.json:
        print_json(summary)
        return 0
    colour = "black" if result.value > 0 else "white"
    verdict = "a draw" if result.value == 0 else f"{colour} wins by {abs(result.value)}"
    print(f"proved: {verdict} ({args.size}x{args.size}, {time.monotonic() - begin:.0f} s this run); proof in {out}")
    print(f"predictor {scores.name}: {stats.pivot1_positions:,} positions at {pivot1} empties, "
          f"{stats.first_selection:,} selected by Algorithm 1, {pivot_in_proof:,} in the final proof; "
          f"{stats.solves:,} solves at {pivot2} empties ({stats.refuted:,} predictions refuted), "
          f"{stats.solver_nodes / 1e6:,.1f}M solver nodes, {stats.rounds} rounds, {stats.wall_seconds:.0f} s in all "
          f"({stats.cpu_seconds:.0f} s of CPU)")
    print(PAPER)
    return 0
