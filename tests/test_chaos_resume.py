"""Kill at any moment: experiments/chaos_resume.py with 3 SIGKILLs (compile, self-play, saving) must
resume to exactly the uninterrupted run's state, with no corrupt checkpoint, on the 2 host devices
`othello-jax train` uses on a 2-core machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # ~1.5-2.5 minutes on 2 cores; CI keeps the SIGTERM resume tests on the same layout
def test_three_kills_resume_to_the_uninterrupted_run_on_two_devices(tmp_path):
    result = subprocess.run([sys.executable, "-m", "experiments.chaos_resume", "--kills=3", "--seed=0", "--devices=2",
                             f"--workdir={tmp_path}"], cwd=REPO, capture_output=True, text=True, timeout=1500)
    summary = [line for line in result.stdout.splitlines() if line.startswith("chaos_resume:")]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert summary and "3 kills (compile 1" in summary[0] and "3 resumes, 2 device(s)" in summary[0], result.stdout
    assert "identical" in summary[0]
