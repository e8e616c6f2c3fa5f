"""Lane compaction for the lockstep walk: deep levels select only at the trees still descending.

The walk runs one level of every tree per iteration until the last tree has reached an
unexpanded edge; at the deep levels most trees are already done (with varied roots, often
three quarters of them or more). :func:`by_active_count` runs such a level on a compact batch
of ``B / 2``, ``B / 4`` or ``B / 8`` lanes when that many suffice: the level gathers the working
trees' nodes, selects on them alone and scatters the results back into the per-tree carry.
Each tree's arithmetic is unchanged, so the trees are the same as without compaction (tested).

Only loops whose carry is small use it: a branch that wrote into the whole tree (the backup)
would make XLA copy the tree through the conditional at every level (measured: 1.7x slower).
The scatters are O(lanes) per level; on TPU, where scatters inside loops are slow
(``search.tree_updates = "select"``), the walk runs without compaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

FRACTIONS = (2, 4, 8)  # compact batches of B / 2, B / 4 and B / 8 lanes
MIN_LANES = 8  # smaller batches are not worth a branch


def tiers(batch: int) -> list[int]:
    """The compact batch sizes for a batch of ``batch`` trees, largest first."""
    return [batch // fraction for fraction in FRACTIONS if batch // fraction >= MIN_LANES]


def working_lanes(active: jax.Array, lanes: int) -> jax.Array:
    """The indices of the ``active`` trees (at most ``lanes`` of them), padded with ``B``
    (one past the end: gathers clip it, scatters drop it)."""
    (lane,) = jnp.nonzero(active, size=lanes, fill_value=active.shape[0])
    return lane


def gather(x: jax.Array, lane: jax.Array) -> jax.Array:
    """``x[lane]`` (padding lanes read the last tree; their results are dropped)."""
    return x.at[lane].get(mode="clip")


def scatter(x: jax.Array, lane: jax.Array, new: jax.Array) -> jax.Array:
    """``x`` with ``x[lane] = new``; padding lanes write nothing."""
    return x.at[lane].set(new, mode="drop")


def by_active_count(full_level: Callable[[Any], Any], compact_level: Callable[[int], Callable[[Any], Any]],
                    active: Callable[[Any], jax.Array], batch: int, enabled: bool = True) -> Callable[[Any], Any]:
    """A loop body running ``full_level(carry)`` or, when at most ``lanes`` trees are
    ``active(carry)``, ``compact_level(lanes)(carry)`` for the smallest tier that holds them."""
    sizes = tiers(batch) if enabled else []
    if not sizes:
        return full_level

    def level(carry):
        count = jnp.sum(active(carry).astype(jnp.int32))
        branch = sum((count <= lanes).astype(jnp.int32) for lanes in sizes)  # 0: all trees; i: sizes[i - 1]
        return jax.lax.switch(branch, [full_level] + [compact_level(lanes) for lanes in sizes], carry)

    return level
