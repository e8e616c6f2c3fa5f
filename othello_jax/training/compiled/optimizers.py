"""optax optimizers chosen by config: SGD+momentum with a step schedule (as in OLIVAW), or AdamW
with linear warmup and cosine decay.

The learning-rate schedule runs over gradient steps (the "iterations" clock) or over the
schedule position, the share of the training-time budget used (the "minutes" clock, see
:mod:`othello_jax.training.settings.stages`). With the minutes clock the optimizer is built with a unit
learning rate and :func:`scale_updates` applies the rate of the position, which the compiled
iteration receives as an argument.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from othello_jax.errors import InputError
from othello_jax.training.settings.run_settings import OptimizerSettings


def learning_rate_schedule(config: OptimizerSettings) -> optax.Schedule:
    """``config.schedule``: "constant", "steps" (``boundaries``/``scales``) or "cosine"
    (``warmup_steps``, ``total_steps``). A run shorter than its warmup (a shipped config shortened
    by ``--config.iterations``) warms up over all but its last step instead of being refused."""
    lr = float(config.learning_rate)
    kind = config.schedule
    if kind == "constant":
        return optax.constant_schedule(lr)
    if kind == "steps":
        boundaries = {int(b): float(s) for b, s in zip(config.boundaries, config.scales, strict=False)}
        return optax.piecewise_constant_schedule(lr, boundaries)
    if kind == "cosine":
        total = max(int(config.total_steps), 1)
        return optax.warmup_cosine_decay_schedule(
            init_value=0.0, peak_value=lr, warmup_steps=min(int(config.warmup_steps), total - 1),
            decay_steps=total, end_value=lr * float(config.end_scale))
    raise InputError(f"unknown learning-rate schedule {kind!r}; choose constant, steps or cosine")


def position_schedule(config: OptimizerSettings) -> Callable[[jax.Array], jax.Array]:
    """The learning rate at schedule positions in [0, 1] (any shape): the step schedule of
    :func:`learning_rate_schedule` read at step ``position * total_steps``, so warmup, boundaries
    and decay keep their shares of the run. ``config.total_steps`` must be resolved (> 0)."""
    schedule = learning_rate_schedule(config)
    total = float(max(int(config.total_steps), 1))

    def rate(position: jax.Array) -> jax.Array:
        steps = jnp.clip(jnp.asarray(position, jnp.float32), 0.0, 1.0) * total
        return jax.vmap(schedule)(steps.reshape(-1)).astype(jnp.float32).reshape(steps.shape)

    return rate


def make_optimizer(config: OptimizerSettings, clock: str = "iterations") -> optax.GradientTransformation:
    """``config.name``: "sgd" (``momentum``, ``nesterov``) or "adamw" (``weight_decay``); plus ``grad_clip``.

    L2 regularisation of the loss is separate (see ``losses.l2_penalty``); AdamW's decoupled
    weight decay is an alternative to it. With ``clock="minutes"`` the learning rate is 1 (no
    schedule, no step count in the state): wrap the optimizer with :func:`scale_updates`.
    """
    if clock not in ("iterations", "minutes"):
        raise InputError(f"unknown schedule clock {clock!r}; choose iterations or minutes")
    schedule = learning_rate_schedule(config) if clock == "iterations" else 1.0
    name = config.name
    if name == "sgd":
        opt = optax.sgd(schedule, momentum=float(config.momentum), nesterov=bool(config.nesterov))
    elif name == "adamw":
        opt = optax.adamw(schedule, weight_decay=float(config.weight_decay))
    else:
        raise InputError(f"unknown optimizer {name!r}; choose sgd or adamw")
    clip = config.grad_clip
    return optax.chain(optax.clip_by_global_norm(float(clip)), opt) if clip else opt


def scale_updates(optimizer: optax.GradientTransformation, rate: jax.Array) -> optax.GradientTransformation:
    """``optimizer`` (built with a unit learning rate) with its updates multiplied by ``rate``.

    The state is ``optimizer``'s own. In SGD and AdamW the learning rate is the last factor of
    the update (after momentum, Adam's moments and the decoupled weight decay), so this equals
    the optimizer built with learning rate ``rate``.
    """
    def update(updates, state, params=None):
        updates, state = optimizer.update(updates, state, params)
        return jax.tree.map(lambda u: (u * rate).astype(u.dtype), updates), state

    return optax.GradientTransformation(optimizer.init, update)
