"""Every core busy on CPU: `othello-jax train` asks for one host device per core (games split in lanes),
and a run resumes with its checkpoint's lanes whatever the core count."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.configs import othello6_cpu, tiny_test
from othello_jax.commands.train import checkpoint_lanes, host_devices

REPO = Path(__file__).resolve().parents[1]
OLD_RUN = REPO / "tests" / "data" / "run_before_layout"  # written with one lane, before the split


@pytest.mark.parametrize("cores, expected", [(1, 1), (2, 2), (3, 2), (4, 4), (16, 16), (48, 32)])
def test_a_new_run_gets_one_device_per_core_that_divides_its_games_and_batch(tmp_path, cores, expected):
    config = othello6_cpu.get_config()  # 128 games, batch 512
    assert host_devices(config, tmp_path / "new", cores, environ={}) == expected
    assert config.replay.lanes == 0  # a new run keeps "one lane per device"


def test_explicit_settings_win(tmp_path):
    config = othello6_cpu.get_config()
    for env in ({"JAX_NUM_CPU_DEVICES": "1"}, {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"},
                {"JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234"}):
        assert host_devices(config, tmp_path, 2, environ=env) is None, env
    config.replay.lanes = 4
    assert host_devices(config, tmp_path, 2, environ={}) == 2
    assert host_devices(config, tmp_path, 3, environ={}) == 2  # a divisor of the lanes
    config.replay.lanes = 3
    assert host_devices(config, tmp_path, 2, environ={}) == 1
    config.replay.lanes, config.num_devices = 0, 1
    assert host_devices(config, tmp_path, 2, environ={}) == 1


def test_a_checkpoint_fixes_the_lanes_and_the_devices(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(OLD_RUN, old)
    assert checkpoint_lanes(old) == 1
    config = tiny_test.get_config()
    assert host_devices(config, old, 2, environ={}) == 1
    assert config.replay.lanes == 1
    meta = old / "checkpoints" / "2" / "meta" / "metadata"
    meta.write_text(json.dumps(dict(json.loads(meta.read_text()), lanes=4)))
    config = tiny_test.get_config()
    assert host_devices(config, old, 2, environ={}) == 2 and config.replay.lanes == 4
    config = tiny_test.get_config()
    assert host_devices(config, old, 1, environ={}) == 1 and config.replay.lanes == 4


def _train(workdir: Path, cores: int, iterations: int) -> subprocess.CompletedProcess:
    """`othello-jax train` (tiny config) in a subprocess that sees ``cores`` usable cores."""
    code = (f"import os, sys; os.sched_getaffinity = lambda pid: set(range({cores}))\n"
            "from othello_jax.cli import main; sys.exit(main(sys.argv[1:]))")
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_NUM_CPU_DEVICES", "XLA_FLAGS")}
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", code, "train", "--config=experiments/configs/tiny_test.py",
                           f"--workdir={workdir}", f"--config.iterations={iterations}", "--config.eval.every=0"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow  # a CLI subprocess: ~100 s on a loaded 2-core machine, less with the session's XLA cache
def test_the_cli_resumes_a_run_written_without_the_split_on_two_cores(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(OLD_RUN, old)
    done = _train(old, cores=2, iterations=3)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"resumed {old} at iteration 2" in done.stdout
    assert "1 device(s), 1 lane(s)" in done.stdout, done.stdout
    assert [json.loads(line)["iteration"] for line in (old / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3]

