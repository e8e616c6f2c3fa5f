"""Fit the C solver's move-ordering evaluation to exact scores and write its weights into
``othello_jax/solver/_csolver_eval.h``.

    python -m experiments.fit_solver_eval                       # both sizes: sample, solve, fit, write
    python -m experiments.fit_solver_eval --size 6 --count 60000    # more 6x6 positions (8x8 refitted as cached)
    python -m experiments.fit_solver_eval --fit-only            # refit from the cached solved positions

Positions: 8x8 ones from the WThor expert games at 10-18 empty squares, half of them after one
or two random moves off the game (the search meets bad moves too); 6x6 ones from uniformly
random play at 8-18 empty squares. Each is solved exactly by the C solver; the solved
positions are kept in ``--data`` (one .npz per size), so a refit costs no solving. The
evaluation's features are read through the solver's own ``oj_features`` (the same code the
search evaluates), and each phase's weights (ranges of empties) are a ridge least-squares fit
of the exact scores, then written as int16 in units of 1/EVAL_SCALE disc.

The shipped weights: 40,000 6x6 positions, 120,000 8x8 ones (sampled as 40,000 then 80,000 more,
about 45 minutes of one core in all), damp 3; held out, every tenth position: rms error 7.2-7.5
discs on 6x6 (the scores' rms 18-20), 10.8-10.9 on 8x8 (23-24).
"""

from __future__ import annotations

import argparse
import ctypes
import random
import time
from pathlib import Path

import numpy as np
import scipy.sparse
import scipy.sparse.linalg

from othello_jax.data import wthor
from othello_jax.game.bitboard import board_mask_int
from othello_jax.solver import c_solver

HEADER = Path(c_solver.SOURCE).with_name("_csolver_eval.h")
PHASES = {8: (10, 4, 3), 6: (8, 4, 3)}  # size -> (first phase's empties, empties per phase, phases)
EMPTIES = {8: (10, 18), 6: (8, 18)}  # the sampled positions' empty squares, inclusive
OVERLAP = 2  # a phase is fitted on the positions up to this many empties beyond its range


def bootstrap_library() -> ctypes.CDLL:
    """The solver built without fitted weights (the header may not exist yet): features only."""
    return c_solver.load(c_solver.build(defines=["-DOJ_NO_EVAL"]))


def _play(lib: ctypes.CDLL, board: int, me: int, you: int, square: int) -> tuple[int, int]:
    flipped = lib.oj_flips(me, you, square)
    return you & ~flipped, me | flipped | (1 << square)


def _deviate(lib: ctypes.CDLL, board: int, me: int, you: int, plies: int, rng: random.Random) -> tuple[int, int] | None:
    """``plies`` uniformly random moves from a position (passes included), None if the game ends."""
    for _ in range(plies):
        legal = lib.oj_legal(me, you, board)
        if not legal:
            if not lib.oj_legal(you, me, board):
                return None
            me, you = you, me
            continue
        squares = [sq for sq in range(64) if legal >> sq & 1]
        me, you = _play(lib, board, me, you, rng.choice(squares))
    return (me, you) if lib.oj_legal(me, you, board) else None


def expert_positions(lib: ctypes.CDLL, directory: Path, count: int, seed: int) -> list[tuple[int, int]]:
    """``count`` 8x8 positions from the WThor games (one per game, in a seeded order)."""
    rng, board = random.Random(seed), board_mask_int(8)
    games = [g for path in wthor.game_files(directory) for g in wthor.read_games(path)[1].moves]
    rng.shuffle(games)
    low, high = EMPTIES[8]
    out: list[tuple[int, int]] = []
    for codes in games:
        if len(out) >= count:
            break
        target = rng.randint(low, high)
        deviation = rng.choice([0, 0, 1, 2])
        me, you = 0x0000000810000000, 0x0000001008000000  # black to move: d5 e4 black, d4 e5 white
        for action in wthor.decode_moves(codes):
            empties = 64 - (me | you).bit_count()
            if empties <= target + deviation or action < 0:
                break
            if not lib.oj_legal(me, you, board):
                me, you = you, me  # a pass (not recorded)
            if not lib.oj_flips(me, you, int(action)) or (me | you) >> int(action) & 1:
                break  # a corrupt record
            me, you = _play(lib, board, me, you, int(action))
        else:
            continue
        if 64 - (me | you).bit_count() != target + deviation:
            continue
        found = _deviate(lib, board, me, you, deviation, rng)
        if found and low <= 64 - (found[0] | found[1]).bit_count() <= high:
            out.append(found)
    return out


def random_positions(lib: ctypes.CDLL, size: int, count: int, seed: int) -> list[tuple[int, int]]:
    """``count`` positions of uniformly random games on a small board."""
    rng, board = random.Random(seed), board_mask_int(size)
    h = size // 2
    start = (1 << ((h - 1) * 8 + h) | 1 << (h * 8 + h - 1), 1 << ((h - 1) * 8 + h - 1) | 1 << (h * 8 + h))
    low, high = EMPTIES[size]
    out: list[tuple[int, int]] = []
    while len(out) < count:
        target = rng.randint(low, high)
        found = _deviate(lib, board, *start, size * size - 4 - target, rng)
        if found and size * size - (found[0] | found[1]).bit_count() == target:
            out.append(found)
    return out


def solve_all(lib: ctypes.CDLL, size: int, positions: list[tuple[int, int]]) -> np.ndarray:
    """Exact scores, with progress lines."""
    solver, scores, begin = c_solver.CSolver(size, lib=lib), [], time.time()
    for i, (me, you) in enumerate(positions):
        scores.append(solver.solve(me, you)[0])
        if (i + 1) % 1000 == 0 or i + 1 == len(positions):
            print(f"  solved {i + 1}/{len(positions)} ({time.time() - begin:.0f}s)", flush=True)
    return np.array(scores, np.int8)


def layout_of(lib: ctypes.CDLL, size: int) -> list[int]:
    """The evaluation's layout for a board size (see ``oj_eval_layout``): patterns, weights per
    phase, phases, first phase's empties, empties per phase, fitted, scale, counts."""
    handle = lib.oj_create(board_mask_int(size), size, 5)
    layout = (ctypes.c_int32 * 8)()
    lib.oj_eval_layout(handle, layout)
    lib.oj_destroy(handle)
    return list(layout)


def features(lib: ctypes.CDLL, size: int, movers: np.ndarray, opponents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pattern indices [N, 8 * patterns] (offsets within a phase) and counts [N, scalars]."""
    layout = layout_of(lib, size)
    handle = lib.oj_create(board_mask_int(size), size, 5)
    index, scalars = (ctypes.c_int32 * 64)(), (ctypes.c_int32 * 16)()
    idx = np.zeros((len(movers), 8 * layout[0]), np.int32)
    sca = np.zeros((len(movers), layout[7]), np.int32)
    for i, (me, you) in enumerate(zip(movers.tolist(), opponents.tolist(), strict=True)):
        n = lib.oj_features(handle, me, you, index, scalars)
        idx[i] = index[:n]
        sca[i] = scalars[:layout[7]]
    lib.oj_destroy(handle)
    return idx, sca


def fit(size: int, idx: np.ndarray, sca: np.ndarray, empties: np.ndarray, scores: np.ndarray, phase_size: int,
        damp: float) -> np.ndarray:
    """The weights of every phase [phases * phase_size] in discs (float)."""
    first, step, phases = PHASES[size]
    out = np.zeros((phases, phase_size))
    for p in range(phases):
        low = first + p * step - OVERLAP if p else 0
        high = first + (p + 1) * step - 1 + OVERLAP if p < phases - 1 else 64
        rows = np.flatnonzero((empties >= low) & (empties <= high))
        held = rows[np.arange(len(rows)) % 10 == 0]  # every tenth position is kept out of the fit
        matrix = _design(idx, sca, rows, phase_size)
        train = np.setdiff1d(np.arange(len(rows)), np.flatnonzero(np.isin(rows, held)))
        result = scipy.sparse.linalg.lsqr(matrix[train], scores[rows[train]].astype(float), damp=damp, iter_lim=3000)
        out[p] = result[0]
        fit_error = matrix[train] @ out[p] - scores[rows[train]]
        held_error = _design(idx, sca, held, phase_size) @ out[p] - scores[held]
        print(f"  phase {p} (empties {low}-{min(high, 64)}): {len(rows)} positions, rms error "
              f"{np.sqrt(np.mean(fit_error ** 2)):.2f} discs fitted, {np.sqrt(np.mean(held_error ** 2)):.2f} held out "
              f"(scores' rms {np.sqrt(np.mean(scores[rows] ** 2.0)):.2f})")
    return out.ravel()


def _design(idx: np.ndarray, sca: np.ndarray, rows: np.ndarray, phase_size: int) -> scipy.sparse.csr_matrix:
    """The sparse design matrix of some positions: one column per weight of a phase."""
    n, num_patterns = len(rows), phase_size - sca.shape[1]
    cols = np.concatenate([idx[rows], num_patterns + np.broadcast_to(np.arange(sca.shape[1]), (n, sca.shape[1]))],
                          axis=1)
    vals = np.concatenate([np.ones(idx[rows].shape), sca[rows]], axis=1)
    return scipy.sparse.csr_matrix((vals.ravel(), (np.repeat(np.arange(n), cols.shape[1]), cols.ravel())),
                                   shape=(n, phase_size))


def write_header(fitted: dict[int, np.ndarray], scale: int, path: Path = HEADER) -> None:
    """The weights as C arrays (int16, 1/scale disc)."""
    lines = ["/* Fitted weights of the solver's ordering evaluation, written by experiments/fit_solver_eval.py:",
             " * per board size, phases of empties, each phase's pattern weights then count weights (see",
             " * eval_layout in _csolver.c), in 1/EVAL_SCALE disc. */", "#include <stdint.h>", ""]
    for size, weights in sorted(fitted.items()):
        first, step, phases = PHASES[size]
        ints = np.clip(np.round(weights * scale), -32767, 32767).astype(np.int16)
        lines += [f"#define EVAL{size}_PHASES {phases}", f"#define EVAL{size}_FIRST {first}",
                  f"#define EVAL{size}_STEP {step}", f"static const int16_t EVAL{size}_WEIGHTS[{len(ints)}] = {{"]
        values = ints.tolist()
        lines += [",".join(str(v) for v in values[i:i + 24]) + "," for i in range(0, len(values), 24)]
        lines += ["};", ""]
    path.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, choices=[6, 8], action="append",
                        help="board sizes to sample and solve for (default both; the other is refitted from its cache)")
    parser.add_argument("--count", type=int, default=0,
                        help="positions to solve per size (default 6x6 40000, 8x8 120000)")
    parser.add_argument("--data", type=Path, default=c_solver.cache_dir() / "eval-fit")
    parser.add_argument("--wthor", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared/data/wthor")
    parser.add_argument("--fit-only", action="store_true", help="no new positions: refit the cached ones")
    parser.add_argument("--damp", type=float, default=3.0, help="ridge regularisation of the fit")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    lib = bootstrap_library()
    fitted: dict[int, np.ndarray] = {}
    scale = 0
    asked = args.size or [6, 8]
    for size in [6, 8]:
        data = args.data / f"solved{size}.npz"
        if size not in asked and not data.exists():
            print(f"note: no solved {size}x{size} positions in {args.data}: the header will hold no {size}x{size} "
                  "weights (that size falls back to the rough ordering)")
            continue
        args.data.mkdir(parents=True, exist_ok=True)
        known = dict(np.load(data)) if data.exists() else {"mover": np.zeros(0, np.uint64),
                                                           "opponent": np.zeros(0, np.uint64),
                                                           "score": np.zeros(0, np.int8)}
        count = args.count or {6: 40000, 8: 120000}[size]
        if size in asked and not args.fit_only and len(known["score"]) < count:
            more = count - len(known["score"])
            seed = args.seed + len(known["score"])
            print(f"{size}x{size}: sampling {more} positions", flush=True)
            fresh = (expert_positions(lib, args.wthor, more, seed) if size == 8
                     else random_positions(lib, size, more, seed))
            try:  # the solver with the weights fitted so far orders its moves better
                solving = c_solver.library()
            except c_solver.CSolverUnavailable:  # no weights yet: the bootstrap build
                solving = lib
            scores = solve_all(solving, size, fresh)
            known = {"mover": np.concatenate([known["mover"], np.array([m for m, _ in fresh], np.uint64)]),
                     "opponent": np.concatenate([known["opponent"], np.array([o for _, o in fresh], np.uint64)]),
                     "score": np.concatenate([known["score"], scores])}
            np.savez(data, **known)
        movers, opponents, scores = known["mover"], known["opponent"], known["score"].astype(np.int32)
        layout = layout_of(lib, size)
        scale = layout[6]
        idx, sca = features(lib, size, movers, opponents)
        empties = np.array([size * size - (int(m) | int(o)).bit_count()
                            for m, o in zip(movers, opponents, strict=True)])
        print(f"{size}x{size}: fitting {len(scores)} positions", flush=True)
        fitted[size] = fit(size, idx, sca, empties, scores, layout[1], args.damp)
    write_header(fitted, scale)
    print(f"wrote {HEADER}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
