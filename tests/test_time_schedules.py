"""Schedules in training time (``schedule_clock="minutes"``) and the budget's final evaluation.

The runs go through the real loop (:func:`othello_jax.training.runner.loop.run`) with the synthetic
self-play of ``tests/synthetic_samples.py`` and a simulated clock: an iteration, a compilation
and an evaluation each advance the loop's clock by a fixed number of seconds, so a "slow
machine" is one whose iteration takes twice as long, and every timing below is exact however
loaded the test machine is. Compiled iterations are shared between runs of the same config.
"""

from __future__ import annotations

import dataclasses
import math
import signal
import types

import numpy as np
import pytest

from othello_jax.training.compiled.iteration import make_mesh
from othello_jax.training.runner import loop
from othello_jax.training.runner.clock import MARGIN
from othello_jax.training.runner.metrics import read_records
from othello_jax.training.runner.program import TrainProgram
from othello_jax.training.settings.run_settings import check_config
from othello_jax.training.settings.stages import parse_stages, stage_unit
from tests.synthetic_samples import synthetic_config, synthetic_program

BUDGET_MINUTES = 0.5  # 30 simulated seconds
COMPILE_S, EVAL_S = 2.0, 1.5  # simulated
FAST_S, SLOW_S = 1.0, 2.0  # one iteration on a fast and on a twice slower machine
PEAK, END_SCALE, WARMUP_SHARE = 0.01, 0.1, 0.1
STAGE_MINUTES = 0.2  # search.num_simulations 32 -> 64 after 12 s of training
REAL_COMPILE = TrainProgram.compile


class SimulatedTime:
    """Stands in for the ``time`` module of the loop: a clock the test hooks advance."""

    def __init__(self):
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


_EXECUTABLES: dict = {}  # stage config -> compiled iteration, shared by the runs and stages of this file


def compiled_iteration(program: TrainProgram, index: int, state, key):
    """``program.compile``, once per config: the synthetic self-play ignores the search settings, so
    stages that change only them share one executable."""
    cache_key = repr(dataclasses.replace(program.stage_configs[index], search=None))
    if cache_key not in _EXECUTABLES:
        _EXECUTABLES[cache_key] = REAL_COMPILE(program, index, state, key)
    return _EXECUTABLES[cache_key]


@pytest.fixture
def simulated(monkeypatch) -> SimulatedTime:
    return simulate(monkeypatch)


def simulate(monkeypatch) -> SimulatedTime:
    """Patch the loop: synthetic self-play, a simulated clock, iterations costing ``clock.iteration_s``."""
    clock = SimulatedTime()
    clock.iteration_s = FAST_S
    clock.interrupt_after = None  # raise SIGINT during this iteration (1-based count of this run)
    clock.calls = 0
    monkeypatch.setattr(loop, "time", types.SimpleNamespace(perf_counter=clock.perf_counter,
                                                            monotonic=clock.monotonic))
    monkeypatch.setattr(loop, "make_train", lambda config: synthetic_program(config, make_mesh(1), games=4, plies=6))
    def compile_once(program, index, state, key):
        step = compiled_iteration(program, index, state, key)
        clock.advance(COMPILE_S)

        def timed(*args):
            clock.calls += 1
            if clock.calls == clock.interrupt_after:
                signal.raise_signal(signal.SIGINT)  # as Ctrl-C: the loop finishes this iteration, saves, stops
            out = step(*args)
            clock.advance(clock.iteration_s)
            return out

        return timed

    monkeypatch.setattr(TrainProgram, "compile", compile_once)
    return clock


def timed_config(clock: str = "minutes"):
    config = synthetic_config(steps_per_iteration=2, batch_size=32)
    config.update(iterations=100_000, max_minutes=BUDGET_MINUTES, schedule_clock=clock)
    total = config.iterations * config.train.steps_per_iteration
    config.optimizer.update(schedule="cosine", learning_rate=PEAK, warmup_steps=int(WARMUP_SHARE * total),
                            total_steps=0, end_scale=END_SCALE, weight_decay=0.05)
    config.checkpoint.update(every=100_000, every_minutes=0.0)
    config.eval.update(every=5)
    config.stages = f"{STAGE_MINUTES}m: search.num_simulations=64"
    return config


def train(config, workdir, clock: SimulatedTime) -> tuple[list[dict], float]:
    """Run the loop; returns the metrics records and the simulated seconds the call took."""
    def evaluate(stage, program, variables, key):
        clock.advance(EVAL_S)
        return {"eval/fake": 0.5}

    started = clock.now
    loop.run(config, workdir, evaluator=evaluate, print_fn=lambda _: None)
    return read_records(workdir), clock.now - started


def cosine(position: float) -> float:
    """The learning rate at a schedule position, written out independently of optax."""
    if position < WARMUP_SHARE:
        return PEAK * position / WARMUP_SHARE
    share = (position - WARMUP_SHARE) / (1.0 - WARMUP_SHARE)
    end = PEAK * END_SCALE
    return end + (PEAK - end) * 0.5 * (1.0 + math.cos(math.pi * share))


@pytest.fixture(scope="module")
def two_speeds(tmp_path_factory):
    """The same config trained on a fast and on a twice slower (simulated) machine."""
    runs = {}
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name, seconds in (("fast", FAST_S), ("slow", SLOW_S)):
            clock = simulate(monkeypatch)
            clock.iteration_s = seconds
            runs[name] = train(timed_config(), tmp_path_factory.mktemp(name), clock)
    return runs


def test_learning_rate_reaches_its_end_value_on_a_fast_and_a_slow_machine(two_speeds):
    (fast, _), (slow, _) = two_speeds["fast"], two_speeds["slow"]
    assert len(fast) > 1.7 * len(slow) > 8, (len(fast), len(slow))  # twice the speed, about twice the iterations
    for records in (fast, slow):
        rates = np.array([r["learning_rate"] for r in records])
        positions = np.array([r["schedule_position"] for r in records])
        assert positions[-1] == 1.0 and np.all(np.diff(positions) > 0)
        np.testing.assert_allclose(rates[-1], PEAK * END_SCALE, rtol=1e-5)  # the last iteration ends the schedule
        # the rate actually used is the schedule's at the recorded position: warmup, then cosine decay
        np.testing.assert_allclose(rates, [cosine(p) for p in positions], rtol=2e-4, atol=1e-8)
        assert positions[0] < WARMUP_SHARE and rates.max() > 0.95 * PEAK
    # the same share of the budget is about the same learning rate on both machines (the horizons
    # differ by half an iteration)
    for share in (0.25, 0.5, 0.75):
        at = [np.interp(share * 60 * BUDGET_MINUTES, [r["elapsed_s"] for r in records],
                        [r["learning_rate"] for r in records]) for records in (fast, slow)]
        assert at[0] == pytest.approx(at[1], abs=0.1 * PEAK), (share, at)


def test_final_evaluation_and_checkpoint_fit_inside_the_budget(two_speeds):
    for name, (records, seconds) in two_speeds.items():
        assert seconds <= 60 * BUDGET_MINUTES, (name, seconds)  # setup, compiles, iterations, evaluations, saves
        assert "eval/fake" in records[-1]  # the final iteration was evaluated ...
        assert records[-1]["elapsed_s"] <= 60 * BUDGET_MINUTES
        # ... and little of the budget was left unused (at most an iteration, a periodic evaluation
        # and a compilation that did not fit, and the final evaluation's margin)
        unused = 60 * BUDGET_MINUTES - seconds
        assert unused < records[-1]["iteration_s"] + EVAL_S + COMPILE_S + (MARGIN - 1) * EVAL_S, (name, seconds)


def test_minute_stages_switch_simulations_at_the_same_training_time(two_speeds):
    for name, (records, _) in two_speeds.items():
        simulations = [r["simulations"] for r in records]
        first = simulations.index(64)
        assert set(simulations[:first]) == {32} and set(simulations[first:]) == {64}, name
        # the stage starts with the first iteration begun after 12 s of training (its compile counted)
        began = records[first - 1]["elapsed_s"]
        assert began >= 60 * STAGE_MINUTES and records[first - 2]["elapsed_s"] < 60 * STAGE_MINUTES, name
        assert records[first]["compile_s"] == COMPILE_S


def test_a_resumed_run_continues_the_same_curve(two_speeds, simulated, tmp_path):
    reference, _ = two_speeds["fast"]
    simulated.interrupt_after = 8  # after the first evaluation (iteration 5)
    with pytest.raises(loop.TrainingInterrupted):
        train(timed_config(), tmp_path, simulated)
    before = read_records(tmp_path)
    assert len(before) == 8
    simulated.interrupt_after = None
    after, _ = train(timed_config(), tmp_path, simulated)
    resumed = after[8:]
    assert [r["iteration"] for r in after] == list(range(1, len(after) + 1))
    assert after[:8] == before
    # the position is the recorded training time over the same horizon in both runs (the resume
    # cost a compilation, so the points lie further along the same line)
    plain = lambda rs: [(r["elapsed_s"], r["schedule_position"]) for r in rs[:-1] if "eval/fake" not in r]
    horizon = np.median([t / p for t, p in plain(reference[5:])])
    for t, p in plain(resumed):
        assert p == pytest.approx(t / horizon, rel=1e-5)
    assert resumed[0]["elapsed_s"] == pytest.approx(before[-1]["elapsed_s"] + COMPILE_S + FAST_S)
    assert resumed[0]["schedule_position"] > before[-1]["schedule_position"]
    np.testing.assert_allclose([r["learning_rate"] for r in resumed],
                               [cosine(r["schedule_position"]) for r in resumed], rtol=2e-4)
    assert after[-1]["learning_rate"] == pytest.approx(PEAK * END_SCALE, rel=1e-5)
    assert len(after) < len(reference)  # the resume's compilation took time from the budget

    # a run keeps its clock: the optimizer state of the two clocks differs
    from othello_jax.checkpoint import CheckpointError

    with pytest.raises(CheckpointError, match="schedule_clock='minutes', not 'iterations'"):
        train(timed_config("iterations"), tmp_path, simulated)


HALF_WAY = float(np.float32(cosine(0.5)))  # the minutes clock's rate at position 0.5


def counted_config():
    """``timed_config`` on the iterations clock with the constant rate ``HALF_WAY``."""
    config = timed_config("iterations")
    config.stages = ""
    config.optimizer.update(schedule="constant", learning_rate=HALF_WAY)
    return config


def test_iterations_clock_also_keeps_the_final_evaluation_inside_the_budget(simulated, tmp_path):
    simulated.iteration_s = SLOW_S
    records, seconds = train(counted_config(), tmp_path, simulated)
    assert seconds <= 60 * BUDGET_MINUTES and "eval/fake" in records[-1]
    assert records[-1]["learning_rate"] == pytest.approx(HALF_WAY) and "schedule_position" not in records[-1]


# ---------------------------------------------------------------------------------------------
# the pieces: the rate applied, stage keys, bad input (the clock's estimates: tests/test_clock.py)
# ---------------------------------------------------------------------------------------------
def test_the_recorded_rate_is_the_rate_the_optimizer_applies():
    """A minutes-clock iteration at position 0.5 moves the network exactly as AdamW (with its decoupled
    weight decay) at the constant rate it records, on the iterations clock."""
    import jax

    program = synthetic_program(timed_config(), make_mesh(1), games=4, plies=6)
    state = program.init_state(jax.random.PRNGKey(0))
    state, metrics = compiled_iteration(program, 0, state, jax.random.PRNGKey(1))(
        state, jax.random.PRNGKey(2), *program.schedule_args(0.5, 0.5))
    assert float(metrics["learning_rate"]) == pytest.approx(HALF_WAY, rel=1e-6)
    assert float(metrics["schedule_position"]) == 0.5

    reference = synthetic_program(counted_config(), make_mesh(1), games=4, plies=6)
    expected = reference.init_state(jax.random.PRNGKey(0))
    expected, _ = compiled_iteration(reference, 0, expected, jax.random.PRNGKey(1))(expected, jax.random.PRNGKey(2))
    got, want = jax.device_get(state.params), jax.device_get(expected.params)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    # and the step mattered: the parameters moved
    initial = jax.device_get(reference.init_state(jax.random.PRNGKey(0)).params)
    assert any(not np.allclose(a, b) for a, b in zip(jax.tree.leaves(initial), jax.tree.leaves(got), strict=True))


def test_stage_keys_in_minutes_and_percent():
    config = synthetic_config()
    stages = parse_stages("12.5m: search.num_simulations=8; 2m: selfplay.temperature=0.5", config)
    assert [s[0] for s in stages] == [0, 2.0, 12.5] and stage_unit("2m: a=1") == "minutes"
    assert [s[0] for s in parse_stages("50%: search.num_simulations=8", config)] == [0, 50.0]
    program = synthetic_program(dict_config(config, stages="50%: search.num_simulations=64"), make_mesh(1))
    assert [program.stage_at(999, 999.0, p) for p in (0.0, 49.9, 50.0, 100.0)] == [0, 0, 1, 1]
    program = synthetic_program(dict_config(config, stages="3m: search.num_simulations=64"), make_mesh(1))
    assert [program.stage_at(999, m, 100.0) for m in (0.0, 2.99, 3.0)] == [0, 0, 1]
    assert program.stage_label(1) == "3 minutes of training"


def dict_config(config, **changes):
    config = config.copy_and_resolve_references()
    config.update(changes)
    return config


def test_bad_clock_and_stage_input_is_a_one_line_error(capsys, tmp_path, monkeypatch):
    from othello_jax.commands import train as train_command

    monkeypatch.setenv("JAX_NUM_CPU_DEVICES", "1")  # JAX is running already: the command must not set a count

    base = ["--config=experiments/configs/tiny_test.py", f"--workdir={tmp_path}"]
    cases = [
        (["--config.schedule_clock=hours"], "schedule_clock must be one of iterations, minutes"),
        (["--config.schedule_clock=minutes"], "needs max_minutes > 0"),
        (["--config.stages=5: search.num_simulations=8; 2m: selfplay.temperature=0.5"], "key them all one way"),
        (["--config.stages=150%: search.num_simulations=8"], "past the end of the schedule"),
        (["--config.stages=2.5: search.num_simulations=8"], "must look like"),
        (["--config.stages=m: search.num_simulations=8"], "must look like"),
        (["--config.stages=1m: search.num_simulations=8; 1.0m: search.num_simulations=16"], "same time"),
        (["--config.stages=1m: search.num_simulations=0"], "in the stage from 1 minutes of training"),
    ]
    for args, fragment in cases:
        code = train_command.main(base + args)
        err = capsys.readouterr().err.strip()
        assert code == 2, (args, err)
        assert err.startswith("othello-jax train: error:") and "\n" not in err and fragment in err, (args, err)
    config = synthetic_config()
    config.update(schedule_clock="minutes", max_minutes=1.0, stages="30%: optimizer.name=sgd")
    with pytest.raises(ValueError, match="stage at 30% of the schedule changes the optimizer's state"):
        synthetic_program(config, make_mesh(1))
    check_config(dict_config(config, stages=""))
