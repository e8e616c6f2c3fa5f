"""Endgame accuracy of an agent: in its own games, how often its moves with at most E empty
squares left keep the game-theoretic value, and how many discs they give away.

A move keeps the result when the exact outcome (win, draw or loss under perfect play) after
it is the position's; it is optimal when it keeps the exact final disc difference. The disc
loss of a move is the position's exact score minus the exact score after the move.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.game import ActFn, NotationError, Othello, State, play_transcript
from othello_jax.solver.host import count_empties, solve_many


class MoveChecks(NamedTuple):
    """One row per judged move: empty squares before it, the position's exact score, the
    exact score the move reaches (both for the mover)."""

    empties: np.ndarray
    best: np.ndarray
    achieved: np.ndarray


class AccuracyReport(NamedTuple):
    positions: int
    keeps_result: float  # fraction of moves keeping win/draw/loss
    optimal: float  # fraction keeping the exact disc difference
    mean_disc_loss: float
    by_empties: dict[int, tuple[int, float, float]]  # empties -> (moves, keeps_result, mean loss)


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def random_starts(game: Othello, count: int, plies: int, key: jax.Array) -> State:
    """``count`` positions reached from the start by ``plies`` uniformly random legal moves."""
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (count,) + x.shape), game.init())

    def ply(states, key):
        logits = jnp.where(game.legal_moves(states) | states.terminal[:, None], 0.0, -jnp.inf)
        return game.step(states, jax.random.categorical(key, logits).astype(jnp.int32)), None

    states, _ = jax.lax.scan(ply, states, jax.random.split(key, plies))
    return states


def opening_starts(path: str | Path, game: Othello, count: int, seed: int = 0) -> State:
    """``count`` positions after openings from a file of transcripts (one per line, e.g. XOT),
    drawn without replacement while they last."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"openings file not found: {path}")
    lines = [line.split()[0] for line in path.read_text().splitlines() if line.strip()]
    if not lines:
        raise NotationError(f"{path.name} holds no openings")
    order = np.random.default_rng(seed).permutation(len(lines))
    states = []
    for i in range(count):
        line = lines[order[i % len(lines)]]
        try:
            states.append(play_transcript(line, game)[0])
        except NotationError as err:
            raise NotationError(f"{path.name}: opening {line!r}: {err}") from None
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def collect_moves(agent: ActFn, starts: State, game: Othello, max_empties: int, key: jax.Array,
                  opponent: ActFn | None = None) -> tuple[State, np.ndarray]:
    """Play the games from ``starts`` and return the agent's positions with at most
    ``max_empties`` empty squares and the actions it chose there (host numpy arrays).

    Without an opponent the agent plays both sides; with one, the agent takes black in the
    even-numbered games and white in the others.
    """
    count = starts.ply.shape[0]
    agent_color = np.arange(count) % 2
    step = jax.jit(game.step)
    states, kept_states, kept_actions = starts, [], []
    for _ in range(2 * game.num_squares + 2):
        terminal = np.asarray(states.terminal)
        if terminal.all():
            break
        key, agent_key, opponent_key = jax.random.split(key, 3)
        actions = np.array(agent(states, agent_key), np.int32)
        ours = np.ones(count, bool)
        if opponent is not None:
            ours = np.asarray(states.color) == agent_color
            actions = np.where(ours, actions, np.asarray(opponent(states, opponent_key), np.int32))
        legal = np.asarray(game.legal_moves(states))
        bad = ~terminal & ((actions < 0) | (actions >= game.num_actions))
        bad |= ~terminal & ~legal[np.arange(count), np.clip(actions, 0, game.num_actions - 1)]
        if bad.any():
            who = "agent" if ours[bad][0] else "opponent"
            raise ValueError(f"the {who} chose illegal action {actions[bad][0]} in game {np.flatnonzero(bad)[0]}")
        keep = ours & ~terminal & (np.asarray(count_empties(states, game)) <= max_empties)
        if keep.any():
            kept_states.append(jax.tree.map(lambda x: np.asarray(x)[keep], states))
            kept_actions.append(actions[keep])
        states = step(states, jnp.asarray(actions))
    if not kept_states:
        empty = jax.tree.map(lambda x: np.asarray(x)[:0], starts)
        return empty, np.zeros(0, np.int32)
    return jax.tree.map(lambda *xs: np.concatenate(xs), *kept_states), np.concatenate(kept_actions)


def judge_moves(states: State, actions: np.ndarray, game: Othello, backend: str = "auto") -> MoveChecks:
    """Exact scores before and after each move (two solves per move)."""
    empties = np.asarray(count_empties(states, game)).astype(np.int64)
    if len(actions) == 0:
        return MoveChecks(empties, np.zeros(0, np.int64), np.zeros(0, np.int64))
    children = jax.tree.map(np.asarray, jax.jit(game.step)(states, jnp.asarray(actions)))
    best = solve_many(states, game, backend)[0]
    achieved = -solve_many(children, game, backend)[0]
    return MoveChecks(empties, best, achieved)


def summarize(checks: MoveChecks) -> AccuracyReport:
    """Fractions and mean disc loss, overall and per number of empty squares."""
    loss = checks.best - checks.achieved
    keeps = np.sign(checks.best) == np.sign(checks.achieved)
    by_empties = {
        int(e): (int(n), float(keeps[checks.empties == e].mean()), float(loss[checks.empties == e].mean()))
        for e, n in zip(*np.unique(checks.empties, return_counts=True), strict=False)
    }
    if len(loss) == 0:
        return AccuracyReport(0, float("nan"), float("nan"), float("nan"), {})
    return AccuracyReport(len(loss), float(keeps.mean()), float((loss == 0).mean()), float(loss.mean()), by_empties)


def format_report(report: AccuracyReport) -> str:
    """A short table: the totals, then one line per number of empty squares."""
    lines = [
        f"{report.positions} positions judged; kept the game-theoretic result in {report.keeps_result:.1%}, "
        f"played an optimal move in {report.optimal:.1%}; mean disc loss {report.mean_disc_loss:.2f}",
        f"{'empties':>7} {'moves':>6} {'keeps result':>12} {'disc loss':>9}",
    ]
    for empties, (moves, keeps, loss) in sorted(report.by_empties.items(), reverse=True):
        lines.append(f"{empties:>7} {moves:>6} {keeps:>12.1%} {loss:>9.2f}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# by bands of empty squares, with 95% intervals (the test set and games against perfect play)
# ---------------------------------------------------------------------------------------------
GAME_BANDS = ((32, 25), (24, 17), (16, 9), (8, 1))  # 6x6 games: empties before the move, high to low
Z95 = 1.959963984540054


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial share (sensible at 0% and 100% too)."""
    if trials == 0:
        return float("nan"), float("nan")
    p, n = successes / trials, trials
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    return low, 1.0 if successes == trials else min(1.0, centre + half)


def mean_interval(values: np.ndarray, z: float = Z95) -> tuple[float, float, float]:
    """(mean, low, high): the normal-approximation interval mean +- z s / sqrt(n)."""
    values = np.asarray(values, np.float64)
    if values.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(values.mean())
    half = z * float(values.std(ddof=1)) / math.sqrt(values.size) if values.size > 1 else float("inf")
    return mean, mean - half, mean + half


class BandLine(NamedTuple):
    """Moves judged in one band of empties: share optimal (Wilson interval), mean disc loss
    (normal interval)."""

    moves: int
    optimal: float
    optimal_interval: tuple[float, float]
    disc_loss: float
    disc_loss_interval: tuple[float, float]


class BandReport(NamedTuple):
    total: BandLine
    bands: dict[tuple[int, int], BandLine]  # (most empties, fewest) -> line


def band_line(checks: MoveChecks, rows: np.ndarray) -> BandLine:
    """The line for the moves at ``rows`` (a boolean mask)."""
    loss = (checks.best - checks.achieved)[rows]
    optimal = int((loss == 0).sum())
    mean, low, high = mean_interval(loss)
    share = optimal / loss.size if loss.size else float("nan")
    return BandLine(int(loss.size), share, wilson_interval(optimal, int(loss.size)), mean, (low, high))


def summarize_bands(checks: MoveChecks, bands=GAME_BANDS) -> BandReport:
    """Optimal share and disc loss of judged moves, overall and per band of empties."""
    every = np.ones(len(checks.best), bool)
    lines = {(high, low): band_line(checks, (checks.empties <= high) & (checks.empties >= low))
             for high, low in bands}
    return BandReport(band_line(checks, every), lines)


def format_bands(report: BandReport) -> str:
    """A table: one line per band, then all moves (intervals are 95%)."""
    rows = [f"{'empties':>8} {'moves':>6} {'optimal moves':>24} {'disc loss per move':>26}"]

    def row(label: str, line: BandLine) -> str:
        low, high = line.optimal_interval
        loss_low, loss_high = line.disc_loss_interval
        if not line.moves:
            return f"{label:>8} {0:>6}"
        return (f"{label:>8} {line.moves:>6} {line.optimal:>9.1%} [{low:>5.1%}, {high:>6.1%}] "
                f"{line.disc_loss:>9.2f} [{loss_low:>6.2f}, {loss_high:>6.2f}]")

    rows += [row(f"{high}-{low}", line) for (high, low), line in report.bands.items()]
    rows.append(row("all", report.total))
    return "\n".join(rows)
