"""``make_train``: a run's whole config resolved once into the pieces the training loop needs.

    program = make_train(config, make_mesh())
    state, key = program.start(seed)                # fresh, placed on the mesh (or a checkpoint's)
    for iteration in range(start, config.iterations):
        index = program.stage_at(iteration, minutes, percent)  # which schedule stage is in force
        step = program.compile(index, state, key)   # once per stage
        state, metrics = step(state, key, *program.schedule_args(start, end))

Everything that depends on the config is decided here and nowhere else: the board, the
network, the replay geometry (lanes, rows per lane, generation ring), the stages with each
stage's settings (:func:`~othello_jax.training.settings.resolve_stages`: typed records, checked
once), each stage's optimizer and self-play. A stage may change only what the
compiled state can absorb (see ``config.CHANGEABLE_IN_STAGES``); the optimizer of every stage
must have the same state layout as the first, so its moments carry over. With the minutes
clock (``config.schedule_clock``) every optimizer is built with a unit rate and the compiled
iteration takes the schedule positions as a third argument (:meth:`TrainProgram.schedule_args`).
Where each input of a compiled iteration lives on the mesh is the program's
:class:`~othello_jax.training.compiled.placement.Placement`'s decision alone: a compiled stage places its
inputs before every call, whatever produced them (a fresh start, a checkpoint, a gate).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import optax
from jax.sharding import Mesh
from ml_collections import ConfigDict

from othello_jax import checkpoint
from othello_jax.errors import InputError
from othello_jax.game import Othello
from othello_jax.model import AlphaZeroNet, NetworkConfig, init_variables, make_network
from othello_jax.training.compiled import selfplay
from othello_jax.training.compiled.iteration import (
    SelfPlayFn,
    TrainState,
    init_train_state,
    make_iteration,
    make_mesh,
    num_lanes,
)
from othello_jax.training.compiled.optimizers import make_optimizer
from othello_jax.training.compiled.placement import Placement
from othello_jax.training.settings.run_settings import RunSettings, resolve_stages
from othello_jax.training.settings.stages import Stage, stage_index, stage_label, stage_unit


@dataclasses.dataclass(frozen=True)
class CompiledIteration:
    """One stage's compiled ``(state, key, *schedule) -> (state, metrics)``; every call first puts
    its inputs where the executable was compiled to find them (a no-op for inputs already there).
    """

    executable: Callable
    placement: Placement

    def __call__(self, state: TrainState, key: jax.Array, *schedule):
        placement = self.placement
        return self.executable(placement.state(state), placement.key(key), *map(placement.schedule, schedule))


@dataclasses.dataclass(frozen=True)
class TrainProgram:
    """A run's resolved pieces: the loop only asks it for states, stages and compiled iterations.

    stage_configs[i] is the :class:`~othello_jax.training.settings.RunSettings` in force from
    ``stages[i][0]`` on (an iteration, minutes of training or percent of the schedule:
    ``stage_unit``), with the config's names (``stage.eval.every``, ``stage.search.num_simulations``);
    ``optimizers[i]`` and ``selfplay_fns[i]`` are built from it. ``clock`` is ``config.schedule_clock``.
    """

    config: ConfigDict
    game: Othello
    network: NetworkConfig
    net: AlphaZeroNet
    mesh: Mesh
    lanes: int
    capacity: int  # replay rows per lane
    max_window: int  # generations the replay ring keeps (the largest window of any stage)
    stages: tuple[Stage, ...]
    stage_configs: tuple[RunSettings, ...]
    optimizers: tuple[optax.GradientTransformation, ...]
    selfplay_fns: tuple[SelfPlayFn, ...]
    resign_init: Any
    clock: str = "iterations"
    stage_unit: str = "iterations"

    @property
    def settings(self) -> RunSettings:
        """The base config's settings (stage 0): what the run's state is built from, its length and budget."""
        return self.stage_configs[0]

    @property
    def placement(self) -> Placement:
        """Where every input of the compiled iterations lives on the mesh."""
        return Placement(self.mesh)

    def init_state(self, key: jax.Array, network: dict | None = None) -> TrainState:
        """Fresh optimizer state and empty replay buffer around a fresh network (or ``network``'s
        variables), placed on the mesh."""
        return init_train_state(self.game, self.net, self.optimizers[0], key, self.lanes, self.capacity,
                                self.max_window, self.resign_init, self.mesh, network)

    def start(self, seed: int, network: dict | None = None) -> tuple[TrainState, jax.Array]:
        """A fresh run's ``(state, key)`` from ``seed``, both placed on the mesh (a restore's templates
        too); ``network``: variables to start from instead of random ones (:meth:`initial_network`)."""
        init_key, key = jax.random.split(jax.random.PRNGKey(int(seed)))
        return self.init_state(init_key, network), self.placement.key(key)

    @property
    def init_network(self) -> str:
        """``config.init_network``: the trained network a fresh run starts from ("" = random weights)."""
        return self.stage_configs[0].init_network

    def initial_network(self) -> dict | None:
        """The variables of ``init_network``, checked to be this run's architecture and board size
        (one-line ``InputError`` otherwise), or None when the run starts from random weights."""
        path = self.init_network
        if not path:
            return None
        _, variables = checkpoint.load_start_network(path, self.game.size, self.network, margins_allowed=False)
        return variables

    def stage_index(self, iteration: int) -> int:
        """Index of the stage in force at ``iteration`` (0-based count of iterations completed)."""
        return self.stage_at(iteration, 0.0, 0.0)

    def stage_at(self, iteration: int, minutes: float, percent: float) -> int:
        """Index of the stage in force after ``iteration`` iterations, ``minutes`` of training time
        and ``percent`` of the schedule; only the unit the stages are keyed by is read."""
        at = {"iterations": iteration, "minutes": minutes, "percent": percent}[self.stage_unit]
        return stage_index(list(self.stages), at)

    def stage_label(self, index: int) -> str:
        """Where stage ``index`` starts, for messages ("iteration 20", "8 minutes of training")."""
        return stage_label(self.stages[index][0], self.stage_unit)

    def schedule_args(self, start: float, end: float) -> tuple:
        """The extra arguments of a compiled iteration spanning schedule positions ``start`` to
        ``end``: ``(float32[2],)`` with the minutes clock, ``()`` with the iterations clock."""
        if self.clock != "minutes":
            return ()
        return (np.asarray([start, end], np.float32),)

    def iteration_fn(self, index: int, example: TrainState) -> Callable:
        """The jitted ``(state, key) -> (state, metrics)`` of stage ``index`` (not yet compiled)."""
        return make_iteration(self.stage_configs[index], self.game, self.net, self.optimizers[index],
                              self.selfplay_fns[index], self.mesh, example)

    def compile(self, index: int, state: TrainState, key: jax.Array) -> CompiledIteration:
        """Stage ``index``'s iteration compiled for ``state``'s shapes, on the placement's shardings
        (wherever ``state`` and ``key`` are now)."""
        placement = self.placement
        inputs = (placement.abstract(state, placement.state_shardings(state)),
                  placement.abstract(key, placement.replicated),
                  *(placement.abstract(np.asarray(a), placement.replicated) for a in self.schedule_args(0.0, 0.0)))
        return CompiledIteration(self.iteration_fn(index, state).lower(*inputs).compile(), placement)

    def meta(self) -> dict:
        """What must match for a checkpoint to resume this run (``checkpoint.COMPATIBILITY_KEYS``)."""
        return {"format_version": checkpoint.FORMAT_VERSION, "board_size": self.game.size,
                "network": checkpoint.network_meta(self.network), "lanes": self.lanes, "capacity": self.capacity,
                "max_window": self.max_window}

    def network_evaluations(self, index: int) -> int:
        """Network evaluations one iteration of stage ``index`` computes (every game, every ply)."""
        stage = self.stage_configs[index]
        plies = selfplay.num_plies(stage.selfplay, self.game)
        return plies * stage.selfplay.num_games * (stage.search.num_simulations + 1)


def make_train(config: ConfigDict, mesh: Mesh | None = None) -> TrainProgram:
    """Check ``config`` and resolve it into a :class:`TrainProgram` (one-line ``InputError`` if impossible)."""
    stages, stage_configs = resolve_stages(config)
    settings = stage_configs[0]
    mesh = mesh if mesh is not None else make_mesh(settings.num_devices)
    game = Othello(settings.board_size)
    network = settings.network
    net = make_network(game.size, network)
    lanes = num_lanes(settings.replay, mesh)
    clock = settings.schedule_clock
    unit = stage_unit(config.stages)
    optimizers = tuple(make_optimizer(c.optimizer, clock) for c in stage_configs)
    _check_optimizer_states(optimizers, stages, net, game, unit)
    selfplay_fns = tuple(make_selfplay_fn(c, game, net, lanes) for c in stage_configs)
    resign_init = selfplay.initial_resign_state(settings.selfplay)
    return TrainProgram(
        config=config, game=game, network=network, net=net, mesh=mesh, lanes=lanes,
        capacity=-(-settings.replay.capacity // lanes),
        max_window=max(c.replay.max_window for c in stage_configs),
        stages=stages, stage_configs=stage_configs, optimizers=optimizers, selfplay_fns=selfplay_fns,
        resign_init=resign_init, clock=clock, stage_unit=unit)


def _check_optimizer_states(optimizers, stages, net: AlphaZeroNet, game: Othello, unit: str) -> None:
    """Every stage's optimizer must keep the first one's state layout (its moments carry over)."""
    params = jax.eval_shape(lambda k: init_variables(net, k, game.size)["params"], jax.random.PRNGKey(0))
    layout = jax.tree.structure(jax.eval_shape(optimizers[0].init, params))
    for (start, pairs), optimizer in zip(stages[1:], optimizers[1:], strict=True):
        if jax.tree.structure(jax.eval_shape(optimizer.init, params)) != layout:
            changed = ", ".join(f"{k}={v}" for k, v in pairs if k.startswith("optimizer."))
            raise InputError(f"the stage at {stage_label(start, unit)} changes the optimizer's state ({changed}); "
                             "a stage may change its learning rate and schedule, not its kind or clipping")


def make_selfplay_fn(config: RunSettings, game: Othello, net: AlphaZeroNet, lanes: int) -> SelfPlayFn:
    """Self-play of any number of lanes, ``config.selfplay.num_games / lanes`` games each, searched
    with ``config.search``: ``play(variables, keys[L], resign[L])``.

    Returns each lane's game and harvested positions as one flat Samples batch ([L, n]), with the
    stats as a dict of [L] arrays.
    """
    games = config.selfplay.num_games
    if games % lanes:
        raise InputError(f"selfplay.num_games={games} must be a multiple of the {lanes} replay lanes")
    settings = dataclasses.replace(config.selfplay, num_games=games // lanes)
    search = config.search
    apply_fn = functools.partial(net.apply, train=False)

    def play(variables, keys, resign):
        out, stats, resign = selfplay.play_games(settings, search, game, apply_fn, variables, keys, resign)
        return jax.vmap(selfplay.SelfPlayOutput.training_samples)(out), stats._asdict(), resign

    return play
