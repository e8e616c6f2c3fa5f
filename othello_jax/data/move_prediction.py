"""Move-prediction accuracy of any policy on expert positions, overall, by game stage and by the
number of legal moves (Liskowski et al.'s Fig. 3 factors).

A prediction is the highest-scoring *legal* move (illegal logits are ignored, so networks
trained with masked losses are judged fairly). Top-k counts a row as a hit when the expert's
move is among the k best legal moves. Rows are the de-duplicated (position, move) pairs of
:mod:`othello_jax.data.expert`, each counted once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from othello_jax.data.expert import ExpertPositions, stage, take, to_state
from othello_jax.game import Othello
from othello_jax.game.symmetry import NUM_SYMMETRIES, inverse, transform_grid, transform_policy

# (variables, obs float32[B, N, N, 2]) -> policy logits float32[B, N*N+1]
PolicyFn = Callable[[Any, jax.Array], jax.Array]
DEFAULT_STAGES: tuple[tuple[int, int], ...] = ((0, 19), (20, 39), (40, 59))
TOP_K = (1, 3)
# legal moves in the position, grouped (a forced move is always predicted; the most seen is 33)
LEGAL_MOVE_BINS: tuple[tuple[int, int], ...] = ((1, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 14), (15, 60))


def target_rank(logits: jax.Array, legal: jax.Array, action: jax.Array) -> jax.Array:
    """Position of the target action when legal actions are sorted by logit (0 = top-1 hit).

    Ties rank the lower action index first, as ``argmax`` does, so a constant policy is not
    credited with every move.
    """
    masked = jnp.where(legal, logits, -jnp.inf)
    action = action.astype(jnp.int32)[..., None]
    target = jnp.take_along_axis(masked, action, axis=-1)
    index = jnp.arange(logits.shape[-1], dtype=jnp.int32)
    ahead = (masked > target) | ((masked == target) & (index < action) & legal)
    return jnp.sum(ahead, axis=-1).astype(jnp.int32)


@functools.partial(jax.jit, static_argnums=(0, 3))
def _ranks(policy_fn: PolicyFn, variables: Any, rows: ExpertPositions, game: Othello) -> jax.Array:
    state = to_state(rows, game)
    logits = policy_fn(variables, game.observation(state))
    return target_rank(logits, game.legal_moves(state), jnp.asarray(rows.action, jnp.int32))


@functools.cache
def network_policy(net) -> PolicyFn:
    """The policy logits of a flax network in inference mode, as a :data:`PolicyFn` (one per
    network, so repeated evaluations reuse the compiled code)."""
    return functools.partial(_network_logits, net)


def _network_logits(net, variables: Any, obs: jax.Array) -> jax.Array:
    return net.apply(variables, obs, train=False)[0]


@functools.cache
def symmetric_network_policy(net) -> PolicyFn:
    """The network's policy averaged over the board's 8 symmetries (test-time augmentation): each
    position is shown in all 8 orientations, each policy mapped back and the probabilities
    averaged; the log of the mean is returned as logits. A prediction costs 8 network calls; the
    figures Liskowski et al. report are single-view."""
    return functools.partial(_symmetric_logits, net)


def _symmetric_logits(net, variables: Any, obs: jax.Array) -> jax.Array:
    batch, size = obs.shape[0], obs.shape[-2]
    views = jnp.concatenate([transform_grid(obs, k, axes=(-3, -2)) for k in range(NUM_SYMMETRIES)])
    logits = net.apply(variables, views, train=False)[0].astype(jnp.float32)
    probs = jax.nn.softmax(logits.reshape(NUM_SYMMETRIES, batch, -1), axis=-1)
    back = jnp.stack([transform_policy(probs[k], inverse(k), size) for k in range(NUM_SYMMETRIES)])
    return jnp.log(jnp.mean(back, axis=0))


@functools.partial(jax.jit, static_argnums=1)
def _legal_counts(rows: ExpertPositions, game: Othello) -> jax.Array:
    return jnp.sum(game.legal_moves(to_state(rows, game))[..., :-1], axis=-1).astype(jnp.int32)


def in_batches(fn: Callable[[ExpertPositions], jax.Array], rows: ExpertPositions, batch_size: int,
               progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """``fn`` over ``rows`` in fixed-size batches (the last one padded by wrapping, so every batch
    shares one compiled program), the outputs joined as one int32 array."""
    out = []
    for start in range(0, rows.size, batch_size):
        index = np.arange(start, start + batch_size) % max(rows.size, 1)
        out.append(np.asarray(fn(take(rows, index)))[: min(batch_size, rows.size - start)])
        if progress is not None:
            progress(min(start + batch_size, rows.size), rows.size)
    return np.concatenate(out) if out else np.zeros(0, np.int32)


def legal_move_counts(rows: ExpertPositions, batch_size: int = 16_384) -> np.ndarray:
    """The number of legal moves (placements) in every row's position."""
    return in_batches(functools.partial(_legal_counts, game=Othello(8)), rows, batch_size)


def ranks(policy_fn: PolicyFn, variables: Any, rows: ExpertPositions, batch_size: int = 4096,
          progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Rank of the expert move for every row, evaluated in fixed-size batches.

    ``policy_fn`` is a static (hashable) function; ``variables`` its traced parameters, so a
    new set of weights reuses the compiled code.
    """
    game = Othello(8)
    return in_batches(lambda batch: _ranks(policy_fn, variables, batch, game), rows, batch_size, progress)


def summarize(rank: np.ndarray, rows: ExpertPositions, stages: Sequence[tuple[int, int]] = DEFAULT_STAGES,
              legal: np.ndarray | None = None) -> dict:
    """Top-k accuracies overall, by stage (moves played before the position), by the number of
    legal moves (``legal``: :func:`legal_move_counts` of ``rows``, counted here if not given), and
    split into positions also seen in training vs novel ones."""
    rank = np.asarray(rank)
    moves_played = np.asarray(stage(rows))
    legal = legal_move_counts(rows) if legal is None else np.asarray(legal)

    def scores(mask: np.ndarray) -> dict:
        n = int(mask.sum())
        result = {"positions": n}
        for k in TOP_K:
            result[f"top{k}"] = float(np.mean(rank[mask] < k)) if n else float("nan")
        return result

    everything = np.ones(rank.shape, bool)
    return {
        **scores(everything),
        "by_stage": {f"{lo}-{hi}": scores((moves_played >= lo) & (moves_played <= hi)) for lo, hi in stages},
        "by_legal_moves": {(f"{lo}" if lo == hi else f"{lo}-{hi}" if hi < 60 else f"{lo}+"):
                           scores((legal >= lo) & (legal <= hi)) for lo, hi in LEGAL_MOVE_BINS},
        "seen_in_train": scores(np.asarray(rows.in_train)),
        "novel": scores(~np.asarray(rows.in_train)),
    }


def score_network(net: Any, variables: Any, rows: ExpertPositions, batch_size: int = 4096,
                  progress: Callable[[int, int], None] | None = None, symmetries: int = 1) -> dict:
    """:func:`summarize` of an 8x8 flax network's move predictions on ``rows`` (its highest legal
    logit); ``symmetries=8`` averages its policy over the board's symmetries first."""
    if symmetries not in (1, NUM_SYMMETRIES):
        raise ValueError(f"symmetries must be 1 or {NUM_SYMMETRIES}, got {symmetries}")
    policy = network_policy(net) if symmetries == 1 else symmetric_network_policy(net)
    return summarize(ranks(policy, variables, rows, batch_size, progress), rows)


def subsample(rows: ExpertPositions, limit: int, seed: int = 0) -> ExpertPositions:
    """A fixed random subset of at most ``limit`` rows (0 = all), for quicker evaluation."""
    if not limit or limit >= rows.size:
        return rows
    index = np.sort(np.random.default_rng(seed).choice(rows.size, limit, replace=False))
    return take(rows, index)


def format_report(result: dict) -> str:
    """A small text table of :func:`summarize`'s output."""
    header = f"{'positions':<14}{'count':>9}" + "".join(f"{f'top-{k}':>9}" for k in TOP_K)
    lines = [header]

    def line(name: str, r: dict) -> None:
        lines.append(f"{name:<14}{r['positions']:>9}" + "".join(f"{100 * r[f'top{k}']:>8.1f}%" for k in TOP_K))

    line("all", result)
    for name, r in result["by_stage"].items():
        line(f"moves {name}", r)
    for name, r in result.get("by_legal_moves", {}).items():
        line(f"legal {name}", r)
    line("seen in train", result["seen_in_train"])
    line("novel", result["novel"])
    return "\n".join(lines)
