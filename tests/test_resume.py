"""Resume as users run it: `othello-jax train` on the devices the command picks (one CPU host device
per core; two cores here) or on 8 simulated devices, stopped by SIGTERM and started again with the
same command, then extended by `--config.iterations`.

With the iterations clock the stopped-and-resumed run must equal the uninterrupted run on the same
layout bit for bit (every checkpointed array, every logged metric but wall-clock times). The
minutes clock (resume, finish inside the budget, the schedule position never moving back) is
tested on the README's own command, `bash scripts/quickstart.sh` stopped by Ctrl-C and run
again: tests/test_entry_points.py. The processes share the test session's compilation cache
(tests/conftest.py), so a restart loads its executable instead of compiling it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from experiments.chaos_resume import Start, checkpoint_loader, same_arrays

TINY = ["--config=experiments/configs/tiny_test.py"]
TIMING = ("_s", "_per_s")  # wall-clock fields of a metrics record
LAYOUTS = {"2 cores": dict(cores=2), "8 devices": dict(devices=8)}  # Start's keywords
# CI runs the users' default layout; 8 devices (the same code, sharded further; test_sharding checks
# 8 devices against 1) only with -m "" (slow), to keep CI inside 30 minutes
LAYOUT_PARAMS = [pytest.param(name, marks=[pytest.mark.slow] if name == "8 devices" else []) for name in LAYOUTS]


@pytest.fixture(scope="module")
def cache() -> Path:
    """The test session's compilation cache (tests/conftest.py)."""
    return Path(os.environ["JAX_COMPILATION_CACHE_DIR"])


def finish(start: Start, codes: tuple[int, ...] = (0,), timeout: float = 600) -> str:
    """Wait for ``start``; assert its exit status is one of ``codes``; its output."""
    status = start.finish(timeout=timeout)
    out = "\n".join(start.lines)
    assert status in codes, out[-3000:]
    return out


def wait_for(start: Start, pattern: str, timeout: float = 600) -> None:
    """Return once ``start`` has printed a line matching ``pattern`` (it must still be running)."""
    deadline = time.monotonic() + timeout
    while not any(re.match(pattern, line) for line in list(start.lines)):
        assert start.running(), f"the run ended before printing {pattern!r}:\n" + "\n".join(start.lines[-30:])
        assert time.monotonic() < deadline, f"no line matching {pattern!r} within {timeout}s"
        time.sleep(0.01)


def stop_after(start: Start, pattern: str, timeout: float = 600, codes: tuple[int, ...] = (75,)) -> str:
    """SIGTERM ``start`` once a line matching ``pattern`` is printed; its output once it exits (one of ``codes``)."""
    wait_for(start, pattern, timeout)
    start.proc.send_signal(signal.SIGTERM)
    return finish(start, codes, timeout)


def records(workdir: Path) -> list[dict]:
    """The metrics log without its wall-clock fields."""
    lines = (workdir / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if not k.endswith(TIMING)} for line in lines]


def assert_same_runs(resumed: Path, straight: Path, args: list[str], iteration: int) -> None:
    """Both runs' checkpoints at ``iteration`` hold identical arrays, and their logs identical metrics."""
    load = checkpoint_loader(args, resumed)
    mine, theirs = load(resumed, iteration), load(straight, iteration)
    differ = [name for name, a, b in zip(mine[0]._fields, mine[0], theirs[0], strict=True) if not same_arrays(a, b)]
    assert not differ and same_arrays(mine[1], theirs[1]), f"differ: {differ or ['rng key']}"
    assert records(resumed) == records(straight)


@pytest.mark.parametrize("layout", LAYOUT_PARAMS)
def test_sigterm_resume_and_extension_equal_the_uninterrupted_run(tmp_path, cache, layout):
    """SIGTERM mid-run, the same command again, then `--config.iterations` raised (a finished run
    extended), through a stage change, evaluations and gates: identical states and metrics to the
    same run never interrupted (the tiny config's schedules do not depend on the run's length, so
    that is one straight run of the final length)."""
    where = LAYOUTS[layout]
    # what moves arrays around: a stage change (a new compile), arena evaluations and a gate (on the
    # users' default layout; on 8 devices the plain run, to keep the test short)
    extras = ["--config.stages=4: optimizer.learning_rate=5e-4", "--config.eval.every=1", "--config.eval.games=2",
              "--config.eval.opponents=random", "--config.gating.enabled=true", "--config.gating.every=3",
              "--config.gating.games=2"] if layout == "2 cores" else []
    args, longer = [*TINY, *extras, "--config.iterations=5"], [*TINY, *extras, "--config.iterations=6"]
    resumed, straight = tmp_path / "resumed", tmp_path / "straight"
    # the uninterrupted run first, alone: it compiles every program once (both stages, the match, the
    # gate) and the three runs after it load them from the cache, where two processes side by side
    # compiled the same programs twice (CI's time)
    finish(Start(straight, cache, longer, **where))
    interrupted = Start(resumed, cache, args, **where)
    out = stop_after(interrupted, r"\[2/5\]")
    devices = where.get("devices") or where["cores"]  # one device per core when none are named
    assert f"{devices} device(s), {devices} lane(s)" in out, out
    stopped = int(re.search(r"stopped by SIGTERM after iteration (\d) of 5", out).group(1))
    assert 2 <= stopped < 5
    out = finish(Start(resumed, cache, args, **where))
    assert f"resumed {resumed} at iteration {stopped}" in out, out
    assert [r["iteration"] for r in records(resumed)] == list(range(1, 6))
    out = finish(Start(resumed, cache, longer, **where))  # the finished run, extended
    assert f"resumed {resumed} at iteration 5" in out, out
    assert [r["iteration"] for r in records(resumed)] == list(range(1, 7))
    assert_same_runs(resumed, straight, longer, 6)
