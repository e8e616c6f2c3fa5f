"""The host-side training loop: resume, schedule stages, the compiled iteration, metrics, checkpoints.

    from othello_jax.training.loop import run
    from othello_jax.training.config import default_config
    run(default_config(), "runs/othello8")

The config is resolved once by :func:`~othello_jax.training.program.make_train`; everything heavy
happens inside its compiled iterations (one per schedule stage). This loop only fetches the
scalar metrics once per iteration, writes them, prints progress, evaluates, gates and saves
checkpoints. Running it again on the same workdir resumes from the last checkpoint.

A SIGTERM or SIGINT (a preempted VM, a recycled runtime, Ctrl-C) lets the iteration in flight
finish (a compiled iteration cannot be interrupted), writes a checkpoint and raises
:class:`TrainingInterrupted`; a second signal aborts at once. With several processes
(``config.distributed``), every process stops at the same iteration: SIGTERM goes through
JAX's preemption sync point, SIGINT and the clock-based decisions (``max_minutes``,
``checkpoint.every_minutes``, the schedule position) through process 0.

With ``max_minutes`` the run stops early enough that the final evaluation and checkpoint fit
inside the budget, and with ``schedule_clock = "minutes"`` each iteration is passed the
schedule positions it spans (:mod:`othello_jax.training.budget`). Training time is everything
a session does from :func:`run`'s start (setup, compiling, evaluating, saving), added to the
time recorded in the checkpoint it resumed from.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np
from jax.experimental import multihost_utils
from ml_collections import ConfigDict

from othello_jax import checkpoint
from othello_jax.errors import InputError
from othello_jax.training import arena_hooks
from othello_jax.training.budget import TimeBudget
from othello_jax.training.metrics import MetricsLog, Progress, format_duration
from othello_jax.training.program import TrainProgram, make_train

# an evaluation hook: (stage config, program, variables, key) -> {"eval/<opponent>": score in [0, 1], ...}
Evaluator = Callable[[ConfigDict, TrainProgram, dict, jax.Array], dict]
# a gate: (stage config, program, challenger variables, champion variables, key) -> challenger's score
Gate = Callable[[ConfigDict, TrainProgram, dict, dict, jax.Array], float]
# called with the iteration of each checkpoint once it is on disk (e.g. to copy the run elsewhere)
CheckpointHook = Callable[[int], None]


class TrainingInterrupted(Exception):
    """A signal stopped the run after a checkpoint; ``str()`` is a one-line message saying where."""

    def __init__(self, message: str, iteration: int, reason: str):
        super().__init__(message)
        self.iteration = iteration
        self.reason = reason


def run(config: ConfigDict, workdir: str | Path, *, evaluator: Evaluator | None = None,
        gate: Gate | None = None, print_fn: Callable[[str], None] = print,
        on_checkpoint: CheckpointHook | None = None) -> dict:
    """Train the run described by ``config`` in ``workdir`` (resuming if it has checkpoints).

    Returns the last iteration's metrics record. Every setting is read from the config of the
    stage in force. ``evaluator`` (every ``eval.every`` iterations) and ``gate`` (every
    ``gating.every`` iterations when gating is on) default to the arena matches of
    :mod:`othello_jax.training.arena_hooks`. ``on_checkpoint(iteration)`` runs after each
    checkpoint is on disk (saves then wait for it). Raises :class:`TrainingInterrupted` after a
    SIGTERM or SIGINT, once the checkpoint is written; an unwritable workdir or a failed save
    raises :class:`~othello_jax.checkpoint.CheckpointError` (one line; earlier checkpoints intact).
    """
    session_start = time.perf_counter()
    initialize_distributed(config.distributed)
    multi = jax.process_count() > 1
    signals = StopSignals(sigterm=not multi)  # several processes: JAX's preemption service has SIGTERM
    try:
        return _train(config, Path(workdir), evaluator or arena_hooks.evaluate_against_baselines,
                      gate or arena_hooks.gate_against_champion, print_fn, on_checkpoint, signals, session_start)
    finally:
        signals.restore()


def _train(config: ConfigDict, workdir: Path, evaluator: Evaluator, gate: Gate, print_fn: Callable[[str], None],
           on_checkpoint: CheckpointHook | None, signals: StopSignals, session_start: float) -> dict:
    """The body of :func:`run`, with the stop signals already caught."""
    program = make_train(config)
    primary = jax.process_index() == 0
    multi = jax.process_count() > 1
    say = print_fn if primary else (lambda _: None)

    # a fresh state, or the workdir's last checkpoint
    ckpts = checkpoint.Checkpoints(workdir, keep=int(config.checkpoint.keep))  # probes the workdir first
    state, key = program.start(int(config.seed))  # placed on the mesh: the restore's targets too
    expect = program.meta()
    resumed, evaluations, best, timing = 0.0, [], None, {}
    if ckpts.latest_step() is not None:
        _check_clock(ckpts, program.clock, workdir)
        state, key, meta = ckpts.restore(state, key, expect)
        resumed = float(meta.get("elapsed_s", 0.0))
        evaluations = list(meta.get("evaluation", []))
        best = meta.get("best_score")
        timing = dict(meta.get("timing") or {})
        say(f"resumed {workdir} at iteration {int(state.iteration)} ({format_duration(resumed)} trained)")
    elif primary:
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "config.json").write_text(config.to_json_best_effort(indent=2))
    log = MetricsLog(workdir)
    start = int(state.iteration)
    if primary:
        log.truncate_after(start)

    def trained() -> float:
        """Training seconds: the checkpoint's, plus everything this session did (setup included)."""
        return resumed + time.perf_counter() - session_start

    total = int(config.iterations)
    budget = float(config.max_minutes) * 60.0
    clock = TimeBudget.from_meta(timing, budget, total, program.clock)
    reached = float(timing.get("position", 0.0))  # the schedule position never moves back
    progress = Progress(total)
    compiled: dict[int, Callable] = {}
    record: dict = {}
    processes = f", {jax.process_count()} processes" if multi else ""
    say(f"training {workdir}: {program.game.size}x{program.game.size}, {jax.device_count()} device(s){processes}, "
        f"{program.lanes} lane(s), network {program.network}, schedules by {program.clock}")

    saved = {"iteration": start if ckpts.latest_step() == start else None, "at": time.monotonic(), "timed": False}

    def save(iteration: int, stage: ConfigDict, final: bool = False) -> None:
        t0 = time.perf_counter()
        meta = dict(expect, iteration=iteration, elapsed_s=trained(), evaluation=evaluations, best_score=best,
                    schedule_clock=program.clock, timing=dict(clock.to_meta(), position=reached),
                    config=json.loads(config.to_json_best_effort()))
        ckpts.save(iteration, state, key, meta, save_buffer=bool(stage.checkpoint.save_buffer))
        saved.update(iteration=iteration, at=time.monotonic())
        if final or not saved["timed"] or on_checkpoint is not None:  # the first save is timed to the disk
            ckpts.wait()
            clock.record_save(time.perf_counter() - t0)
            saved["timed"] = True
        if on_checkpoint is not None:
            on_checkpoint(iteration)

    def where(at: float, done: int, stage: ConfigDict) -> tuple[float, int]:
        """(schedule position, stage index) after ``done`` iterations at ``at`` training seconds."""
        position = max(clock.position(at, done, bool(int(stage.eval.every))), reached)
        return position, program.stage_at(done, at / 60.0, 100.0 * position)

    stage = program.stage_configs[0]
    try:
        for iteration in range(start, total):
            # the stage in force (by iteration, training minutes or schedule position)
            index = where(trained(), iteration, stage)[1]
            if multi:  # process 0's clock decides
                index = int(_agree(index)[0])
            stage = program.stage_configs[index]
            evaluates = bool(int(stage.eval.every))

            # a stop signal (here or on any process): checkpoint what is done and stop
            reason = _agreed_stop(signals.received, iteration, multi)
            if reason is not None:
                if saved["iteration"] != iteration:
                    save(iteration, stage)
                ckpts.wait()
                where_saved = workdir / checkpoint.LATEST_DIR / str(iteration)
                raise TrainingInterrupted(
                    f"stopped by {reason} after iteration {iteration} of {total}; checkpoint {where_saved} saved; "
                    "run the same command again to resume", iteration, reason)

            # compiled once, when it starts
            compile_s = 0.0
            if index not in compiled:
                t0 = time.perf_counter()
                compiled.clear()  # an earlier stage never comes back
                compiled[index] = program.compile(index, state, key)
                compile_s = clock.compile_s = time.perf_counter() - t0
                say(f"compiled stage {index} (from {program.stage_label(index)}, "
                    f"{int(stage.search.num_simulations)} simulations) in {compile_s:.1f}s")

            # the schedule span of this iteration; the last one (by the budget) ends at position 1
            done = iteration + 1
            begin = trained()
            predicted = begin + clock.iteration_estimate()
            last_in_time = not _another_fits(clock, program, stage, index, predicted, done, where)
            start_at = max(clock.position(begin, iteration, evaluates), reached)
            end_at = 1.0 if last_in_time else max(where(predicted, done, stage)[0], start_at)
            if multi:
                start_at, end_at, last_in_time = _agree(start_at, end_at, last_in_time)
                last_in_time = bool(last_in_time)

            # one iteration: self-play, replay, gradient steps
            key, step_key = jax.random.split(key)
            t0 = time.perf_counter()
            state, metrics = compiled[index](state, step_key, *program.schedule_args(start_at, end_at))
            metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}
            seconds = time.perf_counter() - t0
            clock.record_iteration(seconds)
            reached = end_at
            record = dict(metrics, iteration=done, iteration_s=seconds, compile_s=compile_s,
                          positions_per_s=metrics["positions"] / seconds,
                          games_per_s=float(stage.selfplay.num_games) / seconds,
                          evaluations_per_s=program.network_evaluations(index) / seconds,
                          simulations=int(stage.search.num_simulations))

            # gating and evaluation (the clock's decisions are process 0's, so every process agrees)
            out_of_time = last_in_time or not _another_fits(clock, program, stage, index, trained(), done, where)
            minutes = float(stage.checkpoint.every_minutes)
            save_due = minutes > 0 and time.monotonic() - saved["at"] >= 60.0 * minutes
            if multi:
                out_of_time, save_due = _from_process_zero(out_of_time, save_due)
            last = done == total or out_of_time  # the final iteration is always evaluated and saved
            if stage.gating.enabled and done % int(stage.gating.every) == 0:
                t0 = time.perf_counter()
                state, record["gate/score"] = _gate(stage, program, state, gate, jax.random.fold_in(key, 1))
                clock.gate_s = time.perf_counter() - t0
            if int(stage.eval.every) and (done % int(stage.eval.every) == 0 or last):
                t0 = time.perf_counter()
                scores = _evaluate(stage, program, state, evaluator, jax.random.fold_in(key, 2))
                clock.evaluation_s = time.perf_counter() - t0
                record.update(scores)
                evaluations.append(dict(scores, iteration=done))
                score = _best_score(record, str(stage.eval.best_metric))
                if score is not None and (best is None or score > best):
                    best = score
                    ckpts.save_best(done, {"params": state.params, "batch_stats": state.batch_stats},
                                    dict(expect, iteration=done, score=score, evaluation=scores))

            # metrics, progress, checkpoint
            elapsed = trained()  # everything: compile, play, train, evaluate
            record["elapsed_s"] = elapsed
            if primary:
                log.write(record)
            time_left = budget - elapsed - clock.final_reserve(evaluates) if budget > 0 else None
            say(progress.line(record, progress.eta(done, seconds, time_left)))
            if done % int(stage.checkpoint.every) == 0 or last or save_due:
                save(done, stage, final=last)
            if out_of_time:
                say(f"stopping after {format_duration(trained())}: max_minutes={config.max_minutes} reached "
                    "(the final evaluation and checkpoint included)")
                break
    finally:
        ckpts.close()
    return record


def _another_fits(clock: TimeBudget, program: TrainProgram, stage: ConfigDict, index: int, at: float, done: int,
                  where: Callable) -> bool:
    """Whether, after iteration ``done`` at ``at`` training seconds, another iteration and the run's
    final evaluation and checkpoint fit in the budget (periodic work due at ``done`` and compiling
    a new stage counted)."""
    if clock.seconds <= 0:
        return True
    at += clock.work_due(stage, done)
    compiles = where(at, done, stage)[1] != index
    return clock.another_fits(at, bool(int(stage.eval.every)), compiles)


def _check_clock(ckpts: checkpoint.Checkpoints, clock: str, workdir: Path) -> None:
    """A run keeps its schedule clock: the optimizer state of the two clocks differs."""
    saved = ckpts.read_meta(ckpts.latest_step()).get("schedule_clock", "iterations")
    if saved != clock:
        raise checkpoint.CheckpointError(
            f"checkpoint in {workdir} was trained with schedule_clock={saved!r}, not {clock!r}; "
            "a run keeps its schedule clock: use a new --workdir or the same clock")


def _agree(*values: float) -> tuple[float, ...]:
    """Process 0's ``values`` on every process (the clock-based decisions of several processes)."""
    out = multihost_utils.broadcast_one_to_all(np.asarray(values, np.float32))
    return tuple(float(v) for v in np.asarray(out))


# ---------------------------------------------------------------------------------------------
# stopping: signals, preemption, several processes
# ---------------------------------------------------------------------------------------------
class StopSignals:
    """Records the first SIGINT/SIGTERM instead of dying; a second one raises ``KeyboardInterrupt``.

    Installed only from the main thread (elsewhere Python cannot handle signals); ``restore()``
    puts the previous handlers back.
    """

    def __init__(self, sigterm: bool = True):
        self.received: str | None = None
        self._previous: dict[int, object] = {}
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM) if sigterm else (signal.SIGINT,):
            self._previous[sig] = signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame) -> None:
        if self.received is not None:
            raise KeyboardInterrupt
        self.received = signal.Signals(signum).name

    def restore(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
        self._previous.clear()


def _agreed_stop(received: str | None, iteration: int, multi: bool) -> str | None:
    """Why to stop before ``iteration``, the same on every process; None to go on.

    One process: the signal received. Several: JAX's preemption sync point (a SIGTERM on any
    host, agreed at the same iteration everywhere) or a signal received by any process.
    """
    if not multi:
        return received
    if multihost_utils.reached_preemption_sync_point(iteration):
        return "preemption (SIGTERM)"
    flags = np.asarray(multihost_utils.process_allgather(np.int32(received is not None)))
    return "a signal to one of the processes" if flags.any() else None


def _from_process_zero(*flags: bool) -> tuple[bool, ...]:
    """Process 0's values of ``flags`` on every process (decisions taken by one clock)."""
    values = multihost_utils.broadcast_one_to_all(np.asarray(flags, np.int32))
    return tuple(bool(v) for v in np.asarray(values))


def initialize_distributed(settings: ConfigDict) -> None:
    """``jax.distributed.initialize`` from ``config.distributed`` or the environment, when asked for.

    Starts when ``settings.enabled``, or a coordinator address is set in the config or in
    ``$JAX_COORDINATOR_ADDRESS``. The process count and id come from the config, else from
    ``$JAX_NUM_PROCESSES`` / ``$JAX_PROCESS_ID``, else JAX detects them (TPU slices, SLURM, ...).
    Does nothing when already initialized. CPU processes exchange gradients through gloo.
    """
    address = str(settings.coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS", ""))
    if not (settings.enabled or address) or jax.distributed.is_initialized():
        return
    count = int(settings.num_processes) or int(os.environ.get("JAX_NUM_PROCESSES", 0)) or None
    index = int(settings.process_id)
    if index < 0:
        index = int(os.environ["JAX_PROCESS_ID"]) if os.environ.get("JAX_PROCESS_ID") else None
    try:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")  # CPU collectives across processes
    except (AttributeError, ValueError):  # pragma: no cover - a JAX without the option
        pass
    try:
        jax.distributed.initialize(coordinator_address=address or None, num_processes=count, process_id=index)
    except (RuntimeError, ValueError, TypeError) as error:
        raise InputError(f"jax.distributed.initialize failed: {str(error).splitlines()[0]}") from None


def _best_score(record: dict, metric: str) -> float | None:
    scores = {k: v for k, v in record.items() if k.startswith("eval/") and v is not None}
    if not scores:
        return None
    return float(np.mean(list(scores.values()))) if metric == "mean" else scores.get(f"eval/{metric}")


def _evaluate(stage: ConfigDict, program: TrainProgram, state, evaluator: Evaluator, key: jax.Array) -> dict:
    """The evaluator's scores; it gets host copies (matches run on one device of each process)."""
    variables, key = program.placement.host(({"params": state.params, "batch_stats": state.batch_stats}, key))
    return {k: float(v) for k, v in evaluator(stage, program, variables, key).items()}


def _gate(stage: ConfigDict, program: TrainProgram, state, gate: Gate, key: jax.Array):
    """Promote the latest network to self-play actor if it beats the champion often enough."""
    latest = {"params": state.params, "batch_stats": state.batch_stats}
    challenger, champion, key = program.placement.host((latest, state.actor, key))
    score = float(gate(stage, program, challenger, champion, key))
    if score >= float(stage.gating.threshold):
        state = state._replace(actor=jax.tree.map(lambda x: x.copy(), latest))
    return state, score
