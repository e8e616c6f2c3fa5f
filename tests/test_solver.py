"""The exact endgame solvers (C and JAX) against brute-force minimax, the FFO test positions,
the perfect-endgame agent wrapper and the exact training targets."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from othello_jax.game import NotationError, Othello, parse_board
from othello_jax.solver import (
    CSolver,
    CSolverUnavailable,
    c_solver,
    exact_endgame_act,
    exact_values,
    load_obf,
    parse_obf_line,
    resolve_backend,
    solve,
    solve_batch_jit,
    solve_many,
)
from othello_jax.solver.host import exact_signs, exact_signs_and_best
from othello_jax.solver.jax_solver import square_to_action
from tests.solver_helpers import BruteForce, greedy_act, random_act, random_games_6x6, random_positions, to_ints

GAME = Othello(8)
JAX_EMPTIES = 10  # one compiled search depth for all 8x8 JAX checks
SMALL, JAX_BATCH = 768, 256  # positions with up to 7 empties, solved on device 256 at a time
# White to move; only H8 wins (+10). The greedy move E1 (5 flips, lowest of two) loses by 2.
ONLY_WIN_NOT_GREEDY = "XXXX-X--XXXXXOOOOXOXXXOOOXXOXOXOOXOXXXXXOXXOOOXX-XXXXXXX-X--X-O- O"
H8 = 63


def ints_of(state):
    return [x[0] for x in to_ints(jax.tree.map(lambda a: np.asarray(a)[None], state))]


def empties_of(state) -> int:
    m, o = ints_of(state)
    return 64 - bin(m | o).count("1")


@pytest.fixture(scope="module")
def positions():
    """8x8 positions: 768 with 0..7 empty squares and 16 with 8..10, with brute-force values."""
    rng = np.random.default_rng(0)
    empties = list(rng.integers(0, 8, SMALL)) + [8] * 10 + [9] * 4 + [10] * 2
    states = random_positions(GAME, empties, seed=5)
    movers, opponents = to_ints(states)
    brute = BruteForce(8)
    values = np.array([brute.value(m, o) for m, o in zip(movers, opponents, strict=False)])
    return states, movers, opponents, values, brute


def check_moves(brute, movers, opponents, values, actions, size):
    """Every returned action is legal (or -1 for a finished game) and reaches the value."""
    for m, o, v, a in zip(movers, opponents, values, actions, strict=False):
        moves = brute.moves(m, o)
        if a == -1:
            assert not moves and not brute.moves(o, m)
            continue
        a = int(a)
        square = 64 if a == size * size else (a // size) * 8 + a % size
        assert square in moves or (square == 64 and not moves and brute.moves(o, m))
        assert -brute.value(*brute.child(m, o, square)) == v


def test_c_move_generator_matches_rules(positions):
    states, movers, opponents, _, brute = positions
    lib = c_solver.library()
    for m, o in list(zip(movers, opponents, strict=False))[:300]:
        legal = lib.oj_legal(m, o, (1 << 64) - 1)
        assert legal == sum(1 << sq for sq in brute.moves(m, o))
        for sq in range(64):
            if not (m | o) >> sq & 1:  # the C flips are defined for empty squares
                assert lib.oj_flips(m, o, sq) == brute.flips(m, o, sq)


def test_c_solver_matches_brute_force(positions):
    states, movers, opponents, values, brute = positions
    scores, actions, nodes = solve_many(states, GAME, backend="c")
    assert np.array_equal(scores, values)
    assert (nodes >= 1).all()
    check_moves(brute, movers, opponents, values, actions, 8)


def test_jax_solver_matches_brute_force(positions):
    states, movers, opponents, values, brute = positions
    parts = [slice(start, start + JAX_BATCH) for start in range(0, SMALL, JAX_BATCH)]
    for part in parts + [slice(SMALL, None)]:  # the hard positions in a batch of their own
        batch = jax.tree.map(lambda x: x[part], states)
        result = solve_batch_jit(batch, GAME, JAX_EMPTIES)
        assert np.asarray(result.solved).all()
        assert np.array_equal(np.asarray(result.score), values[part])
        check_moves(brute, movers[part], opponents[part], values[part], np.asarray(result.action), 8)


@pytest.mark.parametrize("size,max_empties", [(6, 8), (4, 10)])
def test_small_boards_match_brute_force(size, max_empties):
    game = Othello(size)
    empties = list(np.random.default_rng(size).integers(0, max_empties + 1, 64))
    states = random_positions(game, empties, seed=size)
    movers, opponents = to_ints(states)
    brute = BruteForce(size)
    values = np.array([brute.value(m, o) for m, o in zip(movers, opponents, strict=False)])
    result = solve_batch_jit(states, game, max_empties)
    assert np.array_equal(np.asarray(result.score), values)
    check_moves(brute, movers, opponents, values, np.asarray(result.action), size)
    scores, actions, _ = solve_many(states, game, backend="c")
    assert np.array_equal(scores, values)
    check_moves(brute, movers, opponents, values, actions, size)


def test_one_hot_stack_path_used_on_tpu(positions, monkeypatch):
    """The TPU variant of the stack (one-hot selects instead of gathers) gives the same results."""
    from othello_jax.solver import jax_solver

    states, _, _, values, _ = positions
    monkeypatch.setattr(jax_solver, "_one_hot_stack", lambda: True)
    fresh = jax.jit(jax_solver.solve_batch, static_argnames=("game", "max_empties"))  # its own trace
    batch = jax.tree.map(lambda x: x[SMALL:], states)
    result = fresh(batch, GAME, JAX_EMPTIES)
    assert np.array_equal(np.asarray(result.score), values[SMALL:])


def test_windows_give_fail_soft_bounds(positions):
    """Inside the window the score is exact; outside it is a bound on the right side."""
    states, _, _, values, _ = positions
    batch = jax.tree.map(lambda x: x[:JAX_BATCH], states)  # the shape compiled above
    exact = values[:JAX_BATCH]
    for alpha, beta in [(-1, 1), (10, 12), (-20, -2)]:
        jax_scores = np.asarray(solve_batch_jit(batch, GAME, JAX_EMPTIES, alpha, beta).score)
        c_scores = solve_many(batch, GAME, "c", alpha, beta)[0]
        for scores in (jax_scores, c_scores):
            inside = (exact > alpha) & (exact < beta)
            assert np.array_equal(scores[inside], exact[inside])
            assert (scores[exact <= alpha] <= alpha).all() and (scores[exact <= alpha] >= exact[exact <= alpha]).all()
            assert (scores[exact >= beta] >= beta).all() and (scores[exact >= beta] <= exact[exact >= beta]).all()


def test_unsolved_positions_are_marked(positions):
    states, *_ = positions
    opening = jax.tree.map(lambda x: x[None], GAME.init())
    result = solve_batch_jit(opening, GAME, JAX_EMPTIES)
    assert not bool(result.solved[0]) and int(result.action[0]) == -1


def test_forced_pass_and_finished_game():
    # black to move has no placement, white has: the best (only) move is a pass
    state, _ = parse_board("OOOOOOOO" * 7 + "OOOOOX-- X")
    brute = BruteForce(8)
    m, o = ints_of(state)
    assert not brute.moves(m, o) and brute.moves(o, m)
    over, _ = parse_board("X" * 61 + "---" + " O")  # white has no discs: the game is over
    assert bool(over.terminal)
    played, finished = solve(state, GAME, "c"), solve(over, GAME, "c")
    assert played.action == GAME.pass_action and played.score == brute.value(m, o)
    assert finished.action == -1 and finished.score == -64
    for position, action, score in [(state, GAME.pass_action, brute.value(m, o)), (over, -1, -64)]:
        result = solve_batch_jit(jax.tree.map(lambda x: jnp.asarray(x)[None], position), GAME, JAX_EMPTIES)
        assert int(result.action[0]) == action and int(result.score[0]) == score


def test_ffo_file_loads(shared_data):
    problems = load_obf(shared_data / "ffo" / "fforum-40-59.obf")
    assert [p.number for p in problems] == list(range(40, 60))
    first = problems[0]
    assert first.score == 38 and first.best_actions == [8]  # A2
    assert empties_of(first.state) == 20
    with pytest.raises(NotationError, match="move score"):
        parse_obf_line(first.board + "; A2=38;")


def ffo(shared_data, numbers):
    problems = load_obf(shared_data / "ffo" / "fforum-40-59.obf")
    return [p for p in problems if p.number in numbers]


def solve_and_report(problem, solver):
    m, o = ints_of(problem.state)
    start = time.process_time()
    score, square, nodes = solver.solve(m, o)
    seconds = time.process_time() - start
    empties = 64 - bin(m | o).count("1")
    print(f"FFO #{problem.number}: {empties} empties, score {score:+d}, {nodes:,} nodes, {seconds:.2f}s CPU")
    return score, int(square_to_action(square, 8))


# #45-#49 take about 40 seconds of CPU together (#45 alone about 15; see bench_solver_fast)
FFO_NUMBERS = [*range(40, 45), *(pytest.param(n, marks=pytest.mark.slow) for n in range(45, 50))]


@pytest.mark.parametrize("number", FFO_NUMBERS)
def test_ffo_exact(shared_data, number):
    (problem,) = ffo(shared_data, [number])
    score, action = solve_and_report(problem, CSolver(8))
    assert score == problem.score
    assert action in problem.best_actions


def test_jax_solver_on_an_ffo_line(shared_data):
    """FFO #40 followed down its principal variation to 10 empties, solved on device."""
    (problem,) = ffo(shared_data, [40])
    solver = CSolver(8)
    state, sign = problem.state, 1
    while empties_of(state) > JAX_EMPTIES:
        _, square, _ = solver.solve(*ints_of(state))
        state, sign = GAME.step(state, int(square_to_action(square, 8))), -sign
    result = solve_batch_jit(jax.tree.map(lambda x: x[None], state), GAME, JAX_EMPTIES)
    assert sign * int(result.score[0]) == problem.score


@pytest.mark.parametrize("backend", ["jax", "c"])
def test_agent_finds_the_only_winning_move_greedy_misses(backend):
    state, _ = parse_board(ONLY_WIN_NOT_GREEDY)
    batch = jax.tree.map(lambda x: jnp.asarray(x)[None], state)
    brute = BruteForce(8)
    m, o = ints_of(state)
    values = {sq: -brute.value(*brute.child(m, o, sq)) for sq in brute.moves(m, o)}
    assert [sq for sq, v in values.items() if v > 0] == [H8]
    greedy = greedy_act(GAME)
    key = jax.random.key(0)
    assert values[int(greedy(batch, key)[0])] < 0  # greedy throws the win away
    perfect = exact_endgame_act(greedy, GAME, 10, backend=backend)
    if backend == "jax":
        perfect = jax.jit(perfect)
    assert int(np.asarray(perfect(batch, key))[0]) == H8
    if backend == "c":  # 9 empty squares, more than the agent solves: its own move stands
        early = exact_endgame_act(greedy, GAME, 8, backend=backend)
        assert int(np.asarray(early(batch, key))[0]) == int(greedy(batch, key)[0])


def test_agent_plays_the_last_moves_perfectly():
    """A random agent wrapped to solve the last 8 empties, against random play: each of its
    moves keeps the exact value of the position (checked by brute force)."""
    game, max_empties, games = GAME, 8, 16
    states = random_positions(game, [max_empties] * games, seed=9)
    perfect = jax.jit(exact_endgame_act(random_act(game), game, max_empties))
    opponent = random_act(game)
    brute = BruteForce(8)
    key, checked = jax.random.key(1), 0
    for turn in range(2 * max_empties + 2):
        key, k1 = jax.random.split(key)
        ours = turn % 2 == 0
        actions = np.asarray(perfect(states, k1) if ours else opponent(states, k1))
        if ours:
            for m, o, a, over in zip(*to_ints(states), actions, np.asarray(states.terminal), strict=False):
                if over:
                    continue
                square = 64 if a == 64 else int(a)
                assert -brute.value(*brute.child(m, o, square)) == brute.value(m, o)
                checked += 1
        states = game.step(states, jnp.asarray(actions))
    assert np.asarray(states.terminal).all() and checked > games * 3


def test_exact_values_for_training(positions):
    states, _, _, values, _ = positions
    # the compiled batch shape from above, with some positions too early to solve
    early = np.arange(JAX_BATCH) % 50 == 0
    opening = jax.tree.map(lambda x: np.broadcast_to(x, (JAX_BATCH,) + x.shape), GAME.init())
    batch = jax.tree.map(lambda x, o: np.where(early.reshape((-1,) + (1,) * (x.ndim - 1)), o, x),
                         jax.tree.map(lambda x: np.asarray(x[:JAX_BATCH]), states), opening)
    for kind, expected in [("sign", np.sign(values[:JAX_BATCH])), ("disc", values[:JAX_BATCH])]:
        value, solved = exact_values(batch, GAME, JAX_EMPTIES, kind)
        assert np.array_equal(np.asarray(solved), ~early)
        assert np.array_equal(np.asarray(value)[~early], expected[~early])
        assert (np.asarray(value)[early] == 0).all() and np.asarray(value).dtype == np.float32
    with pytest.raises(ValueError, match="kind must be one of"):
        exact_values(batch, GAME, JAX_EMPTIES, "margin")
    jitted = jax.jit(exact_values, static_argnums=(1, 2, 3))(batch, GAME, JAX_EMPTIES, "sign")
    assert np.array_equal(np.asarray(jitted[0]), np.sign(values[:JAX_BATCH]) * ~early)


def test_the_solver_names_every_optimal_move_and_only_those():
    """``exact_signs_and_best`` against brute-force minimax on random 6x6 positions with 4-9 empty
    squares: the result's sign, and the squares whose move keeps the position's exact score
    (ties between several optimal moves included)."""
    brute = BruteForce(6)
    positions = list(dict.fromkeys((me, you) for me, you in random_games_6x6(40, 32, seed=3)
                                   if 4 <= 36 - (me | you).bit_count() <= 9))
    got = exact_signs_and_best(6, positions)
    assert [sign for sign, _ in got] == exact_signs(6, positions)
    ties = 0
    for (me, you), (sign, best) in zip(positions, got, strict=True):
        value = brute.value(me, you)
        optimal = [sq for sq in brute.moves(me, you) if -brute.value(*brute.child(me, you, sq)) == value]
        assert (sign, best) == (np.sign(value), sum(1 << sq for sq in optimal)), (me, you)
        ties += len(optimal) > 1
    assert len(positions) > 100 and ties > 10


def test_without_a_compiler_auto_falls_back_to_jax(monkeypatch, tmp_path):
    monkeypatch.setenv("OTHELLO_JAX_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", "no-such-compiler")
    monkeypatch.setenv("PATH", str(tmp_path))
    c_solver.library.cache_clear()
    try:
        with pytest.raises(CSolverUnavailable, match="no C compiler"):
            c_solver.library()
        with pytest.warns(RuntimeWarning, match="JAX solver"):
            assert resolve_backend("auto") == "jax"
        with pytest.raises(CSolverUnavailable):
            resolve_backend("c")
    finally:
        c_solver.library.cache_clear()
    with pytest.raises(ValueError, match="backend must be one of"):
        resolve_backend("gpu")
