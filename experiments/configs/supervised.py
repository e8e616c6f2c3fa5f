"""Supervised move prediction from the WThor expert games (``experiments/train_supervised.py``).

    python -m experiments.train_supervised --config=experiments/configs/supervised.py --workdir=runs/sl
    python -m experiments.train_supervised --config=experiments/configs/supervised.py:cpu --workdir=runs/sl_cpu

The default is sized for one accelerator (the 'standard' 6x128 ResNet, ~2 epochs over the
4.8M de-duplicated training rows); ``:cpu`` is a 3x32 network for a laptop-class CPU that
trains in under an hour; ``:test`` is a few steps for smoke tests.
"""

from __future__ import annotations

from ml_collections import ConfigDict


def get_config(variant: str = "") -> ConfigDict:
    c = ConfigDict()
    c.seed = 0
    c.data = ConfigDict(dict(
        wthor_dir="../shared/data/wthor",  # a directory of WTH_YYYY.wtb files (+ WTHOR.JOU/TRN)
        cache_dir="~/.cache/othello-jax",  # where the built dataset is cached as .npz ("" = no cache)
        test_from_year=2015,  # games from this year on are held out for testing
    ))
    # preset, then any field > 0 (or non-empty) overrides it (as in self-play training configs)
    c.network = ConfigDict(dict(preset="standard", blocks=0, channels=0, value_hidden=0, dtype=""))
    c.batch_size = 512
    c.total_steps = 20_000
    c.steps_per_call = 100  # gradient steps per compiled call (one lax.scan)
    c.unroll = False  # unroll that scan: needed on CPU, where a rolled loop around convolutions is ~30x slower
    c.augment = True  # a random dihedral symmetry per example
    # the supervised network has no score/ownership heads: their weights are 0
    c.loss = ConfigDict(dict(value_weight=0.5, l2=0.0, entropy_bonus=0.0, score_weight=0.0, ownership_weight=0.0))
    # boundaries/scales: the "steps" schedule's, in gradient steps (unused by "cosine")
    c.optimizer = ConfigDict(dict(
        name="adamw", learning_rate=2e-3, weight_decay=1e-4, grad_clip=1.0, momentum=0.9, nesterov=False,
        schedule="cosine", boundaries=(), scales=(), warmup_steps=500, total_steps=c.total_steps, end_scale=0.02))
    c.log_every = 500
    c.eval_every = 2_000  # steps between test-accuracy checks (0 = only at the end)
    c.eval_positions = 20_000  # random held-out rows per check (0 = all ~470k)
    c.max_minutes = 0.0  # stop early (evaluating and saving) after this much wall time; 0 = no limit
    c.checkpoint_keep = 2

    if variant == "cpu":
        c.network = ConfigDict(dict(preset="", blocks=3, channels=32, value_hidden=32, dtype=""))
        c.batch_size = 256
        c.total_steps = 8_000
        c.steps_per_call = 1
        c.optimizer.learning_rate = 3e-3
        c.optimizer.warmup_steps = 200
        c.optimizer.total_steps = c.total_steps
        c.log_every = 250
        c.eval_every = 1_000
        c.eval_positions = 10_000
        c.max_minutes = 55.0
    elif variant == "test":
        c.network = ConfigDict(dict(preset="tiny", blocks=0, channels=0, value_hidden=0, dtype=""))
        c.batch_size = 32
        c.total_steps = 20
        c.steps_per_call = 2
        c.unroll = True
        c.optimizer.warmup_steps = 0
        c.optimizer.total_steps = c.total_steps
        c.log_every = 10
        c.eval_every = 20
        c.eval_positions = 500
    elif variant:
        raise ValueError(f"unknown supervised config variant {variant!r}; choose cpu or test (or none)")
    return c
