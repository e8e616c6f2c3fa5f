"""Loss terms shared by self-play training and supervised learning (pure functions)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def masked_log_softmax(logits: jax.Array, legal: jax.Array | None) -> jax.Array:
    """log-softmax over legal actions only (illegal entries get a large negative value)."""
    if legal is not None:
        logits = jnp.where(legal, logits, jnp.finfo(logits.dtype).min / 2)
    return jax.nn.log_softmax(logits, axis=-1)


def policy_cross_entropy(logits: jax.Array, target: jax.Array, legal: jax.Array | None = None) -> jax.Array:
    """Per-example cross-entropy ``-sum target * log softmax(logits)``."""
    return -jnp.sum(target * masked_log_softmax(logits, legal), axis=-1)


def policy_entropy(logits: jax.Array, legal: jax.Array | None = None) -> jax.Array:
    """Per-example entropy of the softmax policy (nats)."""
    logp = masked_log_softmax(logits, legal)
    return -jnp.sum(jnp.exp(logp) * logp, axis=-1)


def value_mse(value: jax.Array, target: jax.Array) -> jax.Array:
    """Per-example squared error of the value head."""
    return jnp.square(value - target)


def l2_penalty(params) -> jax.Array:
    """Sum of squares of all weight matrices/kernels (biases and norm scales excluded)."""
    leaves = [x for path, x in jax.tree_util.tree_leaves_with_path(params)
              if getattr(path[-1], "key", None) == "kernel"]
    return sum((jnp.sum(jnp.square(x.astype(jnp.float32))) for x in leaves), jnp.float32(0))


def weighted_mean(x: jax.Array, weight: jax.Array) -> jax.Array:
    """Mean of ``x`` under non-negative weights (e.g. a validity mask); 0 when all weights are 0."""
    weight = weight.astype(x.dtype)
    return jnp.sum(x * weight) / jnp.maximum(jnp.sum(weight), 1.0)
