"""The faster C solver (issue 66) against independent references: the solver as it was before
(built from git commit b463a90), the FFO positions' published scores and brute-force minimax;
its stable discs against random play; its evaluation's symmetry."""

from __future__ import annotations

import ctypes
import random

import pytest

from experiments.bench_solver_fast import BEFORE, old_library, random_play_positions
from othello_jax.game import Othello
from othello_jax.game.bitboard import board_mask_int
from othello_jax.solver import CSolver, c_solver, load_obf
from othello_jax.solver.host import bitboards_u64
from tests.solver_helpers import BruteForce

pytestmark = pytest.mark.skipif(not c_solver.available(), reason="needs a C compiler for the solver")


@pytest.fixture(scope="module")
def before():
    """The solver of commit b463a90, built from git (skipped where the history is missing)."""
    try:
        return old_library(BEFORE)
    except SystemExit as err:
        pytest.skip(str(err))


def ints(state) -> tuple[int, int]:
    return int(bitboards_u64(state.mover)), int(bitboards_u64(state.opponent))


def check_best_move(reference: CSolver, size: int, mover: int, opponent: int, score: int, square: int) -> None:
    """The move is legal and reaches the score (its child solved by the reference solver)."""
    lib = c_solver.library()
    legal = lib.oj_legal(mover, opponent, board_mask_int(size))
    if square == 64:
        assert not legal and lib.oj_legal(opponent, mover, board_mask_int(size))
        assert -reference.solve(opponent, mover)[0] == score
        return
    assert legal >> square & 1, (mover, opponent, square)
    flipped = lib.oj_flips(mover, opponent, square)
    assert -reference.solve(opponent & ~flipped, mover | flipped | (1 << square))[0] == score


@pytest.mark.parametrize("series,numbers", [("1-19", range(1, 20)), ("40-59", [40, 41])])
def test_ffo_scores_and_best_moves(shared_data, series, numbers):
    """FFO #1-#19 (14-16 empties: milliseconds each) and #40, #41 (20 empties: about a second)."""
    problems = [p for p in load_obf(shared_data / "ffo" / f"fforum-{series}.obf") if p.number in numbers]
    assert len(problems) == len(numbers)
    solver = CSolver(8)
    for problem in problems:
        solver.clear()
        mover, opponent = ints(problem.state)
        score, square, nodes = solver.solve(mover, opponent)
        assert score == problem.score, problem.number
        assert square in problem.best_actions, problem.number  # on 8x8 an action is its square
        assert nodes > 0


def _random_8x8(empties: int, count: int, seed: int) -> list[tuple[int, int]]:
    return [(p.mover, p.opponent) for p in random_play_positions(empties, count, seed, size=8)]


@pytest.mark.parametrize("size,empties", [(6, [10, 12, 14, 16, 18, 20]), (8, [10, 12, 14, 16, 18])])
def test_random_positions_agree_with_the_old_solver(before, size, empties):
    """Random positions at 10-20 empties: the same scores as b463a90's solver, and every best
    move legal and reaching the score."""
    new, old = CSolver(size), CSolver(size, lib=before)
    for e in empties:
        for p in random_play_positions(e, 4, seed=7, size=size):
            score, square, _ = new.solve(p.mover, p.opponent)
            assert score == old.solve(p.mover, p.opponent)[0], (p.mover, p.opponent)
            check_best_move(old, size, p.mover, p.opponent, score, square)


def test_windows_give_the_old_solvers_bounds(before):
    """Inside a window the score is exact; outside it a bound on the right side of the window."""
    new, old = CSolver(6), CSolver(6, lib=before)
    for p in random_play_positions(14, 12, seed=3):
        exact = old.solve(p.mover, p.opponent)[0]
        for alpha, beta in [(-1, 1), (exact - 1, exact + 1), (exact, exact + 2), (exact - 2, exact),
                            (-64, exact - 4), (exact + 3, 64), (10, 12), (-20, -2)]:
            if alpha >= beta:
                continue
            got = new.solve(p.mover, p.opponent, alpha, beta)[0]
            if alpha < exact < beta:
                assert got == exact
            elif exact <= alpha:
                assert exact <= got <= alpha
            else:
                assert beta <= got <= exact


def _positions_with_passes(size: int, count: int, seed: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """From random games: positions whose mover must pass (the other side can move), and
    finished games with empty squares left."""
    brute, rng = BruteForce(size), random.Random(seed)
    half = size // 2
    passes, over = [], []
    while len(passes) < count or len(over) < count:
        me = 1 << ((half - 1) * 8 + half) | 1 << (half * 8 + half - 1)
        you = 1 << ((half - 1) * 8 + half - 1) | 1 << (half * 8 + half)
        while True:
            moves = brute.moves(me, you)
            if not moves:
                if not brute.moves(you, me):
                    if (me | you).bit_count() < size * size and len(over) < count:
                        over.append((me, you))
                    break
                if len(passes) < count and size * size - (me | you).bit_count() <= 12:
                    passes.append((me, you))
                me, you = you, me
                continue
            me, you = brute.child(me, you, rng.choice(moves))
    return passes, over


@pytest.mark.parametrize("size", [4, 6, 8])
def test_passes_and_finished_games(size):
    """A forced pass at the root (square 64), finished games with empty squares (square -1,
    empties to the winner), and passes inside the search, against brute force."""
    brute, solver = BruteForce(size), CSolver(size)
    passes, over = _positions_with_passes(size, 6, seed=size)
    for me, you in passes:
        score, square, _ = solver.solve(me, you)
        assert square == 64 and score == brute.value(me, you)
    for me, you in over:
        score, square, _ = solver.solve(me, you)
        assert square == -1 and score == brute.final(me, you)
    # every position of random games in their last 9 plies: passes on the way
    rng = random.Random(size)
    for _ in range(6):
        for me, you in _late_positions(brute, rng, 9):
            score, square, _ = solver.solve(me, you)
            assert score == brute.value(me, you)


def _late_positions(brute: BruteForce, rng: random.Random, empties: int) -> list[tuple[int, int]]:
    half, size = brute.size // 2, brute.size
    me = 1 << ((half - 1) * 8 + half) | 1 << (half * 8 + half - 1)
    you = 1 << ((half - 1) * 8 + half - 1) | 1 << (half * 8 + half)
    out = []
    while True:
        moves = brute.moves(me, you)
        if not moves and not brute.moves(you, me):
            return out
        if size * size - (me | you).bit_count() <= empties:
            out.append((me, you))
        me, you = brute.child(me, you, rng.choice(moves)) if moves else (you, me)


@pytest.mark.parametrize("size", [4, 6, 8])
def test_stable_discs_are_never_flipped(size):
    """The discs the stability cutoff counts as stable keep their colour through random games."""
    brute, rng = BruteForce(size), random.Random(11)
    solver, lib = CSolver(size), c_solver.library()
    handle = solver._handle  # (the solver must outlive its handle's use)
    checked = 0
    for me, you in _late_positions(brute, rng, size * size) + _late_positions(brute, rng, size * size):
        stable = lib.oj_stable(handle, me, you), lib.oj_stable(handle, you, me)
        assert not stable[0] & ~me and not stable[1] & ~you
        for _ in range(4):
            a, b, mine_first = me, you, True
            while True:
                owner_a = stable[0] if mine_first else stable[1]
                owner_b = stable[1] if mine_first else stable[0]
                assert owner_a & a == owner_a and owner_b & b == owner_b  # still the same colour
                moves = brute.moves(a, b)
                if not moves and not brute.moves(b, a):
                    break
                a, b = brute.child(a, b, rng.choice(moves)) if moves else (b, a)
                mine_first = not mine_first
        checked += (stable[0] | stable[1]).bit_count()
    assert checked > 50  # the test saw stable discs


def _images(x: int, size: int) -> list[int]:
    """The 8 symmetric images of a board on a size x size grid (bit row * 8 + column)."""
    cells = [(r, c) for r in range(size) for c in range(size) if x >> (r * 8 + c) & 1]
    last = size - 1
    maps = [lambda r, c: (r, c), lambda r, c: (r, last - c), lambda r, c: (last - r, c),
            lambda r, c: (last - r, last - c), lambda r, c: (c, r), lambda r, c: (c, last - r),
            lambda r, c: (last - c, r), lambda r, c: (last - c, last - r)]
    return [sum(1 << (rr * 8 + cc) for rr, cc in (f(r, c) for r, c in cells)) for f in maps]


@pytest.mark.parametrize("size", [6, 8])
def test_evaluation_is_symmetric(size):
    """The fitted evaluation is the same on the board's 8 images, and the search's way of summing
    it (symmetric weights, each line read once) gives the plain sum over the images."""
    solver, lib = CSolver(size), c_solver.library()
    layout = (ctypes.c_int32 * 8)()
    lib.oj_eval_layout(solver._handle, layout)
    if not layout[5]:
        pytest.skip("no fitted weights for this size")
    brute, rng, seen = BruteForce(size), random.Random(5), set()
    positions = _late_positions(brute, rng, size * size - 6) + _late_positions(brute, rng, size * size - 6)
    for me, you in positions:
        values = set()
        for m, y in zip(_images(me, size), _images(you, size), strict=True):
            values |= {lib.oj_evaluate(solver._handle, m, y, 0), lib.oj_evaluate(solver._handle, m, y, 1)}
        seen |= values
        assert len(values) == 1
    assert len(seen) > 5  # not a constant


def test_the_4x4_start_matches_brute_force():
    """The whole 4x4 game from its start (tables and stability for an edge of four)."""
    game = Othello(4)
    init = game.init()
    me, you = ints(init)
    assert CSolver(4).solve(me, you)[0] == BruteForce(4).value(me, you)


def test_the_portable_build_searches_the_same_tree():
    """Built without the AVX2 code paths (as where the CPU lacks them), the solver generates the
    same moves and flips and visits the same nodes for the same scores."""
    portable = c_solver.load(c_solver.build(defines=["-DOJ_SCALAR"]))
    native = c_solver.library()
    rng = random.Random(3)
    for size, empties in [(6, 14), (8, 12), (8, 16)]:
        board = board_mask_int(size)
        a, b = CSolver(size, lib=native), CSolver(size, lib=portable)
        for p in random_play_positions(empties, 5, seed=11, size=size):
            assert a.solve(p.mover, p.opponent) == b.solve(p.mover, p.opponent)
            assert native.oj_legal(p.mover, p.opponent, board) == portable.oj_legal(p.mover, p.opponent, board)
            for sq in rng.sample(range(64), 20):
                if not (p.mover | p.opponent) >> sq & 1:
                    assert native.oj_flips(p.mover, p.opponent, sq) == portable.oj_flips(p.mover, p.opponent, sq)
