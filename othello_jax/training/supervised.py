"""Supervised learning from expert games: the AlphaZero network learns to predict the expert's
move (policy cross-entropy) and the game's result (value MSE).

The training rows live on the device as bitboards (:mod:`othello_jax.data.expert`); each step
samples a batch uniformly, turns it into :class:`~othello_jax.training.samples.Samples` (one-hot policy
target), applies a random dihedral symmetry per row and takes the same gradient step as
self-play training (:func:`othello_jax.training.sgd.make_sgd_step`). ``steps_per_call`` steps run in
one compiled ``lax.scan``. :func:`run` is the whole loop: data, periodic test accuracy,
JSON-lines metrics and orbax checkpoints that :func:`othello_jax.checkpoint.load_agent_variables`
reads like a self-play checkpoint.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import optax
import orbax.checkpoint as ocp
from ml_collections import ConfigDict

from othello_jax import checkpoint
from othello_jax.data import expert, move_prediction
from othello_jax.game import Othello
from othello_jax.model import AlphaZeroNet, NetworkConfig, init_variables, make_network
from othello_jax.search.config import read_record
from othello_jax.training import replay
from othello_jax.training.metrics import MetricsLog
from othello_jax.training.optimizers import learning_rate_schedule, make_optimizer
from othello_jax.training.samples import Samples
from othello_jax.training.settings import (
    LossSettings,
    OptimizerSettings,
    need,
    network_config,
    optimizer_settings,
)
from othello_jax.training.sgd import make_sgd_step

GAME = Othello(8)


# ---------------------------------------------------------------------------------------------
# settings: the supervised schema (experiments/configs/supervised.py), resolved once
# ---------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class DataSettings:
    """``config.data``: where the expert games are and which years are held out."""

    wthor_dir: str
    cache_dir: str
    test_from_year: int


@dataclasses.dataclass(frozen=True)
class SupervisedSettings:
    """A supervised run's config resolved (field names are the config's; its defaults live in
    ``experiments/configs/supervised.py``, a schema of its own)."""

    seed: int
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
    checkpoint_keep: int


def resolve(config: ConfigDict) -> SupervisedSettings:
    """``config`` as :class:`SupervisedSettings`; a one-line ``InputError`` names the first
    impossible setting (the data directory is checked by :func:`check_config`)."""
    data = read_record(DataSettings, config.data, "data")
    settings = read_record(SupervisedSettings, config, "config", data=data, network=network_config(config),
                            loss=read_record(LossSettings, config.loss, "loss"),
                            optimizer=optimizer_settings(config.optimizer))
    need(settings.batch_size >= 1, f"batch_size must be >= 1, got {settings.batch_size}")
    need(settings.total_steps >= 1, f"total_steps must be >= 1, got {settings.total_steps}")
    need(settings.steps_per_call >= 1, f"steps_per_call must be >= 1, got {settings.steps_per_call}")
    need(settings.eval_every >= 0, "eval_every must be >= 0")
    need(settings.max_minutes >= 0, "max_minutes must be >= 0")
    need(1977 < data.test_from_year <= 2100, f"data.test_from_year {data.test_from_year} is not a year after 1977")
    return settings


def expert_samples(rows: expert.ExpertPositions, index: jax.Array, game: Othello = GAME) -> Samples:
    """Rows ``index`` of the (device) expert data as training samples with one-hot policies."""
    picked = expert.ExpertPositions(*(x[index] for x in rows))
    policy = jax.nn.one_hot(picked.action.astype(jnp.int32), game.num_actions, dtype=jnp.float32)
    return Samples(state=expert.to_state(picked, game), policy=policy,
                   value=picked.value.astype(jnp.float32), mask=jnp.ones(index.shape, bool))


def sample_batch(rows: expert.ExpertPositions, key: jax.Array, batch_size: int, augment: bool,
                 game: Othello = GAME) -> Samples:
    """A uniform random batch of rows, each under its own random symmetry when ``augment``."""
    pick_key, sym_key = jax.random.split(key)
    index = jax.random.randint(pick_key, (batch_size,), 0, rows.action.shape[0])
    batch = expert_samples(rows, index, game)
    return replay.augment(batch, sym_key, game.size) if augment else batch


def make_train_chunk(net: AlphaZeroNet, optimizer: optax.GradientTransformation, config: SupervisedSettings,
                     game: Othello = GAME) -> Callable:
    """Compiled ``(params, batch_stats, opt_state, rows, key) -> (params, batch_stats, opt_state,
    mean metrics)`` running ``config.steps_per_call`` gradient steps.

    Several steps run in one ``lax.scan`` (fewer dispatches on accelerators); with
    ``config.unroll`` the scan is unrolled, which XLA:CPU needs: a rolled loop around the
    network's convolutions runs ~30x slower there. One step per call skips the scan.
    """
    sgd_step = make_sgd_step(net, game, optimizer, config.loss)
    batch_size, augment, steps = config.batch_size, config.augment, config.steps_per_call

    @jax.jit
    def chunk(params, batch_stats, opt_state, rows, key):
        def one(carry, key):  # the data is a loop invariant, not part of the carry
            batch = sample_batch(rows, key, batch_size, augment, game)
            params, batch_stats, opt_state, metrics = sgd_step(*carry, batch)
            return (params, batch_stats, opt_state), metrics

        if steps == 1:
            carry, metrics = one((params, batch_stats, opt_state), key)
        else:
            keys = jax.random.split(key, steps)
            carry, metrics = jax.lax.scan(one, (params, batch_stats, opt_state), keys,
                                          unroll=config.unroll)
            metrics = jax.tree.map(jnp.mean, metrics)
        return (*carry, metrics)

    return chunk


def check_config(config: ConfigDict) -> SupervisedSettings:
    """:func:`resolve`, and the WThor directory must exist; one-line ``InputError`` otherwise."""
    settings = resolve(config)
    need(Path(settings.data.wthor_dir).expanduser().is_dir(),
         f"WThor database not found at {settings.data.wthor_dir}; set --config.data.wthor_dir")
    return settings


def save_network(ckpts: checkpoint.Checkpoints, step: int, variables: dict, meta: dict) -> None:
    """Save the network as ``WORKDIR/checkpoints/<step>`` (variables + meta, no training state),
    readable by :func:`othello_jax.checkpoint.load_agent_variables` like a self-play checkpoint."""
    meta = dict(meta, format_version=checkpoint.format_version(meta["network"]), step=int(step),
                buffer_saved=False)
    ckpts.latest.save(int(step), args=ocp.args.Composite(
        variables=ocp.args.StandardSave(variables), meta=ocp.args.JsonSave(meta)), force=True)


def _console(record: dict) -> str:
    parts = [f"step {record['step']:>7}"]
    for name, fmt in (("loss", ".3f"), ("policy_loss", ".3f"), ("value_loss", ".3f"),
                      ("eval/top1", ".3f"), ("eval/top3", ".3f"), ("examples_per_s", ".0f"),
                      ("learning_rate", ".2e"), ("minutes", ".1f")):
        if name in record:
            parts.append(f"{name.replace('eval/', 'test_')} {record[name]:{fmt}}")
    return "  ".join(parts)


def run(config: ConfigDict, workdir: str | os.PathLike, log: Callable[[str], None] = print) -> dict:
    """Train from expert games; return the last evaluation (``{'top1', 'top3', 'by_stage', ...}``)."""
    settings = check_config(config)
    workdir = Path(workdir).expanduser()
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.time()

    cache = str(Path(settings.data.cache_dir).expanduser()) if settings.data.cache_dir else None
    log(f"loading expert data from {settings.data.wthor_dir} (cache: {cache or 'off'}) ...")
    data = expert.load_expert_data(settings.data.wthor_dir, settings.data.test_from_year, cache)
    log(data.summary())
    rows = expert.to_device(data.train)
    eval_rows = move_prediction.subsample(data.test, settings.eval_positions, seed=0)

    net_config = settings.network
    net = make_network(GAME.size, net_config)
    key = jax.random.PRNGKey(settings.seed)
    key, init_key = jax.random.split(key)
    variables = init_variables(net, init_key, GAME.size)
    params, batch_stats = variables["params"], variables["batch_stats"]
    optimizer = make_optimizer(settings.optimizer)
    opt_state = optimizer.init(params)
    schedule = learning_rate_schedule(settings.optimizer)
    chunk = make_train_chunk(net, optimizer, settings)
    policy = move_prediction.network_policy(net)
    n_params = sum(x.size for x in jax.tree.leaves(params))
    log(f"network {net_config} ({n_params:,} parameters); {settings.total_steps} steps of {settings.batch_size}")

    metrics_log = MetricsLog(workdir)
    ckpts = checkpoint.Checkpoints(workdir, keep=settings.checkpoint_keep, async_save=False)
    meta = {"kind": "supervised", "board_size": GAME.size, "network": checkpoint.network_meta(net_config),
            "data": data.info, "config": config.to_dict()}
    steps_per_call = settings.steps_per_call
    total_calls = math.ceil(settings.total_steps / steps_per_call)
    eval_calls = max(settings.eval_every // steps_per_call, 1) if settings.eval_every else 0
    log_calls = max(settings.log_every // steps_per_call, 1)
    best, result = -1.0, {}
    tick, seen = time.time(), 0

    def evaluate(step: int) -> dict:
        nonlocal best
        current = {"params": params, "batch_stats": batch_stats}
        result = move_prediction.summarize(move_prediction.ranks(policy, current, eval_rows), eval_rows)
        step_meta = dict(meta, accuracy=result)
        save_network(ckpts, step, current, step_meta)
        if result["top1"] > best:
            best = result["top1"]
            ckpts.save_best(step, current, step_meta)
        return result

    for call in range(1, total_calls + 1):
        key, sub = jax.random.split(key)
        params, batch_stats, opt_state, metrics = chunk(params, batch_stats, opt_state, rows, sub)
        step = call * steps_per_call
        seen += steps_per_call * settings.batch_size
        out_of_time = settings.max_minutes and (time.time() - started) / 60 >= settings.max_minutes
        last = call == total_calls or out_of_time
        if call % log_calls == 0 or last or (eval_calls and call % eval_calls == 0):
            metrics = jax.tree.map(float, metrics)
            now = time.time()
            record = {"iteration": step, "step": step, **metrics, "learning_rate": float(schedule(step)),
                      "examples_per_s": seen / max(now - tick, 1e-9), "minutes": (now - started) / 60}
            tick, seen = now, 0
            if (eval_calls and call % eval_calls == 0) or last:
                result = evaluate(step)
                record.update({f"eval/{k}": result[k] for k in ("top1", "top3")})
                record.update({f"eval/top1_moves_{name}": r["top1"] for name, r in result["by_stage"].items()})
            metrics_log.write(record)
            log(_console(record))
        if last:
            if out_of_time:
                log(f"stopping after {settings.max_minutes} minutes (max_minutes)")
            break
    ckpts.close()
    log(f"test accuracy on {result['positions']} held-out positions:\n" + move_prediction.format_report(result))
    log(f"saved to {workdir / checkpoint.LATEST_DIR} (best test top-1 in {workdir / checkpoint.BEST_DIR})")
    return result
