"""The perfect-play test set: making it (varied play, then every move solved once) and
scoring an agent on it (its own move choices only, never a solve).

Positions come from games mixing uniformly random moves (a per-game share between 15% and
100%), greedy moves and alpha-beta (depth 2) moves, so they range from lopsided to
well-played. For each number of empty squares a fixed count is drawn, taken in a seeded
order from distinct games; positions with one legal move, or whose moves all have the same
value, are skipped. Everything is seeded, and the solver is exact, so a re-make gives the
same file.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.agents import alphabeta, greedy_act
from othello_jax.errors import InputError
from othello_jax.game import ActFn, Othello, State
from othello_jax.game import bitboard as bb
from othello_jax.solver import solved_moves as ts
from othello_jax.solver.host import bitboards_u64, count_empties
from othello_jax.solver.move_checks import BandReport, MoveChecks, summarize_bands

DEFAULT_LOW, DEFAULT_HIGH, DEFAULT_COUNT = 12, 24, 500
TESTSET_BANDS = ((24, 21), (20, 17), (16, 12))


def bands_covering(empties: np.ndarray) -> tuple[tuple[int, int], ...]:
    """The test set's bands, plus 11-8, 7-1 or 36-25 where a file (``--file``, labelled sets
    from ``make-labels``) has positions outside 12-24 empties, so no position is left out of
    the table."""
    empties = np.asarray(empties)
    above = ((36, 25),) if (empties > 24).any() else ()
    below = tuple((high, low) for high, low in ((11, 8), (7, 1)) if ((empties <= high) & (empties >= low)).any())
    return above + TESTSET_BANDS + below


# relative share of positions per number of empties above 20: solving grows ~3x per empty
_TOP_WEIGHTS = {21: 0.8, 22: 0.6, 23: 0.4, 24: 0.4}


def empties_counts(total: int, low: int = DEFAULT_LOW, high: int = DEFAULT_HIGH) -> dict[int, int]:
    """How many positions to draw at each number of empties (largest remainders, deterministic).

    Equal shares up to 20 empties, smaller ones above, where one position costs seconds to
    minutes of solving.
    """
    if not 1 <= low <= high or total < 1:
        raise InputError(f"need 1 <= low <= high and a positive count, got low={low}, high={high}, count={total}")
    weights = np.array([_TOP_WEIGHTS.get(e, 1.0) for e in range(low, high + 1)])
    exact = total * weights / weights.sum()
    counts = np.floor(exact).astype(int)
    counts[np.argsort(-(exact - counts), kind="stable")[: total - counts.sum()]] += 1
    return {e: int(n) for e, n in zip(range(low, high + 1), counts, strict=True)}


@functools.partial(jax.jit, static_argnums=(0, 1))
def _mixed_play_trace(game: Othello, count: int, key: jax.Array) -> State:
    """Every state [T, count] of ``count`` games of mixed random, greedy and alpha-beta play."""
    share_key, key = jax.random.split(key)
    random_share = jax.random.uniform(share_key, (count,), minval=0.15, maxval=1.0)
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (count,) + x.shape), game.init())

    def ply(states, key):
        style_key, pick_key, move_key, greedy_key = jax.random.split(key, 4)
        style = jax.random.uniform(style_key, (count,))
        searched = alphabeta.negamax(states, game, 2)[0]
        greedy = greedy_act(states, greedy_key, game)
        action = jnp.where(jax.random.uniform(pick_key, (count,)) < 0.5, greedy, searched)
        action = jnp.where(style < random_share, game.random_legal_action(states, move_key), action)
        return game.step(states, action), states

    _, trace = jax.lax.scan(ply, states, jax.random.split(key, 2 * game.num_squares))
    return trace


def mixed_play_games(game: Othello, games: int, seed: int | jax.Array) -> State:
    """Every state [T, games] (host arrays) of the seeded (or keyed) mixed-play games."""
    key = jax.random.key(int(seed)) if isinstance(seed, int | np.integer) else seed
    return jax.tree.map(np.asarray, _mixed_play_trace(game, games, key))


def candidate_rows(game: Othello, trace: State, empties: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(ply, game) indices into ``trace`` [T, G] of the positions with ``empties`` empty squares,
    the mover to play with >= 2 placements, one per game (its first such position), distinct,
    in a seeded order."""
    empty = np.asarray(count_empties(trace, game))
    moves = np.asarray(bb.popcount(trace.legal))
    ok = (empty == empties) & ~trace.terminal & (moves >= 2)  # [T, G]
    first = np.argmax(ok, axis=0)
    order = np.random.default_rng([seed, empties]).permutation(np.flatnonzero(ok.any(axis=0)))
    plies = first[order]
    keys = np.stack([bitboards_u64(jax.tree.map(lambda x: x[plies, order], side)) for side in
                     (trace.mover, trace.opponent)], axis=1)
    unique = np.sort(np.unique(keys, axis=0, return_index=True)[1])
    return plies[unique], order[unique]


def candidates(game: Othello, trace: State, empties: int, seed: int) -> State:
    """Host positions of the games ``trace`` with ``empties`` empty squares (see :func:`candidate_rows`)."""
    plies, games = candidate_rows(game, trace, empties, seed)
    return jax.tree.map(lambda x: x[plies, games], trace)


def make_testset(game: Othello = Othello(6), count: int = DEFAULT_COUNT, low: int = DEFAULT_LOW,
                 high: int = DEFAULT_HIGH, seed: int = 0, backend: str = "auto", workers: int = 1,
                 progress: Callable[[str], None] | None = None) -> ts.TestSet:
    """The test set: ``count`` informative positions spread over ``low``..``high`` empties.

    Solving every move once is the whole cost; positions are solved in order, a few more
    than needed at a time, until each count is reached, so the result does not depend on
    ``workers``.
    """
    trace = mixed_play_games(game, max(4 * count, 512), seed)
    with ts.solver_pool(workers) or contextlib.nullcontext() as pool:
        parts = _solve_parts(game, trace, empties_counts(count, low, high), seed, backend, pool, workers, progress)
    return ts.TestSet.concatenate(parts)


def _solve_parts(game: Othello, trace: State, counts: dict[int, int], seed: int, backend: str, pool, workers: int,
                 progress: Callable[[str], None] | None) -> list[ts.TestSet]:
    """Per number of empties, the first ``counts[e]`` informative candidates, solved."""
    parts = []
    for empties, needed in counts.items():
        found = candidates(game, trace, empties, seed)
        kept, start = [], 0
        while sum(len(k) for k in kept) < needed:
            if start >= len(found.ply):
                raise InputError(f"only {sum(len(k) for k in kept)} usable positions at {empties} empties")
            stop = start + needed - sum(len(k) for k in kept) + 2
            solved = ts.build(jax.tree.map(lambda x: x[start:stop], found), game, backend, pool, workers)
            kept.append(solved.take(np.flatnonzero(ts.informative(solved))))
            start = stop
        parts.append(ts.TestSet.concatenate(kept).take(np.arange(needed)))
        if progress is not None:
            progress(f"{empties} empties: {needed} positions")
    return parts


def agent_actions(act: ActFn, testset: ts.TestSet, key: jax.Array, batch: int = 0) -> np.ndarray:
    """The agent's move in every test position (``batch`` positions per call; 0: all at once)."""
    states = ts.to_states(testset)
    batch = batch or len(testset)
    out = []
    for start in range(0, len(testset), batch):
        rows = jax.tree.map(lambda x: x[start:start + batch], states)
        out.append(np.asarray(act(rows, jax.random.fold_in(key, start)), np.int64))
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def score_actions(testset: ts.TestSet, actions: np.ndarray, bands=TESTSET_BANDS) -> BandReport:
    """Share of optimal moves and mean disc loss, overall and by empties band, with intervals.

    Only informative positions count; an illegal action is an error.
    """
    actions = np.asarray(actions, np.int64)
    achieved = testset.values[np.arange(len(testset)), np.clip(actions, 0, testset.values.shape[1] - 1)]
    bad = (actions < 0) | (actions >= testset.values.shape[1]) | (achieved == ts.NO_VALUE)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"illegal action {int(actions[row])} in test position {row}")
    keep = ts.informative(testset)
    checks = MoveChecks(testset.empties[keep].astype(np.int64), testset.best[keep].astype(np.int64),
                        achieved[keep].astype(np.int64))
    return summarize_bands(checks, bands)


def score_agent(act: ActFn, testset: ts.TestSet, key: jax.Array, batch: int = 0, bands=TESTSET_BANDS) -> BandReport:
    """An agent's test-set score (see :func:`score_actions`)."""
    return score_actions(testset, agent_actions(act, testset, key, batch), bands)
