"""The run's clock (:mod:`othello_jax.training.runner.clock`) on a fake time source: budget, schedule
position, stage lookup, save due, checkpoint meta. No sleeping, no JAX."""

from __future__ import annotations

import types

import pytest

from othello_jax.training.runner.clock import MARGIN, RECENT, RESERVE_SHARE, Cadence, RunClock


class FakeTime:
    """A time source the test moves by hand."""

    def __init__(self, now: float = 500.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def by_minutes(*starts: float):
    """A ``stage_at`` keyed by training minutes: stage i from ``starts[i]`` minutes on."""
    return lambda done, minutes, percent: sum(minutes >= s for s in starts[1:])


EVALUATES = (Cadence(eval_every=5),)  # one stage, evaluated every 5 iterations


def make_clock(now: FakeTime, seconds: float = 100.0, iterations: int = 50, schedule_clock: str = "minutes",
               cadences=EVALUATES, stage_at=lambda done, minutes, percent: 0, **more) -> RunClock:
    return RunClock(seconds=seconds, iterations=iterations, cadences=cadences, stage_at=stage_at, now=now,
                    session_start=now(), schedule_clock=schedule_clock, **more)


def test_estimates_position_horizon_and_stop_rule():
    clock = make_clock(FakeTime())
    assert clock.iteration_estimate() == 2.0  # before any iteration: the budget's share of a nominal one
    for seconds in (1.0, 3.0, 2.0):
        clock.record_iteration(seconds, 0.0)
    assert clock.iteration_estimate() == 3.0  # the slowest recent one
    reserve = MARGIN * RESERVE_SHARE * 100.0  # no evaluation timed yet
    assert clock.horizon() == pytest.approx(100.0 - reserve - 3.0)
    clock.record_evaluation(4.0)
    clock.record_save(1.0)
    clock.record_save(0.5)  # the slowest save counts
    assert clock.final_reserve() == pytest.approx(MARGIN * 5.0)
    horizon = 100.0 - MARGIN * 5.0 - 3.0
    assert clock.position(horizon / 2, 3) == pytest.approx(0.5)
    assert clock.position(1.0, 40) == pytest.approx(0.8)  # the iterations, when they are further along
    assert clock.position(2 * horizon, 1) == 1.0
    # another iteration fits while it ends by the horizon (the time the last one ends)
    assert clock.another_fits(horizon - 1e-6) and not clock.another_fits(horizon + 1e-3)
    clock.record_compile(2.0)
    assert not clock.another_fits(horizon - 1e-6, compiles=True)
    assert clock.time_left(10.0) == pytest.approx(100.0 - 10.0 - MARGIN * 5.0)
    for _ in range(RECENT):
        clock.record_iteration(1.0, 0.0)
    assert clock.iteration_estimate() == 1.0  # the slow ones left the window


def test_without_evaluations_the_final_reserve_is_the_save():
    clock = make_clock(FakeTime(), cadences=(Cadence(eval_every=0),))
    clock.record_save(1.0)
    assert clock.final_reserve() == MARGIN * 1.0


def test_the_iterations_clock_and_no_budget():
    counted = make_clock(FakeTime(), schedule_clock="iterations")
    assert counted.position(99.0, 10) == pytest.approx(0.2)  # the share of iterations
    unlimited = make_clock(FakeTime(), seconds=0.0)
    assert unlimited.another_fits(1e9) and unlimited.time_left(5.0) is None
    assert not unlimited.out_of_time(10, False)


def test_training_seconds_count_the_checkpoint_and_the_whole_session():
    now = FakeTime()
    clock = RunClock.from_meta({"elapsed_s": 30.0}, seconds=100.0, iterations=50, cadences=(Cadence(),),
                               stage_at=lambda *_: 0, now=now, session_start=now() - 2.0)
    assert clock.trained() == pytest.approx(32.0)  # setup before the clock was made counted
    now.now += 5.0
    assert clock.trained() == pytest.approx(37.0)


def test_the_stage_is_looked_up_by_training_minutes_and_becomes_the_clock_s_stage():
    now = FakeTime()
    cadences = (Cadence(eval_every=5), Cadence(eval_every=0))
    clock = make_clock(now, seconds=600.0, cadences=cadences, stage_at=by_minutes(0.0, 1.0))
    assert clock.stage(0) == 0 and clock.cadence == cadences[0]
    now.now += 59.0
    assert clock.stage(1) == 0
    now.now += 1.0
    assert clock.stage(2) == 1 and clock.index == 1 and not clock.cadence.evaluates


def test_span_ends_at_one_when_the_budget_makes_the_iteration_the_last():
    now = FakeTime()
    clock = make_clock(now, cadences=(Cadence(eval_every=0),))
    clock.record_iteration(10.0, 0.0)
    start, end, last = clock.span(0)
    assert (start, last) == (0.0, False) and 0.0 < end < 1.0
    assert end == pytest.approx(10.0 / clock.horizon())  # where the predicted end lies on the horizon
    clock.record_iteration(10.0, end)
    now.now += 85.0  # 85 s trained: another 10 s iteration ends past the horizon (90 s)
    start, end, last = clock.span(1)
    assert last and end == 1.0 and start == pytest.approx(85.0 / 90.0)
    assert clock.out_of_time(2, last)


def test_the_schedule_position_never_moves_back():
    now = FakeTime()
    clock = make_clock(now, cadences=(Cadence(eval_every=0),))
    clock.record_iteration(1.0, 0.7)  # e.g. recorded before a resume on a longer horizon
    start, end, _ = clock.span(3)
    assert start == 0.7 and end >= 0.7


def test_out_of_time_counts_the_periodic_work_and_a_new_stage_s_compilation():
    now = FakeTime()
    clock = make_clock(now, seconds=100.0, cadences=(Cadence(eval_every=2), Cadence(eval_every=2)),
                       stage_at=by_minutes(0.0, 1.0))
    clock.record_iteration(10.0, 0.0)
    clock.record_evaluation(10.0)
    clock.record_save(0.0)
    now.now += 70.0  # the final reserve is 11 s, an iteration 10 s: another fits up to 79 s
    assert not clock.out_of_time(1, False)
    assert clock.out_of_time(2, False)  # an evaluation is due after iteration 2: 70 + 10 + 21 > 100
    clock.record_compile(15.0)
    now.now -= 65.0  # 5 s trained: the next stage (from 1 minute) is not in force yet
    assert not clock.out_of_time(1, False)
    now.now += 50.0  # 55 s: with the periodic evaluation the next iteration starts in the next stage
    assert clock.out_of_time(2, False)  # 55 + 10 + 15 + 21 > 100
    assert not clock.out_of_time(1, False)  # 55 + 21 <= 100: no evaluation, no new stage
    assert clock.out_of_time(1, True)  # the span said it was the last


def test_save_due_every_iterations_at_the_last_and_by_minutes():
    now = FakeTime()
    clock = make_clock(now, cadences=(Cadence(checkpoint_every=3, checkpoint_minutes=1.0),))
    assert [clock.save_due(done, False) for done in (1, 2, 3, 4, 6)] == [False, False, True, False, True]
    assert clock.save_due(4, True)
    now.now += 60.0
    assert clock.save_due(4, False)  # a minute since the session started
    clock.mark_saved()
    now.now += 59.0
    assert not clock.save_due(5, False)
    now.now += 1.0
    assert clock.save_due(5, False)


def test_several_processes_take_process_zero_s_decisions():
    asked = []

    def agree(*values):
        asked.append(values)
        return tuple(float(v) for v in (1, 0.25, 0.5, 1)[:len(values)])  # process 0 says so

    clock = make_clock(FakeTime(), seconds=0.0, agree=agree, cadences=(Cadence(), Cadence()))
    assert clock.stage(0) == 1 and clock.index == 1  # this process alone would have said 0
    assert clock.span(0) == (1.0, 0.25, True)
    assert clock.out_of_time(1, False) and clock.save_due(1, False) is True
    assert len(asked) == 4


def test_meta_round_trip_continues_the_same_clock():
    now = FakeTime()
    clock = make_clock(now)
    for seconds in (1.0, 2.0):
        clock.record_iteration(seconds, 0.1 * seconds)
    clock.record_evaluation(4.0)
    clock.record_save(1.5)
    clock.record_compile(3.0)
    now.now += 40.0
    meta = clock.to_meta()
    assert meta == {"elapsed_s": 40.0, "schedule_clock": "minutes",
                    "timing": {"iteration_s": [1.0, 2.0], "evaluation_s": 4.0, "gate_s": None, "save_s": 1.5,
                               "compile_s": 3.0, "position": 0.2}}
    later = FakeTime(9000.0)
    again = RunClock.from_meta(meta, seconds=100.0, iterations=50, cadences=clock.cadences,
                               stage_at=clock.stage_at, now=later, session_start=later(), schedule_clock="minutes")
    assert again.trained() == 40.0 and again.reached == 0.2 and again.horizon() == clock.horizon()
    assert {k: v for k, v in again.to_meta()["timing"].items()} == meta["timing"]
    fresh = RunClock.from_meta({}, seconds=100.0, iterations=50, cadences=clock.cadences, stage_at=clock.stage_at,
                               now=later, session_start=later())
    assert fresh.trained() == 0.0 and fresh.reached == 0.0 and fresh.iteration_s == []


def test_cadence_of_a_stage_s_settings():
    stage = types.SimpleNamespace(eval=types.SimpleNamespace(every=5),
                                  gating=types.SimpleNamespace(enabled=False, every=3),
                                  checkpoint=types.SimpleNamespace(every=10, every_minutes=2.5))
    cadence = Cadence.of(stage)
    assert cadence == Cadence(eval_every=5, gate_every=0, checkpoint_every=10, checkpoint_minutes=2.5)
    assert cadence.evaluation_due(10) and cadence.evaluation_due(7, last=True) and not cadence.evaluation_due(7)
    assert not cadence.gate_due(3)
    stage.gating.enabled = True
    assert Cadence.of(stage).gate_due(3) and not Cadence.of(stage).gate_due(4)
