"""The host-side training loop: resume, schedule stages, the compiled iteration, metrics, checkpoints.

    from othello_jax.training.runner.loop import run
    from othello_jax.training.settings.defaults import default_config
    run(default_config(), "runs/othello8")

The config is resolved once by :func:`~othello_jax.training.runner.program.make_train`; everything heavy
happens inside its compiled iterations (one per schedule stage). This loop only fetches the
scalar metrics once per iteration, writes them, prints progress, evaluates, gates and saves
checkpoints. Running it again on the same workdir resumes from the last checkpoint.

A SIGTERM or SIGINT (a preempted VM, a recycled runtime, Ctrl-C) is answered at once in one line
(:class:`StopSignals`, on a watcher thread: the main thread may be inside a compile); the iteration
in flight finishes (a compiled call cannot be interrupted), an in-run evaluation or gating match
is abandoned after the match in flight, a checkpoint of the last finished iteration is written and
:class:`TrainingInterrupted` raised; a second signal aborts at once. With several processes
(``config.distributed``), every process stops at the same iteration: SIGTERM goes through
JAX's preemption sync point, SIGINT and the clock-based decisions (``max_minutes``,
``checkpoint.every_minutes``, the schedule position) through process 0.

Every decision that reads the time is the run's :class:`~othello_jax.training.runner.clock.RunClock`'s:
the stage in force, the schedule positions an iteration spans (``schedule_clock = "minutes"``),
whether another iteration fits in ``max_minutes`` (the final evaluation and checkpoint
included) and whether a checkpoint is due. Training time is everything a session does from
:func:`run`'s start (setup, compiling, evaluating, saving), added to the time recorded in the
checkpoint it resumed from.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np
from jax.experimental import multihost_utils
from ml_collections import ConfigDict

from othello_jax import checkpoint, stops
from othello_jax.errors import InputError
from othello_jax.notices import compiling, say_while
from othello_jax.records import read_record
from othello_jax.training.runner import arena_hooks
from othello_jax.training.runner.clock import Cadence, RunClock
from othello_jax.training.runner.metrics import MetricsLog, Progress, format_duration, iteration_record
from othello_jax.training.runner.program import CompiledIteration, TrainProgram, make_train
from othello_jax.training.settings.run_settings import DistributedSettings, RunSettings

# an evaluation hook: (stage config, program, variables, key) -> {"eval/<opponent>": score in [0, 1], ...}
Evaluator = Callable[[RunSettings, TrainProgram, dict, jax.Array], dict]
# a gate: (stage config, program, challenger variables, champion variables, key) -> challenger's score
Gate = Callable[[RunSettings, TrainProgram, dict, dict, jax.Array], float]
# called with the iteration of each checkpoint once it is on disk (e.g. to copy the run elsewhere)
CheckpointHook = Callable[[int], None]


class TrainingInterrupted(Exception):
    """A signal stopped the run after a checkpoint; ``str()`` is a one-line message saying where."""

    def __init__(self, message: str, iteration: int, reason: str):
        super().__init__(message)
        self.iteration = iteration
        self.reason = reason


@dataclasses.dataclass(frozen=True)
class Hooks:
    """What :func:`run`'s caller plugs in: evaluation, gating, printing, a checkpoint callback."""

    evaluator: Evaluator
    gate: Gate
    print_fn: Callable[[str], None]
    on_checkpoint: CheckpointHook | None


def run(config: ConfigDict, workdir: str | Path, *, evaluator: Evaluator | None = None,
        gate: Gate | None = None, print_fn: Callable[[str], None] = print,
        on_checkpoint: CheckpointHook | None = None, signals: StopSignals | None = None) -> dict:
    """Train the run described by ``config`` in ``workdir`` (resuming if it has checkpoints).

    Returns the last iteration's metrics record. Every setting is read from the config of the
    stage in force. ``evaluator`` (every ``eval.every`` iterations) and ``gate`` (every
    ``gating.every`` iterations when gating is on) default to the arena matches of
    :mod:`othello_jax.training.runner.arena_hooks`. ``on_checkpoint(iteration)`` runs after each
    checkpoint is on disk (saves then wait for it). Raises :class:`TrainingInterrupted` after a
    SIGTERM or SIGINT, once the checkpoint is written (:class:`StoppedBeforeFirstIteration` when a
    fresh run had nothing to save); ``signals`` says how signals are answered (default: in this
    process, a second one raises ``KeyboardInterrupt``). An unwritable workdir or a failed save
    raises :class:`~othello_jax.checkpoint.CheckpointError` (one line; earlier checkpoints intact).
    """
    session_start = time.perf_counter()
    # the distributed record alone first: JAX must not start before jax.distributed.initialize
    initialize_distributed(read_record(DistributedSettings, config.distributed, "distributed"))
    signals = signals or StopSignals()
    if jax.process_count() > 1:
        signals.signals = (signal.SIGINT,)  # JAX's preemption service has SIGTERM
        signals.abandonable = False  # every process stops at the same iteration, never halfway
    hooks = Hooks(evaluator or arena_hooks.evaluate_against_baselines, gate or arena_hooks.gate_against_champion,
                  print_fn, on_checkpoint)
    with stops.watching(signals):
        return _train(config, Path(workdir), hooks, signals, session_start)


def _train(config: ConfigDict, workdir: Path, hooks: Hooks, signals: StopSignals, session_start: float) -> dict:
    """The body of :func:`run`: resume or start, then one iteration after another until the last,
    the budget's end or a stop signal."""
    program = make_train(config)
    primary, multi = jax.process_index() == 0, jax.process_count() > 1
    say = hooks.print_fn if primary else (lambda _: None)
    ckpts = checkpoint.Checkpoints(workdir, keep=program.settings.checkpoint.keep)  # probes the workdir first
    state, key, meta = _resume_or_start(config, program, ckpts, workdir, say)
    start, total = int(state.iteration), program.settings.iterations
    signals.checkpoints = workdir / checkpoint.LATEST_DIR
    signals.done = start
    signals.saved = start if ckpts.latest_step() == start else None
    clock = RunClock.from_meta(
        meta, seconds=program.settings.max_minutes * 60.0, iterations=total, schedule_clock=program.clock,
        cadences=tuple(Cadence.of(stage) for stage in program.stage_configs), stage_at=program.stage_at,
        now=time.perf_counter, session_start=session_start, agree=_agree if multi else None)
    writer = CheckpointWriter(ckpts, workdir, config, program, clock, meta, start, hooks.on_checkpoint)
    log = MetricsLog(workdir, tensorboard=program.settings.tensorboard)
    if primary:
        log.truncate_after(start)
    progress, step, record = Progress(total), None, {}
    say(_banner(workdir, program))
    try:
        for iteration in range(start, total):
            index = clock.stage(iteration)  # by iteration, training minutes or schedule position
            stage = program.stage_configs[index]
            _stop_if_asked(signals, writer, iteration, total, state, key, stage, multi)  # here or on any process
            compile_s = 0.0
            if step is None or step.index != index:  # compiled once, when its stage starts
                step = None  # an earlier stage never comes back: its executable goes first
                signals.phase = "compiling"
                step, compile_s = _compile(program, index, state, key, clock, say)
                _stop_if_asked(signals, writer, iteration, total, state, key, stage, multi)

            # one iteration (self-play, replay, gradient steps) over the schedule span the clock gives
            begin, end, last_in_time = clock.span(iteration)
            key, step_key = jax.random.split(key)
            signals.phase = "training"
            state, metrics, seconds = _iterate(step, state, step_key, program.schedule_args(begin, end), clock)
            clock.record_iteration(seconds, end)
            done = signals.done = iteration + 1
            record = iteration_record(metrics, done, seconds, compile_s, stage, program.network_evaluations(index))
            record["elapsed_s"] = clock.trained()  # so far; again after gating and evaluation
            if signals.received and not multi:  # stop now: no evaluation, gating or progress line
                log.write(record, curves=False)
                raise writer.interrupted(signals.received, done, total, state, key, stage)

            # what the clock says is due, then gating and evaluation (the final iteration is always
            # evaluated and saved), metrics and progress, the checkpoint
            out_of_time = clock.out_of_time(done, last_in_time)
            last = done == total or out_of_time
            save_due = clock.save_due(done, last)
            try:
                if clock.cadence.gate_due(done):
                    signals.phase = "gating"
                    state, record["gate/score"] = _gate(stage, program, state, hooks.gate,
                                                        jax.random.fold_in(key, 1), clock)
                if clock.cadence.evaluation_due(done, last):
                    signals.phase = "evaluating"
                    scores = _evaluate(stage, program, state, hooks.evaluator, jax.random.fold_in(key, 2), clock)
                    record.update(scores)
                    writer.evaluated(done, scores, _best_score(record, stage.eval.best_metric), state)
            except stops.Abandoned:  # a signal during the matches: the iteration is saved without them
                record["elapsed_s"] = clock.trained()
                log.write(record, curves=False)
                raise writer.interrupted(signals.received or "a signal", done, total, state, key, stage) from None
            record["elapsed_s"] = clock.trained()  # everything: compile, play, train, evaluate
            if primary:
                log.write(record, curves=clock.cadence.evaluation_due(done))  # the curves image too
            say(progress.line(record, progress.eta(done, seconds, clock.time_left(record["elapsed_s"]))))
            if save_due:
                signals.phase = "saving"
                writer.save(done, state, key, stage, final=last)
                signals.saved = done
            if out_of_time:
                if done < total:  # the budget ended the run, not its iteration count
                    say(f"stopping after {format_duration(clock.trained())}: "
                        f"max_minutes={program.settings.max_minutes} reached (the final evaluation and checkpoint "
                        "included)")
                break
        log.draw_curves()  # the curves image at the session's last iteration, after its checkpoint
    finally:
        ckpts.close()
        log.close()
    return record


def _resume_or_start(config: ConfigDict, program: TrainProgram, ckpts: checkpoint.Checkpoints, workdir: Path,
                     say: Callable[[str], None]) -> tuple:
    """``(state, key, meta)``: the workdir's last checkpoint and its meta, or a fresh state and ``{}``
    (a fresh workdir gets the run's ``config.json``)."""
    if ckpts.latest_step() is None:
        # a pretrained start is read and checked before the workdir gets anything
        state, key = program.start(program.settings.seed, program.initial_network())
        if program.init_network:
            say(f"starting from the network in {program.init_network} (init_network)")
        if jax.process_index() == 0:
            workdir.mkdir(parents=True, exist_ok=True)
            (workdir / "config.json").write_text(config.to_json_best_effort(indent=2))
        return state, key, {}
    state, key = program.start(program.settings.seed)  # placed on the mesh: the restore's targets
    _check_clock(ckpts, program.clock, workdir)
    state, key, meta = ckpts.restore(state, key, program.meta())
    resumed = float(meta.get("elapsed_s", 0.0))
    say(f"resumed {workdir} at iteration {int(state.iteration)} ({format_duration(resumed)} trained)")
    return state, key, meta


def _banner(workdir: Path, program: TrainProgram) -> str:
    processes = f", {jax.process_count()} processes" if jax.process_count() > 1 else ""
    return (f"training {workdir}: {program.game.size}x{program.game.size}, {jax.device_count()} device(s)"
            f"{processes}, {program.lanes} lane(s), network {program.network}, schedules by {program.clock}")


@dataclasses.dataclass(frozen=True)
class _Step:
    """Stage ``index``'s compiled iteration."""

    index: int
    iteration: CompiledIteration


def _compile(program: TrainProgram, index: int, state, key: jax.Array, clock: RunClock,
             say: Callable[[str], None]) -> tuple[_Step, float]:
    """Stage ``index``'s iteration compiled, and the seconds it took (the clock records them)."""
    t0 = clock.now()
    with say_while(compiling(f"stage {index}'s training iteration"), say, done=None):  # reported below
        step = _Step(index, program.compile(index, state, key))
    seconds = clock.record_compile(clock.now() - t0)
    say(f"compiled stage {index} (from {program.stage_label(index)}, "
        f"{program.stage_configs[index].search.num_simulations} simulations) in {seconds:.1f}s")
    return step, seconds


def _iterate(step: _Step, state, key: jax.Array, schedule: tuple, clock: RunClock) -> tuple:
    """``(state, metrics, seconds)``: one run of the compiled iteration, its scalar metrics fetched."""
    t0 = clock.now()
    state, metrics = step.iteration(state, key, *schedule)
    metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}
    return state, metrics, clock.now() - t0


class CheckpointWriter:
    """The run's checkpoints: each with its meta (the clock's, the evaluations so far, the best
    score), the best-scoring network apart, and the last iteration
    saved (a stop saves it once)."""

    def __init__(self, ckpts: checkpoint.Checkpoints, workdir: Path, config: ConfigDict, program: TrainProgram,
                 clock: RunClock, meta: dict, start: int, on_checkpoint: CheckpointHook | None):
        self.ckpts, self.workdir, self.clock, self.on_checkpoint = ckpts, workdir, clock, on_checkpoint
        self.expect = program.meta()
        self.config = json.loads(config.to_json_best_effort())
        self.evaluations: list[dict] = list(meta.get("evaluation", []))
        self.best: float | None = meta.get("best_score")
        self.last_saved: int | None = start if ckpts.latest_step() == start else None
        self.timed = False  # the first save of a session is waited for and timed

    def save(self, iteration: int, state, key: jax.Array, stage: RunSettings, final: bool = False) -> None:
        """Checkpoint after ``iteration``; the final one (and every one when a hook waits) is on
        disk when this returns, and its duration goes to the clock."""
        t0 = self.clock.now()
        meta = dict(self.expect, iteration=iteration, evaluation=self.evaluations, best_score=self.best,
                    **self.clock.to_meta(), config=self.config)
        self.ckpts.save(iteration, state, key, meta, save_buffer=stage.checkpoint.save_buffer)
        self.last_saved = iteration
        self.clock.mark_saved()
        if final or not self.timed or self.on_checkpoint is not None:
            self.ckpts.wait()
            self.clock.record_save(self.clock.now() - t0)
            self.timed = True
        if self.on_checkpoint is not None:
            self.on_checkpoint(iteration)

    def evaluated(self, done: int, scores: dict, score: float | None, state) -> None:
        """Remember iteration ``done``'s evaluation; a new best ``score`` keeps its network apart."""
        self.evaluations.append(dict(scores, iteration=done))
        if score is not None and (self.best is None or score > self.best):
            self.best = score
            self.ckpts.save_best(done, {"params": state.params, "batch_stats": state.batch_stats},
                                 dict(self.expect, iteration=done, score=score, evaluation=scores))

    def interrupted(self, reason: str, iteration: int, total: int, state, key: jax.Array,
                    stage: RunSettings) -> TrainingInterrupted:
        """Checkpoint what is done (unless saved already), wait for it, and say where it is."""
        if self.last_saved != iteration:
            self.save(iteration, state, key, stage)
        self.ckpts.wait()
        where = self.workdir / checkpoint.LATEST_DIR / str(iteration)
        return TrainingInterrupted(f"stopped by {reason} after iteration {iteration} of {total}; checkpoint {where} "
                                   "saved; run the same command again to resume", iteration, reason)


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
class StopSignals(stops.Answer):
    """Training's answer to SIGINT/SIGTERM: the first is answered at once in one line saying what
    happens next (from the phase the loop is in) and recorded, so the run stops at the next point
    where it can save; the second aborts at once: the process ends with 128 + the signal's number
    when ``abort_process`` (the command line), else ``KeyboardInterrupt`` is raised in the main
    thread (a notebook keeps its kernel). Lines go to ``say`` (standard error), after ``prefix``.

    The loop keeps ``phase`` ("starting", "compiling", "training", "evaluating", "gating",
    "saving"), ``done`` (the last finished iteration) and ``checkpoints`` (the directory whose
    saved steps an abort reports) up to date.
    """

    def __init__(self, prefix: str = "", abort_process: bool = False, say: Callable[[str], None] = stops.say_now):
        super().__init__()
        self.prefix, self.abort_process, self.say = prefix, abort_process, say
        self.phase, self.done, self.saved = "starting", 0, None
        self.checkpoints: Path | None = None
        self._main_calls = 0
        self._plan: str | None = None  # what the first signal leads to, read when it came

    def _plan_at_signal(self) -> str:
        """:meth:`plan` as it was when the first signal came (the main thread's handler may run
        before the watcher thread, and the loop moves on to its stop)."""
        if self._plan is None:
            self._plan = self.plan()
        return self._plan

    def at_once(self, signum: int, count: int) -> None:
        name = stops.signal_name(signum)
        if count == 1:
            again = "Ctrl-C again" if signum == signal.SIGINT else f"a second {name}"
            self.say(f"{self.prefix}stopping ({name}): {self._plan_at_signal()}; {again} aborts at once")
        elif self.abort_process:
            self.say(f"{self.prefix}aborted by a second signal ({name}); {self.on_disk()}")
            stops.end_process(stops.exit_code(self.first or signum))

    def in_main(self, signum: int, count: int) -> None:
        self._plan_at_signal()
        self._main_calls += 1
        if not self.abort_process and max(self._main_calls, self.count) >= 2:
            raise KeyboardInterrupt

    def plan(self) -> str:
        """What the first signal leads to, in the phase the run is in."""
        keep = (f"checkpoint {self.saved} is kept" if self.saved is not None
                else "nothing is saved: no iteration has finished")
        if self.phase == "starting":
            return "the run ends before its next iteration; nothing new is saved"
        if self.phase == "compiling":
            return (f"the training iteration is compiling (it cannot be cut short); the run ends once it is "
                    f"compiled; {keep}")
        if self.phase == "training":
            return f"finishing iteration {self.done + 1} in flight (one compiled call), then saving it"
        if self.phase in ("evaluating", "gating"):
            what = "evaluation" if self.phase == "evaluating" else "gating match"
            return (f"the {what} is abandoned at its next step (the compile or match in flight cannot be cut short), "
                    f"then iteration {self.done} is saved")
        return f"finishing the checkpoint of iteration {self.done} being written"

    def on_disk(self) -> str:
        """What an abort leaves: the newest whole checkpoint, or that there is none."""
        steps = checkpoint.saved_steps(self.checkpoints) if self.checkpoints is not None else []
        if steps:
            return f"checkpoint {self.checkpoints / str(steps[-1])} is on disk: the same command resumes from it"
        return "no checkpoint was written: the same command starts the run afresh"


class StoppedBeforeFirstIteration(Exception):
    """A signal stopped a fresh run before any iteration finished: there is nothing to resume."""

    def __init__(self, reason: str):
        super().__init__(f"stopped by {reason} before the first iteration finished; nothing was saved "
                         "(the same command starts the run afresh)")
        self.reason = reason


def _stop_if_asked(signals: StopSignals, writer: CheckpointWriter, iteration: int, total: int, state,
                   key: jax.Array, stage: RunSettings, multi: bool) -> None:
    """Stop before ``iteration`` if a signal (here or on any process) asked to: with a checkpoint
    of what is done (:class:`TrainingInterrupted`), or, when a fresh run has done nothing,
    :class:`StoppedBeforeFirstIteration`."""
    reason = _agreed_stop(signals.received, iteration, multi)
    if reason is None:
        return
    if iteration == 0:
        raise StoppedBeforeFirstIteration(reason)
    signals.phase = "saving"
    raise writer.interrupted(reason, iteration, total, state, key, stage)


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


def initialize_distributed(settings: DistributedSettings) -> None:
    """``jax.distributed.initialize`` from ``config.distributed`` or the environment, when asked for.

    Starts when ``settings.enabled``, or a coordinator address is set in the config or in
    ``$JAX_COORDINATOR_ADDRESS``. The process count and id come from the config, else from
    ``$JAX_NUM_PROCESSES`` / ``$JAX_PROCESS_ID``, else JAX detects them (TPU slices, SLURM, ...).
    Does nothing when already initialized. CPU processes exchange gradients through gloo.
    """
    address = settings.coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS", "")
    if not (settings.enabled or address) or jax.distributed.is_initialized():
        return
    count = settings.num_processes or int(os.environ.get("JAX_NUM_PROCESSES", 0)) or None
    index = settings.process_id
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


def _evaluate(stage: RunSettings, program: TrainProgram, state, evaluator: Evaluator, key: jax.Array,
              clock: RunClock) -> dict:
    """The evaluator's scores (timed by the clock); it gets host copies (matches run on one device
    of each process)."""
    t0 = clock.now()
    variables, key = program.placement.host(({"params": state.params, "batch_stats": state.batch_stats}, key))
    scores = {k: float(v) for k, v in evaluator(stage, program, variables, key).items()}
    clock.record_evaluation(clock.now() - t0)
    return scores


def _gate(stage: RunSettings, program: TrainProgram, state, gate: Gate, key: jax.Array, clock: RunClock):
    """Promote the latest network to self-play actor if it beats the champion often enough (timed
    by the clock); returns the state and the challenger's score."""
    t0 = clock.now()
    latest = {"params": state.params, "batch_stats": state.batch_stats}
    challenger, champion, key = program.placement.host((latest, state.actor, key))
    score = float(gate(stage, program, challenger, champion, key))
    if score >= stage.gating.threshold:
        state = state._replace(actor=jax.tree.map(lambda x: x.copy(), latest))
    clock.record_gate(clock.now() - t0)
    return state, score
