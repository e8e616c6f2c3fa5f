"""Preemption: a SIGTERM or SIGINT finishes the iteration in flight, checkpoints, exits 75; the next start resumes.

The subprocess tests share a persistent compilation cache, so a restart costs seconds, not a compile.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from othello_jax.training.settings.defaults import default_config
from othello_jax.training.settings.run_settings import check_config, resolve_stages
from tests.conftest import tiny_config

REPO = Path(__file__).resolve().parents[1]
TINY = ["--config=experiments/configs/tiny_test.py", "--config.checkpoint.every=1000",
        "--config.checkpoint.every_minutes=0"]


@pytest.fixture(scope="module")
def compile_cache() -> Path:
    """The test session's compilation cache (tests/conftest.py), shared with the other tests."""
    return Path(os.environ["JAX_COMPILATION_CACHE_DIR"])


def train_command(workdir: Path, cache: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1",
               JAX_COMPILATION_CACHE_DIR=str(cache), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    return subprocess.Popen([sys.executable, "-m", "othello_jax.cli", "train", f"--workdir={workdir}", *TINY, *args],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def steps(workdir: Path) -> list[int]:
    return sorted(int(p.name) for p in (workdir / "checkpoints").iterdir() if p.name.isdigit())


def test_sigterm_checkpoints_exits_75_and_the_next_start_resumes(tmp_path, compile_cache):
    workdir = tmp_path / "run"
    proc = train_command(workdir, compile_cache, "--config.iterations=12")
    deadline = time.time() + 300
    for line in proc.stdout:  # wait until training runs, then preempt it
        if line.startswith("[ 2/12]"):
            break
        assert time.time() < deadline, "no second iteration within 5 minutes"
    else:
        pytest.fail(f"the run ended before it was signalled: {proc.stderr.read()[-2000:]}")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 75, err[-2000:]

    lines = stderr_lines(err)
    assert len(lines) == 2, err  # one line at once saying what happens, one saying where it stopped
    assert re.fullmatch(r"othello-jax train: stopping \(SIGTERM\): finishing iteration \d+ in flight \(one compiled "
                        r"call\), then saving it; a second SIGTERM aborts at once", lines[0]), lines[0]
    match = re.fullmatch(r"othello-jax train: stopped by SIGTERM after iteration (\d+) of 12; checkpoint "
                         r"(\S+) saved; run the same command again to resume", lines[1])
    assert match, lines[0]
    stopped = int(match.group(1))
    assert 2 <= stopped < 12
    assert Path(match.group(2)) == workdir / "checkpoints" / str(stopped)
    assert steps(workdir) == [stopped]  # checkpoint.every=1000: only the stop wrote one
    assert (workdir / "checkpoints" / str(stopped) / "commit_success.txt").exists()
    logged = [json.loads(line)["iteration"] for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert logged == list(range(1, stopped + 1))

    resumed = train_command(workdir, compile_cache, "--config.iterations=12")
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err[-2000:]
    assert f"resumed {workdir} at iteration {stopped}" in out
    assert steps(workdir) == [stopped, 12]
    logged = [json.loads(line)["iteration"] for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert logged == list(range(1, 13))


# an in-run evaluation after every iteration, three matches long (one compile): a signal lands in one of them
SLOW_EVAL = ["--config.iterations=2", "--config.eval.every=1", "--config.eval.games=4",
             "--config.eval.opponents=alphabeta:depth=1 alphabeta:depth=1 alphabeta:depth=1"]


def signal_at(proc: subprocess.Popen, prefix: str, *signals: signal.Signals, gap_s: float = 0.5) -> list[str]:
    """Send ``signals`` (``gap_s`` apart) once ``proc`` prints a line starting with ``prefix``; the
    standard output lines until then."""
    seen, deadline = [], time.time() + 300
    for line in proc.stdout:
        seen.append(line)
        if line.startswith(prefix):
            break
        assert time.time() < deadline, f"no line {prefix!r} within 5 minutes"
    else:
        pytest.fail(f"the run ended before it was signalled: {''.join(seen)[-1500:]} {proc.stderr.read()[-1500:]}")
    for i, sig in enumerate(signals):
        if i:
            time.sleep(gap_s)
        proc.send_signal(sig)
    return seen


def stderr_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip()]


def test_one_sigint_during_the_in_run_evaluation_abandons_it_saves_the_iteration_and_resumes(tmp_path, compile_cache):
    """The issue's reproduction, once: Ctrl-C while the in-run evaluation runs is answered at once,
    the evaluation is abandoned after the match in flight, iteration 1 is saved (exit 75) and the
    same command resumes to the end."""
    workdir = tmp_path / "run"
    proc = train_command(workdir, compile_cache, *SLOW_EVAL)
    signal_at(proc, "evaluation:", signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 75, err[-2000:]
    lines = stderr_lines(err)
    assert len(lines) == 2, err
    assert lines[0] == ("othello-jax train: stopping (SIGINT): the evaluation is abandoned at its next step (the "
                        "compile or match in flight cannot be cut short), then iteration 1 is saved; Ctrl-C again "
                        "aborts at once")
    assert lines[1] == (f"othello-jax train: stopped by SIGINT after iteration 1 of 2; checkpoint "
                        f"{workdir / 'checkpoints' / '1'} saved; run the same command again to resume")
    assert steps(workdir) == [1]
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [1] and not any(k.startswith("eval/") for k in records[0])

    resumed = train_command(workdir, compile_cache, *SLOW_EVAL)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err[-2000:]
    assert f"resumed {workdir} at iteration 1" in out
    logged = [json.loads(line)["iteration"] for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert logged == [1, 2]


def test_two_sigints_during_the_in_run_evaluation_abort_at_once_with_status_130(tmp_path, compile_cache):
    """The issue's reproduction: a second Ctrl-C during the evaluation aborts at once, exit 130
    (never a crash: 139 was the segfault of the interpreter's exit under XLA's threads), saying
    truly that no checkpoint was written (the test above resumes a stopped run)."""
    workdir = tmp_path / "run"
    proc = train_command(workdir, compile_cache, *SLOW_EVAL)
    signal_at(proc, "evaluation:", signal.SIGINT, signal.SIGINT)
    begin = time.time()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert time.time() - begin < 30  # at once, not after the evaluation
    lines = stderr_lines(err)
    assert len(lines) == 2 and lines[0].startswith("othello-jax train: stopping (SIGINT): the evaluation is "), err
    assert lines[1] == ("othello-jax train: aborted by a second signal (SIGINT); no checkpoint was written: the same "
                        "command starts the run afresh")
    assert steps(workdir) == []


def test_a_signal_while_a_fresh_run_compiles_saves_nothing_and_says_so(tmp_path):
    """SIGTERM during the first compile: answered at once, the run ends once the compile returns,
    before its first iteration, with 143 (128 + SIGTERM) and no checkpoint claimed."""
    workdir = tmp_path / "run"
    proc = train_command(workdir, tmp_path / "xla", "--config.iterations=3")  # a cold compile: seconds to land in
    signal_at(proc, "compiling stage 0", signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 143, err[-2000:]
    lines = stderr_lines(err)
    assert len(lines) == 2, err
    assert lines[0].startswith("othello-jax train: stopping (SIGTERM): "), err
    assert "nothing" in lines[0] and "a second SIGTERM aborts at once" in lines[0]
    assert lines[1] == ("othello-jax train: stopped by SIGTERM before the first iteration finished; nothing was saved "
                        "(the same command starts the run afresh)")
    metrics = workdir / "metrics.jsonl"
    assert steps(workdir) == [] and (not metrics.exists() or not metrics.read_text().strip())


def test_sigint_in_process_stops_after_a_checkpoint_synced_by_the_hook(tmp_path):
    """SIGINT (Ctrl-C, a notebook's interrupt) during training: ``run`` raises ``TrainingInterrupted``
    after the checkpoint; ``on_checkpoint`` saw every checkpoint (here one per iteration from
    ``checkpoint.every_minutes``) and the previous SIGINT handler is back."""
    from othello_jax.training.runner import loop
    from othello_jax.training.runner import mirror as workdir_mirror

    config = tiny_config(**{"iterations": 50, "checkpoint.every": 1000, "checkpoint.every_minutes": 1e-9})
    workdir, mirror = tmp_path / "run", tmp_path / "mirror"
    sync = workdir_mirror.checkpoint_hook(workdir, mirror)
    hooked = []

    def on_checkpoint(iteration: int) -> None:
        hooked.append(iteration)
        sync(iteration)

    def printer(line: str) -> None:
        if line.startswith("[ 3/50]"):
            os.kill(os.getpid(), signal.SIGINT)  # arrives between iterations, like Ctrl-C

    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(loop.TrainingInterrupted, match=r"stopped by SIGINT after iteration 3 of 50") as stop:
        loop.run(config, workdir, print_fn=printer, on_checkpoint=on_checkpoint)
    assert stop.value.iteration == 3 and stop.value.reason == "SIGINT"
    assert signal.getsignal(signal.SIGINT) is before
    assert hooked == [1, 2, 3]  # every_minutes saved each iteration; the stop had nothing left to save
    assert steps(workdir) == [1, 2, 3] and steps(mirror) == [1, 2, 3]
    assert (mirror / "checkpoints" / "3" / "commit_success.txt").exists()


def test_every_minutes_is_validated_and_may_change_in_a_stage():
    config = tiny_config()
    assert default_config().checkpoint.every_minutes > 0
    config.checkpoint.every_minutes = -1.0
    with pytest.raises(ValueError, match="checkpoint.every_minutes must be >= 0"):
        check_config(config)
    config = tiny_config(stages="2: checkpoint.every_minutes=0.5")
    _, (base, stage) = resolve_stages(config)
    assert base.checkpoint.every_minutes > 0 and stage.checkpoint.every_minutes == 0.5


def _fake_quickstart(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A copy of scripts/quickstart.sh in a fake checkout whose ``othello-jax`` logs its command to
    ``calls`` and is preempted in training (exit 75): ``(checkout, its .venv/bin/python to write, calls)``."""
    fake = tmp_path / "repo"
    (fake / "scripts").mkdir(parents=True)
    (fake / ".venv" / "bin").mkdir(parents=True)
    (fake / "scripts" / "quickstart.sh").write_text((REPO / "scripts" / "quickstart.sh").read_text())
    calls = tmp_path / "calls"
    cli = fake / ".venv" / "bin" / "othello-jax"
    cli.write_text(f'#!/bin/sh\necho "$1" >> {calls}\n[ "$1" = train ] && exit 75\nexit 0\n')
    cli.chmod(0o755)
    return fake, fake / ".venv" / "bin" / "python", calls


def test_quickstart_stops_on_status_75_without_evaluating(tmp_path):
    """scripts/quickstart.sh with a stand-in ``othello-jax`` whose training is preempted."""
    fake, python, calls = _fake_quickstart(tmp_path)
    python.write_text("#!/bin/sh\nexit 0\n")
    python.chmod(0o755)
    result = subprocess.run(["bash", str(fake / "scripts" / "quickstart.sh")], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 75, result.stderr
    assert "run" in result.stderr and "again to resume" in result.stderr
    assert calls.read_text().split() == ["train"]  # no plot, no evaluation


def test_quickstart_installs_quietly_and_shows_pips_output_only_when_it_fails(tmp_path):
    """The quickstart's pip notices are hidden on success; on failure they are shown and nothing trains."""
    fake, python, calls = _fake_quickstart(tmp_path)
    for pip_status in (0, 1):
        python.write_text(f'#!/bin/sh\necho "BuildBackendWarning: pip noise for $*" >&2\nexit {pip_status}\n')
        python.chmod(0o755)
        result = subprocess.run(["bash", str(fake / "scripts" / "quickstart.sh")], capture_output=True,
                                text=True, timeout=60)
        shown = result.stdout + result.stderr
        assert "installing othello-jax" in result.stdout
        if pip_status == 0:
            assert "pip noise" not in shown and result.returncode == 75  # went on to train
        else:
            assert result.returncode == 1 and "pip noise for -m pip install -q --upgrade pip" in result.stderr
            assert "== failed: .venv/bin/python -m pip install" in result.stderr
    assert calls.read_text().split() == ["train"]  # the failed install trained nothing
