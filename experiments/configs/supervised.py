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
for smoke tests.
"""

from __future__ import annotations

from ml_collections import ConfigDict

from othello_jax.training.settings.defaults import network_section

# supervised networks have no score/ownership heads, global pooling or WDL value head.
# ``value_margin`` (labelled sets only): the value target is (1 - m) * result + m * exact disc
# difference / squares instead of the result alone, and the network's searches value finished games
# the same way (``NetworkConfig.value_margin``)
WITHOUT = ("value_head", "score_head", "ownership_head", "global_pool")


def network(preset: str = "", **values) -> ConfigDict:
    """The ``network`` section (:func:`~othello_jax.training.settings.defaults.network_section`): a preset,
    then any field set (> 0 or non-empty) overrides it."""
    return network_section(preset, without=WITHOUT, **values)


def get_config(variant: str = "") -> ConfigDict:
    c = ConfigDict()
    c.seed = 0
    c.data = ConfigDict(dict(
        labels="",  # comma-separated labelled sets (.npz) to learn from instead of WThor ("" = WThor)
        wthor_dir="../shared/data/wthor",  # a directory of WTH_YYYY.wtb files (+ WTHOR.JOU/TRN)
        cache_dir="~/.cache/othello-jax",  # where the built dataset is cached as .npz ("" = no cache)
        test_from_year=2015,  # games from this year on are held out for testing
        # > 0: train on a fixed random subset of this many of the labelled sets' training positions
        # (data-scaling measurements; the held-out positions stay all of them); labels only
        train_positions=0,
        # labels only: 0 = the policy target is uniform over the optimal moves; T > 0 (discs) weights
        # every solved legal move by exp((value - best) / T), so the policy learns margins too
        policy_temperature=0.0,
    ))
    c.network = network("standard")
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
    # "iterations": the learning-rate schedule runs over optimizer.total_steps gradient steps;
    # "minutes": over the max_minutes budget left after the first compiled call (the share of it used,
    # or of total_steps done if larger); optimizer.total_steps then only places the warmup and boundaries
    c.schedule_clock = "iterations"
    c.checkpoint_keep = 2
    c.tensorboard = True  # also write the metrics (and the curves at evaluations) as TensorBoard events in the workdir
    # devices each batch is split over (data parallel; on a CPU one host device per core, which
    # train_supervised asks for): 0 = the most devices that divide batch_size
    c.num_devices = 0

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
    elif variant == "labels6":
        c.data.labels = "labels/self.npz,labels/offdist.npz"  # `othello-jax make-labels` files; override
        c.network = network(blocks=4, channels=32, value_hidden=32)
        c.batch_size = 256
        c.total_steps = 100_000_000  # no step limit: max_minutes ends the run
        c.steps_per_call = 1
        c.max_minutes = 8.0
        c.schedule_clock = "minutes"
        # othello6_cpu's AdamW; total_steps here only places the warmup: 1% of the budget
        c.optimizer.update(learning_rate=2e-3, weight_decay=1e-4, warmup_steps=100, total_steps=10_000,
                           end_scale=0.05)
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
        raise ValueError(f"unknown supervised config variant {variant!r}; choose cpu, labels6 or test (or none)")
    return c
