"""Live dashboards: self-play and supervised training write TensorBoard events beside metrics.jsonl,
read back here with TensorBoard's own reader: every number of every JSON line at its iteration,
the curves image, nothing with `tensorboard=False`, and a resumed run continuing at its iteration."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from experiments.configs.supervised import get_config as supervised_config
from othello_jax.commands import train as train_command
from othello_jax.training.runner import loop
from othello_jax.training.runner.metrics import (
    CURVES_EVERY_S,
    CURVES_TAG,
    DPI,
    STEP_KEYS,
    MetricsLog,
    figure,
    read_records,
)
from othello_jax.training.supervised import trainer as supervised
from tests.conftest import tiny_config


class Crash(Exception):
    """A run killed after a record was logged, before its checkpoint."""


def stub_evaluator(stage, program, variables, key) -> dict:
    """An evaluation without matches (the arena is tested elsewhere): a fixed score."""
    return {"eval/stub": 0.25}


def event_files(workdir: Path) -> list[Path]:
    return sorted(p for p in workdir.rglob("*") if "tfevents" in p.name)


def events(workdir: Path) -> EventAccumulator:
    """Every event of the workdir (all sessions' files), as TensorBoard reads them."""
    accumulator = EventAccumulator(str(workdir), size_guidance={"scalars": 0, "images": 0})
    accumulator.Reload()
    return accumulator


def assert_events_equal_the_log(workdir: Path) -> EventAccumulator:
    """Each number of each metrics.jsonl line is the event of its tag at the line's iteration, once;
    no other scalar is there."""
    expected: dict[str, dict[int, float]] = {}
    for record in read_records(workdir):
        for key, value in record.items():
            if key not in STEP_KEYS and isinstance(value, int | float):
                expected.setdefault(key, {})[record["iteration"]] = value
    accumulator = events(workdir)
    assert sorted(accumulator.Tags()["scalars"]) == sorted(expected)
    for tag, by_step in expected.items():
        got = accumulator.Scalars(tag)
        assert [e.step for e in got] == sorted(by_step), tag  # each step once, in order
        np.testing.assert_array_equal(np.float32([e.value for e in got]), np.float32(list(by_step.values())),
                                      err_msg=tag)
    return accumulator


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's header."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])


def assert_curves_at(accumulator: EventAccumulator, workdir: Path, steps: list[int]) -> None:
    """The curves image at ``steps``, the last one the size of plot()'s PNG of the whole log."""
    images = accumulator.Images(CURVES_TAG)
    assert [image.step for image in images] == steps
    width, height = figure([workdir]).get_size_inches() * DPI
    last = images[-1]
    assert png_size(last.encoded_image_string) == (last.width, last.height) == (round(width), round(height))


def test_selfplay_events_hold_every_logged_number_and_the_curves(tmp_path):
    workdir = tmp_path / "run"
    config = tiny_config(**{"iterations": 3, "eval.every": 2})
    loop.run(config, workdir, evaluator=stub_evaluator, print_fn=lambda _: None)
    assert len(event_files(workdir)) == 1 and event_files(workdir)[0].parent == workdir  # beside metrics.jsonl
    records = read_records(workdir)
    assert [r["iteration"] for r in records] == [1, 2, 3] and "eval/stub" in records[1]
    accumulator = assert_events_equal_the_log(workdir)
    assert {"loss", "learning_rate", "positions_per_s", "eval/stub", "elapsed_s"} <= set(accumulator.Tags()["scalars"])
    # drawn at the evaluation (the first of the session), and at the session's end
    assert_curves_at(accumulator, workdir, [2, 3])


def test_resumed_run_hides_the_orphaned_steps_and_continues_at_its_iteration(tmp_path):
    """Killed after iteration 3 was logged but before its checkpoint (every 2): the second session
    trains iteration 3 again; TensorBoard must show each iteration once, with the values kept in
    metrics.jsonl (the second session's)."""
    workdir = tmp_path / "run"
    config = tiny_config(**{"iterations": 4, "eval.every": 2, "checkpoint.every": 2})

    def crash_after_3(line: str) -> None:
        if line.startswith("[3/4]"):
            raise Crash

    with pytest.raises(Crash):
        loop.run(config, workdir, evaluator=stub_evaluator, print_fn=crash_after_3)
    first_session = read_records(workdir)
    assert [r["iteration"] for r in first_session] == [1, 2, 3]
    lines = []
    loop.run(config, workdir, evaluator=stub_evaluator, print_fn=lines.append)
    assert any(line.startswith(f"resumed {workdir} at iteration 2") for line in lines), lines
    records = read_records(workdir)
    assert [r["iteration"] for r in records] == [1, 2, 3, 4]
    assert records[2]["iteration_s"] != first_session[2]["iteration_s"]  # iteration 3 was logged again
    assert len(event_files(workdir)) == 2  # one file per session
    accumulator = assert_events_equal_the_log(workdir)
    # the first session drew at its evaluation, 2 (a crash draws nothing more); the second at its evaluation, 4
    assert_curves_at(accumulator, workdir, [2, 4])


def test_curves_are_drawn_at_most_every_few_minutes_and_at_the_end(tmp_path):
    """Drawing takes seconds: an evaluation's record draws them only when the last drawing is
    CURVES_EVERY_S old; the end of the session draws the last record's unless drawn there."""
    clock = [0.0]
    log = MetricsLog(tmp_path, tensorboard=True, now=lambda: clock[0])
    for iteration, seconds, curves in [(1, 0.0, True), (2, 100.0, True), (3, CURVES_EVERY_S, False),
                                       (4, CURVES_EVERY_S + 1.0, True), (5, 2 * CURVES_EVERY_S, False)]:
        clock[0] = seconds
        log.write({"iteration": iteration, "loss": 1.0 / iteration, "phase": "text is no scalar"}, curves=curves)
    log.draw_curves()
    log.draw_curves()  # drawn at 5 already
    log.close()
    accumulator = assert_events_equal_the_log(tmp_path)
    assert accumulator.Tags()["scalars"] == ["loss"]
    assert_curves_at(accumulator, tmp_path, [1, 4, 5])


def test_tensorboard_off_writes_no_events(tmp_path, capsys):
    workdir = tmp_path / "run"
    code = train_command.main(["--config=experiments/configs/tiny_test.py", f"--workdir={workdir}",
                               "--config.iterations=1", "--config.tensorboard=False"])
    assert code == 0, capsys.readouterr().err
    assert read_records(workdir) and not event_files(workdir)


@pytest.fixture(scope="module")
def small_wthor(shared_data, tmp_path_factory) -> Path:
    """A WThor directory with one year to train on (1980) and one held out (2020)."""
    directory = tmp_path_factory.mktemp("wthor")
    for name in ("WTH_1980.wtb", "WTH_2020.wtb", "WTHOR.JOU", "WTHOR.TRN"):
        shutil.copy(shared_data / "wthor" / name, directory / name)
    return directory


@pytest.mark.parametrize("tensorboard", [True, False])
def test_supervised_events_hold_every_logged_number_and_the_curves(small_wthor, tmp_path, tensorboard):
    config = supervised_config("test")  # 20 steps, two per call, logged every 10, evaluated at 20
    config.data.update(wthor_dir=str(small_wthor), cache_dir="", test_from_year=2020)
    config.update(eval_positions=200, tensorboard=tensorboard)
    workdir = tmp_path / "sl"
    supervised.run(config, workdir, log=lambda _: None)
    records = read_records(workdir)
    assert [r["step"] for r in records] == [10, 20] and "eval/top1" in records[-1]
    if not tensorboard:
        assert not event_files(workdir)
        return
    accumulator = assert_events_equal_the_log(workdir)
    assert {"loss", "learning_rate", "examples_per_s", "eval/top1"} <= set(accumulator.Tags()["scalars"])
    assert_curves_at(accumulator, workdir, [20])
