"""Supervised learning (``experiments/train_supervised.py``) from the WThor expert games, or from
labelled sets of exactly solved positions (``data.labels``, made by ``othello-jax make-labels``).

    python -m experiments.train_supervised --config=experiments/configs/supervised.py --workdir=runs/sl
    python -m experiments.train_supervised --config=experiments/configs/supervised.py:cpu --workdir=runs/sl_cpu
    python -m experiments.train_supervised --config=experiments/configs/supervised.py:labels6 \
        --config.data.labels=/work/labels/self.npz,/work/labels/offdist.npz --config.max_minutes=8 \
        --config.network.blocks=6 --config.network.channels=64 --workdir=runs/cap_6x64

The default is sized for one accelerator (the 'standard' 6x128 ResNet, ~2 epochs over the
4.8M de-duplicated training rows); ``:cpu`` is a 3x32 network for a laptop-class CPU that
trains in under an hour; ``:labels6`` learns 6x6 exact labels with the quickstart network
(``othello6_cpu``'s 4x32) for ``max_minutes`` on a CPU, its cosine learning rate running over
that budget (``schedule_clock = "minutes"``), so any budget anneals; ``:test`` is a few steps
for smoke tests; ``:wthor_cpu`` is the reproduction of Liskowski et al.'s move predictor on a
2-core CPU (their random split, a 6x64 ResNet, a 5-hour budget a stopped run resumes);
``:wthor_gpu`` is their Conv8+BN on one GPU in 8 minutes (``experiments/gpu_wthor.sh``);
``:expert8_cpu`` is the expert network 8x8 self-play can start from (``othello8_cpu``'s 4x32, 30
minutes, perfect-endgame value targets); ``:recipe_sgd`` and ``:recipe_adamw`` are Liskowski et
al.'s recipe (SGD, momentum 0.95, rate 0.1 halved 12 times, L2 5e-4) and the project's (AdamW,
cosine) at equal steps on the same network and split.
"""

from __future__ import annotations

from ml_collections import ConfigDict

from othello_jax.training.settings.defaults import network_section
from othello_jax.training.settings.supervised_settings import SUPERVISED_WITHOUT, default_supervised_config


def network(preset: str = "", **values) -> ConfigDict:
    """The ``network`` section (:func:`~othello_jax.training.settings.defaults.network_section`): a preset,
    then any field set (> 0 or non-empty) overrides it."""
    return network_section(preset, without=SUPERVISED_WITHOUT, **values)


def minutes_budget(c: ConfigDict, minutes: float, steps_per_call: int = 1, warmup_steps: int = 100,
                   **optimizer) -> None:
    """Train for ``minutes`` of wall clock with no step limit, AdamW's cosine running over that budget
    (``schedule_clock="minutes"``); ``optimizer.total_steps`` then only places the warmup, at 1% of it."""
    c.total_steps = 100_000_000  # no step limit: max_minutes ends the run
    c.steps_per_call = steps_per_call
    c.max_minutes = minutes
    c.schedule_clock = "minutes"
    c.optimizer.update(learning_rate=2e-3, warmup_steps=warmup_steps, total_steps=100 * warmup_steps, **optimizer)


RECIPES = ("recipe_sgd", "recipe_adamw")
RECIPE_STEPS = 10_000


def get_config(variant: str = "") -> ConfigDict:
    """The defaults (docs/settings.md, "Supervised learning"), or one of the variants below."""
    c = default_supervised_config()
    if variant == "cpu":
        c.network = network(blocks=3, channels=32, value_hidden=32)
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
    elif variant == "wthor_cpu":
        # the reproduction of Liskowski et al. on a 2-core CPU (issue 55): their random split of
        # the unique rows, a random symmetry per example (their Unique-S), the project's 6x64
        # ResNet, AdamW annealed over a 5-hour budget that a stopped run resumes across sessions
        c.data.split = "random"
        c.network = network(blocks=6, channels=64, value_hidden=64)
        c.batch_size = 256
        minutes_budget(c, 300.0, end_scale=0.02)
        c.log_every = 1_000
        c.eval_every = 5_000
        c.eval_positions = 20_000
        c.checkpoint_minutes = 10.0
    elif variant == "wthor_gpu":
        # Liskowski et al.'s Conv8+BN on one GPU inside a device session (experiments/gpu_wthor.sh):
        # their random split and widths, bfloat16, AdamW annealed over 8 minutes, every held-out row
        c.data.split = "random"
        c.network = network(tower="conv", blocks=8, channels=64, value_hidden=64, dtype="bfloat16")
        c.batch_size = 1024
        minutes_budget(c, 8.0, steps_per_call=200, warmup_steps=200, end_scale=0.02)
        c.log_every = 2_000
        c.eval_every = 0  # once, at the end
        c.eval_positions = 0
        c.checkpoint_minutes = 0.0
        c.tensorboard = False
    elif variant == "expert8_cpu":
        # the expert start of 8x8 self-play (othello8_cpu's 4x32 network, so `othello-jax train
        # --config=othello8_cpu --config.init_network=WORKDIR` starts from it): 30 CPU minutes on the
        # games before 2015, value targets WThor's perfect-endgame results
        c.network = network(blocks=4, channels=32, value_hidden=32)
        c.data.value_target = "perfect_endgame"
        c.batch_size = 256
        minutes_budget(c, 30.0, end_scale=0.02)
        c.log_every = 1_000
        c.eval_every = 4_000
        c.eval_positions = 20_000
        c.checkpoint_minutes = 10.0
    elif variant in RECIPES:
        # Liskowski et al.'s training recipe against the project's at equal steps (issue 55): the
        # expert start's 4x32 network on their random split, 10,000 steps of 256 either way
        c.data.split = "random"
        c.network = network(blocks=4, channels=32, value_hidden=32)
        c.batch_size = 256
        c.total_steps = RECIPE_STEPS
        c.steps_per_call = 1
        c.log_every = 500
        c.eval_every = 2_500
        c.eval_positions = 20_000
        c.checkpoint_minutes = 10.0
        if variant == "recipe_sgd":  # SGD, momentum 0.95, rate 0.1 halved twice per epoch, L2 5e-4: their
            # 6 epochs' 12 halvings spread over the run's steps
            c.loss.l2 = 5e-4
            halvings = 12
            c.optimizer.update(name="sgd", learning_rate=0.1, momentum=0.95, nesterov=False, weight_decay=0.0,
                               grad_clip=0.0, schedule="steps", warmup_steps=0, total_steps=RECIPE_STEPS,
                               boundaries=tuple(RECIPE_STEPS * k // (halvings + 1) for k in range(1, halvings + 1)),
                               scales=(0.5,) * halvings)
        else:  # the project's: AdamW, cosine to 2% after a 1% warmup
            c.optimizer.update(learning_rate=2e-3, warmup_steps=RECIPE_STEPS // 100, total_steps=RECIPE_STEPS,
                               end_scale=0.02)
    elif variant == "labels6":
        c.data.labels = "labels/self.npz,labels/offdist.npz"  # `othello-jax make-labels` files; override
        c.network = network(blocks=4, channels=32, value_hidden=32)
        c.batch_size = 256
        minutes_budget(c, 8.0, weight_decay=1e-4, end_scale=0.05)  # othello6_cpu's AdamW
        c.log_every = 250
        c.eval_every = 1_000
        c.eval_positions = 0  # every held-out position
    elif variant == "test":
        c.network = network("tiny")
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
        raise ValueError(f"unknown supervised config variant {variant!r}; choose cpu, wthor_cpu, wthor_gpu, "
                         "expert8_cpu, recipe_sgd, recipe_adamw, labels6 or test (or none)")
    return c
