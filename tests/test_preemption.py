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
    proc = train_command(workdir, compile_cache, "--config.iterations=80")
    deadline = time.time() + 300
    for line in proc.stdout:  # wait until training runs, then preempt it
        if line.startswith("[ 2/80]"):
            break
        assert time.time() < deadline, "no second iteration within 5 minutes"
    else:
        pytest.fail(f"the run ended before it was signalled: {proc.stderr.read()[-2000:]}")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 75, err[-2000:]

    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err  # one line: where it stopped, how to resume
    match = re.fullmatch(r"othello-jax train: stopped by SIGTERM after iteration (\d+) of 80; checkpoint "
                         r"(\S+) saved; run the same command again to resume", lines[0])
    assert match, lines[0]
    stopped = int(match.group(1))
    assert 2 <= stopped < 80
    assert Path(match.group(2)) == workdir / "checkpoints" / str(stopped)
    assert steps(workdir) == [stopped]  # checkpoint.every=1000: only the stop wrote one
    assert (workdir / "checkpoints" / str(stopped) / "commit_success.txt").exists()
    logged = [json.loads(line)["iteration"] for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert logged == list(range(1, stopped + 1))

    resumed = train_command(workdir, compile_cache, "--config.iterations=80")
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err[-2000:]
    assert f"resumed {workdir} at iteration {stopped}" in out
    assert steps(workdir) == [stopped, 80]
    logged = [json.loads(line)["iteration"] for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert logged == list(range(1, 81))


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
