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

from othello_jax.errors import InputError
from othello_jax.model import NetworkConfig
from othello_jax.records import Field, section
from othello_jax.search.search_settings import default_search_config
from othello_jax.training.settings.selfplay_settings import default_selfplay_config

RUN_FIELDS: tuple[Field, ...] = (
    ("seed", 0, "the run's random seed (networks, self-play, sampling)"),
    ("board_size", 8, "4, 6 or 8"),
    ("iterations", 100, "iterations of self-play, replay and gradient steps; a larger value extends a finished run"),
    ("max_minutes", 0.0, "stop (evaluating and checkpointing) within this much training time; 0 = no limit"),
    ("schedule_clock", "iterations", "what the learning-rate and replay-window schedules follow: iterations "
     "(gradient steps, iterations) or minutes (the share of max_minutes used)"),
    ("num_devices", 0, "devices to train on; 0 = all devices (of all hosts)"),
    ("tensorboard", True, "also write the metrics (and the curves at evaluations) as TensorBoard events"),
    ("init_network", "", "start a fresh run from a trained network: a workdir, WORKDIR/best, a .msgpack or "
     "builtin:NAME, of the run's architecture and board size"),
    ("stages", "", "settings changed from an iteration, a time or a share of the schedule on: "
     "'20: search.num_simulations=32; 50%: selfplay.temperature_plies=4'"),
)
DISTRIBUTED_FIELDS: tuple[Field, ...] = (
    ("enabled", False, "train one run from several processes (hosts) with jax.distributed (docs/multihost.md)"),
    ("coordinator_address", "", "host:port of process 0; '' = $JAX_COORDINATOR_ADDRESS or detected (TPU, SLURM)"),
    ("num_processes", 0, "0 = $JAX_NUM_PROCESSES or detected"),
    ("process_id", -1, "-1 = $JAX_PROCESS_ID or detected"),
)
# the network section is NetworkConfig's fields (model.py), unset (0, "", False) = the preset's value
NETWORK_DESCRIPTIONS: dict[str, str] = {
    "preset": "tiny (1x16), small (6x64), standard (6x128) or large (10x128) residual blocks x channels",
    "blocks": "residual blocks (tower=conv: convolution layers); 0 = the preset's",
    "channels": "channels of the residual tower (tower=conv: the first layers' width); 0 = the preset's",
    "value_hidden": "width of the value head's hidden layer; 0 = 64",
    "dtype": "activations and matmuls: float32 or bfloat16; '' = float32",
    "value_head": "scalar (tanh) or wdl (win/draw/loss logits; value = p_win - p_loss); '' = scalar",
    "score_head": "an auxiliary head predicting the final disc difference (KataGo)",
    "ownership_head": "an auxiliary head predicting each square's final owner (KataGo)",
    "global_pool": "KataGo-style global pooling biases in the residual blocks",
    "tower": "resnet (residual blocks) or conv (Liskowski et al.'s ConvN+BN: `blocks` <= 8 plain layers, "
             "widths channels x 1,1,2,2,4,4,4,4, dense policy head); '' = resnet",
    "value_margin": "supervised, labelled sets: the value target is (1 - m) * result + m * disc difference / squares",
}
REPLAY_FIELDS: tuple[Field, ...] = (
    ("lanes", 0, "independent self-play/replay lanes; 0 = one per device (fix it to compare device counts)"),
    ("capacity", 200_000, "positions kept, over all lanes"),
    ("window_start", 2, "sample from the positions of the last `window` iterations ..."),
    ("window_max", 5, "... growing by one every window_grow_every iterations up to this"),
    ("window_grow_every", 10, "0 = a fixed window of window_start iterations"),
    ("augment", True, "a random dihedral symmetry per sampled position"),
)
TRAIN_FIELDS: tuple[Field, ...] = (
    ("batch_size", 512, "positions per gradient step, over all devices"),
    ("steps_per_iteration", 100, "gradient steps per iteration"),
    ("unroll", "auto", "unroll the gradient steps: auto (on CPU, where XLA loops are ~20x slower), yes or no"),
)
LOSS_FIELDS: tuple[Field, ...] = (
    ("value_weight", 1.0, "weight of the value loss (the policy's is 1)"),
    ("l2", 1e-4, "L2 penalty on the weights, added to the loss"),
    ("entropy_bonus", 0.0, "weight of the policy's entropy, subtracted from the loss"),
    ("score_weight", 0.5, "weight of the score head's loss (with network.score_head)"),
    ("ownership_weight", 0.5, "weight of the ownership head's loss (with network.ownership_head)"),
)
OPTIMIZER_FIELDS: tuple[Field, ...] = (
    ("name", "sgd", "sgd or adamw"),
    ("learning_rate", 0.1, "the peak learning rate"),
    ("momentum", 0.9, "sgd's momentum"),
    ("nesterov", False, "sgd: Nesterov momentum"),
    ("weight_decay", 1e-4, "adamw's decoupled weight decay"),
    ("grad_clip", 0.0, "clip the gradient's global norm to this; 0 = no clipping"),
    ("schedule", "steps", "the learning rate's schedule: constant, steps or cosine"),
    ("boundaries", (5_000, 10_000), "steps: the gradient steps at which the rate is scaled ..."),
    ("scales", (0.1, 0.1), "... by these factors"),
    ("warmup_steps", 0, "linear warmup from 0, in gradient steps"),
    ("total_steps", 10_000, "cosine: the schedule's length in gradient steps; 0 = iterations x steps_per_iteration"),
    ("end_scale", 0.01, "cosine: the final rate as a share of learning_rate"),
)
GATING_FIELDS: tuple[Field, ...] = (
    ("enabled", False, "AlphaGo Zero's gating: self-play keeps its network until the latest one wins a match"),
    ("every", 5, "iterations between gating matches"),
    ("games", 128, "games per gating match (even: both colours)"),
    ("threshold", 0.55, "score the latest network needs against self-play's"),
    ("num_simulations", 0, "simulations per move in gating matches; 0 = as in self-play"),
)
EVAL_FIELDS: tuple[Field, ...] = (
    ("every", 0, "iterations between in-run evaluations (the last iteration is evaluated too); 0 = never"),
    ("games", 64, "games against each opponent (even: both colours)"),
    ("opponents", "random greedy alphabeta:depth=3", "agent specs (othello_jax.agents.parse_agent), space-separated"),
    ("num_simulations", 0, "simulations per move in evaluations; 0 = as in self-play"),
    ("best_metric", "mean", "the score that picks WORKDIR/best: mean, or an opponent's name"),
    ("testset", False, "6x6: also score the network on the perfect-play test set (testset/* metrics)"),
)
CHECKPOINT_FIELDS: tuple[Field, ...] = (
    ("every", 5, "iterations between checkpoints ..."),
    ("every_minutes", 10.0, "... and also when this many minutes have passed since the last one; 0 = off"),
    ("keep", 3, "checkpoints kept"),
    ("save_buffer", True, "save the replay buffer too (a resumed run continues from the same positions)"),
)
# network fields self-play training does not offer: its value targets are results, not margins
SELFPLAY_WITHOUT = ("value_margin",)


def network_section(preset: str = "", without: tuple[str, ...] = (), **values) -> ConfigDict:
    """A ``network`` section (the training and supervised configs share it): ``preset``, then every
    :class:`~othello_jax.model.NetworkConfig` field, unset (0, "" or False: the preset's or the class's
    value, see ``run_settings.network_config``) unless given in ``values``; ``without`` names fields the
    program cannot use, left out so that overriding them is an unknown-key error."""
    unset = {int: 0, float: 0.0, str: "", bool: False}
    fields = {f.name: unset[type(f.default)] for f in dataclasses.fields(NetworkConfig) if f.name not in without}
    unknown = set(values) - set(fields)
    if unknown:
        raise InputError(f"unknown network field(s) {', '.join(sorted(unknown))}")
    return ConfigDict(dict(preset=preset, **{**fields, **values}))


def default_config() -> ConfigDict:
    """Every setting a training run reads, with middle-of-the-road defaults for 8x8 (descriptions in the tables)."""
    return section(
        RUN_FIELDS,
        distributed=section(DISTRIBUTED_FIELDS),
        network=network_section("small", without=SELFPLAY_WITHOUT, value_head="scalar"),
        search=default_search_config(),
        selfplay=default_selfplay_config(),
        replay=section(REPLAY_FIELDS),
        train=section(TRAIN_FIELDS),
        loss=section(LOSS_FIELDS),
        optimizer=section(OPTIMIZER_FIELDS),
        gating=section(GATING_FIELDS),
        eval=section(EVAL_FIELDS),
        checkpoint=section(CHECKPOINT_FIELDS),
    )
