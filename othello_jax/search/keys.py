"""Random keys for a search batch made of several *lanes* (independent groups of games).

A key is either one key for the whole batch (the usual case) or ``[L]`` keys, one per lane,
when ``L`` lanes of ``B / L`` roots each are folded into one batch of ``B`` roots. The helpers
below do, for ``[L]`` keys, exactly what each lane would do alone with its own key (the lane's
draws have the lane's shape), so folding lanes into one search batch leaves every lane's
arithmetic unchanged; for a single key they are the plain ``jax.random`` calls.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp


def lanes_of(key: jax.Array) -> int:
    """0 for a single key, ``L`` for ``[L]`` lane keys (typed or raw uint32 keys)."""
    single = 0 if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) else 1
    return 0 if key.ndim == single else int(key.shape[0])


def split(key: jax.Array, num: int = 2) -> jax.Array:
    """``jax.random.split`` per lane: ``num`` keys (each a single key or ``[L]`` lane keys)."""
    if not lanes_of(key):
        return jax.random.split(key, num)
    return jnp.moveaxis(jax.vmap(lambda k: jax.random.split(k, num))(key), 0, 1)


def per_row(key: jax.Array, batch: int) -> jax.Array:
    """One key per root: ``split(key, batch)``, or each lane's key split over its own roots."""
    lanes = lanes_of(key)
    if not lanes:
        return jax.random.split(key, batch)
    keys = jax.vmap(lambda k: jax.random.split(k, batch // lanes))(key)
    return keys.reshape((batch,) + keys.shape[2:])


def draw(fn: Callable, key: jax.Array, shape: tuple[int, ...], *rows: jax.Array) -> jax.Array:
    """``fn(key, shape, *rows)`` for a batch whose leading axis ``shape[0]`` is split into lanes.

    ``rows`` are per-root arguments (leading axis ``shape[0]``); each lane draws with its own key
    the shape ``(shape[0] // L,) + shape[1:]`` from its own rows.
    """
    lanes = lanes_of(key)
    if not lanes:
        return fn(key, shape, *rows)
    per = (shape[0] // lanes,) + tuple(shape[1:])
    lane_rows = [r.reshape((lanes, per[0]) + r.shape[1:]) for r in rows]
    out = jax.vmap(lambda k, *r: fn(k, per, *r))(key, *lane_rows)
    return out.reshape((shape[0],) + out.shape[2:])
