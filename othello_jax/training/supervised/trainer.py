"""Supervised learning: the AlphaZero network learns from expert games (WThor, 8x8: the expert's
move and the game's result) or from labelled sets of exactly solved positions (``data.labels``,
any board size: the optimal moves and the exact result, :mod:`othello_jax.training.supervised.label_targets`).

The training rows live on the device; each step samples a batch uniformly, turns it into
:class:`~othello_jax.training.compiled.samples.Samples`, applies a random dihedral symmetry per row and
takes the same gradient step as self-play training (:func:`othello_jax.training.compiled.sgd.make_sgd_step`).
``steps_per_call`` steps run in one compiled ``lax.scan``. Data parallel like self-play training:
the rows, parameters and optimizer state are replicated over a 1-D mesh of the devices, each
batch is split over it, and XLA inserts the gradient and batch-norm all-reduces, so the
arithmetic is the same on 1 or many devices (on a CPU, one host device per core). The board
size is the data's. With ``schedule_clock = "minutes"`` the learning-rate schedule runs over
what is left of the ``max_minutes`` budget once the first call has compiled (the share of it
used, or of ``total_steps`` done if larger), so a time-limited run warms up and anneals.
:func:`run` is the whole loop: data, periodic held-out evaluation, JSON-lines metrics and orbax
checkpoints that :func:`othello_jax.checkpoint.load_agent_variables` reads like a self-play checkpoint.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh
from ml_collections import ConfigDict

from othello_jax import checkpoint, stops
from othello_jax.data import expert, move_prediction, wthor
from othello_jax.errors import need
from othello_jax.game import Othello
from othello_jax.model import AlphaZeroNet, init_variables, make_network
from othello_jax.training.compiled import replay
from othello_jax.training.compiled.iteration import make_mesh
from othello_jax.training.compiled.optimizers import (
    learning_rate_schedule,
    make_optimizer,
    position_schedule,
    scale_updates,
)
from othello_jax.training.compiled.placement import Placement
from othello_jax.training.compiled.samples import Samples
from othello_jax.training.compiled.sgd import make_sgd_step
from othello_jax.training.runner.loop import StopSignals, TrainingInterrupted
from othello_jax.training.runner.metrics import MetricsLog
from othello_jax.training.settings.supervised_settings import SupervisedSettings, resolve
from othello_jax.training.supervised import label_targets

WTHOR_GAME = Othello(8)  # the expert games' board


def expert_samples(rows: expert.ExpertPositions, index: jax.Array, game: Othello = WTHOR_GAME) -> Samples:
    """Rows ``index`` of the (device) expert data as training samples with one-hot policies."""
    picked = expert.ExpertPositions(*(x[index] for x in rows))
    policy = jax.nn.one_hot(picked.action.astype(jnp.int32), game.num_actions, dtype=jnp.float32)
    return Samples(state=expert.to_state(picked, game), policy=policy,
                   value=picked.value.astype(jnp.float32), mask=jnp.ones(index.shape, bool))


# (device rows, row indices, game) -> Samples: expert_samples or label_targets.label_samples
ToSamples = Callable[[Any, jax.Array, Othello], Samples]


class Weighted(NamedTuple):
    """Training rows drawn as often as they occurred: ``rows`` and each row's index repeated by its
    count (WThor's original examples, 4 bytes each, without repeating the rows themselves)."""

    rows: Any
    occurrences: jax.Array  # int32 [sum of counts]


def weighted(rows: expert.ExpertPositions) -> Weighted:
    """The expert rows sampled by their occurrence counts (Liskowski et al.'s *Original*)."""
    occurrences = np.repeat(np.arange(rows.size, dtype=np.int32), np.asarray(rows.count, np.int64))
    return Weighted(rows, jnp.asarray(occurrences))


def draw_rows(rows: Any, key: jax.Array, count: int) -> jax.Array:
    """``count`` random row indices: uniform, or by occurrence for :class:`Weighted` rows."""
    if isinstance(rows, Weighted):
        return rows.occurrences[jax.random.randint(key, (count,), 0, rows.occurrences.shape[0])]
    return jax.random.randint(key, (count,), 0, jax.tree.leaves(rows)[0].shape[0])


def sample_batch(rows: Any, key: jax.Array, batch_size: int, augment: bool, game: Othello = WTHOR_GAME,
                 to_samples: ToSamples = expert_samples) -> Samples:
    """A random batch of rows (uniform, or by occurrence for :class:`Weighted` rows), each under its
    own random symmetry when ``augment``."""
    pick_key, sym_key = jax.random.split(key)
    index = draw_rows(rows, pick_key, batch_size)
    batch = to_samples(rows.rows if isinstance(rows, Weighted) else rows, index, game)
    return replay.augment(batch, sym_key, game.size) if augment else batch


def batch_mesh(batch_size: int, num_devices: int = 0) -> Mesh:
    """The mesh a supervised batch is split over: ``num_devices`` devices, or (0) the most devices
    that divide ``batch_size`` (all of them for the usual powers of two)."""
    count = num_devices or max(d for d in range(1, jax.device_count() + 1) if batch_size % d == 0)
    return make_mesh(count)


def make_train_chunk(net: AlphaZeroNet, optimizer: optax.GradientTransformation, config: SupervisedSettings,
                     game: Othello = WTHOR_GAME, to_samples: ToSamples = expert_samples,
                     mesh: Mesh | None = None) -> Callable:
    """Compiled ``(params, batch_stats, opt_state, rows, key[, position]) -> (params, batch_stats,
    opt_state, mean metrics)`` running ``config.steps_per_call`` gradient steps.

    Several steps run in one ``lax.scan`` (fewer dispatches on accelerators); with
    ``config.unroll`` the scan is unrolled, which XLA:CPU needs: a rolled loop around the
    network's convolutions runs ~30x slower there. One step per call skips the scan. With a
    schedule ``position`` (float32 in [0, 1], the minutes clock) ``optimizer`` must have been
    built with ``clock="minutes"``: the call's steps use the learning rate of that position.
    Over ``mesh`` (default: one device) every batch is split by rows; the rest stays replicated.
    """
    placement = Placement(mesh if mesh is not None else make_mesh(1))
    sgd_step = make_sgd_step(net, game, optimizer, config.loss)
    rate_at = position_schedule(config.optimizer)
    batch_size, augment, steps = config.batch_size, config.augment, config.steps_per_call

    def split(batch: Samples) -> Samples:
        return jax.lax.with_sharding_constraint(batch, jax.tree.map(lambda _: placement.lanes, batch))

    @functools.partial(jax.jit, out_shardings=placement.replicated)
    def chunk(params, batch_stats, opt_state, rows, key, position=None):
        step_fn = sgd_step
        if position is not None:
            step_fn = make_sgd_step(net, game, scale_updates(optimizer, rate_at(position)), config.loss)

        def one(carry, key):  # the data is a loop invariant, not part of the carry
            batch = split(sample_batch(rows, key, batch_size, augment, game, to_samples))
            params, batch_stats, opt_state, metrics = step_fn(*carry, batch)
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


class PlacedTraining(NamedTuple):
    """A run's compiled steps and their inputs, every one already on ``mesh`` (see :func:`place_training`)."""

    chunk: Callable  # make_train_chunk's compiled steps over mesh
    mesh: Mesh
    params: Any
    batch_stats: Any
    opt_state: Any
    rows: Any


def place_training(net: AlphaZeroNet, optimizer: optax.GradientTransformation, config: SupervisedSettings,
                   game: Othello, rows: Any, to_samples: ToSamples, variables: dict) -> PlacedTraining:
    """The compiled steps over :func:`batch_mesh`, with the network ``variables``, a fresh optimizer
    state and the training ``rows`` replicated on it once (the rows must not move on every call)."""
    mesh = batch_mesh(config.batch_size, config.num_devices)
    placement = Placement(mesh)
    params, batch_stats, rows = placement.replicate((variables["params"], variables["batch_stats"], rows))
    opt_state = jax.jit(optimizer.init, out_shardings=placement.replicated)(params)
    chunk = make_train_chunk(net, optimizer, config, game, to_samples, mesh)
    return PlacedTraining(chunk, mesh, params, batch_stats, opt_state, rows)


def check_config(config: ConfigDict) -> SupervisedSettings:
    """:func:`resolve`, and the labels files (or, without them, the WThor directory) must exist;
    one-line ``InputError`` otherwise."""
    settings = resolve(config)
    if settings.data.labels.strip():
        for path in label_targets.parse_paths(settings.data.labels):
            need(Path(path).expanduser().is_file(), f"labels file not found: {path}")
    else:
        wthor.require_database(settings.data.wthor_dir, "set --config.data.wthor_dir")
    return settings


class Evaluation(NamedTuple):
    """One held-out check of the network."""

    result: dict  # JSON-serialisable: checkpoint meta, and what run() returns
    metrics: dict[str, float]  # the eval/ fields of metrics.jsonl
    score: float  # higher is better: picks WORKDIR/best
    report: str  # the table printed at the end


@dataclasses.dataclass(frozen=True)
class Source:
    """A run's training rows (on the device) and its held-out check, whichever the data."""

    game: Othello  # the data's board
    rows: Any  # a pytree of device arrays, leaves [N, ...]
    to_samples: ToSamples
    evaluate: Callable[[AlphaZeroNet, dict], Evaluation]  # (network, variables) -> held-out check
    info: dict  # JSON-serialisable description (checkpoint meta)


def wthor_source(settings: SupervisedSettings, log: Callable[[str], None]) -> Source:
    """The expert games: one-hot expert moves and mean results; held out: top-1/top-3 accuracy."""
    cache = str(Path(settings.data.cache_dir).expanduser()) if settings.data.cache_dir else None
    directory = wthor.resolve_directory(settings.data.wthor_dir)
    log(f"loading expert data from {directory} (cache: {cache or 'off'}) ...")
    data = expert.load_expert_data(directory, settings.data.test_from_year, cache,
                                   split=settings.data.split, test_share=settings.data.test_share,
                                   value_target=settings.data.value_target)
    log(data.summary())
    eval_rows = move_prediction.subsample(data.test, settings.eval_positions, seed=0)
    eval_legal = move_prediction.legal_move_counts(eval_rows)  # once: every evaluation sees the same rows

    def evaluate(net: AlphaZeroNet, variables: dict) -> Evaluation:
        policy = move_prediction.network_policy(net)
        rank = move_prediction.ranks(policy, variables, eval_rows)
        result = move_prediction.summarize(rank, eval_rows, legal=eval_legal)
        metrics = {f"eval/{k}": result[k] for k in ("top1", "top3")}
        metrics.update({f"eval/top1_moves_{name}": r["top1"] for name, r in result["by_stage"].items()})
        report = (f"test accuracy on {result['positions']} held-out positions:\n"
                  + move_prediction.format_report(result))
        return Evaluation(result, metrics, result["top1"], report)

    rows = expert.to_device(data.train)
    if settings.data.sampling == "original":
        rows = weighted(rows)
    return Source(WTHOR_GAME, rows, expert_samples, evaluate, data.info)


def labels_source(settings: SupervisedSettings, log: Callable[[str], None]) -> Source:
    """Labelled sets: optimal moves and exact results; held out: optimal share, disc loss and value sign."""
    data = label_targets.load_label_files(settings.data.labels)
    log(data.summary())
    if settings.data.train_positions:
        train = label_targets.subsample(data.train, settings.data.train_positions, seed=settings.seed)
        data = data._replace(train=train, info={**data.info, "train": len(train)})
        log(f"training on a random subset of {len(train)} of those positions (data.train_positions)")
    held_out = label_targets.subsample(data.test, settings.eval_positions, seed=0).positions

    def evaluate(net: AlphaZeroNet, variables: dict) -> Evaluation:
        score = label_targets.evaluate(net, variables, held_out)
        return Evaluation(score.as_dict(), score.metrics(), score.moves.total.optimal, score.format())

    rows = label_targets.to_device(data.train, settings.network.value_margin, settings.data.policy_temperature)
    return Source(data.game, rows, label_targets.label_samples, evaluate, data.info)


# what a resumed run must share with its checkpoint (the meta's names)
RESUME_KEYS = ("board_size", "network", "kind", "data", "batch_size", "steps_per_call")


class Progress(NamedTuple):
    """Where a run stands between calls: what a checkpoint's meta keeps so a stopped run resumes."""

    step: int  # gradient steps done
    trained_s: float  # wall seconds trained over every session, compilation included
    offset_s: float  # the minutes clock starts after the first session's first (compiling) call
    best: float  # the best held-out score so far (-inf before the first evaluation)


def save_state(ckpts: checkpoint.Checkpoints, progress: Progress, variables: dict, opt_state: Any,
               key: jax.Array, meta: dict) -> None:
    """Save the network with its optimizer state and rng key as ``WORKDIR/checkpoints/<step>``:
    readable by :func:`othello_jax.checkpoint.load_agent_variables` like a self-play checkpoint,
    and enough to resume the run where it stopped."""
    meta = dict(meta, buffer_saved=False, resumable=True, trained_s=progress.trained_s,
                schedule_offset_s=progress.offset_s, best_score=None if progress.best == -math.inf else progress.best)
    ckpts.save_parts(progress.step, variables, {"opt_state": opt_state, "rng": key}, meta)


def resume_state(ckpts: checkpoint.Checkpoints, meta: dict, variables: dict, opt_state: Any,
                 key: jax.Array) -> tuple[Progress, dict, Any, jax.Array] | None:
    """The latest checkpoint's ``(progress, variables, opt_state, key)``, restored into the shapes and
    placement of the fresh ones given; None in a fresh workdir. One-line ``CheckpointError`` for a
    checkpoint of another network, data or batch, or one saved before runs could resume."""
    step = ckpts.latest_step()
    if step is None:
        return None
    path = ckpts.workdir / checkpoint.LATEST_DIR / str(step)
    saved = ckpts.read_meta(step)
    checkpoint.check_compatible(saved, meta, path, keys=RESUME_KEYS)
    if not saved.get("resumable"):
        raise checkpoint.CheckpointError(f"checkpoint {path} was saved before supervised runs could resume "
                                         "(no optimizer state); use a new --workdir")
    variables, train = ckpts.restore_parts(step, variables, {"opt_state": opt_state, "rng": key})
    best = saved.get("best_score")
    progress = Progress(step, float(saved["trained_s"]), float(saved["schedule_offset_s"]),
                        -math.inf if best is None else float(best))
    # the key comes back committed to the device it was saved from; the fresh one is uncommitted, so
    # jit places it beside the replicated parameters of a run over several devices
    return progress, variables, train["opt_state"], jnp.asarray(np.asarray(train["rng"]))


def _console(record: dict) -> str:
    parts = [f"step {record['step']:>7}"]
    for name, fmt in (("loss", ".3f"), ("policy_loss", ".3f"), ("value_loss", ".3f"),
                      ("eval/top1", ".3f"), ("eval/top3", ".3f"), ("eval/optimal", ".3f"), ("eval/disc_loss", ".2f"),
                      ("eval/value_sign", ".3f"), ("examples_per_s", ".0f"),
                      ("learning_rate", ".2e"), ("minutes", ".1f")):
        if name in record:
            parts.append(f"{name.replace('eval/', 'test_')} {record[name]:{fmt}}")
    return "  ".join(parts)


def run(config: ConfigDict, workdir: str | os.PathLike, log: Callable[[str], None] = print,
        signals: StopSignals | None = None) -> dict:
    """Train from the configured data, resuming the workdir's run if it has one; return the last
    held-out evaluation (WThor: ``{'top1', 'top3', 'by_stage', ...}``; labels:
    :meth:`~othello_jax.training.supervised.label_targets.LabelScore.as_dict`).

    A checkpoint (network, optimizer state, rng key and the run's progress) is written at every
    evaluation, every ``checkpoint_minutes`` and when SIGINT/SIGTERM stops the run, which then
    raises :class:`~othello_jax.training.runner.loop.TrainingInterrupted`; the same call resumes
    it, and with the iterations clock continues exactly as if it had not stopped. ``signals``
    answers them (the first at once in one line; default: a second raises ``KeyboardInterrupt``).
    """
    settings = check_config(config)
    workdir = Path(workdir).expanduser()
    workdir.mkdir(parents=True, exist_ok=True)
    source = labels_source(settings, log) if settings.data.labels.strip() else wthor_source(settings, log)
    session_start = time.time()  # the clock counts training, not building or reading the data
    game = source.game
    net_config = settings.network
    net = make_network(game.size, net_config)
    key = jax.random.PRNGKey(settings.seed)
    key, init_key = jax.random.split(key)
    # a fresh run starts from init_network; a resumed one from its checkpoint (these are its templates)
    start_from = "" if checkpoint.saved_steps(workdir / checkpoint.LATEST_DIR) else settings.init_network
    if start_from:
        variables = checkpoint.load_start_network(start_from, game.size, net_config)[1]
    else:  # compiled: op by op, initialising the network costs more than compiling it
        variables = jax.jit(functools.partial(init_variables, net, board_size=game.size))(init_key)
    minutes = settings.schedule_clock == "minutes"
    optimizer = make_optimizer(settings.optimizer, clock=settings.schedule_clock)
    chunk, mesh, params, batch_stats, opt_state, rows = place_training(
        net, optimizer, settings, game, source.rows, source.to_samples, variables)
    schedule, rate_at = learning_rate_schedule(settings.optimizer), position_schedule(settings.optimizer)

    metrics_log = MetricsLog(workdir, tensorboard=settings.tensorboard)
    ckpts = checkpoint.Checkpoints(workdir, keep=settings.checkpoint_keep, async_save=False)
    meta = {"kind": "supervised", "board_size": game.size, "network": checkpoint.network_meta(net_config),
            "data": source.info, "batch_size": settings.batch_size, "steps_per_call": settings.steps_per_call,
            "config": config.to_dict()}
    progress = Progress(step=0, trained_s=0.0, offset_s=0.0, best=-math.inf)
    resumed = resume_state(ckpts, meta, {"params": params, "batch_stats": batch_stats}, opt_state, key)
    if resumed is not None:
        progress, restored, opt_state, key = resumed
        params, batch_stats = restored["params"], restored["batch_stats"]
        metrics_log.truncate_after(progress.step)
        log(f"resumed {workdir} at step {progress.step} ({progress.trained_s / 60:.1f} minutes trained)")
    elif start_from:
        log(f"starting from the network in {start_from} (init_network)")
    trained_before_s = progress.trained_s  # earlier sessions' time: saves must not count this session's twice
    n_params = sum(x.size for x in jax.tree.leaves(params))
    log(f"network {net_config} ({n_params:,} parameters) on {game.size}x{game.size}; up to "
        f"{settings.total_steps} steps of {settings.batch_size}, split over {mesh.size} device(s)"
        + (f", learning rate over {settings.max_minutes} minutes" if minutes else ""))

    def trained() -> float:
        """Seconds trained over every session, this one up to now."""
        return trained_before_s + (time.time() - session_start)

    def position(steps_done: int) -> float:
        """The minutes clock's schedule position: the share used of the budget left after the
        first (compiling) call, or of ``total_steps`` done if larger; 0 in the first call."""
        if not steps_done:
            return 0.0
        horizon = max(60 * settings.max_minutes - progress.offset_s, 1e-9)
        return min(max((trained() - progress.offset_s) / horizon, steps_done / settings.total_steps), 1.0)

    def save(step: int) -> None:
        nonlocal progress, saved_at
        progress = progress._replace(step=step, trained_s=trained())
        save_state(ckpts, progress, {"params": params, "batch_stats": batch_stats}, opt_state, key, meta)
        saved_at = time.time()

    def evaluate(step: int) -> Evaluation:
        nonlocal progress
        current = {"params": params, "batch_stats": batch_stats}
        evaluation = source.evaluate(net, current)
        meta["accuracy"] = evaluation.result
        if evaluation.score > progress.best:
            progress = progress._replace(best=evaluation.score)
            ckpts.save_best(step, current, meta)
        save(step)
        return evaluation

    steps_per_call = settings.steps_per_call
    total_calls = math.ceil(settings.total_steps / steps_per_call)
    eval_calls = max(settings.eval_every // steps_per_call, 1) if settings.eval_every else 0
    log_calls = max(settings.log_every // steps_per_call, 1)
    first_call = progress.step // steps_per_call + 1
    evaluation, tick, seen, saved_at = None, time.time(), 0, time.time()
    signals = signals or StopSignals()
    signals.checkpoints, signals.done, signals.phase = workdir / checkpoint.LATEST_DIR, progress.step, "training"
    signals.saved = progress.step or None
    with contextlib.ExitStack() as cleanup:
        cleanup.enter_context(stops.watching(signals))
        cleanup.callback(metrics_log.close)
        cleanup.callback(metrics_log.draw_curves)
        cleanup.callback(ckpts.close)
        for call in range(first_call, total_calls + 1):
            key, sub = jax.random.split(key)
            at = position((call - 1) * steps_per_call) if minutes else None
            extra = () if at is None else (jnp.float32(at),)
            params, batch_stats, opt_state, metrics = chunk(params, batch_stats, opt_state, rows, sub, *extra)
            if call == 1:  # the minutes clock starts once the first call has compiled
                progress = progress._replace(offset_s=trained())
            step = signals.done = call * steps_per_call
            seen += steps_per_call * settings.batch_size
            out_of_time = settings.max_minutes and trained() / 60 >= settings.max_minutes
            last = call == total_calls or out_of_time
            evaluated = bool((eval_calls and call % eval_calls == 0) or last)
            if call % log_calls == 0 or evaluated:
                metrics = jax.tree.map(float, metrics)
                now = time.time()
                rate = float(schedule(step)) if at is None else float(rate_at(jnp.float32(at)))
                record = {"iteration": step, "step": step, **metrics, "learning_rate": rate,
                          "examples_per_s": seen / max(now - tick, 1e-9), "minutes": trained() / 60}
                if at is not None:
                    record["schedule_position"] = at
                tick, seen = now, 0
                if evaluated:
                    evaluation = evaluate(step)
                    record.update(evaluation.metrics)
                metrics_log.write(record, curves=evaluated)
                log(_console(record))
            if last:
                if out_of_time:
                    log(f"stopping after {settings.max_minutes} minutes (max_minutes)")
                break
            due = settings.checkpoint_minutes and time.time() - saved_at >= 60 * settings.checkpoint_minutes
            if (signals.received or due) and not evaluated:
                save(step)
            if signals.received:
                raise TrainingInterrupted(
                    f"stopped by {signals.received} after step {step} of {settings.total_steps}; checkpoint "
                    f"{workdir / checkpoint.LATEST_DIR / str(step)} saved: run the same command to resume",
                    step, signals.received)
    if evaluation is None:  # the run had finished already: report its network again
        log(f"the run in {workdir} finished at step {progress.step}; a larger total_steps extends it")
        evaluation = source.evaluate(net, {"params": params, "batch_stats": batch_stats})
    log(evaluation.report)
    log(f"saved to {workdir / checkpoint.LATEST_DIR} (best held-out score in {workdir / checkpoint.BEST_DIR})")
    return evaluation.result
