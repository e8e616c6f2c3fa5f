"""Schedule stages: settings that change over a run, and the clock schedules follow.

Settings that fix compiled
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
the final evaluation and checkpoint, all measured; see :mod:`othello_jax.training.runner.clock`),
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

import ml_collections
from ml_collections import ConfigDict

from othello_jax.errors import InputError

# (start, ((dotted key, value), ...)); start in the unit of :func:`stage_unit`
Stage = tuple[float, tuple[tuple[str, str], ...]]

# what a stage may change: a dotted key equal to one of these or inside a section ending in "."
CHANGEABLE_IN_STAGES = (
    "search.", "selfplay.", "loss.", "train.", "optimizer.", "eval.", "gating.",
    "replay.window_start", "replay.window_max", "replay.window_grow_every", "replay.augment",
    "checkpoint.every", "checkpoint.every_minutes", "checkpoint.save_buffer",
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
