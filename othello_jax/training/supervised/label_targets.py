"""Supervised data from labelled sets (:mod:`othello_jax.evaluation.labels`): positions whose every
move is solved exactly become training targets, and held-out ones score the raw network.

Targets: value = the sign of the position's exact value (+1 win, 0 draw, -1 loss for the mover,
the scale of self-play's value targets), or with a ``value_margin`` m the exact value on the scale
``Othello.result_value`` gives it, (1 - m) * sign + m * discs / squares (a network told so by
``NetworkConfig.value_margin``); policy = uniform over the optimal moves (those whose
exact value equals the position's; for a forced pass, the pass action), or with a
``policy_temperature`` T > 0 (in discs) every solved legal move weighted by
``exp((value - best) / T)``, so the policy also learns how much each other move loses. Rows with
``split == "train"`` train; rows with ``"test"`` (other games) are held out: the network's
highest-logit legal move is scored by the test-set scorer
(:func:`~othello_jax.evaluation.perfect_set.score_actions`: optimal-move share and discs lost per
move, by band of empties, informative positions only) and its value head by sign accuracy on
every held-out row. The board size is the files' own.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.errors import InputError
from othello_jax.evaluation import labels as labels_lib
from othello_jax.evaluation.perfect_set import score_actions
from othello_jax.game import Othello, State
from othello_jax.solver import solved_moves as ts
from othello_jax.solver.move_checks import BandReport, format_bands
from othello_jax.training.compiled.samples import Samples

# (most, fewest) empties, the scorer's band convention; reported as "8-12", ...
LABEL_BANDS: tuple[tuple[int, int], ...] = ((12, 8), (16, 13), (20, 17), (24, 21))


class LabelRows(NamedTuple):
    """Training rows on the device: positions, their policy and value targets."""

    state: State  # leaves [N]
    policy: jax.Array  # float32 [N, num_actions]: the policy target (see policy_targets)
    value: jax.Array  # float32 [N]: the position's exact value on the value head's scale (see targets)


class LabelData(NamedTuple):
    """The labelled sets of one run, split; ``game`` has the files' board size."""

    game: Othello
    train: labels_lib.LabelSet
    test: labels_lib.LabelSet
    info: dict  # files, row counts, sources (JSON-serialisable)

    def summary(self) -> str:
        return (f"labels: {', '.join(self.info['files'])} ({self.game.size}x{self.game.size}): "
                f"{len(self.train)} training positions, {len(self.test)} held out (other games)")


def parse_paths(text: str) -> list[str]:
    """``"a.npz, b.npz"`` -> ``["a.npz", "b.npz"]`` (empty entries dropped)."""
    return [part.strip() for part in text.split(",") if part.strip()]


def load_label_files(text: str) -> LabelData:
    """Read and concatenate the comma-separated labelled sets; one-line ``InputError`` for a
    missing or unreadable file, files of different board sizes, or an empty split."""
    paths = parse_paths(text)
    if not paths:
        raise InputError("data.labels names no file")
    parts = []
    for path in paths:
        if not Path(path).expanduser().is_file():
            raise InputError(f"labels file not found: {path}")
        parts.append(labels_lib.load(Path(path).expanduser()))
    sizes = {path: part.positions.size for path, part in zip(paths, parts, strict=True)}
    if len(set(sizes.values())) > 1:
        raise InputError("labels files of different board sizes: "
                         + ", ".join(f"{path} is {s}x{s}" for path, s in sizes.items()))
    everything = labels_lib.concatenate(parts)
    check_targets(everything.positions)
    train, test = (everything.take(everything.split == name) for name in ("train", "test"))
    for name, part in (("train", train), ("test", test)):
        if not len(part):
            raise InputError(f"no split=={name!r} positions in {', '.join(paths)}")
    info = {"files": paths, "board_size": int(everything.positions.size), "train": len(train), "test": len(test),
            "sources": sorted(set(everything.source.tolist()))}
    return LabelData(Othello(everything.positions.size), train, test, info)


def optimal_moves(positions: ts.TestSet) -> np.ndarray:
    """bool [P, num_actions]: the legal actions whose exact value equals the position's."""
    return (positions.values != ts.NO_VALUE) & (positions.values == positions.best[:, None])


def check_targets(positions: ts.TestSet) -> None:
    """Every position needs at least one optimal move (a file whose ``best`` matches no move is broken)."""
    missing = ~optimal_moves(positions).any(axis=1)
    if missing.any():
        raise InputError(f"labelled position {int(np.flatnonzero(missing)[0])} has no move of its exact value")


def value_targets(positions: ts.TestSet, value_margin: float = 0.0) -> np.ndarray:
    """float32 [P]: each position's exact value as the value head learns it: its sign (``value_margin``
    0), else ``Othello.result_value`` of it."""
    return np.asarray(Othello(positions.size).result_value(positions.best, value_margin), np.float32)


def policy_targets(positions: ts.TestSet, temperature: float = 0.0) -> np.ndarray:
    """float32 [P, num_actions]: uniform over the optimal moves (``temperature`` 0), else every
    solved legal move weighted by ``exp((value - best) / temperature)``, temperature in discs.

    A softer target tells the policy that losing 2 discs is better than losing 20, which the
    optimal moves alone do not: where every move wins (or loses) the search leans on the prior
    to choose between margins. Moves a targets-only row left ``UNSOLVED`` get nothing (their
    values are unknown), so such rows stay uniform over their optimal moves.
    """
    if temperature == 0:
        weights = optimal_moves(positions).astype(np.float32)
    else:
        solved = (positions.values != ts.NO_VALUE) & (positions.values != ts.UNSOLVED)
        behind = (positions.values.astype(np.float32) - positions.best[:, None].astype(np.float32)) / temperature
        weights = np.where(solved, np.exp(np.minimum(behind, 0.0)), 0.0).astype(np.float32)
    return weights / weights.sum(axis=1, keepdims=True)


def targets(positions: ts.TestSet, value_margin: float = 0.0,
            policy_temperature: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`policy_targets`, :func:`value_targets`): host arrays, the targets
    :func:`label_samples` hands the learner."""
    return policy_targets(positions, policy_temperature), value_targets(positions, value_margin)


def to_device(labels: labels_lib.LabelSet, value_margin: float = 0.0, policy_temperature: float = 0.0) -> LabelRows:
    """The rows as device arrays (states, :func:`targets`)."""
    policy, value = targets(labels.positions, value_margin, policy_temperature)
    return LabelRows(ts.to_states(labels.positions), jnp.asarray(policy), jnp.asarray(value))


def label_samples(rows: LabelRows, index: jax.Array, game: Othello) -> Samples:
    """Rows ``index`` as training samples."""
    picked = jax.tree.map(lambda x: x[index], rows)
    return Samples(state=picked.state, policy=picked.policy, value=picked.value, mask=jnp.ones(index.shape, bool))


@functools.partial(jax.jit, static_argnums=(0, 1))
def _predict(net: Any, game: Othello, variables: Any, state: State) -> tuple[jax.Array, jax.Array]:
    logits, value = net.apply(variables, game.observation(state), train=False)[:2]
    return jnp.argmax(jnp.where(game.legal_moves(state), logits, -jnp.inf), axis=-1), value


def predict(net: Any, variables: Any, positions: ts.TestSet, batch_size: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """(the raw policy's highest-logit legal action int64 [P], the value head's output float32 [P])
    of every position, in batches of one fixed shape (the last one padded by wrapping)."""
    game, count = Othello(positions.size), len(positions)
    batch_size = min(batch_size, max(count, 1))
    actions, values = [], []
    for start in range(0, count, batch_size):
        index = np.arange(start, start + batch_size) % count
        action, value = _predict(net, game, variables, ts.to_states(positions.take(index)))
        keep = min(batch_size, count - start)
        actions.append(np.asarray(action, np.int64)[:keep])
        values.append(np.asarray(value, np.float32)[:keep])
    if not actions:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    return np.concatenate(actions), np.concatenate(values)


def band_name(band: tuple[int, int]) -> str:
    """(most, fewest) empties -> ``"fewest-most"``."""
    return f"{band[1]}-{band[0]}"


class LabelScore(NamedTuple):
    """A network's held-out score: the raw policy's moves (:class:`BandReport`, informative
    positions) and its value head's sign accuracy and squared error on every held-out position."""

    moves: BandReport
    value_positions: int
    value_sign: float
    value_mse: float

    def as_dict(self) -> dict:
        """JSON-serialisable (checkpoint meta, :func:`~othello_jax.training.supervised.run`'s result)."""
        line = lambda x: {"moves": x.moves, "optimal": x.optimal, "disc_loss": x.disc_loss}
        return {"positions": self.moves.total.moves, **line(self.moves.total),
                "bands": {band_name(band): line(x) for band, x in self.moves.bands.items()},
                "value_positions": self.value_positions, "value_sign": self.value_sign, "value_mse": self.value_mse}

    def metrics(self) -> dict[str, float]:
        """The ``eval/`` fields of ``metrics.jsonl``."""
        out = {"eval/optimal": self.moves.total.optimal, "eval/disc_loss": self.moves.total.disc_loss,
               "eval/value_sign": self.value_sign, "eval/value_mse": self.value_mse}
        for band, line in self.moves.bands.items():
            out[f"eval/optimal_{band_name(band)}"] = line.optimal
            out[f"eval/disc_loss_{band_name(band)}"] = line.disc_loss
        return out

    def format(self) -> str:
        """The test-set scorer's table, then the value head's line."""
        return (f"raw policy on {self.moves.total.moves} held-out positions (informative ones; intervals 95%):\n"
                f"{format_bands(self.moves)}\nvalue head on {self.value_positions} held-out positions: "
                f"sign right in {self.value_sign:.1%}, squared error {self.value_mse:.3f}")


def score(actions: np.ndarray, values: np.ndarray, positions: ts.TestSet,
          bands: tuple[tuple[int, int], ...] = LABEL_BANDS, value_margin: float = 0.0) -> LabelScore:
    """Score given moves and value predictions on labelled positions (the value's squared error
    against its target on the ``value_margin`` scale)."""
    moves = score_actions(positions, actions, bands)
    truth = np.sign(positions.best.astype(np.int32))
    values = np.asarray(values, np.float64)
    n = len(positions)
    sign = float(np.mean(Othello(positions.size).read_value(values, value_margin)[0] == truth)) if n else float("nan")
    mse = float(np.mean((values - value_targets(positions, value_margin)) ** 2)) if n else float("nan")
    return LabelScore(moves, n, sign, mse)


def evaluate(net: Any, variables: Any, positions: ts.TestSet, bands: tuple[tuple[int, int], ...] = LABEL_BANDS,
             batch_size: int = 4096) -> LabelScore:
    """The network's held-out score on ``positions`` (see :class:`LabelScore`; the network's
    ``value_margin`` read from its config)."""
    return score(*predict(net, variables, positions, batch_size), positions, bands, net.config.value_margin)


def subsample(labels: labels_lib.LabelSet, limit: int, seed: int = 0) -> labels_lib.LabelSet:
    """A fixed random subset of at most ``limit`` positions (0 = all), in file order."""
    if not limit or limit >= len(labels):
        return labels
    return labels.take(np.sort(np.random.default_rng(seed).choice(len(labels), limit, replace=False)))

