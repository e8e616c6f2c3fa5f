"""tests/ci_budget.py: every test CI leaves to the full run exists, says what covers it in CI, and
is marked slow when collected."""

from __future__ import annotations

import subprocess
import sys

from tests.ci_budget import LEFT_TO_THE_FULL_RUN, left_to_the_full_run
from tests.conftest import REPO_ROOT


def test_every_test_left_out_exists_and_names_its_cover():
    modules = sorted({key.split("::", 1)[0] for key in LEFT_TO_THE_FULL_RUN})
    listed = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "",
                             *modules], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert listed.returncode == 0, listed.stdout[-3000:] + listed.stderr[-3000:]
    collected = {line for line in listed.stdout.splitlines() if "::" in line}
    missing = [key for key in LEFT_TO_THE_FULL_RUN
               if key not in collected and not any(node.startswith(key + "[") for node in collected)]
    assert missing == [], f"no such tests (renamed?): {missing}"
    assert all(len(cover) > 10 for cover in LEFT_TO_THE_FULL_RUN.values())


def test_ci_collects_the_other_cases_of_a_left_out_test_but_not_it():
    """conftest's hook marks one parametrization slow, so `-m "not slow"` (CI) leaves it out alone."""
    module = "tests/test_gtp_agent.py"
    listed = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                             "-m", "not slow", module], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert listed.returncode == 0, listed.stdout[-3000:] + listed.stderr[-3000:]
    assert f"{module}::test_full_games_against_the_fake_engine[8]" in listed.stdout
    assert f"{module}::test_full_games_against_the_fake_engine[4]" not in listed.stdout
    assert left_to_the_full_run(f"{module}::test_full_games_against_the_fake_engine[4]")
    assert not left_to_the_full_run("tests/test_lanes.py::test_more_lanes")  # a prefix of a key is not a key
