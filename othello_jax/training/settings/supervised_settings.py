"""The supervised trainer's settings: defaults (``default_supervised_config``) and the typed records it reads.

A supervised run learns from the WThor expert games or from labelled sets of exactly solved
positions (:mod:`othello_jax.training.supervised.trainer`). Its config shares the ``network``,
``loss`` and ``optimizer`` sections (and their records) with self-play training; the rest is its
own. ``experiments/configs/supervised.py`` starts from :func:`default_supervised_config`.
"""

from __future__ import annotations

import dataclasses

from ml_collections import ConfigDict

from othello_jax.data.expert import SPLITS, VALUE_TARGETS
from othello_jax.errors import need
from othello_jax.model import NetworkConfig
from othello_jax.records import Field, check_known, read_record, section
from othello_jax.training.settings.defaults import LOSS_FIELDS, OPTIMIZER_FIELDS, network_section
from othello_jax.training.settings.retired import check_retired, retired_key
from othello_jax.training.settings.run_settings import (
    LossSettings,
    OptimizerSettings,
    network_config,
    optimizer_settings,
)
from othello_jax.training.settings.stages import CLOCKS

SUPERVISED_FIELDS: tuple[Field, ...] = (
    ("seed", 0, "the run's random seed"),
    ("init_network", "", "a trained network a fresh run starts from (a workdir, a .msgpack file or builtin:NAME, "
     "of this run's network.* and board); '' = random weights; a resumed run ignores it"),
    ("batch_size", 512, "examples per gradient step, over all devices"),
    ("total_steps", 20_000, "gradient steps of the run"),
    ("steps_per_call", 100, "gradient steps per compiled call (one lax.scan)"),
    ("unroll", False, "unroll that scan: needed on CPU, where a rolled loop around convolutions is ~30x slower"),
    ("augment", True, "a random dihedral symmetry per example"),
    ("log_every", 500, "gradient steps between metrics lines"),
    ("eval_every", 2_000, "gradient steps between held-out accuracy checks; 0 = only at the end"),
    ("eval_positions", 20_000, "random held-out rows per check; 0 = all"),
    ("max_minutes", 0.0, "stop early (evaluating and saving) after this much wall time, the data's loading not "
     "counted; 0 = no limit"),
    ("schedule_clock", "iterations", "what the learning rate follows: iterations (optimizer.total_steps) or "
     "minutes (the max_minutes budget left after the first compiled call)"),
    ("checkpoint_keep", 2, "checkpoints kept"),
    ("checkpoint_minutes", 10.0, "also save (network, optimizer state, progress) this often between evaluations; "
     "0 = at evaluations only"),
    ("tensorboard", True, "also write the metrics (and the curves at evaluations) as TensorBoard events"),
    ("num_devices", 0, "devices each batch is split over (data parallel); 0 = the most that divide batch_size"),
)
DATA_FIELDS: tuple[Field, ...] = (
    ("labels", "", "comma-separated labelled sets (.npz, from make-labels) to learn from instead of WThor; '' = WThor"),
    ("wthor_dir", "", "a directory of WTH_YYYY.wtb files; '' = $OTHELLO_JAX_WTHOR, else where `othello-jax wthor "
     "download` puts them ($XDG_CACHE_HOME/othello-jax/wthor or ~/.cache/othello-jax/wthor)"),
    ("cache_dir", "~/.cache/othello-jax", "where the built dataset is cached as .npz; '' = no cache"),
    ("split", "year", "WThor's held-out rows: year (games from test_from_year on: the honest figure) or random "
     "(a test_share of the unique (position, move) rows, as Liskowski et al.)"),
    ("test_from_year", 2015, "split=year: games from this year on are held out for testing"),
    ("test_share", 0.05, "split=random: the share of unique rows held out"),
    ("sampling", "unique", "WThor's training examples: unique (each (position, move) once, Liskowski et al.'s "
     "Unique; with augment, Unique-S) or original (as often as the games played it: Original, Original-S)"),
    ("value_target", "result", "WThor's value targets: result (each game's) or perfect_endgame (WThor's theoretical "
     "result, the game's had its last 24 moves been perfect, for the positions with 24 or more empties)"),
    ("train_positions", 0, "labels only: train on a fixed random subset of this many positions; 0 = all"),
    ("policy_temperature", 0.0, "labels only: 0 = policy uniform over the optimal moves; T > 0 (discs) weights "
     "every solved move by exp((value - best) / T)"),
)
SAMPLINGS = ("unique", "original")
# supervised networks have no score/ownership heads, global pooling or WDL value head
SUPERVISED_WITHOUT = ("value_head", "score_head", "ownership_head", "global_pool")
# the supervised trainer's own defaults of the shared sections (descriptions as in defaults.py)
SUPERVISED_LOSS = dict(value_weight=0.5, l2=0.0, entropy_bonus=0.0, score_weight=0.0, ownership_weight=0.0)
SUPERVISED_OPTIMIZER = dict(name="adamw", learning_rate=2e-3, weight_decay=1e-4, grad_clip=1.0, momentum=0.9,
                            nesterov=False, schedule="cosine", boundaries=(), scales=(), warmup_steps=500,
                            total_steps=20_000, end_scale=0.02)
# settings that came after supervised runs were written: an older config reads them at these values
ADDED = dict(init_network="", split="year", test_share=0.05, sampling="unique", value_target="result",
             train_positions=0, policy_temperature=0.0, num_devices=0, tensorboard=True, checkpoint_minutes=0.0)


def default_supervised_config() -> ConfigDict:
    """Every setting a supervised run reads, sized for one accelerator (a 6x128 network)."""
    loss, optimizer = section(LOSS_FIELDS), section(OPTIMIZER_FIELDS)
    loss.update(SUPERVISED_LOSS)
    optimizer.update(SUPERVISED_OPTIMIZER)
    return section(SUPERVISED_FIELDS, data=section(DATA_FIELDS),
                   network=network_section("standard", without=SUPERVISED_WITHOUT), loss=loss, optimizer=optimizer)


@dataclasses.dataclass(frozen=True)
class DataSettings:
    """``config.data``: where the expert games are and which years are held out, or the labelled
    sets to learn from instead (``labels``: comma-separated ``.npz`` files; empty = WThor)."""

    labels: str
    wthor_dir: str
    cache_dir: str
    split: str
    test_from_year: int
    test_share: float
    sampling: str
    value_target: str
    train_positions: int
    policy_temperature: float


@dataclasses.dataclass(frozen=True)
class SupervisedSettings:
    """A supervised run's config resolved (field names are the config's, see :data:`SUPERVISED_FIELDS`)."""

    seed: int
    init_network: str
    data: DataSettings
    network: NetworkConfig
    batch_size: int
    total_steps: int
    steps_per_call: int
    unroll: bool
    augment: bool
    loss: LossSettings
    optimizer: OptimizerSettings
    log_every: int
    eval_every: int
    eval_positions: int
    max_minutes: float
    schedule_clock: str
    checkpoint_keep: int
    checkpoint_minutes: float
    num_devices: int
    tensorboard: bool


def resolve(config: ConfigDict) -> SupervisedSettings:
    """``config`` as :class:`SupervisedSettings`; a one-line ``InputError`` names the first
    impossible (or retired) setting (the data directory is checked by the trainer's ``check_config``)."""
    check_retired(config)
    check_known(config, default_supervised_config(), also=retired_key)
    data = read_record(DataSettings, config.data, "data", added=ADDED)
    settings = read_record(SupervisedSettings, config, "config", added=ADDED, data=data,
                           network=network_config(config), loss=read_record(LossSettings, config.loss, "loss"),
                           optimizer=optimizer_settings(config.optimizer))
    need(settings.batch_size >= 1, f"batch_size must be >= 1, got {settings.batch_size}")
    need(settings.total_steps >= 1, f"total_steps must be >= 1, got {settings.total_steps}")
    need(settings.steps_per_call >= 1, f"steps_per_call must be >= 1, got {settings.steps_per_call}")
    need(settings.eval_every >= 0, "eval_every must be >= 0")
    need(settings.num_devices >= 0, f"num_devices must be >= 0 (0 = all), got {settings.num_devices}")
    need(settings.num_devices == 0 or settings.batch_size % settings.num_devices == 0,
         f"batch_size {settings.batch_size} must be a multiple of num_devices {settings.num_devices}")
    need(settings.max_minutes >= 0, "max_minutes must be >= 0")
    need(settings.checkpoint_minutes >= 0, "checkpoint_minutes must be >= 0 (0 = at evaluations only)")
    need(settings.schedule_clock in CLOCKS,
         f"schedule_clock must be one of {', '.join(CLOCKS)}, got {settings.schedule_clock!r}")
    need(settings.schedule_clock != "minutes" or settings.max_minutes > 0,
         "schedule_clock='minutes' needs max_minutes > 0 (the schedule runs over that budget)")
    need(data.train_positions >= 0, f"data.train_positions must be >= 0 (0 = all), got {data.train_positions}")
    need(data.train_positions == 0 or data.labels.strip(),
         "data.train_positions needs data.labels (a subset of labelled positions; WThor trains on every game)")
    need(data.policy_temperature >= 0, f"data.policy_temperature must be >= 0 (discs), got {data.policy_temperature}")
    need(data.policy_temperature == 0 or data.labels.strip(),
         "data.policy_temperature needs data.labels (exact move values; WThor has one expert move)")
    need(data.split in SPLITS, f"data.split must be one of {', '.join(SPLITS)}, got {data.split!r}")
    need(0.0 < data.test_share < 1.0, f"data.test_share must be in (0, 1), got {data.test_share}")
    need(data.sampling in SAMPLINGS, f"data.sampling must be one of {', '.join(SAMPLINGS)}, got {data.sampling!r}")
    need(data.value_target in VALUE_TARGETS,
         f"data.value_target must be one of {', '.join(VALUE_TARGETS)}, got {data.value_target!r}")
    need(data.value_target == "result" or not data.labels.strip(),
         "data.value_target=perfect_endgame needs WThor (labelled sets hold exact values)")
    need(data.sampling == "unique" or not data.labels.strip(),
         "data.sampling=original needs WThor (labelled sets hold each position once)")
    need(1977 < data.test_from_year <= 2100, f"data.test_from_year {data.test_from_year} is not a year after 1977")
    need(settings.network.value_margin == 0 or data.labels.strip(),
         "network.value_margin needs data.labels (exact disc values; WThor trains on results)")
    return settings
