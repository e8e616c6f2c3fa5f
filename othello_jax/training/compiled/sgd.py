"""One gradient step on a batch of Samples: the AlphaZero loss and the optimizer update.

Shared by self-play training (:mod:`othello_jax.training.compiled.iteration`) and supervised learning
from expert games (:mod:`othello_jax.training.supervised.trainer`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax

from othello_jax.game import Othello
from othello_jax.model import AlphaZeroNet
from othello_jax.training.compiled.losses import (
    auxiliary_losses,
    l2_penalty,
    policy_cross_entropy,
    policy_entropy,
    value_loss,
    weighted_mean,
)
from othello_jax.training.compiled.samples import Samples
from othello_jax.training.settings.run_settings import LossSettings


def loss_fn(params, batch_stats, net: AlphaZeroNet, game: Othello, batch: Samples,
            loss_config: LossSettings) -> tuple[jax.Array, tuple[Any, dict]]:
    """value MSE + policy cross-entropy + l2 * |W|^2 - entropy_bonus * H(policy), over a flat batch.

    A WDL value head replaces the MSE by its cross-entropy; score and ownership heads add their
    weighted terms (``loss.score_weight``, ``loss.ownership_weight``) where the batch has final
    boards. Runs the network in training mode (batch statistics from this batch) and returns the
    updated batch-norm running averages with a dict of per-term metrics.
    """
    obs = game.observation(batch.state)
    legal = game.legal_moves(batch.state)
    (logits, value, extras), updates = net.apply({"params": params, "batch_stats": batch_stats}, obs,
                                                 train=True, aux=True, mutable=["batch_stats"])
    mask = batch.mask
    value_term, value_metrics = value_loss(value, extras, batch.value, mask)
    policy_loss = weighted_mean(policy_cross_entropy(logits, batch.policy, legal), mask)
    entropy = weighted_mean(policy_entropy(logits, legal), mask)
    target_logp = jnp.log(jnp.maximum(batch.policy, 1e-12))
    target_entropy = weighted_mean(-jnp.sum(batch.policy * target_logp, axis=-1), mask)
    l2 = l2_penalty(params)
    loss = (float(loss_config.value_weight) * value_term + policy_loss + float(loss_config.l2) * l2
            - float(loss_config.entropy_bonus) * entropy)
    aux_loss, aux_metrics = auxiliary_losses(extras, batch, game.size, loss_config)
    if aux_metrics:
        loss = loss + aux_loss
    metrics = {
        "loss": loss,
        "value_loss": value_term,
        "policy_loss": policy_loss,
        "policy_kl": policy_loss - target_entropy,
        "policy_entropy": entropy,
        "target_entropy": target_entropy,
        "value_abs_error": weighted_mean(jnp.abs(value - batch.value), mask),
        "l2": l2,
        **value_metrics,
        **aux_metrics,
    }
    return loss, (updates["batch_stats"], metrics)


def make_sgd_step(net: AlphaZeroNet, game: Othello, optimizer: optax.GradientTransformation,
                  loss_config: LossSettings):
    """``(params, batch_stats, opt_state, batch) -> (params, batch_stats, opt_state, metrics)``."""
    grad_fn = jax.grad(loss_fn, has_aux=True)

    def sgd_step(params, batch_stats, opt_state, batch: Samples):
        grads, (batch_stats, metrics) = grad_fn(params, batch_stats, net, game, batch, loss_config)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        metrics["grad_norm"] = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree.leaves(grads)))
        return params, batch_stats, opt_state, metrics

    return sgd_step
