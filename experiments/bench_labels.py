"""What an exact label costs the host, by empty squares: the C solver's CPU milliseconds per
position for each kind of exact label (``othello-jax make-labels`` stores the last).

- ``sign``: the result only (window (-1, 1)), the value label (:func:`exact_signs`);
- ``score``: the exact disc margin (full window);
- ``optimal``: the value and the optimal moves, the policy label (:func:`exact_signs_and_best`:
  the score, then one null-window test per move);
- ``every move``: every move's exact value (what ``make-labels`` stores).

Each method runs on the same positions with a fresh transposition table (a game's positions
share one, as in training), and every ``optimal`` set is checked against ``every move``'s.

    python -m experiments.bench_labels --labels labels/self.npz
    python -m experiments.bench_labels --labels labels/self.npz --bands 9-12,13-14,15-16 --per-band 50
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from othello_jax.solver import c_solver
from othello_jax.solver.host import exact_signs, exact_signs_and_best
from othello_jax.solver.solved_moves import c_move_values


def _score(size: int, positions: Sequence[tuple[int, int]]) -> list[int]:
    solver = c_solver.solver_for(size)
    return [solver.solve(m, o)[0] for m, o in positions]


def _every_move(size: int, positions: Sequence[tuple[int, int]]) -> list[int]:
    """The mask of the best moves from every move's exact value (make-labels' :func:`c_move_values`)."""
    out = []
    for found, _ in c_move_values(size, positions):
        best = max((value for _, value in found), default=None)
        out.append(sum(1 << square for square, value in found if value == best))
    return out


METHODS: dict[str, Callable[[int, Sequence[tuple[int, int]]], list]] = {
    "sign": exact_signs, "score": _score, "optimal": exact_signs_and_best, "every move": _every_move}


def timed(method: Callable, size: int, positions: list[tuple[int, int]]) -> tuple[list, float]:
    """(the method's labels, CPU milliseconds per position), run in a new thread: a new solver
    with an empty transposition table (one per thread)."""
    begin = time.process_time()
    with ThreadPoolExecutor(1) as thread:
        out = thread.submit(method, size, positions).result()
    return out, (time.process_time() - begin) * 1000 / max(len(positions), 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", required=True, help="a make-labels file (.npz): its positions are timed")
    parser.add_argument("--bands", default="9-12,13-14,15-16,17-18", help="empty-square bands, LOW-HIGH,...")
    parser.add_argument("--per-band", type=int, default=150, help="positions per band (the file's first ones)")
    args = parser.parse_args(argv)
    try:
        data = np.load(args.labels)
        bands = [tuple(int(x) for x in band.split("-")) for band in args.bands.split(",")]
        size, empties = int(data["size"]), data["empties"]
    except (OSError, ValueError, KeyError) as error:
        print(f"bench_labels: {error}", file=sys.stderr)
        return 2
    print(f"{args.labels}: {size}x{size}, CPU ms per position (one core)")
    print(f"{'empties':>8} {'n':>5} " + " ".join(f"{name:>11}" for name in METHODS))
    for low, high in bands:
        take = np.flatnonzero((empties >= low) & (empties <= high))[:args.per_band]
        positions = [(int(data["mover"][i]), int(data["opponent"][i])) for i in take]
        results = {name: timed(method, size, positions) for name, method in METHODS.items()}
        best = [mask for _, mask in results["optimal"][0]]
        assert best == results["every move"][0], "optimal moves differ between the two methods"
        print(f"{f'{low}-{high}':>8} {len(positions):>5} " + " ".join(f"{ms:>11.2f}" for _, ms in results.values()))
    print("optimal move sets agree between 'optimal' and 'every move'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
