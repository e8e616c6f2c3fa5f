"""Errors (issue 28): bad input is one line and exit 2; any other exception is a bug, one line
naming the file that holds its traceback and exit 1; a bug in `train` loses no checkpoint."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import othello_jax
from othello_jax import cli
from othello_jax.commands.command import run_command
from othello_jax.errors import InputError

REPO_ROOT = Path(__file__).resolve().parents[1]
TINY = "--config=experiments/configs/tiny_test.py"
BUG_LINE = "internal error (a bug, please report it)"

# `othello-jax ARGS` in a fresh process whose MetricsLog.write raises a RuntimeError (a stand-in
# for any bug) at the record of iteration FAIL_AT; the run checkpoints every iteration.
_FAILING_TRAIN = """
import sys
from othello_jax import cli
from othello_jax.training.runner import metrics

fail_at, write = int(sys.argv[1]), metrics.MetricsLog.write

def write_or_fail(self, record, **options):
    if int(record.get("iteration", 0)) >= fail_at:
        raise RuntimeError("injected failure\\nwith a second line")
    write(self, record, **options)

metrics.MetricsLog.write = write_or_fail
sys.exit(cli.main(sys.argv[2:]))
"""


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def _project_exception_classes() -> list[type[BaseException]]:
    """Every exception class defined in an ``othello_jax`` module."""
    found = {}
    for module_info in pkgutil.walk_packages(othello_jax.__path__, "othello_jax."):
        module = importlib.import_module(module_info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__.startswith("othello_jax"):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[name] for name in sorted(found)]


# not bad input: a run stopped by a signal, a match that an agent broke with an illegal move
NOT_INPUT = {"TrainingInterrupted", "StoppedBeforeFirstIteration", "Abandoned", "ArenaError"}


def test_every_error_class_of_the_project_for_input_is_an_input_error():
    classes = _project_exception_classes()
    names = {cls.__name__ for cls in classes}
    assert {"NotationError", "IllegalMove", "AgentSpecError", "AgentOptionError", "CheckpointError", "GtpError",
            "EngineError", "CSolverUnavailable", "OpeningError", "WthorError", "PortableNetworkError", "EloError",
            "MatchSettingsError"} <= names
    not_input = [cls.__name__ for cls in classes if not issubclass(cls, InputError)]
    assert set(not_input) <= NOT_INPUT, not_input
    from othello_jax.checkpoint import CheckpointError

    assert issubclass(CheckpointError, RuntimeError)  # what callers catching RuntimeError expect
    assert issubclass(InputError, ValueError)


@pytest.mark.parametrize("override, fragment", [
    ("--config.search.num_simulations=-3", "num_simulations must be >= 1"),
    ("--config.search.no_such_setting=1", "no_such_setting"),
    ("--config.search.num_simulatoins=8",
     'names no setting: num_simulatoins; Did you mean "num_simulations" instead of "num_simulatoins"?'),
    ("--config.search.reuse=True", "search.reuse was removed: subtree reuse gave no gain at equal time"),
    ("--config.selfplay.playout_cap.every=4", "selfplay.playout_cap was removed: playout cap randomisation"),
])
def test_a_bad_override_is_one_line_and_exit_2_with_nothing_trained(tmp_path, override, fragment):
    workdir = tmp_path / "run"
    done = _run("-m", "othello_jax.cli", "train", TINY, f"--workdir={workdir}", override)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("othello-jax train: error:") and fragment in lines[0], lines
    assert not workdir.exists()  # nothing trained, nothing written


def test_a_bug_in_train_is_one_line_exit_1_and_the_run_resumes_from_its_last_checkpoint(tmp_path):
    workdir = tmp_path / "run"
    failed = _run("-c", _FAILING_TRAIN, "2", "train", TINY, f"--workdir={workdir}", "--config.iterations=2")
    assert failed.returncode == 1, failed.stderr[-3000:]
    lines = failed.stderr.strip().splitlines()
    log = workdir / "errors.log"
    assert lines == [f"othello-jax train: {BUG_LINE}: RuntimeError: injected failure; full traceback in {log}"]
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "write_or_fail" in text and "with a second line" in text
    assert (workdir / "checkpoints" / "1").is_dir()

    resumed = _run("-m", "othello_jax.cli", "train", TINY, f"--workdir={workdir}", "--config.iterations=2")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "at iteration 1" in resumed.stdout, resumed.stdout[-2000:]  # from the checkpoint before the bug
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [1, 2]


EVAL = ["eval", "--size=4", "--games=2", "--white=random"]


def test_eval_reports_a_bad_spec_in_one_line_with_exit_2(capsys):
    assert cli.main([*EVAL, "--black=alphabeta:depth=0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("othello-jax eval: error: --black: alphabeta depth") and err.count("\n") == 1, err


def _break_eval_openings(monkeypatch) -> None:
    """An internal ``ValueError`` (once reported as bad input) where eval draws its openings."""
    from othello_jax.commands import eval as eval_command

    def broken(*args, **kwargs):
        raise ValueError("operands could not be broadcast together")

    monkeypatch.setattr(eval_command, "match_openings", broken)


def test_a_bug_in_eval_is_one_line_exit_1_with_the_traceback_in_a_file(capsys, monkeypatch):
    monkeypatch.delenv("OTHELLO_JAX_DEBUG", raising=False)
    _break_eval_openings(monkeypatch)
    assert cli.main([*EVAL, "--black=greedy"]) == 1
    err = capsys.readouterr().err
    prefix = f"othello-jax eval: {BUG_LINE}: ValueError: operands could not be broadcast together; full traceback in "
    assert err.startswith(prefix) and err.count("\n") == 1, err
    log = Path(err[len(prefix):].strip())
    try:
        assert "Traceback (most recent call last)" in log.read_text() and "in broken" in log.read_text()
    finally:
        log.unlink()


@pytest.mark.parametrize("how", ["flag first", "flag last", "environment"])
def test_debug_prints_the_traceback(capsys, monkeypatch, how):
    _break_eval_openings(monkeypatch)
    argv = [*EVAL, "--black=greedy"]
    if how == "environment":
        monkeypatch.setenv("OTHELLO_JAX_DEBUG", "1")
    else:
        monkeypatch.delenv("OTHELLO_JAX_DEBUG", raising=False)
        argv = ["--debug", *argv] if how == "flag first" else [*argv, "--debug"]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "in broken" in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"othello-jax eval: {BUG_LINE}")
    Path(last.rsplit("full traceback in ", 1)[1]).unlink()


def _raising(error: BaseException):
    def main(argv: list[str]) -> int:
        raise error

    return main


@pytest.mark.parametrize("error, code, line", [
    (InputError("bad value\nmore"), 2, "othello-jax demo: error: bad value"),
    (FileNotFoundError(2, "No such file or directory", "x.txt"),
     2, "othello-jax demo: error: [Errno 2] No such file or directory: 'x.txt'"),
    (KeyboardInterrupt(), 130, "othello-jax demo: interrupted"),
])
def test_run_command_turns_input_errors_and_ctrl_c_into_one_line(capsys, error, code, line):
    assert run_command("demo", _raising(error), []) == code
    assert capsys.readouterr().err == line + "\n"


def test_run_command_logs_a_bug_in_its_log_dir_or_else_a_temporary_file(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("OTHELLO_JAX_DEBUG", raising=False)
    seen = []
    log_dir = lambda argv: seen.append(argv) or tmp_path / "run"
    assert run_command("demo", _raising(KeyError("k")), ["--x=1", "--debug"], log_dir=log_dir) == 1
    err = capsys.readouterr().err
    assert seen == [["--x=1"]] and "Traceback" in err  # --debug: printed, and not passed on
    assert err.strip().splitlines()[-1] == (f"othello-jax demo: {BUG_LINE}: KeyError: 'k'; "
                                            f"full traceback in {tmp_path / 'run' / 'errors.log'}")
    assert run_command("demo", _raising(TypeError()), [], log_dir=log_dir) == 1  # appended
    text = (tmp_path / "run" / "errors.log").read_text()
    assert text.count("=== ") == 2 and "othello-jax demo --x=1" in text and "TypeError" in text

    (tmp_path / "file").write_text("")  # a log dir that cannot be created: a temporary file instead
    capsys.readouterr()
    assert run_command("demo", _raising(TypeError()), [], log_dir=lambda argv: tmp_path / "file" / "run") == 1
    err = capsys.readouterr().err
    assert err.startswith(f"othello-jax demo: {BUG_LINE}: TypeError: TypeError; full traceback in ")
    log = Path(err.strip().rsplit(" ", 1)[1])
    assert log.parent != tmp_path / "file" and "TypeError" in log.read_text()
    log.unlink()
