"""The run's clock: training seconds, the ``max_minutes`` budget, the schedule position, the stage
in force and when a checkpoint is due. The training loop asks it; it decides from measured
durations only.

- *Training seconds*: the seconds recorded in the checkpoint the run resumed from, plus everything
  this session did from :func:`~othello_jax.training.runner.loop.run`'s start (setup, compiling,
  evaluating, saving).
- *The stop rule*: after an iteration, another one is started only if it, the work due before it
  (a periodic evaluation or gate; compiling the next stage) and the run's final evaluation and
  checkpoint all fit inside the budget. So the final evaluation counts inside ``max_minutes``
  instead of running past it.
- *The schedule position* of the minutes clock (``config.schedule_clock``): training seconds over
  the *horizon*, the time at which the last iteration ends (the budget less one iteration and the
  final work), or the share of ``iterations`` done if that is larger; 1 in the iteration the stop
  rule makes the last. The position never moves back, across resumes too.
- *The stage in force*, looked up by iterations done, training minutes or schedule percent
  (the program's ``stage_at``), and each stage's :class:`Cadence` of periodic work.
- *Save due*: every ``checkpoint.every`` iterations, at the run's last iteration, and when
  ``checkpoint.every_minutes`` have passed since the last save.

Estimates, on the safe side: an iteration takes as long as the slowest of the last 10
(compilation excluded); an evaluation or gate as long as the last one did; a checkpoint as long
as the slowest waited-for save; a new stage's compilation as long as the last one; the final
evaluation and checkpoint get ``MARGIN`` more. Until the first evaluation has been timed, the
final evaluation is reserved ``RESERVE_SHARE`` of the budget. The estimates travel in the
checkpoint meta (:meth:`RunClock.to_meta`), so a resumed run keeps the same horizon and continues
the same curve.

With several processes every decision that reads the time is process 0's: the clock passes it
through ``agree`` (a broadcast from process 0), so all processes take the same branch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

RESERVE_SHARE = 0.05  # of the budget, held for the final evaluation until one has been timed
RECENT = 10  # iteration durations the estimate is the slowest of
MARGIN = 1.1  # the final evaluation and checkpoint are reserved this much more than measured
_TIMED = ("evaluation_s", "gate_s", "save_s", "compile_s")

# (iterations done, training minutes, schedule percent) -> index of the stage in force
StageAt = Callable[[int, float, float], int]
# process 0's values on every process (several processes); None: one process decides alone
Agree = Callable[..., tuple[float, ...]]


@dataclasses.dataclass(frozen=True)
class Cadence:
    """One stage's periodic work, in iterations (0 = never), and its checkpoint interval in minutes."""

    eval_every: int = 0
    gate_every: int = 0
    checkpoint_every: int = 1
    checkpoint_minutes: float = 0.0

    @classmethod
    def of(cls, stage: Any) -> Cadence:
        """The cadence of a stage's settings (``eval``, ``gating``, ``checkpoint``)."""
        return cls(eval_every=int(stage.eval.every),
                   gate_every=int(stage.gating.every) if stage.gating.enabled else 0,
                   checkpoint_every=int(stage.checkpoint.every),
                   checkpoint_minutes=float(stage.checkpoint.every_minutes))

    @property
    def evaluates(self) -> bool:
        return bool(self.eval_every)

    def evaluation_due(self, done: int, last: bool = False) -> bool:
        """After iteration ``done``: periodic evaluations, and the run's last iteration's."""
        return self.evaluates and (done % self.eval_every == 0 or last)

    def gate_due(self, done: int) -> bool:
        return bool(self.gate_every) and done % self.gate_every == 0


@dataclasses.dataclass
class RunClock:
    """The clock of one run: ``seconds`` of budget (0 = no limit), the run's ``iterations``, its
    ``schedule_clock``, each stage's cadence and the stage lookup, a time source ``now`` and the
    session's start on it, the training seconds ``resumed_s`` recorded before this session, and
    what has been measured so far. ``index`` is the stage in force, ``reached`` the schedule
    position the last iteration reached."""

    seconds: float
    iterations: int
    cadences: Sequence[Cadence]
    stage_at: StageAt
    now: Callable[[], float]
    session_start: float
    schedule_clock: str = "iterations"
    resumed_s: float = 0.0
    agree: Agree | None = None
    iteration_s: list[float] = dataclasses.field(default_factory=list)
    evaluation_s: float | None = None
    gate_s: float | None = None
    save_s: float = 0.0
    compile_s: float = 0.0
    reached: float = 0.0
    index: int = 0
    saved_at: float | None = None  # on ``now``: the last save (the session's start until one)

    def __post_init__(self) -> None:
        if self.saved_at is None:
            self.saved_at = self.now()

    # ---- the loop's questions ---------------------------------------------------------------
    def trained(self) -> float:
        """Training seconds: the checkpoint's, plus everything this session did (setup included)."""
        return self.resumed_s + self.now() - self.session_start

    @property
    def cadence(self) -> Cadence:
        """The periodic work of the stage in force."""
        return self.cadences[self.index]

    def stage(self, done: int) -> int:
        """The stage in force for the iteration after ``done`` (process 0's); it becomes ``index``.

        Looked up at the current training time and schedule position, with the horizon of the
        stage in force until now.
        """
        index = self._where(self.trained(), done)[1]
        self.index = int(self._agreed(index)[0])
        return self.index

    def span(self, iteration: int) -> tuple[float, float, bool]:
        """``(start, end, last_in_time)``: the schedule positions iteration ``iteration`` (0-based)
        spans, and whether the budget makes it the last one (it then ends at position 1)."""
        done = iteration + 1
        begin = self.trained()
        predicted = begin + self.iteration_estimate()
        last_in_time = not self._another_fits(predicted, done)
        start = max(self.position(begin, iteration), self.reached)
        end = 1.0 if last_in_time else max(self._where(predicted, done)[0], start)
        if self.agree is None:
            return start, end, last_in_time
        start, end, last_in_time = self.agree(start, end, last_in_time)
        return start, end, bool(last_in_time)

    def out_of_time(self, done: int, last_in_time: bool) -> bool:
        """Whether the run stops after iteration ``done``: no other iteration fits (process 0's)."""
        return self._agreed_flag(last_in_time or not self._another_fits(self.trained(), done))

    def save_due(self, done: int, last: bool) -> bool:
        """Whether to checkpoint after iteration ``done``: every ``checkpoint.every`` iterations, the
        run's ``last`` iteration, or ``checkpoint.every_minutes`` after the last save (process 0's)."""
        minutes = self.cadence.checkpoint_minutes
        overdue = self._agreed_flag(minutes > 0 and self.now() - self.saved_at >= 60.0 * minutes)
        return done % self.cadence.checkpoint_every == 0 or last or overdue

    def time_left(self, elapsed: float) -> float | None:
        """Budget seconds left for iterations at ``elapsed`` training seconds (None: no budget)."""
        return self.seconds - elapsed - self.final_reserve() if self.seconds > 0 else None

    # ---- measurements -----------------------------------------------------------------------
    def record_iteration(self, seconds: float, position: float) -> None:
        """An iteration took ``seconds`` and reached schedule ``position``."""
        self.iteration_s = (self.iteration_s + [float(seconds)])[-RECENT:]
        self.reached = position

    def record_compile(self, seconds: float) -> float:
        self.compile_s = seconds
        return seconds

    def record_gate(self, seconds: float) -> None:
        self.gate_s = seconds

    def record_evaluation(self, seconds: float) -> None:
        self.evaluation_s = seconds

    def mark_saved(self) -> None:
        """A checkpoint was handed over: ``checkpoint.every_minutes`` counts from now."""
        self.saved_at = self.now()

    def record_save(self, seconds: float) -> None:
        """A save that was waited for until it was on disk (the final one is)."""
        self.save_s = max(self.save_s, float(seconds))

    # ---- estimates (pure: from the measurements, at a given time) --------------------------
    def iteration_estimate(self) -> float:
        """Seconds the next iteration will take: the slowest of the recent ones; before any, the
        budget's share of one nominal iteration."""
        if self.iteration_s:
            return float(max(self.iteration_s))
        return self.seconds / max(self.iterations, 1)

    def evaluation_estimate(self) -> float:
        return self.evaluation_s if self.evaluation_s is not None else RESERVE_SHARE * self.seconds

    def final_reserve(self) -> float:
        """Seconds the end of the run needs after its last iteration: evaluation and checkpoint."""
        return MARGIN * ((self.evaluation_estimate() if self.cadence.evaluates else 0.0) + self.save_s)

    def horizon(self) -> float:
        """Training seconds at which the last iteration ends (the minutes clock's 100%)."""
        return max(self.seconds - self.final_reserve() - self.iteration_estimate(), 1e-3)

    def position(self, at: float, done: int) -> float:
        """The schedule position in [0, 1] after ``done`` iterations and ``at`` training seconds."""
        by_count = done / max(self.iterations, 1)
        if self.schedule_clock == "minutes" and self.seconds > 0:
            by_count = max(by_count, at / self.horizon())
        return float(min(max(by_count, 0.0), 1.0))

    def work_due(self, done: int) -> float:
        """Seconds of periodic work (evaluation, gate; saves are in the background) after
        iteration ``done`` when it is not the last."""
        seconds = 0.0
        if self.cadence.evaluation_due(done):
            seconds += self.evaluation_estimate()
        if self.cadence.gate_due(done):
            seconds += self.gate_s or 0.0
        return seconds

    def another_fits(self, at: float, compiles: bool = False) -> bool:
        """Whether, at ``at`` training seconds (periodic work included), one more iteration
        (compiled first if ``compiles``) and then the final work fit in the budget."""
        if self.seconds <= 0:
            return True
        need = self.iteration_estimate() + self.final_reserve() + (self.compile_s if compiles else 0.0)
        return at + need <= self.seconds

    def _another_fits(self, at: float, done: int) -> bool:
        """Whether, after iteration ``done`` at ``at`` training seconds, another iteration and the
        final work fit (periodic work due at ``done`` and compiling a new stage counted)."""
        if self.seconds <= 0:
            return True
        at += self.work_due(done)
        return self.another_fits(at, compiles=self._where(at, done)[1] != self.index)

    def _where(self, at: float, done: int) -> tuple[float, int]:
        """(schedule position, stage index) after ``done`` iterations at ``at`` training seconds."""
        position = max(self.position(at, done), self.reached)
        return position, self.stage_at(done, at / 60.0, 100.0 * position)

    def _agreed(self, *values: float) -> tuple[float, ...]:
        return values if self.agree is None else self.agree(*values)

    def _agreed_flag(self, flag: bool) -> bool:
        return bool(self._agreed(flag)[0])

    # ---- checkpoint meta --------------------------------------------------------------------
    def to_meta(self) -> dict:
        """The checkpoint meta keys the clock owns: ``elapsed_s``, ``schedule_clock``, ``timing``."""
        timing = {"iteration_s": list(self.iteration_s), **{name: getattr(self, name) for name in _TIMED},
                  "position": self.reached}
        return {"elapsed_s": self.trained(), "schedule_clock": self.schedule_clock, "timing": timing}

    @classmethod
    def from_meta(cls, meta: dict | None, **settings) -> RunClock:
        """A clock with ``settings`` (the constructor's arguments) and what a checkpoint's meta
        recorded (none: a fresh run): training seconds, measured durations, schedule position."""
        meta = meta or {}
        timing = dict(meta.get("timing") or {})
        clock = cls(resumed_s=float(meta.get("elapsed_s", 0.0)), reached=float(timing.get("position", 0.0)),
                    iteration_s=[float(s) for s in timing.get("iteration_s", [])][-RECENT:], **settings)
        for name in _TIMED:
            if timing.get(name) is not None:
                setattr(clock, name, float(timing[name]))
        return clock
