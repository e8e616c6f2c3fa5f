"""optax optimizers chosen by config: SGD+momentum with a step schedule (as in OLIVAW), or AdamW
with linear warmup and cosine decay."""

from __future__ import annotations

import optax
from ml_collections import ConfigDict


def learning_rate_schedule(config: ConfigDict) -> optax.Schedule:
    """``config.schedule``: "constant", "steps" (``boundaries``/``scales``) or "cosine"
    (``warmup_steps``, ``total_steps``)."""
    lr = float(config.learning_rate)
    kind = config.get("schedule", "constant")
    if kind == "constant":
        return optax.constant_schedule(lr)
    if kind == "steps":
        boundaries = {int(b): float(s) for b, s in zip(config.boundaries, config.scales, strict=False)}
        return optax.piecewise_constant_schedule(lr, boundaries)
    if kind == "cosine":
        return optax.warmup_cosine_decay_schedule(
            init_value=0.0, peak_value=lr, warmup_steps=int(config.get("warmup_steps", 0)),
            decay_steps=max(int(config.total_steps), 1), end_value=lr * float(config.get("end_scale", 0.01)))
    raise ValueError(f"unknown learning-rate schedule {kind!r}; choose constant, steps or cosine")


def make_optimizer(config: ConfigDict) -> optax.GradientTransformation:
    """``config.name``: "sgd" (``momentum``, ``nesterov``) or "adamw" (``weight_decay``); plus ``grad_clip``.

    L2 regularisation of the loss is separate (see ``losses.l2_penalty``); AdamW's decoupled
    weight decay is an alternative to it.
    """
    schedule = learning_rate_schedule(config)
    name = config.get("name", "sgd")
    if name == "sgd":
        opt = optax.sgd(schedule, momentum=float(config.get("momentum", 0.9)),
                        nesterov=bool(config.get("nesterov", False)))
    elif name == "adamw":
        opt = optax.adamw(schedule, weight_decay=float(config.get("weight_decay", 1e-4)))
    else:
        raise ValueError(f"unknown optimizer {name!r}; choose sgd or adamw")
    clip = config.get("grad_clip", 0.0)
    return optax.chain(optax.clip_by_global_norm(float(clip)), opt) if clip else opt
