"""The training-time budget (``max_minutes``): when to stop, and where the time schedules stand.

Host-side bookkeeping for :mod:`othello_jax.training.loop`, from measured durations only:

- the *stop rule*: after an iteration, another one is started only if it, the work due before
  it (a periodic evaluation, gate or checkpoint; compiling the next stage) and the run's final
  evaluation and checkpoint all fit inside the budget. So the final evaluation counts inside
  ``max_minutes`` instead of running past it;
- the *schedule position* of the minutes clock (``config.schedule_clock``): training seconds
  over the *horizon*, the time at which the last iteration ends (the budget less one iteration
  and the final work), or the share of ``iterations`` done if that is larger; 1 in the
  iteration the stop rule makes the last.

Estimates, on the safe side: an iteration takes as long as the slowest of the last 10
(compilation excluded); an evaluation or gate as long as the last one did; a checkpoint as long
as the slowest waited-for save; a new stage's compilation as long as the last one; the final
evaluation and checkpoint get ``MARGIN`` more. Until the first evaluation has been timed, the
final evaluation is reserved ``RESERVE_SHARE`` of the budget. The estimates travel in the
checkpoint meta (:meth:`TimeBudget.to_meta`), so a resumed run keeps the same horizon and
continues the same curve.
"""

from __future__ import annotations

import dataclasses

from ml_collections import ConfigDict

RESERVE_SHARE = 0.05  # of the budget, held for the final evaluation until one has been timed
RECENT = 10  # iteration durations the estimate is the slowest of
MARGIN = 1.1  # the final evaluation and checkpoint are reserved this much more than measured
_TIMED = ("evaluation_s", "gate_s", "save_s", "compile_s")


@dataclasses.dataclass
class TimeBudget:
    """Budget bookkeeping of one run: ``seconds`` (0 = no limit), the run's ``iterations`` and
    schedule ``clock``, and the durations measured so far."""

    seconds: float
    iterations: int
    clock: str = "iterations"
    iteration_s: list[float] = dataclasses.field(default_factory=list)
    evaluation_s: float | None = None
    gate_s: float | None = None
    save_s: float = 0.0
    compile_s: float = 0.0

    # ---- measurements ---------------------------------------------------------------------
    def record_iteration(self, seconds: float) -> None:
        self.iteration_s = (self.iteration_s + [float(seconds)])[-RECENT:]

    def record_save(self, seconds: float) -> None:
        """A save that was waited for until it was on disk (the final one is)."""
        self.save_s = max(self.save_s, float(seconds))

    # ---- estimates ------------------------------------------------------------------------
    def iteration_estimate(self) -> float:
        """Seconds the next iteration will take: the slowest of the recent ones; before any, the
        budget's share of one nominal iteration."""
        if self.iteration_s:
            return float(max(self.iteration_s))
        return self.seconds / max(self.iterations, 1)

    def evaluation_estimate(self) -> float:
        return self.evaluation_s if self.evaluation_s is not None else RESERVE_SHARE * self.seconds

    def final_reserve(self, evaluates: bool) -> float:
        """Seconds the end of the run needs after its last iteration: evaluation and checkpoint."""
        return MARGIN * ((self.evaluation_estimate() if evaluates else 0.0) + self.save_s)

    def horizon(self, evaluates: bool) -> float:
        """Training seconds at which the last iteration ends (the minutes clock's 100%)."""
        return max(self.seconds - self.final_reserve(evaluates) - self.iteration_estimate(), 1e-3)

    def position(self, elapsed: float, done: int, evaluates: bool) -> float:
        """The schedule position in [0, 1] after ``done`` iterations and ``elapsed`` training seconds."""
        by_count = done / max(self.iterations, 1)
        if self.clock == "minutes" and self.seconds > 0:
            by_count = max(by_count, elapsed / self.horizon(evaluates))
        return float(min(max(by_count, 0.0), 1.0))

    def work_due(self, stage: ConfigDict, done: int) -> float:
        """Seconds of periodic work (evaluation, gate; saves are in the background) after
        iteration ``done`` when it is not the last."""
        seconds = 0.0
        if int(stage.eval.every) and done % int(stage.eval.every) == 0:
            seconds += self.evaluation_estimate()
        if stage.gating.enabled and done % int(stage.gating.every) == 0:
            seconds += self.gate_s or 0.0
        return seconds

    def another_fits(self, at: float, evaluates: bool, compiles: bool = False) -> bool:
        """Whether, at ``at`` training seconds (periodic work included), one more iteration
        (compiled first if ``compiles``) and then the final work fit in the budget."""
        if self.seconds <= 0:
            return True
        need = self.iteration_estimate() + self.final_reserve(evaluates) + (self.compile_s if compiles else 0.0)
        return at + need <= self.seconds

    # ---- checkpoint meta ------------------------------------------------------------------
    def to_meta(self) -> dict:
        return {"iteration_s": list(self.iteration_s), **{name: getattr(self, name) for name in _TIMED}}

    @classmethod
    def from_meta(cls, meta: dict | None, seconds: float, iterations: int, clock: str) -> TimeBudget:
        """A budget for this config, with the estimates a checkpoint recorded (none: fresh)."""
        budget = cls(seconds=float(seconds), iterations=int(iterations), clock=clock)
        meta = meta or {}
        budget.iteration_s = [float(s) for s in meta.get("iteration_s", [])][-RECENT:]
        for name in _TIMED:
            value = meta.get(name)
            if value is not None:
                setattr(budget, name, float(value))
        return budget
