"""Lane compaction for the lockstep loops: deep levels touch only the trees still working.

The walk and the backup run one level of every tree per iteration until the last tree is done;
at the deep levels most trees are already done (with varied roots, often three quarters of
them or more). :func:`in_phases` runs those levels on a compact batch of ``B / 2``, ``B / 4``
or ``B / 8`` lanes once that many suffice: a level gathers the working trees' entries, computes
on them alone and scatters the results back. Each tree's arithmetic is unchanged, so the trees
are the same as without compaction (tested).

The scatters are O(lanes) per level; on TPU, where scatters inside loops are slow
(``search.tree_updates = "select"``), the loops run without compaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

FRACTIONS = (2, 4, 8)  # compact batches of B / 2, B / 4 and B / 8 lanes
MIN_LANES = 8  # smaller batches are not worth a phase of their own


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


def in_phases(full_level: Callable[[Any], Any], compact_level: Callable[[int], Callable[[Any], Any]],
              active: Callable[[Any], jax.Array], batch: int, carry: Any, enabled: bool = True) -> Any:
    """Run a loop to its end in phases, for loops whose working trees only ever become fewer:
    ``full_level`` while more trees than the largest tier work, then each tier's
    ``compact_level(lanes)`` while more than the next tier's work (the last until none does).

    No level runs inside a conditional, so a level may write into large arrays of the carry (the
    tree) in place; a ``lax.switch`` between the level kinds made XLA copy the whole tree at every
    backup level (1.7x slower searches)."""
    sizes = tiers(batch) if enabled else []
    limits = sizes + [0]
    phases = [(full_level, limits[0])]
    phases += [(compact_level(lanes), limit) for lanes, limit in zip(sizes, limits[1:], strict=True)]
    for level, limit in phases:
        carry = jax.lax.while_loop(lambda carry, limit=limit: jnp.sum(active(carry).astype(jnp.int32)) > limit,
                                   level, carry)
    return carry
