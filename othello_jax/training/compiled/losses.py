"""Loss terms shared by self-play training and supervised learning (pure functions)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from othello_jax.training.compiled.samples import Samples, ownership_target, score_target


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


# ---------------------------------------------------------------------------------------------
# optional heads: win/draw/loss value, final score, final ownership
# ---------------------------------------------------------------------------------------------
def wdl_target(value: jax.Array) -> jax.Array:
    """``[..., 3]`` win/draw/loss target of a value target in [-1, 1] whose mean is the value.

    An outcome (+1/0/-1) becomes one-hot; a soft value v (search value, lambda-return) becomes
    ``(max(v, 0), 1 - |v|, max(-v, 0))``, so ``p_win - p_loss = v``.
    """
    v = jnp.clip(value.astype(jnp.float32), -1.0, 1.0)
    return jnp.stack([jnp.maximum(v, 0.0), 1.0 - jnp.abs(v), jnp.maximum(-v, 0.0)], axis=-1)


def wdl_cross_entropy(logits: jax.Array, target: jax.Array) -> jax.Array:
    """Per-example cross-entropy of win/draw/loss logits ``[..., 3]`` against a target distribution."""
    return -jnp.sum(target * jax.nn.log_softmax(logits, axis=-1), axis=-1)


def ownership_mse(ownership: jax.Array, target: jax.Array) -> jax.Array:
    """Per-example squared error of the ownership head, averaged over the ``N x N`` squares."""
    return jnp.mean(jnp.square(ownership - target), axis=(-2, -1))


def value_loss(value: jax.Array, extras: dict, target: jax.Array, mask: jax.Array) -> tuple[jax.Array, dict]:
    """The value term: squared error of a scalar head, cross-entropy of a WDL head.

    A WDL head also reports ``value_mse`` (of ``p_win - p_loss``) so the runs compare.
    """
    if "wdl_logits" not in extras:
        return weighted_mean(value_mse(value, target), mask), {}
    loss = weighted_mean(wdl_cross_entropy(extras["wdl_logits"], wdl_target(target)), mask)
    return loss, {"value_mse": weighted_mean(value_mse(value, target), mask)}


def auxiliary_losses(extras: dict, batch: Samples, size: int, loss_config) -> tuple[jax.Array, dict]:
    """Weighted score and ownership terms and their metrics (none without the heads or final boards).

    Rows count when they are real positions of games that ended by the rules (``final.valid``).
    """
    if batch.final is None or not ({"score", "ownership"} & extras.keys()):
        return jnp.float32(0), {}
    rows = batch.mask & batch.final.valid
    total, metrics = jnp.float32(0), {"aux_rows": weighted_mean(rows.astype(jnp.float32), batch.mask)}
    if "score" in extras:
        target = score_target(batch.final, size)
        metrics["score_loss"] = weighted_mean(value_mse(extras["score"], target), rows)
        metrics["score_abs_error"] = weighted_mean(jnp.abs(extras["score"] - target) * size * size, rows)
        total = total + float(loss_config.score_weight) * metrics["score_loss"]
    if "ownership" in extras:
        metrics["ownership_loss"] = weighted_mean(ownership_mse(extras["ownership"],
                                                                ownership_target(batch.final, size)), rows)
        total = total + float(loss_config.ownership_weight) * metrics["ownership_loss"]
    return total, metrics
