"""The compiled training iteration: self-play -> replay -> K gradient steps, one jitted function.

    step = make_iteration(config, game, net, optimizer, selfplay_fn, mesh)
    train_state, metrics = step(train_state, key)              # schedule_clock "iterations"
    train_state, metrics = step(train_state, key, positions)   # "minutes": float32[2] schedule span

Data parallelism is over a 1-D device :class:`~jax.sharding.Mesh` with axis ``"data"``: network
parameters and optimizer state are replicated; self-play games, the replay buffer and the
training batch are split into *lanes* (see :mod:`othello_jax.training.compiled.replay`) whose axis is sharded over
the devices. Self-play runs under ``shard_map`` (each device plays its own lanes' games); the
gradient step is plain ``jit`` over the lane-sharded batch, so XLA inserts the gradient and
batch-norm all-reduces. The arithmetic depends on the lane count only, never on the number of
devices: 1, 8 or many hosts (after ``jax.distributed.initialize()``) run the same program.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, PartitionSpec

from othello_jax.errors import InputError
from othello_jax.game import Othello
from othello_jax.model import AlphaZeroNet, init_variables
from othello_jax.training.compiled import replay
from othello_jax.training.compiled.optimizers import learning_rate_schedule, position_schedule, scale_updates
from othello_jax.training.compiled.placement import AXIS, Placement
from othello_jax.training.compiled.samples import Samples, flatten
from othello_jax.training.compiled.sgd import make_sgd_step
from othello_jax.training.settings.run_settings import ReplaySettings, RunSettings, TrainSettings

# self-play statistics that are counts (summed over lanes); the others are averaged
COUNT_STATS = frozenset({"games", "positions", "moves", "harvested", "truncated_games"})

# selfplay_fn(variables, keys[L], resign_state[L]) -> (samples [L, any batch axes], {name: [L]}, resign_state[L]):
# L lanes at once, each with its own key and resign state
SelfPlayFn = Callable[[dict, jax.Array, Any], tuple[Samples, dict, Any]]


class TrainState(NamedTuple):
    """Everything the iteration carries (a pytree; saved whole by the checkpoint module).

    actor: ``{'params', 'batch_stats'}`` that self-play uses: the latest network, or the champion
        while gating holds the latest one back.
    buffer, resign: replay buffer and self-play resignation state, both with the lane axis first.
    iteration: int32 iterations completed; step: int32 gradient steps taken.
    """

    params: Any
    batch_stats: Any
    opt_state: Any
    actor: dict
    buffer: replay.ReplayBuffer
    resign: Any
    iteration: jax.Array
    step: jax.Array


# ---------------------------------------------------------------------------------------------
# devices and shardings
# ---------------------------------------------------------------------------------------------
def _shard_map(fn, mesh: Mesh, in_specs, out_specs):
    """``shard_map`` without replication checking (self-play scans start from constant carries).

    ``jax.shard_map`` where it exists (its flag is ``check_vma``; ``check_rep`` in older
    releases), else the experimental one.
    """
    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:  # pragma: no cover - older JAX
        from jax.experimental.shard_map import shard_map
    flag = "check_vma" if "check_vma" in inspect.signature(shard_map).parameters else "check_rep"
    return shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, **{flag: False})


def make_mesh(num_devices: int = 0) -> Mesh:
    """A 1-D mesh over the first ``num_devices`` devices (0: all, across every host)."""
    devices = jax.devices()
    if num_devices:
        if num_devices > len(devices):
            raise InputError(f"asked for {num_devices} devices but only {len(devices)} are available")
        devices = devices[:num_devices]
    return Mesh(np.asarray(devices), (AXIS,))


def num_lanes(replay_settings: ReplaySettings, mesh: Mesh) -> int:
    """Replay/self-play lanes: ``replay.lanes`` or one per device; a multiple of the device count."""
    lanes = replay_settings.lanes or mesh.size
    if lanes % mesh.size:
        raise InputError(f"replay.lanes={lanes} must be a multiple of the {mesh.size} devices")
    return lanes



# ---------------------------------------------------------------------------------------------
# state construction
# ---------------------------------------------------------------------------------------------
def init_train_state(game: Othello, net: AlphaZeroNet, optimizer: optax.GradientTransformation,
                     key: jax.Array, lanes: int, capacity: int, max_window: int, resign_init: Any,
                     mesh: Mesh, network: dict | None = None) -> TrainState:
    """Fresh optimizer and empty buffer, created directly with their shardings, around a fresh
    network (from ``key``) or the given ``network`` variables (``{'params', 'batch_stats'}`` of
    ``net``'s architecture: a pretrained start)."""

    def build(k, start):
        variables = init_variables(net, k, game.size) if start is None else start
        params, batch_stats = variables["params"], variables["batch_stats"]
        return TrainState(
            params=params,
            batch_stats=batch_stats,
            opt_state=optimizer.init(params),
            actor={"params": params, "batch_stats": batch_stats},
            buffer=replay.init(game, lanes, capacity, max_window, final_board=net.config.final_board_targets),
            resign=jax.tree.map(lambda x: jnp.broadcast_to(jnp.asarray(x), (lanes,) + jnp.shape(x)), resign_init),
            iteration=jnp.zeros((), jnp.int32),
            step=jnp.zeros((), jnp.int32),
        )

    shapes = jax.eval_shape(build, key, network)
    return jax.jit(build, out_shardings=Placement(mesh).state_shardings(shapes))(key, network)


def unroll_gradient_steps(train_settings: TrainSettings) -> bool:
    """Whether to unroll the loop of gradient steps: ``train.unroll`` "auto" (on CPU), "yes" or "no".

    On the CPU backend, convolution gradients inside an XLA while loop run about 20x slower than
    the same steps unrolled (measured with jax 0.10.2; see jax-ml/jax#12868), so "auto" unrolls
    there, at the cost of compile time growing with ``steps_per_iteration``. Accelerators keep
    the compact loop.
    """
    mode = train_settings.unroll  # checked by settings.resolve
    return mode == "yes" or (mode == "auto" and jax.default_backend() == "cpu")


def replay_window(replay_settings: ReplaySettings, iteration: jax.Array) -> jax.Array:
    """Generations to sample from: ``window_start``, growing by one every ``window_grow_every``
    iterations up to ``window_max`` (with the minutes clock, ``iteration`` is the nominal one)."""
    start, grow = replay_settings.window_start, replay_settings.window_grow_every
    if grow <= 0:
        return jnp.asarray(start, jnp.int32)
    return jnp.minimum(start + iteration // grow, replay_settings.window_max).astype(jnp.int32)


# ---------------------------------------------------------------------------------------------
# the iteration
# ---------------------------------------------------------------------------------------------
def lane_selfplay(selfplay_fn: SelfPlayFn, mesh: Mesh):
    """Run ``selfplay_fn`` on each device's own lanes (``shard_map``).

    Returns ``(actor, keys[lanes], resign[lanes]) -> (Samples [lanes, n], stats[lanes], resign)``.
    ``selfplay_fn`` plays a device's lanes at once (the search-based one as one batch of
    ``lanes * games`` roots, :func:`othello_jax.training.compiled.selfplay.play_games`); each lane keeps
    its own key and resign threshold, so the result does not depend on the device count.
    """
    def local(actor, keys, resign):
        samples, stats, resign = selfplay_fn(actor, keys, resign)
        return jax.vmap(flatten)(samples), stats, resign

    lanes = PartitionSpec(AXIS)
    return _shard_map(local, mesh, in_specs=(PartitionSpec(), lanes, lanes), out_specs=lanes)


def make_iteration(config: RunSettings, game: Othello, net: AlphaZeroNet,
                   optimizer: optax.GradientTransformation, selfplay_fn: SelfPlayFn, mesh: Mesh,
                   train_state_example: TrainState):
    """Build the jitted ``(train_state, key) -> (train_state, metrics)`` for one schedule stage.

    Self-play with ``train_state.actor``, append to the replay buffer, then
    ``config.train.steps_per_iteration`` gradient steps on batches of ``config.train.batch_size``
    positions (split evenly over the lanes) sampled from the window and augmented. Unless
    ``config.gating.enabled``, the actor becomes the new network. The input state is donated (its
    buffer is updated in place).

    With ``config.schedule_clock == "minutes"`` the function takes a third argument, the schedule
    positions ``[start, end]`` (float32[2], in [0, 1]) this iteration spans: gradient step i of K
    uses the learning rate at ``start + (end - start) * (i + 1) / K`` (so the last step of the
    run's last iteration, whose end is 1, uses the end value), and the replay window is that of
    the nominal iteration ``start * iterations``. ``optimizer`` must then be built with
    ``make_optimizer(..., clock="minutes")``. Extra metrics: ``schedule_position`` (the end).
    """
    lanes = train_state_example.buffer.lanes
    batch_size = config.train.batch_size
    if batch_size % lanes:
        raise InputError(f"train.batch_size={batch_size} must be a multiple of the {lanes} replay lanes")
    per_lane = batch_size // lanes
    steps = config.train.steps_per_iteration
    augment = config.replay.augment
    gating = config.gating.enabled
    unroll = unroll_gradient_steps(config.train)
    minutes = config.schedule_clock == "minutes"
    sgd_step = make_sgd_step(net, game, optimizer, config.loss)
    schedule = learning_rate_schedule(config.optimizer)
    rate_at = position_schedule(config.optimizer)
    nominal_iterations = config.iterations
    play = lane_selfplay(selfplay_fn, mesh)
    batch_sharding = Placement(mesh).lanes

    def iteration(ts: TrainState, key: jax.Array, positions: jax.Array | None = None):
        play_key, train_key = jax.random.split(key)
        samples, stats, resign = play(ts.actor, jax.random.split(play_key, lanes), ts.resign)
        buffer = replay.add(ts.buffer, samples)
        if positions is None:  # the iterations clock: the schedules follow the counters
            window = replay_window(config.replay, ts.iteration)
            rates = None
        else:  # the minutes clock: the schedules follow the positions the loop measured
            nominal = jnp.floor(positions[0] * nominal_iterations).astype(jnp.int32)
            window = replay_window(config.replay, nominal)
            shares = jnp.arange(1, steps + 1, dtype=jnp.float32) / steps
            rates = rate_at(positions[0] + (positions[1] - positions[0]) * shares)

        def train_one(carry, xs):
            params, batch_stats, opt_state = carry
            k, rate = xs
            sample_key, augment_key = jax.random.split(k)
            batch = replay.sample(buffer, sample_key, per_lane, window)
            if augment:
                batch = replay.augment(batch, augment_key, game.size)
            batch = flatten(batch)
            batch = jax.lax.with_sharding_constraint(batch, jax.tree.map(lambda _: batch_sharding, batch))
            step_fn = sgd_step if rate is None else make_sgd_step(net, game, scale_updates(optimizer, rate),
                                                                  config.loss)
            params, batch_stats, opt_state, metrics = step_fn(params, batch_stats, opt_state, batch)
            return (params, batch_stats, opt_state), metrics

        (params, batch_stats, opt_state), history = jax.lax.scan(
            train_one, (ts.params, ts.batch_stats, ts.opt_state), (jax.random.split(train_key, steps), rates),
            unroll=steps if unroll else 1)
        metrics = {name: jnp.mean(values) for name, values in history.items()}
        metrics.update({f"selfplay/{name}": jnp.sum(value) if name in COUNT_STATS else jnp.mean(value)
                        for name, value in stats.items()})
        metrics.update({
            "positions": jnp.sum(buffer.total - ts.buffer.total),
            "buffer_fill": replay.fill_fraction(buffer),
            "window": window,
            "window_rows": jnp.sum(replay.window_rows(buffer, window)),
            # the rate of the iteration's last gradient step
            "learning_rate": schedule(ts.step + steps - 1) if rates is None else rates[-1],
        })
        if positions is not None:
            metrics["schedule_position"] = positions[1]
        actor = ts.actor if gating else {"params": params, "batch_stats": batch_stats}
        new = TrainState(params, batch_stats, opt_state, actor, buffer, resign,
                         ts.iteration + 1, ts.step + steps)
        return new, metrics

    placement = Placement(mesh)
    shardings, replicated = placement.state_shardings(train_state_example), placement.replicated
    # the extra argument: the schedule span (minutes clock)
    extra = (replicated,) * minutes

    def step(ts: TrainState, key: jax.Array, *args):
        return iteration(ts, key, args[0] if minutes else None)

    return jax.jit(step, in_shardings=(shardings, replicated, *extra), out_shardings=(shardings, replicated),
                   donate_argnums=0)
