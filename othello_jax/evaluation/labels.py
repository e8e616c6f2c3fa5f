"""Labelled sets: positions with every move solved exactly, from a network's own self-play or
from off-distribution play, split into train and test by game.

They measure what stops learning: networks trained on exact labels and scored on held-out
positions by empties band (capacity), value targets against exact values on self-play positions
(targets), and a network's optimal-move share on its own positions against others at equal
empties (coverage).

Sources: ``selfplay:AGENT_SPEC`` (the agent playing itself; the first plies are sampled, as in
self-play: a network's search at temperature 1 unless its spec sets ``temp``, any other agent's
moves replaced by uniformly random ones) and ``offdist`` (the test set's games of mixed random,
greedy and alpha-beta play). Positions are drawn per band of empty squares (``8-12:400`` asks for
400 positions with 8 to 12 empties, spread over them as the test set spreads its own), at most
one per game and number of empties, distinct, in a seeded order; positions with one legal move
are skipped. Games are played in seeded rounds until every number of empties has enough.

The file is a test set (:mod:`othello_jax.solver.solved_moves`: :func:`~othello_jax.evaluation.perfect_set.score_agent`
scores on it) with four more arrays per position: ``game`` (its game's id), ``outcome`` (that
game's final disc difference from the position's mover: the z target), ``split`` (``"test"`` for
the ~20% of games a hash of the seed and game id holds out, else ``"train"``: no game is on both
sides) and ``source``. The same options give the same file, byte for byte, whatever the workers.
With ``train_solve="targets"`` training rows are solved only for what learning uses (the
position's value and its optimal moves; the other moves hold ``UNSOLVED``, and the scorer skips
such rows), held-out rows in full.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.agents import Agent, parse_agent, parse_spec, random_agent
from othello_jax.errors import InputError
from othello_jax.evaluation.perfect_set import candidate_rows, empties_counts, mixed_play_games
from othello_jax.game import Othello, State
from othello_jax.solver import solved_moves as ts
from othello_jax.solver.cache import SolvedPositions

SOURCES = ("selfplay", "offdist")
DEFAULT_BANDS = "8-12:400,13-16:300,17-20:150,21-24:40"
DEFAULT_SAMPLE_PLIES = 8  # othello6_cpu's selfplay.temperature_plies
TEST_SHARE = 0.2
EXTRA_FIELDS = ("game", "outcome", "split", "source")
# How training rows are solved: every move's exact value, or only what their targets need (the
# position's value and which moves keep it), 1.5x cheaper at 9-12 empties, 2.4-2.8x at 13-18.
TRAIN_SOLVES = ("every-move", "targets")
_ROUND_GAMES = 64  # games are played in rounds of a multiple of this (few compiled shapes)
_MAX_ROUNDS = 8

Band = tuple[int, int]  # (fewest, most) empties


class LabelSet(NamedTuple):
    """A test set (``positions``) and, per position: game id, the game's final disc difference
    for the mover, split (``"train"``/``"test"``) and source."""

    positions: ts.TestSet
    game: np.ndarray
    outcome: np.ndarray
    split: np.ndarray
    source: np.ndarray

    def __len__(self) -> int:
        return len(self.positions)

    def take(self, rows: np.ndarray) -> LabelSet:
        """The positions at ``rows`` (indices or a boolean mask), same order."""
        rows = np.flatnonzero(rows) if np.asarray(rows).dtype == bool else np.asarray(rows, np.int64)
        return LabelSet(self.positions.take(rows), *(x[rows] for x in self[1:]))


class BandCost(NamedTuple):
    """What solving one band cost: positions, those not already in the cache (solved), wall
    seconds and the solver's CPU seconds (summed over the workers)."""

    band: Band
    positions: int
    solved: int
    wall_seconds: float
    cpu_seconds: float


def parse_bands(text: str, game: Othello) -> dict[Band, int]:
    """``"8-12:400,13-16:300"`` -> ``{(8, 12): 400, (13, 16): 300}`` (``E:N`` is one number of
    empties); bands must not overlap and lie within the board's empties."""
    bands: dict[Band, int] = {}
    most = game.num_squares - 4
    for part in (p.strip() for p in text.split(",")):
        span, colon, count = part.partition(":")
        low, dash, high = span.partition("-")
        try:
            band, total = (int(low), int(high) if dash else int(low)), int(count)
        except ValueError:
            raise InputError(f"bad band {part!r} in {text!r}: expected LOW-HIGH:COUNT, e.g. 8-12:400") from None
        if not colon or not 1 <= band[0] <= band[1] <= most or total < 1:
            raise InputError(f"bad band {part!r}: need 1 <= LOW <= HIGH <= {most} empties and COUNT >= 1")
        if any(band[0] <= b[1] and b[0] <= band[1] for b in bands):
            raise InputError(f"band {part!r} overlaps another in {text!r}")
        bands[band] = total
    return bands


def parse_source(text: str) -> tuple[str, str]:
    """``"selfplay:net:ckpt=builtin:6x6,sims=16"`` -> ``("selfplay", "net:ckpt=builtin:6x6,sims=16")``;
    ``"offdist"`` -> ``("offdist", "")``."""
    kind, _, spec = text.strip().partition(":")
    if kind not in SOURCES:
        raise InputError(f"source must be selfplay:AGENT_SPEC or offdist, got {text!r}")
    if (kind == "selfplay") != bool(spec.strip()):
        raise InputError("selfplay needs an agent spec (selfplay:net:ckpt=builtin:6x6,sims=16); offdist takes none")
    return kind, spec.strip()


def held_out(games: np.ndarray, seed: int, share: float = TEST_SHARE) -> np.ndarray:
    """Whether each game is in the test split: a hash of (seed, game id) below ``share``, so all
    of a game's positions fall on one side."""
    digest = lambda g: int.from_bytes(hashlib.blake2b(f"{seed}:{g}".encode(), digest_size=8).digest(), "little")
    return np.array([digest(g) < share * 2**64 for g in np.asarray(games).tolist()], bool)


def opening_agent(spec: str, game: Othello) -> Agent:
    """Who picks the first moves of a self-play game, so games differ: the network at
    temperature 1 (self-play's sampling) unless its spec sets ``temp``; for other agents,
    uniformly random moves."""
    kind, options = parse_spec(spec)
    if kind != "net":
        return random_agent(game)
    return parse_agent(spec if "temp" in options else f"{spec},temp=1", game)


def selfplay_games(game: Othello, agent: Agent, opening: Agent, games: int, sample_plies: int,
                   key: jax.Array) -> State:
    """Every state [T, games] (host arrays, T = 2 * squares, finished games repeated) of
    ``agent`` playing both sides, ``opening`` playing the first ``sample_plies`` plies."""
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (games,) + x.shape), game.init())
    step, trace = jax.jit(game.step), []
    for ply in range(2 * game.num_squares):
        trace.append(jax.tree.map(np.asarray, states))
        if not trace[-1].terminal.all():
            act = opening.act if ply < sample_plies else agent.act
            states = step(states, jnp.asarray(act(states, jax.random.fold_in(key, ply)), jnp.int32))
    return jax.tree.map(lambda *x: np.stack(x), *trace)


def _play_until(play: Callable[[int, jax.Array], State], game: Othello, needed: dict[int, int], seed: int,
                progress: Callable[[str], None] | None) -> tuple[State, dict[int, tuple[np.ndarray, np.ndarray]]]:
    """Seeded rounds of games until each number of empties has ``needed`` candidates: the games'
    states [T, G] and, per number of empties, the (ply, game) rows of its first candidates."""
    per_round = -(-2 * max(needed.values()) // _ROUND_GAMES) * _ROUND_GAMES
    traces = []
    for round_index in range(_MAX_ROUNDS):
        traces.append(play(per_round, jax.random.fold_in(jax.random.key(seed), round_index)))
        trace = jax.tree.map(lambda *x: np.concatenate(x, axis=1), *traces)
        rows = {e: candidate_rows(game, trace, e, seed) for e in needed}
        short = {e: len(rows[e][0]) for e, n in needed.items() if len(rows[e][0]) < n}
        if progress is not None:
            progress(f"{per_round * len(traces)} games played" + (f", short at {len(short)} empties" if short else ""))
        if not short:
            return trace, {e: (plies[:needed[e]], games[:needed[e]]) for e, (plies, games) in rows.items()}
    empties, found = next(iter(short.items()))
    raise InputError(f"only {found} distinct positions with {empties} empties (>= 2 moves) in "
                     f"{per_round * _MAX_ROUNDS} games; ask for fewer, or let the games differ more")


def make_labels(game: Othello, source: str, bands: dict[Band, int], seed: int = 0, backend: str = "auto",
                workers: int = 1, cache: SolvedPositions | None = None, sample_plies: int = DEFAULT_SAMPLE_PLIES,
                test_share: float = TEST_SHARE, train_solve: str = "every-move",
                progress: Callable[[str], None] | None = None) -> tuple[LabelSet, list[BandCost]]:
    """The labelled set of ``source`` (see :func:`parse_source`) with ``bands[(low, high)]``
    positions per band, and what solving each band cost. ``cache`` (C solver): solved positions
    are looked up there and added to it. ``train_solve="targets"`` solves training rows only for
    their targets (value and optimal moves, suboptimal moves ``UNSOLVED``; C solver), held-out
    rows in full: see :data:`TRAIN_SOLVES`."""
    kind, spec = parse_source(source)
    if train_solve not in TRAIN_SOLVES:
        raise InputError(f"train_solve must be one of {', '.join(TRAIN_SOLVES)}, got {train_solve!r}")
    if sample_plies < 0 or not 0 <= test_share <= 1:
        raise InputError(f"need sample_plies >= 0 and 0 <= test_share <= 1, got {sample_plies}, {test_share}")
    counts = {band: {e: n for e, n in empties_counts(total, *band).items() if n} for band, total in bands.items()}
    needed = {e: n for per_empties in counts.values() for e, n in per_empties.items()}
    agents: list[Agent] = []
    if kind == "selfplay":
        agents = [parse_agent(spec, game), opening_agent(spec, game)]
        play = lambda games, key: selfplay_games(game, agents[0], agents[1], games, sample_plies, key)
    else:
        play = lambda games, key: mixed_play_games(game, games, key)
    try:
        trace, rows = _play_until(play, game, needed, seed, progress)
    finally:
        for agent in agents:
            if agent.close is not None:
                agent.close()
    final = jax.tree.map(lambda x: x[-1], trace)  # every game is over by then
    final_diff = np.asarray(game.disc_difference(final))
    parts, costs = [], []
    with ts.solver_pool(workers) or contextlib.nullcontext() as pool:
        for band, per_empties in counts.items():
            begin, solved, cpu = time.perf_counter(), 0, 0.0
            for empties, count in per_empties.items():
                plies, games = rows[empties]
                states = jax.tree.map(lambda x: x[plies, games], trace)
                cheap = ~held_out(games, seed, test_share) if train_solve == "targets" else None
                values, seconds = ts.solve_moves(states, game, backend, pool, workers, cache, cheap)
                outcome = np.where(states.color == final.color[games], 1, -1) * final_diff[games]
                parts.append((ts.from_values(states, game, values), games.astype(np.int32), outcome.astype(np.int8)))
                solved, cpu = solved + int((seconds > 0).sum()), cpu + float(seconds.sum())
                if progress is not None:
                    progress(f"{band[0]}-{band[1]} empties: {count} positions with {empties} empties, "
                             f"{int((seconds > 0).sum())} solved in {seconds.sum():.1f} CPU s")
            costs.append(BandCost(band, sum(per_empties.values()), solved, time.perf_counter() - begin, cpu))
    positions = ts.TestSet.concatenate([p[0] for p in parts])
    game_ids = np.concatenate([p[1] for p in parts])
    split = np.where(held_out(game_ids, seed, test_share), "test", "train")
    labels = LabelSet(positions, game_ids, np.concatenate([p[2] for p in parts]), split,
                      np.full(len(positions), f"{kind}:{spec}" if spec else kind))
    return labels, costs


def concatenate(parts: list[LabelSet]) -> LabelSet:
    """The positions of every set, in order (one board size; an ``InputError`` otherwise)."""
    positions = ts.TestSet.concatenate([part.positions for part in parts])
    return LabelSet(positions, *(np.concatenate(x) for x in zip(*(p[1:] for p in parts), strict=True)))


def to_bytes(labels: LabelSet) -> bytes:
    """The ``.npz`` file's bytes: a test set file with the extra arrays (deterministic)."""
    return ts.to_bytes(labels.positions, {name: np.asarray(getattr(labels, name)) for name in EXTRA_FIELDS})


def save(labels: LabelSet, path: str | os.PathLike) -> None:
    """Write a labelled set as an ``.npz`` file (see :func:`to_bytes`)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(to_bytes(labels))


def load(path: str | os.PathLike) -> LabelSet:
    """Read a labelled set written by :func:`save`."""
    positions = ts.load(path)
    try:
        with np.load(path) as data:
            extra = [data[name] for name in EXTRA_FIELDS]
    except (KeyError, ValueError, zipfile.BadZipFile) as error:
        raise InputError(f"{path}: a test set, not a labelled set (no {str(error).strip()})") from None
    return LabelSet(positions, *extra)


def format_costs(costs: list[BandCost]) -> str:
    """The cost table: per band, positions, solved ones, wall and solver seconds, seconds per
    solved position and how many fit in a core-hour."""
    lines = [f"{'empties':>8} {'positions':>9} {'solved':>6} {'wall s':>8} {'CPU s':>8} {'CPU s/pos':>9} "
             f"{'wall s/pos':>10} {'pos/core-h':>10}"]
    for cost in costs:
        per = cost.cpu_seconds / cost.solved if cost.solved else 0.0
        lines.append(f"{cost.band[0]:>5}-{cost.band[1]:<2} {cost.positions:>9} {cost.solved:>6} "
                     f"{cost.wall_seconds:>8.1f} {cost.cpu_seconds:>8.1f} {per:>9.3f} "
                     f"{cost.wall_seconds / max(cost.positions, 1):>10.3f} "
                     f"{(f'{3600 / per:.0f}' if per else '-'):>10}")
    return "\n".join(lines)
