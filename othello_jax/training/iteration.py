"""The compiled training iteration: self-play -> replay -> K gradient steps, one jitted function.

    step = make_iteration(config, game, net, optimizer, selfplay_fn, mesh)
    train_state, metrics = step(train_state, key)

Data parallelism is over a 1-D device :class:`~jax.sharding.Mesh` with axis ``"data"``: network
parameters and optimizer state are replicated; self-play games, the replay buffer and the
training batch are split into *lanes* (see :mod:`othello_jax.training.replay`) whose axis is sharded over
the devices. Self-play runs under ``shard_map`` (each device plays its own lanes' games); the
gradient step is plain ``jit`` over the lane-sharded batch, so XLA inserts the gradient and
batch-norm all-reduces. The arithmetic depends on the lane count only, never on the number of
devices: 1, 8 or many hosts (after ``jax.distributed.initialize()``) run the same program.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from ml_collections import ConfigDict

from othello_jax.game import Othello
from othello_jax.model import AlphaZeroNet, NetworkConfig, make_network
from othello_jax.training import replay, selfplay
from othello_jax.training.losses import l2_penalty, policy_cross_entropy, policy_entropy, value_mse, weighted_mean
from othello_jax.training.optimizers import learning_rate_schedule, make_optimizer
from othello_jax.training.samples import Samples

AXIS = "data"
# self-play statistics that are counts (summed over lanes); the others are averaged
COUNT_STATS = frozenset({"games", "positions", "harvested", "truncated_games"})

# selfplay_fn(variables, key, resign_state) -> (samples with any leading axes, {name: scalar}, resign_state)
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
            raise ValueError(f"asked for {num_devices} devices but only {len(devices)} are available")
        devices = devices[:num_devices]
    return Mesh(np.asarray(devices), (AXIS,))


def num_lanes(config: ConfigDict, mesh: Mesh) -> int:
    """Replay/self-play lanes: ``config.replay.lanes`` or one per device; a multiple of the device count."""
    lanes = int(config.replay.get("lanes", 0)) or mesh.size
    if lanes % mesh.size:
        raise ValueError(f"replay.lanes={lanes} must be a multiple of the {mesh.size} devices")
    return lanes


def state_shardings(train_state: TrainState, mesh: Mesh) -> TrainState:
    """Lane-sharded buffer and resign state; everything else replicated."""
    replicated = NamedSharding(mesh, PartitionSpec())
    lane = NamedSharding(mesh, PartitionSpec(AXIS))
    spec = jax.tree.map(lambda _: replicated, train_state)
    return spec._replace(buffer=jax.tree.map(lambda _: lane, train_state.buffer),
                         resign=jax.tree.map(lambda _: lane, train_state.resign))


# ---------------------------------------------------------------------------------------------
# network and state construction
# ---------------------------------------------------------------------------------------------
def network_config(config: ConfigDict) -> NetworkConfig:
    """``config.network``: ``preset`` (tiny/small/standard/large) overridden by ``blocks``/``channels``/... if > 0."""
    net = config.network
    base = NetworkConfig.preset(net.preset) if net.get("preset") else NetworkConfig()
    overrides = {f.name: net[f.name] for f in dataclasses.fields(NetworkConfig)
                 if f.name in net and net[f.name] not in (0, None, "")}
    return dataclasses.replace(base, **overrides)


def optimizer_config(config: ConfigDict) -> ConfigDict:
    """``config.optimizer`` with ``total_steps`` 0 resolved to ``iterations * steps_per_iteration``.

    So a cosine schedule spans the whole run however ``--config.iterations`` is overridden.
    """
    out = ConfigDict(config.optimizer.to_dict())
    if int(out.get("total_steps", 0)) <= 0 and config.get("iterations") is not None:
        out.total_steps = int(config.iterations) * int(config.train.steps_per_iteration)
    return out


def init_train_state(game: Othello, net: AlphaZeroNet, optimizer: optax.GradientTransformation,
                     key: jax.Array, lanes: int, capacity: int, max_window: int, resign_init: Any,
                     mesh: Mesh) -> TrainState:
    """Fresh network, optimizer and empty buffer, created directly with their shardings."""

    def build(k):
        dummy = jnp.zeros((1, game.size, game.size, 2), jnp.float32)
        variables = net.init(k, dummy, train=False)
        params, batch_stats = variables["params"], variables.get("batch_stats", {})
        return TrainState(
            params=params,
            batch_stats=batch_stats,
            opt_state=optimizer.init(params),
            actor={"params": params, "batch_stats": batch_stats},
            buffer=replay.init(game, lanes, capacity, max_window),
            resign=jax.tree.map(lambda x: jnp.broadcast_to(jnp.asarray(x), (lanes,) + jnp.shape(x)), resign_init),
            iteration=jnp.zeros((), jnp.int32),
            step=jnp.zeros((), jnp.int32),
        )

    shapes = jax.eval_shape(build, key)
    return jax.jit(build, out_shardings=state_shardings(shapes, mesh))(key)


# ---------------------------------------------------------------------------------------------
# loss and one gradient step
# ---------------------------------------------------------------------------------------------
def loss_fn(params, batch_stats, net: AlphaZeroNet, game: Othello, batch: Samples,
            loss_config: ConfigDict) -> tuple[jax.Array, tuple[Any, dict]]:
    """value MSE + policy cross-entropy + l2 * |W|^2 - entropy_bonus * H(policy), over a flat batch.

    Runs the network in training mode (batch statistics from this batch) and returns the updated
    batch-norm running averages with a dict of per-term metrics.
    """
    obs = game.observation(batch.state)
    legal = game.legal_moves(batch.state)
    (logits, value), updates = net.apply({"params": params, "batch_stats": batch_stats}, obs,
                                         train=True, mutable=["batch_stats"])
    mask = batch.mask
    value_loss = weighted_mean(value_mse(value, batch.value), mask)
    policy_loss = weighted_mean(policy_cross_entropy(logits, batch.policy, legal), mask)
    entropy = weighted_mean(policy_entropy(logits, legal), mask)
    target_logp = jnp.log(jnp.maximum(batch.policy, 1e-12))
    target_entropy = weighted_mean(-jnp.sum(batch.policy * target_logp, axis=-1), mask)
    l2 = l2_penalty(params)
    loss = (float(loss_config.value_weight) * value_loss + policy_loss + float(loss_config.l2) * l2
            - float(loss_config.entropy_bonus) * entropy)
    metrics = {
        "loss": loss,
        "value_loss": value_loss,
        "policy_loss": policy_loss,
        "policy_kl": policy_loss - target_entropy,
        "policy_entropy": entropy,
        "target_entropy": target_entropy,
        "value_abs_error": weighted_mean(jnp.abs(value - batch.value), mask),
        "l2": l2,
    }
    return loss, (updates.get("batch_stats", batch_stats), metrics)


def make_sgd_step(net: AlphaZeroNet, game: Othello, optimizer: optax.GradientTransformation,
                  loss_config: ConfigDict):
    """``(params, batch_stats, opt_state, batch) -> (params, batch_stats, opt_state, metrics)``."""
    grad_fn = jax.grad(loss_fn, has_aux=True)

    def sgd_step(params, batch_stats, opt_state, batch: Samples):
        grads, (batch_stats, metrics) = grad_fn(params, batch_stats, net, game, batch, loss_config)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        metrics["grad_norm"] = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree.leaves(grads)))
        return params, batch_stats, opt_state, metrics

    return sgd_step


def unroll_gradient_steps(train_config: ConfigDict) -> bool:
    """Whether to unroll the loop of gradient steps: ``train.unroll`` "auto" (on CPU), "yes" or "no".

    On the CPU backend, convolution gradients inside an XLA while loop run about 20x slower than
    the same steps unrolled (measured with jax 0.10.2; see jax-ml/jax#12868), so "auto" unrolls
    there, at the cost of compile time growing with ``steps_per_iteration``. Accelerators keep
    the compact loop.
    """
    mode = str(train_config.get("unroll", "auto"))
    if mode not in ("auto", "yes", "no"):
        raise ValueError(f"train.unroll must be auto, yes or no, got {mode!r}")
    return mode == "yes" or (mode == "auto" and jax.default_backend() == "cpu")


def replay_window(replay_config: ConfigDict, iteration: jax.Array) -> jax.Array:
    """Generations to sample from: ``window_start`` growing by one every ``window_grow_every`` iterations up to ``window_max``."""
    start = int(replay_config.window_start)
    grow = int(replay_config.get("window_grow_every", 0))
    if grow <= 0:
        return jnp.asarray(start, jnp.int32)
    return jnp.minimum(start + iteration // grow, int(replay_config.window_max)).astype(jnp.int32)


def max_window(replay_config: ConfigDict) -> int:
    """The largest window the schedule can reach (static: sizes the buffer's generation ring)."""
    grow = int(replay_config.get("window_grow_every", 0))
    return int(replay_config.window_max) if grow > 0 else int(replay_config.window_start)


# ---------------------------------------------------------------------------------------------
# the iteration
# ---------------------------------------------------------------------------------------------
def lane_selfplay(selfplay_fn: SelfPlayFn, mesh: Mesh):
    """Run ``selfplay_fn`` once per lane, each device on its own lanes (``shard_map`` + ``vmap``).

    Returns ``(actor, keys[lanes], resign[lanes]) -> (Samples [lanes, n], stats[lanes], resign)``.
    """
    def per_lane(actor, key, resign):
        samples, stats, resign = selfplay_fn(actor, key, resign)
        flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[samples.mask.ndim:]), samples)
        return flat, stats, resign

    def local(actor, keys, resign):
        if keys.shape[0] == 1:  # one lane per device: no vmap, so the search's conds stay conds
            out = per_lane(actor, keys[0], jax.tree.map(lambda x: x[0], resign))
            return jax.tree.map(lambda x: x[None], out)
        return jax.vmap(per_lane, in_axes=(None, 0, 0))(actor, keys, resign)

    lanes = PartitionSpec(AXIS)
    return _shard_map(local, mesh, in_specs=(PartitionSpec(), lanes, lanes), out_specs=lanes)


def make_iteration(config: ConfigDict, game: Othello, net: AlphaZeroNet,
                   optimizer: optax.GradientTransformation, selfplay_fn: SelfPlayFn, mesh: Mesh,
                   train_state_example: TrainState):
    """Build the jitted ``(train_state, key) -> (train_state, metrics)`` for one schedule stage.

    Self-play with ``train_state.actor``, append to the replay buffer, then
    ``config.train.steps_per_iteration`` gradient steps on batches of ``config.train.batch_size``
    positions (split evenly over the lanes) sampled from the window, augmented and optionally
    with duplicate targets averaged. Unless ``config.gating.enabled``, the actor becomes the new
    network. The input state is donated (its buffer is updated in place).
    """
    lanes = train_state_example.buffer.lanes
    batch_size = int(config.train.batch_size)
    if batch_size % lanes:
        raise ValueError(f"train.batch_size={batch_size} must be a multiple of the {lanes} replay lanes")
    per_lane = batch_size // lanes
    steps = int(config.train.steps_per_iteration)
    if steps < 1:
        raise ValueError(f"train.steps_per_iteration must be >= 1, got {steps}")
    augment = bool(config.replay.augment)
    dedup = bool(config.replay.average_duplicates)
    gating = bool(config.gating.enabled)
    unroll = unroll_gradient_steps(config.train)
    sgd_step = make_sgd_step(net, game, optimizer, config.loss)
    schedule = learning_rate_schedule(optimizer_config(config))
    play = lane_selfplay(selfplay_fn, mesh)
    batch_sharding = NamedSharding(mesh, PartitionSpec(AXIS))

    def iteration(ts: TrainState, key: jax.Array):
        play_key, train_key = jax.random.split(key)
        samples, stats, resign = play(ts.actor, jax.random.split(play_key, lanes), ts.resign)
        buffer = replay.add(ts.buffer, samples)
        window = replay_window(config.replay, ts.iteration)

        def train_one(carry, k):
            params, batch_stats, opt_state = carry
            sample_key, augment_key = jax.random.split(k)
            batch = replay.sample(buffer, sample_key, per_lane, window)
            if dedup:
                batch = replay.average_duplicates(batch)
            if augment:
                batch = replay.augment(batch, augment_key, game.size)
            batch = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), batch)
            batch = jax.lax.with_sharding_constraint(batch, jax.tree.map(lambda _: batch_sharding, batch))
            params, batch_stats, opt_state, metrics = sgd_step(params, batch_stats, opt_state, batch)
            return (params, batch_stats, opt_state), metrics

        (params, batch_stats, opt_state), history = jax.lax.scan(
            train_one, (ts.params, ts.batch_stats, ts.opt_state), jax.random.split(train_key, steps),
            unroll=steps if unroll else 1)
        metrics = {name: jnp.mean(values) for name, values in history.items()}
        metrics.update({f"selfplay/{name}": jnp.sum(value) if name in COUNT_STATS else jnp.mean(value)
                        for name, value in stats.items()})
        metrics.update({
            "positions": jnp.sum(buffer.total - ts.buffer.total),
            "buffer_fill": replay.fill_fraction(buffer),
            "window": window,
            "window_rows": jnp.sum(replay.window_rows(buffer, window)),
            "learning_rate": schedule(ts.step + steps - 1),
        })
        actor = ts.actor if gating else {"params": params, "batch_stats": batch_stats}
        new = TrainState(params, batch_stats, opt_state, actor, buffer, resign,
                         ts.iteration + 1, ts.step + steps)
        return new, metrics

    shardings = state_shardings(train_state_example, mesh)
    replicated = NamedSharding(mesh, PartitionSpec())
    return jax.jit(iteration, in_shardings=(shardings, replicated), out_shardings=(shardings, replicated),
                   donate_argnums=0)


# ---------------------------------------------------------------------------------------------
# everything a run needs, from its config
# ---------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Setup:
    """The static pieces of a run: network, optimizer, mesh and replay geometry."""

    game: Othello
    net: AlphaZeroNet
    optimizer: optax.GradientTransformation
    mesh: Mesh
    lanes: int
    capacity: int  # rows per lane
    max_window: int

    @classmethod
    def from_config(cls, config: ConfigDict, game: Othello, mesh: Mesh) -> Setup:
        lanes = num_lanes(config, mesh)
        capacity = -(-int(config.replay.capacity) // lanes)
        return cls(game, make_network(game.size, network_config(config)), make_optimizer(optimizer_config(config)),
                   mesh, lanes, capacity, max_window(config.replay))

    def init_state(self, key: jax.Array, resign_init: Any) -> TrainState:
        return init_train_state(self.game, self.net, self.optimizer, key, self.lanes, self.capacity,
                                self.max_window, resign_init, self.mesh)

    def iteration(self, config: ConfigDict, selfplay_fn: SelfPlayFn, example: TrainState):
        return make_iteration(config, self.game, self.net, self.optimizer, selfplay_fn, self.mesh, example)


# ---------------------------------------------------------------------------------------------
# self-play as the iteration calls it
# ---------------------------------------------------------------------------------------------
def make_selfplay_fn(config: ConfigDict, setup: Setup) -> SelfPlayFn:
    """One lane's self-play: ``config.selfplay.num_games / lanes`` games searched with ``config.search``.

    Returns game and harvested positions as one flat Samples batch, with the stats as a dict.
    """
    games = int(config.selfplay.num_games)
    if games % setup.lanes:
        raise ValueError(f"selfplay.num_games={games} must be a multiple of the {setup.lanes} replay lanes")
    lane_config = ConfigDict(config.selfplay.to_dict())
    lane_config.num_games = games // setup.lanes
    selfplay.check_selfplay_config(lane_config)
    apply_fn = functools.partial(setup.net.apply, train=False)

    def play(variables, key, resign):
        out, stats, resign = selfplay.play_games(lane_config, setup.game, apply_fn, variables, key, resign,
                                                 search_config=config.search)
        return out.training_samples(), stats._asdict(), resign

    return play


def initial_resign_state(config: ConfigDict) -> Any:
    """Self-play's resignation state for one lane (``Setup.init_state`` copies it to every lane)."""
    return selfplay.initial_resign_state(config.selfplay)


def network_evaluations(config: ConfigDict, game: Othello) -> int:
    """Network evaluations one iteration's self-play computes (every game searched every ply)."""
    plies = selfplay.num_plies(config.selfplay, game)
    return plies * int(config.selfplay.num_games) * (int(config.search.num_simulations) + 1)
