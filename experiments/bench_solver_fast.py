"""The C endgame solver before and after, side by side in one run: the solver built from a named
git commit against the current one, seconds and nodes per position, on FFO #40-#49 and on 100
fixed 6x6 positions at each of 22, 24 and 26 empty squares.

    python -m experiments.bench_solver_fast                 # the full comparison (the old solver: ~1 hour)
    python -m experiments.bench_solver_fast --quick         # FFO #40-#44, 10 + 10 + 4 positions on 6x6
    python -m experiments.bench_solver_fast --before=none   # the current solver alone

The 6x6 positions come from uniformly random play, seeded (``random.Random(1000 * seed +
empties)``, played by the rules written out here), so every run and every machine gets the
same ones; a position is kept when it has the wanted empty squares and the mover a move. Each
solve starts from a cleared transposition table, each solver at its own default size (the old
2^20 entries of 24 bytes, the new 2^21 of 32 bytes on 8x8 and 2^20 on 6x6); old and
new alternate position by position, so a change in the machine's load hits both alike. Times are
this process's CPU seconds (the wall clock also counts other people's work on a shared
machine); the totals give both. Scores must agree with each other (and with the FFO file).
"""

from __future__ import annotations

import argparse
import ctypes
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from othello_jax.solver import c_solver

REPO = Path(__file__).resolve().parents[1]
DEFAULT_FFO = REPO.parent / "shared" / "data" / "ffo" / "fforum-40-59.obf"
BEFORE = "b463a90"  # the commit before the faster solver (issue 66)
BEFORE_TABLE_BITS = 20  # the old solver's default table: 2^20 entries of 24 bytes
DIRECTIONS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]


@dataclass
class Position:
    """One position to solve: its name, board size, the mover's and opponent's discs (bit
    row * 8 + column) and its known score, if any."""

    name: str
    size: int
    mover: int
    opponent: int
    known: int | None = None


@dataclass
class Tally:
    """Seconds and nodes of one solver over a set."""

    cpu: float = 0.0
    wall: float = 0.0
    nodes: int = 0
    rows: list[tuple[int, float, int]] = field(default_factory=list)  # (score, CPU seconds, nodes)


def ffo_positions(path: Path, numbers: list[int]) -> list[Position]:
    """FFO positions from an .obf file named like ``fforum-40-59.obf`` (numbering from its name)."""
    first = int(path.name.split("-")[1])
    lines = [line for line in path.read_text().splitlines() if line.strip() and not line.startswith("%")]
    out = []
    for index, line in enumerate(lines):
        if first + index not in numbers:
            continue
        fields = [f.strip() for f in line.split(";")]
        board, side = fields[0].split()
        black = sum(1 << i for i, c in enumerate(board) if c == "X")
        white = sum(1 << i for i, c in enumerate(board) if c == "O")
        mover, opponent = (black, white) if side == "X" else (white, black)
        known = max(int(f.split(":")[1]) for f in fields[1:] if ":" in f)
        out.append(Position(f"FFO #{first + index}", 8, mover, opponent, known))
    return out


def _flips(me: int, you: int, square: int, size: int) -> int:
    if (me | you) >> square & 1:
        return 0
    row0, col0 = divmod(square, 8)
    out = 0
    for dr, dc in DIRECTIONS:
        line, r, c = 0, row0 + dr, col0 + dc
        while 0 <= r < size and 0 <= c < size and you >> (r * 8 + c) & 1:
            line |= 1 << (r * 8 + c)
            r, c = r + dr, c + dc
        if 0 <= r < size and 0 <= c < size and me >> (r * 8 + c) & 1:
            out |= line
    return out


def _moves(me: int, you: int, size: int) -> list[int]:
    return [r * 8 + c for r in range(size) for c in range(size) if _flips(me, you, r * 8 + c, size)]


def random_play_positions(empties: int, count: int, seed: int = 0, size: int = 6) -> list[Position]:
    """``count`` positions with ``empties`` empty squares from uniformly random games (one per
    game, games that end or pass past the count are replayed), the mover to move."""
    rng, half = random.Random(1000 * seed + empties), size // 2
    out = []
    while len(out) < count:
        me = 1 << ((half - 1) * 8 + half) | 1 << (half * 8 + half - 1)
        you = 1 << ((half - 1) * 8 + half - 1) | 1 << (half * 8 + half)
        while True:
            left, moves = size * size - (me | you).bit_count(), _moves(me, you, size)
            if left == empties and moves:
                out.append(Position(f"{size}x{size} {empties}e #{len(out)}", size, me, you))
                break
            if left <= empties:
                break
            if not moves:
                if not _moves(you, me, size):
                    break
                me, you = you, me
                continue
            square = rng.choice(moves)
            flipped = _flips(me, you, square, size)
            me, you = you & ~flipped, me | flipped | (1 << square)
    return out


def old_library(commit: str) -> ctypes.CDLL:
    """The solver as it was at a git commit, built like the current one (own cache entry)."""
    try:
        source = subprocess.run(["git", "show", f"{commit}:othello_jax/solver/_csolver.c"], cwd=REPO, check=True,
                                capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        raise SystemExit(f"cannot read the solver at commit {commit}: {err}") from None
    folder = c_solver.cache_dir() / f"source-{commit}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "_csolver.c"
    if not path.exists() or path.read_bytes() != source:
        path.write_bytes(source)
    return c_solver.load(c_solver.build(path), abi=None)


def solve(solvers: dict[int, c_solver.CSolver], position: Position) -> tuple[int, float, float, int]:
    """(score, CPU seconds, wall seconds, nodes) of one solve from a cleared table."""
    solver = solvers[position.size]
    solver.clear()
    cpu, wall = time.process_time(), time.perf_counter()
    score, _, nodes = solver.solve(position.mover, position.opponent)
    return score, time.process_time() - cpu, time.perf_counter() - wall, nodes


def run_set(name: str, positions: list[Position], libraries: dict[str, ctypes.CDLL]) -> dict[str, Tally]:
    """Solve a set with every library, alternating position by position; print a line each."""
    solvers = {label: {size: c_solver.CSolver(size, BEFORE_TABLE_BITS if label == "before" else None, lib=lib)
                       for size in {p.size for p in positions}}
               for label, lib in libraries.items()}
    tallies = {label: Tally() for label in libraries}
    labels = list(libraries)
    print(f"\n{name}: {len(positions)} positions")
    header = f"{'position':<16} {'score':>6}" + "".join(f" {lab + ' s':>9} {lab + ' nodes':>14}" for lab in labels)
    if len(labels) == 2:
        header += f" {'s ratio':>8} {'nodes ratio':>11}"
    print(header)
    for position in positions:
        line, scores = [], []
        for label in labels:
            score, cpu, wall, nodes = solve(solvers[label], position)
            tally = tallies[label]
            tally.cpu += cpu
            tally.wall += wall
            tally.nodes += nodes
            tally.rows.append((score, cpu, nodes))
            scores.append(score)
            line.append(f" {cpu:>9.3f} {nodes:>14,}")
        wrong = len(set(scores)) > 1 or (position.known is not None and scores[0] != position.known)
        text = f"{position.name:<16} {scores[0]:>+6}" + "".join(line)
        if len(labels) == 2:
            (_, c0, n0), (_, c1, n1) = tallies[labels[0]].rows[-1], tallies[labels[1]].rows[-1]
            text += f" {c0 / max(c1, 1e-9):>8.2f} {n0 / max(n1, 1):>11.2f}"
        print(text + ("  DISAGREE " + str(scores) if wrong else ""), flush=True)
    for label in labels:
        t = tallies[label]
        print(f"  {label:>7}: {t.cpu:9.2f} s CPU ({t.wall:.2f} s wall), {t.nodes:,} nodes")
    if len(labels) == 2:
        a, b = tallies[labels[0]], tallies[labels[1]]
        print(f"  ratio {labels[0]}/{labels[1]}: {a.cpu / max(b.cpu, 1e-9):.2f}x seconds (CPU), "
              f"{a.wall / max(b.wall, 1e-9):.2f}x (wall), {a.nodes / max(b.nodes, 1):.2f}x nodes")
    return tallies


def parse_range(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def sets(args: argparse.Namespace) -> Iterator[tuple[str, list[Position]]]:
    """The benchmark's sets, as asked."""
    ffo = "40-44" if args.quick and args.ffo is None else (args.ffo or "40-49")
    if ffo != "none":
        yield f"FFO #{ffo}", ffo_positions(args.ffo_file, parse_range(ffo))
    counts = {22: 10, 24: 10, 26: 4} if args.quick else {}
    for empties in [int(e) for e in args.empties.split(",") if e.strip()]:
        count = args.count or counts.get(empties, 100)
        yield f"6x6, {empties} empties", random_play_positions(empties, count, args.seed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default=BEFORE, help=f"git commit of the old solver (default {BEFORE}; none: skip)")
    parser.add_argument("--quick", action="store_true", help="a subset: FFO #40-#44, 10/10/4 positions at 22/24/26")
    parser.add_argument("--ffo", default=None, help="FFO numbers, e.g. 40-49 (none: skip)")
    parser.add_argument("--ffo-file", type=Path, default=DEFAULT_FFO)
    parser.add_argument("--empties", default="22,24,26", help="6x6 sets by empty squares (empty: none)")
    parser.add_argument("--count", type=int, default=0, help="positions per 6x6 set (default 100; quick 10/10/4)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    libraries = {}
    if args.before != "none":
        libraries["before"] = old_library(args.before)
    libraries["after"] = c_solver.library()
    print(f"before: {args.before}, after: the working tree ({c_solver.SOURCE.name}); "
          f"python {sys.version.split()[0]}")
    summary = []
    for name, positions in sets(args):
        tallies = run_set(name, positions, libraries)
        summary.append((name, tallies))
    print("\nsummary")
    for name, tallies in summary:
        parts = [f"{label} {t.cpu:.1f} s / {t.nodes / 1e6:.1f}M nodes" for label, t in tallies.items()]
        if len(tallies) == 2:
            a, b = tallies.values()
            parts.append(f"ratio {a.cpu / max(b.cpu, 1e-9):.2f}x s, {a.nodes / max(b.nodes, 1):.2f}x nodes")
        print(f"  {name:<18} " + ", ".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
