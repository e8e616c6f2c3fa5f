"""Every command answers SIGTERM as it answers SIGINT: one line at once, a conventional exit status
(143 for SIGTERM, 130 for SIGINT), even while it is inside a compile; never a crash."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def start_eval(tmp_path: Path) -> subprocess.Popen:
    """`othello-jax eval` of two network players on 4x4 with a cold compilation cache, so the
    signal lands while it compiles or plays."""
    env = dict(os.environ, PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1",
               OTHELLO_JAX_XLA_CACHE=str(tmp_path / "xla"))
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    return subprocess.Popen(
        [sys.executable, "-m", "othello_jax.cli", "eval", "--size=4", "--games=64", "--black=net:preset=tiny,sims=8",
         "--white=alphabeta:depth=2"], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_eval_while_it_compiles_is_one_line_and_the_shells_status(tmp_path, sig):
    proc = start_eval(tmp_path)
    deadline = time.time() + 120
    for line in proc.stdout:  # wait until it compiles (its notices go to standard output without --json)
        if line.startswith("compiling the match"):
            break
        assert time.time() < deadline, "no compile notice within 2 minutes"
    else:
        pytest.fail(f"eval ended before it was signalled: {proc.stderr.read()}")
    proc.send_signal(sig)
    begin = time.time()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert time.time() - begin < 20  # answered within the grace period, not after the compile
    word = "terminated" if sig == signal.SIGTERM else "interrupted"
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [f"othello-jax eval: {word} ({sig.name})"], err
