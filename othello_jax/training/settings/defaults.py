"""Training-run configuration: every setting a run reads and its default (the only place they live).

A run is described by one ``ml_collections.ConfigDict`` (see ``default_config``); the files in
``experiments/configs/`` start from it and change what they need. ``make_train`` resolves it
once, with every stage, into typed records checked with one-line errors
(:mod:`othello_jax.training.settings.run_settings`); code below it reads their fields. How settings change over
a run (stages, the schedule clock) is in :mod:`othello_jax.training.settings.stages`.
"""

from __future__ import annotations

import dataclasses

from ml_collections import ConfigDict

from othello_jax import search
from othello_jax.errors import InputError
from othello_jax.model import NetworkConfig
from othello_jax.training.settings.selfplay_settings import default_selfplay_config

# network fields self-play training does not offer: its value targets are results, not margins
SELFPLAY_WITHOUT = ("value_margin",)


def network_section(preset: str = "", without: tuple[str, ...] = (), **values) -> ConfigDict:
    """A ``network`` section (the training and supervised configs share it): ``preset``, then every
    :class:`~othello_jax.model.NetworkConfig` field, unset (0, "" or False: the preset's or the class's
    value, see ``settings.network_config``) unless given in ``values``; ``without`` names fields the
    program cannot use, left out so that overriding them is an unknown-key error."""
    unset = {int: 0, float: 0.0, str: "", bool: False}
    fields = {f.name: unset[type(f.default)] for f in dataclasses.fields(NetworkConfig) if f.name not in without}
    unknown = set(values) - set(fields)
    if unknown:
        raise InputError(f"unknown network field(s) {', '.join(sorted(unknown))}")
    return ConfigDict(dict(preset=preset, **{**fields, **values}))


def default_config() -> ConfigDict:
    """Every setting a training run reads, with middle-of-the-road defaults for 8x8."""
    c = ConfigDict()
    c.seed = 0
    c.board_size = 8
    c.iterations = 100
    c.max_minutes = 0.0  # stop (and checkpoint) after this much training time; 0 = no limit
    # what the learning-rate and replay-window schedules follow: "iterations" (gradient steps,
    # iterations) or "minutes" (the share of max_minutes used; see the module docstring)
    c.schedule_clock = "iterations"
    c.num_devices = 0  # 0 = all devices (of all hosts)
    c.tensorboard = True  # also write the metrics (and the curves at evaluations) as TensorBoard events in the workdir
    # start from a trained network instead of random weights: a training or supervised workdir (its
    # latest checkpoint), WORKDIR/best, a portable .msgpack file or builtin:NAME. A fresh run only (a
    # resumed run continues from its checkpoint); its architecture and board size must be the run's
    c.init_network = ""
    # several processes (hosts) training one run: jax.distributed.initialize() with these settings;
    # "" / 0 / -1 = from $JAX_COORDINATOR_ADDRESS, $JAX_NUM_PROCESSES, $JAX_PROCESS_ID, or detected
    # (TPU slices, SLURM, ...). Started when `enabled` or a coordinator address is given (docs/multihost.md)
    c.distributed = ConfigDict(dict(enabled=False, coordinator_address="", num_processes=0, process_id=-1))

    # preset, then any field > 0 (or non-empty) overrides it
    # value_head "scalar" | "wdl"; score/ownership heads (auxiliary targets); global pooling (experiments/ab_arms.md);
    # move_planes: both sides' legal moves as input planes (derived inside the network);
    # policy_channels/value_channels: the heads' 1x1 convolution widths (0 = AlphaZero's 2 and 1)
    c.network = network_section("small", without=SELFPLAY_WITHOUT, value_head="scalar")
    c.search = search.default_search_config()
    c.selfplay = default_selfplay_config()

    c.replay = ConfigDict(dict(
        lanes=0,  # independent replay/self-play lanes; 0 = one per device; fix it to compare device counts
        capacity=200_000,  # positions over all lanes
        window_start=2,  # sample from the positions of the last `window` iterations ...
        window_max=5,  # ... growing by one every `window_grow_every` iterations up to this
        window_grow_every=10,  # 0 = fixed window_start
        augment=True,  # random dihedral symmetry per sampled position
        average_duplicates=False,  # average targets of identical positions within a batch
    ))
    # unroll: "auto" unrolls the gradient steps on CPU, where XLA loops make them ~20x slower
    c.train = ConfigDict(dict(batch_size=512, steps_per_iteration=100, unroll="auto"))
    # score/ownership weights count only when the network has that head
    c.loss = ConfigDict(dict(value_weight=1.0, l2=1e-4, entropy_bonus=0.0, score_weight=0.5, ownership_weight=0.5))
    c.optimizer = ConfigDict(dict(
        name="sgd", learning_rate=0.1, momentum=0.9, nesterov=False, weight_decay=1e-4, grad_clip=0.0,
        schedule="steps", boundaries=(5_000, 10_000), scales=(0.1, 0.1),  # in gradient steps
        warmup_steps=0, total_steps=10_000, end_scale=0.01,
    ))
    c.stages = ""

    # AlphaGo Zero style gating: the latest net must score >= threshold against the self-play champion
    c.gating = ConfigDict(dict(enabled=False, every=5, games=128, threshold=0.55, num_simulations=0))
    # arena evaluation every `every` iterations (0 = never); num_simulations 0 = as in self-play
    # opponents: agent specs (see othello_jax.agents.parse_agent) separated by spaces
    # testset (6x6 only): also score the network on the perfect-play test set (testset/* metrics)
    c.eval = ConfigDict(dict(every=0, games=64, opponents="random greedy alphabeta:depth=3",
                             num_simulations=0, best_metric="mean", testset=False))
    # every `every` iterations, and also when `every_minutes` have passed since the last one (0 = off)
    c.checkpoint = ConfigDict(dict(every=5, every_minutes=10.0, keep=3, save_buffer=True))
    return c
