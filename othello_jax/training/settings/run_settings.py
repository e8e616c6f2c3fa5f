"""A training run's settings as frozen, typed records, resolved and validated once.

    settings = resolve(config)                  # one config -> RunSettings (one-line InputError if impossible)
    stages, per_stage = resolve_stages(config)  # the base config and every schedule stage's

``config`` is the ``ml_collections.ConfigDict`` of :func:`othello_jax.training.settings.defaults.default_config`
(the files in ``experiments/configs/`` start from it); every default lives there and nowhere
else: a record is filled with the config's fields only, so a config missing a field is a
one-line error, not a second default. The records keep the config's names
(``settings.eval.every``, ``settings.train.batch_size``, ...), so code below ``make_train``
reads them as it read the config. The search and self-play records come from their own modules
(:class:`~othello_jax.search.SearchSettings`, :class:`.selfplay_settings.SelfPlaySettings`),
built in one place each: the last lines of :func:`resolve`.
"""

from __future__ import annotations

import dataclasses

from ml_collections import ConfigDict

from othello_jax import agents
from othello_jax.errors import InputError, need
from othello_jax.game import SIZES, Othello
from othello_jax.model import NetworkConfig
from othello_jax.records import check_known, read_record
from othello_jax.search import SearchSettings
from othello_jax.training.settings.defaults import default_config
from othello_jax.training.settings.retired import check_retired, retired_key
from othello_jax.training.settings.selfplay_settings import SelfPlaySettings
from othello_jax.training.settings.stages import CLOCKS, Stage, parse_stages, stage_config, stage_label, stage_unit

OPTIMIZERS = ("sgd", "adamw")
LR_SCHEDULES = ("constant", "steps", "cosine")
UNROLL_MODES = ("auto", "yes", "no")


# ---------------------------------------------------------------------------------------------
# the records (field names are the config's)
# ---------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class DistributedSettings:
    """``config.distributed``: several processes training one run (docs/multihost.md)."""

    enabled: bool
    coordinator_address: str
    num_processes: int
    process_id: int


@dataclasses.dataclass(frozen=True)
class ReplaySettings:
    """``config.replay``: lanes, capacity and the sampling window's schedule."""

    lanes: int
    capacity: int
    window_start: int
    window_max: int
    window_grow_every: int
    augment: bool

    @property
    def max_window(self) -> int:
        """The largest window the schedule can reach (static: sizes the buffer's generation ring)."""
        return self.window_max if self.window_grow_every > 0 else self.window_start


@dataclasses.dataclass(frozen=True)
class TrainSettings:
    """``config.train``: the gradient steps of one iteration."""

    batch_size: int
    steps_per_iteration: int
    unroll: str  # "auto" | "yes" | "no"


@dataclasses.dataclass(frozen=True)
class LossSettings:
    """``config.loss``: weights of the loss terms (score/ownership count only with those heads)."""

    value_weight: float
    l2: float
    entropy_bonus: float
    score_weight: float
    ownership_weight: float


@dataclasses.dataclass(frozen=True)
class OptimizerSettings:
    """``config.optimizer`` with ``total_steps`` resolved (0 -> ``iterations * steps_per_iteration``,
    so a cosine schedule spans the whole run however ``--config.iterations`` is overridden)."""

    name: str
    learning_rate: float
    momentum: float
    nesterov: bool
    weight_decay: float
    grad_clip: float
    schedule: str
    boundaries: tuple[int, ...]
    scales: tuple[float, ...]
    warmup_steps: int
    total_steps: int
    end_scale: float


@dataclasses.dataclass(frozen=True)
class EvalSettings:
    """``config.eval``: periodic arena evaluation (``every`` 0 = never)."""

    every: int
    games: int
    opponents: str
    num_simulations: int
    best_metric: str
    testset: bool


@dataclasses.dataclass(frozen=True)
class GatingSettings:
    """``config.gating``: AlphaGo Zero style gating of the self-play network."""

    enabled: bool
    every: int
    games: int
    threshold: float
    num_simulations: int


@dataclasses.dataclass(frozen=True)
class CheckpointSettings:
    """``config.checkpoint``: when to save and how many to keep."""

    every: int
    every_minutes: float
    keep: int
    save_buffer: bool


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """One config (the base or a stage's) resolved: every setting a run reads below ``make_train``."""

    seed: int
    board_size: int
    iterations: int
    max_minutes: float
    schedule_clock: str
    num_devices: int
    tensorboard: bool
    init_network: str
    distributed: DistributedSettings
    network: NetworkConfig
    replay: ReplaySettings
    train: TrainSettings
    loss: LossSettings
    optimizer: OptimizerSettings
    eval: EvalSettings
    gating: GatingSettings
    checkpoint: CheckpointSettings
    search: SearchSettings
    selfplay: SelfPlaySettings

    @property
    def eval_simulations(self) -> int:
        """Simulations per move in in-run evaluations (``eval.num_simulations``, 0 = self-play's)."""
        return self.eval.num_simulations or self.search.num_simulations

    @property
    def gate_simulations(self) -> int:
        """Simulations per move in gating matches (``gating.num_simulations``, 0 = self-play's)."""
        return self.gating.num_simulations or self.search.num_simulations


# ---------------------------------------------------------------------------------------------
# resolving
# ---------------------------------------------------------------------------------------------
def network_config(config: ConfigDict) -> NetworkConfig:
    """``config.network``: ``preset`` (tiny/small/standard/large) overridden by ``blocks``/``channels``/... if > 0."""
    net = config.network
    base = NetworkConfig.preset(net.preset) if "preset" in net and net.preset else NetworkConfig()
    overrides = {f.name: net[f.name] for f in dataclasses.fields(NetworkConfig)
                 if f.name in net and net[f.name] not in (0, None, "")}
    return dataclasses.replace(base, **overrides)


def optimizer_settings(section: ConfigDict, total_steps: int | None = None) -> OptimizerSettings:
    """``section`` as an :class:`OptimizerSettings`, with ``total_steps`` when given; checked."""
    resolved = {} if total_steps is None else {"total_steps": int(total_steps)}
    optimizer = read_record(OptimizerSettings, section, "optimizer", **resolved)
    need(optimizer.name in OPTIMIZERS, f"unknown optimizer {optimizer.name!r}; choose sgd or adamw")
    need(optimizer.schedule in LR_SCHEDULES,
         f"unknown learning-rate schedule {optimizer.schedule!r}; choose constant, steps or cosine")
    return optimizer


def resolve(config: ConfigDict) -> RunSettings:
    """``config`` (one stage's, overrides applied) as a :class:`RunSettings`; raises ``InputError``
    with a one-line message naming the first impossible setting."""
    clock = str(config.schedule_clock)
    need(clock in CLOCKS, f"schedule_clock must be one of {', '.join(CLOCKS)}, got {clock!r}")
    need(clock != "minutes" or float(config.max_minutes) > 0,
         "schedule_clock='minutes' needs max_minutes > 0 (the schedules run over that budget)")
    board_size, iterations = int(config.board_size), int(config.iterations)
    need(board_size in SIZES, f"board_size must be one of {SIZES}, got {config.board_size}")
    need(iterations >= 1, f"iterations must be >= 1, got {config.iterations}")
    need(float(config.max_minutes) >= 0, "max_minutes must be >= 0")
    train = read_record(TrainSettings, config.train, "train")
    need(train.batch_size >= 1, f"train.batch_size must be >= 1, got {train.batch_size}")
    need(train.steps_per_iteration >= 1, "train.steps_per_iteration must be >= 1")
    need(train.unroll in UNROLL_MODES, f"train.unroll must be auto, yes or no, got {train.unroll!r}")
    replay = read_record(ReplaySettings, config.replay, "replay")
    need(replay.capacity >= 1, "replay.capacity must be >= 1")
    need(replay.window_start >= 1, "replay.window_start must be >= 1")
    need(replay.window_max >= replay.window_start, "replay.window_max must be >= replay.window_start")
    checkpoint = read_record(CheckpointSettings, config.checkpoint, "checkpoint")
    need(checkpoint.every >= 1, "checkpoint.every must be >= 1")
    need(checkpoint.every_minutes >= 0, "checkpoint.every_minutes must be >= 0 (0 = off)")
    need(checkpoint.keep >= 1, "checkpoint.keep must be >= 1")
    distributed = read_record(DistributedSettings, config.distributed, "distributed")
    need(distributed.num_processes >= 0, "distributed.num_processes must be >= 0 (0 = from the env)")
    need(distributed.process_id >= -1, "distributed.process_id must be >= 0 (-1 = from the env)")
    evaluation = read_record(EvalSettings, config.eval, "eval")
    gating = read_record(GatingSettings, config.gating, "gating")
    need(evaluation.every >= 0, "eval.every must be >= 0 (0 = never)")
    need(0.0 < gating.threshold <= 1.0, "gating.threshold must be in (0, 1]")
    need(not gating.enabled or gating.every >= 1, "gating.every must be >= 1")
    need(evaluation.games >= 2 and evaluation.games % 2 == 0,
         "eval.games must be even and >= 2 (each opening is played with both colours)")
    need(not gating.enabled or (gating.games >= 2 and gating.games % 2 == 0), "gating.games must be even and >= 2")
    loss = read_record(LossSettings, config.loss, "loss")
    for name in ("score_weight", "ownership_weight"):
        need(getattr(loss, name) >= 0, f"loss.{name} must be >= 0, got {config.loss[name]}")
    network = network_config(config)  # unknown preset or value head -> InputError
    if evaluation.every:
        game = Othello(board_size)
        for spec in evaluation.opponents.split():
            agents.parse_agent(spec, game)  # AgentSpecError (an InputError) names a bad spec
    need(not evaluation.testset or board_size == 6,
         f"eval.testset needs board_size 6 (the perfect-play test set is 6x6), got {config.board_size}")
    total_steps = int(config.optimizer.total_steps)
    optimizer = optimizer_settings(config.optimizer,
                                   total_steps if total_steps > 0 else iterations * train.steps_per_iteration)
    return RunSettings(
        seed=int(config.seed), board_size=board_size, iterations=iterations, max_minutes=float(config.max_minutes),
        schedule_clock=clock, num_devices=int(config.num_devices),
        tensorboard=bool(config.get("tensorboard", True)),  # runs written before it read True
        init_network=str(config.get("init_network", "")).strip(),  # runs written before it read ""
        distributed=distributed, network=network,
        replay=replay, train=train, loss=loss, optimizer=optimizer, eval=evaluation, gating=gating,
        checkpoint=checkpoint,
        search=SearchSettings.from_config(config.search),  # the search and self-play records, checked there
        selfplay=SelfPlaySettings.from_config(config.selfplay, final_board=network.final_board_targets))


def resolve_stages(config: ConfigDict) -> tuple[tuple[Stage, ...], tuple[RunSettings, ...]]:
    """The run's stages and each stage's :class:`RunSettings` (the base config is stage 0).

    Every stage is resolved, so a bad stage fails before anything is trained; its message says
    where the stage starts. A retired setting is a one-line error first (:mod:`.retired`).
    """
    check_retired(config)
    check_known(config, default_config(), also=retired_key)
    stages = parse_stages(config.stages, config)
    unit = stage_unit(config.stages)
    resolved = []
    for index, (start, _) in enumerate(stages):
        try:
            resolved.append(resolve(stage_config(config, stages, index)))
        except InputError as error:
            where = f" (in the stage from {stage_label(start, unit)})" if index else ""
            raise InputError(f"{error}{where}") from None
    return tuple(stages), tuple(resolved)


def check_config(config: ConfigDict) -> None:
    """Raise ``InputError`` with a one-line message naming the first impossible setting of the
    base config or of any stage (:func:`resolve_stages` without its result)."""
    resolve_stages(config)
