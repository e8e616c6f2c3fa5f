"""The training example format passed from self-play (and expert data) to replay and training."""

from __future__ import annotations

from typing import NamedTuple

import jax

from othello_jax.game import State


class Samples(NamedTuple):
    """A batch of training positions; every leaf shares the leading batch axes.

    state: compact positions (from the mover's view, as everywhere).
    policy: float32[..., N*N+1] target distribution over actions (sums to 1 over legal actions).
    value: float32[...] value target in [-1, 1] for the mover (already chosen: z, q, mix, lambda).
    mask: bool[...] whether the row is a real position (False for padding).
    """

    state: State
    policy: jax.Array
    value: jax.Array
    mask: jax.Array


def flatten(samples: Samples, leading: int | None = None) -> Samples:
    """Merge the first ``leading`` axes (default: all batch axes, e.g. [T, B]) into one axis."""
    n = samples.mask.ndim if leading is None else leading
    return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[n:]), samples)
