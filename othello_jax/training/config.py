"""Training-run configuration: the defaults (the only place they live) and schedule stages.

A run is described by one ``ml_collections.ConfigDict`` (see ``default_config``); the files in
``experiments/configs/`` start from it and change what they need. ``make_train`` resolves it
once, with every stage, into typed records checked with one-line errors
(:mod:`othello_jax.training.settings`); code below it reads their fields. Settings that fix compiled
shapes (simulations per move, temperature moves, ...) change over training through *stages*::

    config.stages = "20: search.num_simulations=32; 50: search.num_simulations=64"

Each stage is compiled once when it starts, and everything in it takes effect from its
iteration: the search, self-play, loss, gradient-step, replay-window, learning-rate (the
schedule keeps its position, and the optimizer its moments), evaluation, gating and checkpoint
settings (``CHANGEABLE_IN_STAGES``). What the run's state is built from (board size, network,
replay capacity and lanes, seed, length, devices) cannot change mid-run: a stage naming it is
a one-line error when the config is checked. Settings that are plain numbers inside the
compiled iteration (learning rate by step, replay window by iteration) have their own schedules.

Schedules in time (``schedule_clock``). With ``schedule_clock = "iterations"`` (the default)
the learning rate follows gradient steps and the replay window iterations, as above. With
``"minutes"`` (needs ``max_minutes > 0``) they follow the *schedule position*, the share of the
training-time budget used: the training seconds recorded in the checkpoint divided by the
*horizon*, the time at which the last iteration ends (``max_minutes`` less one iteration and
the final evaluation and checkpoint, all measured; see :mod:`othello_jax.training.clock`),
or the share of ``iterations`` done if that is larger. The iteration-counted settings are read
on the nominal run of ``iterations`` laid over the budget: position p is gradient step
``p * total_steps`` of the learning-rate schedule (``warmup_steps``, ``boundaries`` and
``total_steps`` keep their meaning as shares of ``total_steps``) and iteration
``p * iterations`` of the window growth. So the learning rate reaches its end value in the last
iteration on a fast machine and a slow one alike, and a resumed run continues the same curve.
The position is passed to the compiled iteration as an argument (no recompilation).

Stages can be keyed by time as well, with either clock (one kind per config)::

    config.stages = "8m: search.num_simulations=32; 16.5m: selfplay.temperature_plies=4"
    config.stages = "50%: search.num_simulations=32"   # half-way through the schedule

``Nm`` starts after N minutes of training time (as recorded in the checkpoint, so the stage in
force after a resume is the one for the recorded time); ``N%`` starts when the schedule
position reaches N% (the same position the learning rate follows; with the iterations clock,
N% of ``iterations``). Simulations, temperatures and the window are changed at a time this way.
Whatever the clock, a run with ``max_minutes`` stops early enough that its final evaluation
and checkpoint also fit inside ``max_minutes``.
"""

from __future__ import annotations

import dataclasses

import ml_collections
from ml_collections import ConfigDict

from othello_jax import search
from othello_jax.errors import InputError
from othello_jax.model import NetworkConfig
from othello_jax.training import selfplay

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
    c.selfplay = selfplay.default_selfplay_config()

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


# ---------------------------------------------------------------------------------------------
# stages
# ---------------------------------------------------------------------------------------------
# (start, ((dotted key, value), ...)); start in the unit of :func:`stage_unit`
Stage = tuple[float, tuple[tuple[str, str], ...]]

# what a stage may change: a dotted key equal to one of these or inside a section ending in "."
CHANGEABLE_IN_STAGES = (
    "search.", "selfplay.", "loss.", "train.", "optimizer.", "eval.", "gating.",
    "replay.window_start", "replay.window_max", "replay.window_grow_every", "replay.augment",
    "replay.average_duplicates", "checkpoint.every", "checkpoint.every_minutes", "checkpoint.save_buffer",
)


def changeable_in_stages(key: str) -> bool:
    """Whether a stage may override the dotted setting ``key`` (see ``CHANGEABLE_IN_STAGES``)."""
    return any(key == c or (c.endswith(".") and key.startswith(c)) for c in CHANGEABLE_IN_STAGES)


CLOCKS = ("iterations", "minutes")
# how a stage's start is written: "12" (iteration), "8m" / "8.5m" (minutes of training time),
# "50%" / "12.5%" (schedule position)
STAGE_UNITS = {"": "iterations", "m": "minutes", "%": "percent"}


def _stage_start(head: str, chunk: str) -> tuple[str, float | int]:
    """``(unit, start)`` of one stage's head; a one-line ``InputError`` if it is malformed."""
    suffix = head[-1:] if head[-1:] in ("m", "%") else ""
    number = head[: len(head) - len(suffix)].strip()
    if not number or not number.isascii() or not (number.isdigit() if not suffix else
                                                   number.replace(".", "", 1).isdigit()):
        # '²'.isdigit() is true but int('²') fails; iterations are whole numbers
        raise InputError(f"stage {chunk!r} must look like 'ITERATION: key=value, ...' "
                         "(or 'MINUTESm: ...', 'PERCENT%: ...')")
    if len(number) > 9:  # beyond any run's length (and int()'s 4300-digit limit)
        raise InputError(f"stage start {number[:9]}... is too large")
    unit = STAGE_UNITS[suffix]
    if unit == "percent" and float(number) > 100:
        raise InputError(f"stage start {head} is past the end of the schedule (100%)")
    return unit, int(number) if unit == "iterations" else float(number)


def stage_unit(text: str) -> str:
    """How the stages of ``text`` are keyed: "iterations", "minutes" or "percent" (one kind per config)."""
    units = set()
    for chunk in filter(None, (part.strip() for part in str(text or "").split(";"))):
        head, sep, _ = chunk.partition(":")
        if sep:
            units.add(_stage_start(head.strip(), chunk)[0])
    if len(units) > 1:
        raise InputError(f"stages {text!r} mix iterations ('N:'), minutes ('Nm:') and schedule shares ('N%:'); "
                         "key them all one way")
    return units.pop() if units else "iterations"


def stage_label(start: float, unit: str) -> str:
    """A stage's start for messages: "iteration 20", "8.0 minutes", "50.0%"."""
    return {"iterations": f"iteration {start}", "minutes": f"{start:g} minutes of training",
            "percent": f"{start:g}% of the schedule"}[unit]


def parse_stages(text: str, config: ConfigDict) -> list[Stage]:
    """``"START: key=value, key=value; START: ..."`` -> sorted ``[(start, ((key, value), ...))]``.

    START is an iteration (``20``), minutes of training time (``8m``, ``8.5m``) or a share of
    the schedule (``50%``), the same kind for every stage (:func:`stage_unit`). Keys are dotted
    config paths that must exist (e.g. ``search.num_simulations``); the base config is always
    the first stage, starting at 0.
    """
    unit = stage_unit(text)
    stages: list[Stage] = [(0, ())]
    for chunk in filter(None, (part.strip() for part in str(text or "").split(";"))):
        head, sep, body = chunk.partition(":")
        if not sep:
            raise InputError(f"stage {chunk!r} must look like 'ITERATION: key=value, ...' "
                             "(or 'MINUTESm: ...', 'PERCENT%: ...')")
        _, start = _stage_start(head.strip(), chunk)
        pairs = []
        for item in filter(None, (p.strip() for p in body.split(","))):
            key, eq, value = item.partition("=")
            if not eq:
                raise InputError(f"stage setting {item!r} must look like key=value")
            _lookup(config, key.strip())
            if not changeable_in_stages(key.strip()):
                raise InputError(f"stage setting {key.strip()!r} cannot change mid-run (it shapes the run's state); "
                                 "set it in the config instead")
            pairs.append((key.strip(), value.strip()))
        stages.append((start, tuple(pairs)))
    stages.sort(key=lambda s: s[0])
    starts = [s[0] for s in stages]
    if len(set(starts)) != len(starts):
        where = {"iterations": "iteration", "minutes": "time", "percent": "share"}[unit]
        raise InputError(f"two stages start at the same {where} in {text!r}")
    return stages


def _lookup(config: ConfigDict, dotted: str):
    node = config
    *parents, leaf = dotted.split(".")
    for name in parents:
        if name not in node or not isinstance(node[name], ConfigDict):
            raise InputError(f"stage setting {dotted!r} names no config section {name!r}")
        node = node[name]
    if leaf not in node:
        raise InputError(f"stage setting {dotted!r} names no config field")
    return node, leaf


def _convert(value: str, like):
    if isinstance(like, bool):
        if value.lower() not in ("true", "false", "1", "0"):
            raise InputError(f"expected true/false, got {value!r}")
        return value.lower() in ("true", "1")
    try:
        if isinstance(like, int):
            return int(value)
        if isinstance(like, float):
            return float(value)
    except ValueError:  # int()'s own message ("invalid literal for int() with base 10") names no setting
        kind = "an integer" if isinstance(like, int) else "a number"
        raise InputError(f"expected {kind}, got {value if len(value) <= 20 else value[:20] + '...'!r}") from None
    return value


def stage_index(stages: list[Stage], at: float) -> int:
    """Index of the stage in force at ``at``: iterations completed (0-based), minutes of
    training time or percent of the schedule, in the unit the stages are keyed by."""
    return max(i for i, (start, _) in enumerate(stages) if start <= at)


def stage_config(config: ConfigDict, stages: list[Stage], index: int) -> ConfigDict:
    """The config with the overrides of stages ``0..index`` applied (later stages win)."""
    out = ml_collections.ConfigDict(config.to_dict())
    for _, pairs in stages[: index + 1]:
        for key, value in pairs:
            node, leaf = _lookup(out, key)
            try:
                node[leaf] = _convert(value, node[leaf])
            except InputError as error:
                raise InputError(f"stage setting {key}={value}: {error}") from None
    return out
