"""Multi-process training: 2 processes on localhost (CPU, 1 device each, ``jax.distributed`` with an
explicit coordinator address, process count and id) train the same run as one process with 2
devices and the same lane count, bit for bit; the checkpoint they write restores in a single process.
A SIGTERM to one of them stops both at the same iteration (JAX's preemption sync point), after a
checkpoint, with exit status 75; the same two commands again resume and finish the run, still
equal to the single process's uninterrupted run.

Why one process with *2 devices* is the reference: each device then runs exactly the program a
process runs (one lane, self-play without ``vmap``) and the gradient all-reduce adds the same two
per-device partial sums (gloo between processes, XLA's in-process collective within one), so
the results are identical. One process with one device and 2 lanes computes the same thing in
another order (a ``vmap`` over lanes, one reduction over the whole batch): equal up to rounding.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from othello_jax import checkpoint
from othello_jax.commands.train import parse
from othello_jax.training.runner.program import make_train

REPO = Path(__file__).resolve().parents[1]
ARGS = ["--config=experiments/configs/tiny_test.py", "--config.replay.lanes=2", "--config.checkpoint.every=1000"]
TIMING = ("_s", "_per_s")  # wall-clock fields of a metrics record


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def train(workdir: Path, devices: int, iterations: int,
          process: tuple[int, int, int] | None = None) -> subprocess.Popen:
    """``othello-jax train`` on ``devices`` CPU devices; ``process`` = (id, count, coordinator port)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES=str(devices),
               XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}", PYTHONUNBUFFERED="1")
    for name in ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID"):
        env.pop(name, None)
    args = [*ARGS, f"--config.iterations={iterations}"]
    if process is not None:
        index, count, port = process
        args += [f"--config.distributed.coordinator_address=localhost:{port}",
                 f"--config.distributed.num_processes={count}", f"--config.distributed.process_id={index}"]
    return subprocess.Popen([sys.executable, "-m", "othello_jax.cli", "train", f"--workdir={workdir}", *args], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc: subprocess.Popen, code: int = 0) -> str:
    out, _ = proc.communicate(timeout=1200)
    assert proc.returncode == code, out[-3000:]
    return out


def records(workdir: Path) -> list[dict]:
    lines = (workdir / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if not k.endswith(TIMING)} for line in lines]


@pytest.mark.slow  # ~1.5-3 minutes on 2 cores (three JAX programs compiled); run with -m ""
def test_two_processes_train_like_one_stop_together_resume_and_their_checkpoint_restores_in_one(tmp_path):
    port = free_port()
    pair = [train(tmp_path / "two", 1, 300, (index, 2, port)) for index in (0, 1)]
    seen = []
    for line in pair[0].stdout:  # process 0 reports for both
        seen.append(line)
        if line.startswith("[  2/300]"):
            break
    assert any("2 device(s), 2 processes, 2 lane(s)" in line for line in seen), seen
    pair[1].send_signal(signal.SIGTERM)  # preempt the other process: both must stop at one iteration
    outs = [finish(proc, 75) for proc in pair]
    stops = [re.findall(r"stopped by preemption \(SIGTERM\) after iteration (\d+) of 300; checkpoint (\S+) saved",
                        out) for out in outs]
    assert stops[0] and stops[0] == stops[1], outs
    stopped = int(stops[0][0][0])
    assert stopped >= 2 and Path(stops[0][0][1]) == tmp_path / "two" / "checkpoints" / str(stopped)

    assert [r["iteration"] for r in records(tmp_path / "two")] == list(range(1, stopped + 1))

    total = stopped + 2  # the same two commands again (a longer run): they resume where both stopped
    port = free_port()
    outs = [finish(proc) for proc in [train(tmp_path / "two", 1, total, (index, 2, port)) for index in (0, 1)]]
    assert f"resumed {tmp_path / 'two'} at iteration {stopped}" in outs[0], outs[0][-3000:]

    single = tmp_path / "one"  # the same run on one process with 2 devices, never interrupted
    assert "2 device(s), 2 lane(s)" in finish(train(single, 2, total))

    two, one = records(tmp_path / "two"), records(single)
    assert [r["iteration"] for r in two] == list(range(1, total + 1))
    assert two == one  # every metric, bit for bit

    # the checkpoint the two processes wrote restores here, in one process with one device
    config, _ = parse([*ARGS, f"--config.iterations={total}", "--workdir=unused"])
    program = make_train(config)
    assert program.mesh.size == 1 and program.lanes == 2
    template = program.init_state(jax.random.PRNGKey(0))
    states = []
    for workdir in (tmp_path / "two", single):
        ckpts = checkpoint.Checkpoints(workdir, keep=3)
        assert ckpts.steps()[-1] == total
        state, key, meta = ckpts.restore(template, jax.random.PRNGKey(0), program.meta())
        ckpts.close()
        assert int(state.iteration) == total and meta["lanes"] == 2
        states.append(jax.device_get((state, key)))
    for a, b in zip(jax.tree.leaves(states[0]), jax.tree.leaves(states[1]), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))  # parameters, optimizer, buffer, rng
    assert checkpoint.load_agent_variables(tmp_path / "two")[1]["params"]
